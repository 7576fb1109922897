"""``resourcekit install``: each host's file format, edited in place; the entry it writes really starts the server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from resourcekit._jsonedit import JSONEditError, set_member
from resourcekit.install import config_path
from tests.support.process import APPS, command, env

APP = APPS / "tools_app.py"
HOSTS = {  # host: (key of the servers, whether entries say "type": "stdio")
    "claude-desktop": ("mcpServers", False),
    "claude-code": ("mcpServers", True),
    "cursor": ("mcpServers", False),
    "vscode": ("servers", True),
}


def install(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command("install", *args), capture_output=True, text=True, env=env(), cwd=cwd, timeout=60)


def expected_entry(host: str, target: str, extra_env: dict[str, str] | None = None) -> dict[str, object]:
    entry: dict[str, object] = {"type": "stdio"} if HOSTS[host][1] else {}
    entry["command"] = sys.executable
    entry["args"] = ["-m", "resourcekit", "run", target]
    if extra_env:
        entry["env"] = extra_env
    return entry


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_fresh_file_then_idempotent(host: str, tmp_path: Path):
    config = tmp_path / "sub" / "config.json"
    done = install(host, str(APP), "--config", str(config))
    assert done.returncode == 0, done.stderr
    key = HOSTS[host][0]
    written = json.loads(config.read_text())
    assert written == {key: {"tools": expected_entry(host, str(APP))}}
    assert "added 'tools'" in done.stdout and str(config) in done.stdout
    before = config.read_bytes()
    again = install(host, str(APP), "--config", str(config))
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert config.read_bytes() == before


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_merge_keeps_every_other_entry_and_the_formatting(host: str, tmp_path: Path):
    key = HOSTS[host][0]
    other = '{\n        "command": "npx",\n        "args": ["-y", "@example/server"]\n    }'
    original = (
        "{\n"
        '    "theme": "dark",\n'
        f'    "{key}": {{\n'
        f'        "other": {other.replace(chr(10), chr(10) + "    ")}\n'
        "    },\n"
        '    "numStartups": 42\n'
        "}\n"
    )
    config = tmp_path / "config.json"
    config.write_text(original)
    done = install(host, str(APP), "--config", str(config), "--name", "notes", "--env", "TOKEN=abc")
    assert done.returncode == 0, done.stderr
    text = config.read_text()
    head = original[:original.index("    },\n")]  # everything up to the end of the other server, verbatim
    assert text.startswith(head.rstrip("\n")) and text.endswith('    },\n    "numStartups": 42\n}\n')
    written = json.loads(text)
    assert written["theme"] == "dark" and written["numStartups"] == 42
    assert written[key]["other"] == {"command": "npx", "args": ["-y", "@example/server"]}
    assert written[key]["notes"] == expected_entry(host, str(APP), {"TOKEN": "abc"})
    assert '\n        "notes": {\n            ' in text  # four spaces, as the file has

    # again with another variable: the entry is updated, the first variable and the user's own key stay
    edited = text.replace('"TOKEN": "abc"', '"TOKEN": "abc", "MINE": "1"')
    edited = edited.replace('"command": "npx",', '"command": "npx", "disabled": false,')
    config.write_text(edited)
    updated = install(host, str(APP), "--config", str(config), "--name", "notes", "--env", "MORE=2")
    assert updated.returncode == 0 and "updated 'notes'" in updated.stdout
    entry = json.loads(config.read_text())[key]["notes"]
    assert entry["env"] == {"TOKEN": "abc", "MINE": "1", "MORE": "2"}
    assert json.loads(config.read_text())[key]["other"]["disabled"] is False


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_print_shows_the_change_and_writes_nothing(host: str, tmp_path: Path):
    config = tmp_path / "config.json"
    config.write_text('{"mcpServers": {}, "servers": {}}')
    shown = install(host, str(APP), "--config", str(config), "--print", "--env", "A=1")
    assert shown.returncode == 0, shown.stderr
    assert config.read_text() == '{"mcpServers": {}, "servers": {}}'
    assert "nothing written" in shown.stdout and '"A": "1"' in shown.stdout and "+" in shown.stdout
    assert str(APP) in shown.stdout


def test_vscode_keeps_comments_and_trailing_commas(tmp_path: Path):
    original = (
        "// my servers\n"
        "{\n"
        '\t"servers": {\n'
        '\t\t/* the old one */\n'
        '\t\t"old": {"type": "stdio", "command": "old",},\n'
        "\t},\n"
        '\t"inputs": [],\n'
        "}\n"
    )
    config = tmp_path / "mcp.json"
    config.write_text(original)
    done = install("vscode", str(APP), "--config", str(config))
    assert done.returncode == 0, done.stderr
    text = config.read_text()
    assert text.startswith('// my servers\n{\n\t"servers": {\n\t\t/* the old one */\n\t\t"old": {"type": "stdio", '
                           '"command": "old",},\n\t\t"tools": {\n\t\t\t"type": "stdio",')
    assert text.endswith('\t},\n\t"inputs": [],\n}\n')
    assert install("vscode", str(APP), "--config", str(config)).stdout.find("unchanged") >= 0


def test_comments_refused_where_the_host_reads_plain_json(tmp_path: Path):
    config = tmp_path / "claude_desktop_config.json"
    config.write_text('{\n  // a comment\n  "mcpServers": {}\n}\n')
    done = install("claude-desktop", str(APP), "--config", str(config))
    assert done.returncode == 1
    assert "not valid JSON" in done.stderr and "line 2" in done.stderr and "Traceback" not in done.stderr
    assert config.read_text() == '{\n  // a comment\n  "mcpServers": {}\n}\n'


def test_module_targets_resolve_to_a_file_any_directory_can_run(tmp_path: Path):
    package = tmp_path / "proj" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "data.py").write_text("GREETING = 'hi'\n")
    (package / "server.py").write_text(
        "from resourcekit import App\nfrom .data import GREETING\napp = App('pkg')\n"
        "@app.resource('text://hi')\ndef hi() -> str:\n    return GREETING\n")
    config = tmp_path / "cursor.json"
    done = install("cursor", "pkg.server:app", "--config", str(config), cwd=tmp_path / "proj")
    assert done.returncode == 0, done.stderr
    args = json.loads(config.read_text())["mcpServers"]["pkg"]["args"]
    assert args[-1] == f"{package / 'server.py'}:app"


def test_a_broken_app_is_not_installed(tmp_path: Path):
    broken = tmp_path / "broken.py"
    broken.write_text("import nonexistent_module_xyz\n")
    config = tmp_path / "c.json"
    done = install("cursor", str(broken), "--config", str(config))
    assert done.returncode == 1 and "nonexistent_module_xyz" in done.stderr and not config.exists()
    assert install("cursor", str(APP), "--config", str(config), "--env", "novalue").returncode == 1


def test_default_locations_per_platform(tmp_path: Path):
    home = tmp_path
    mac = {host: config_path(host, "darwin", {}, home) for host in HOSTS}
    assert mac["claude-desktop"] == home / "Library/Application Support/Claude/claude_desktop_config.json"
    assert mac["vscode"] == home / "Library/Application Support/Code/User/mcp.json"
    assert mac["claude-code"] == home / ".claude.json" and mac["cursor"] == home / ".cursor/mcp.json"
    windows = {host: config_path(host, "win32", {"APPDATA": str(home / "Roaming")}, home) for host in HOSTS}
    assert windows["claude-desktop"] == home / "Roaming/Claude/claude_desktop_config.json"
    assert windows["vscode"] == home / "Roaming/Code/User/mcp.json"
    linux = {host: config_path(host, "linux", {}, home) for host in HOSTS}
    assert linux["claude-desktop"] == home / ".config/Claude/claude_desktop_config.json"
    assert linux["vscode"] == home / ".config/Code/User/mcp.json"
    assert config_path("vscode", "linux", {"XDG_CONFIG_HOME": "/x"}, home) == Path("/x/Code/User/mcp.json")


def test_set_member_edits_only_its_spot():
    assert set_member('{"a": 1}', ["s"], "k", {"x": [1]})[0] == '{"a": 1, "s": {"k": {"x": [1]}}}'
    crlf, old = set_member('{\r\n  "s": {\r\n    "k": 1\r\n  }\r\n}\r\n', ["s"], "k", 2)
    assert crlf == '{\r\n  "s": {\r\n    "k": 2\r\n  }\r\n}\r\n' and old == 1
    assert set_member("", ["s"], "k", 1)[0] == '{\n  "s": {\n    "k": 1\n  }\n}\n'
    escaped = '{"q": "a\\"}\\\\", "s": {}}'
    assert set_member(escaped, ["s"], "k", 1)[0] == '{"q": "a\\"}\\\\", "s": {"k": 1}}'
    for bad in ("[1]", '{"s": 1}', '{"a": 1,}', '{"a" 1}', '{"a": 1} x', '{"a": "b}'):
        with pytest.raises(JSONEditError):
            set_member(bad, ["s"], "k", 1)


@pytest.mark.anyio
async def test_the_installed_entry_starts_a_working_server(tmp_path: Path):
    config = tmp_path / "claude_desktop_config.json"
    assert install("claude-desktop", str(APP), "--config", str(config), "--env", "RESOURCEKIT_LOG_LEVEL=INFO",
                   cwd=tmp_path).returncode == 0
    entry = json.loads(config.read_text())["mcpServers"]["tools"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(tmp_path.anchor),
                                   env={**entry["env"], "PYTHONPATH": env()["PYTHONPATH"]})
    with (tmp_path / "err.log").open("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert (await session.read_resource("note://2")).contents[0].text == "note 2"


def test_the_cli_offers_every_host_install_knows() -> None:
    from resourcekit import cli, install

    assert tuple(sorted(install.HOSTS)) == cli.INSTALL_HOSTS
