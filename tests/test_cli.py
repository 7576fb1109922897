"""The CLI: finding the app, its error cases, ``list`` and ``read``."""

from __future__ import annotations

import os
import pty
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import orjson
import pytest

import resourcekit
from tests.support.asgi import INIT
from tests.support.http_server import http_server_process
from tests.support.mcp_client import stdio_session
from tests.support.process import APPS, COOKBOOK, ROOT, RawServer, cli, command, env
from tests.support.wire import request


def write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_missing_file(tmp_path):
    result = cli("run", str(tmp_path / "nope.py"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"resourcekit: error: no such file: {tmp_path / 'nope.py'}"]


def test_import_error_shows_where_and_the_apps_traceback(tmp_path):
    path = write(tmp_path, "broken.py", "import os\n\nimport no_such_module_anywhere\n")
    result = cli("run", str(path))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == (f"resourcekit: error: importing {path} failed at {path}:3: "
                        "ModuleNotFoundError: No module named 'no_such_module_anywhere'")
    assert lines[1:] == ["Traceback (most recent call last):", f'  File "{path}", line 3, in <module>',
                         "    import no_such_module_anywhere",
                         "ModuleNotFoundError: No module named 'no_such_module_anywhere'"]


def test_a_definition_error_is_summed_up_by_its_first_line_not_its_caret(tmp_path):
    path = write(tmp_path, "typo.py", """\
        from resourcekit import App

        app = App("t")


        @app.template("notes://{note_id")
        def note(note_id: str) -> str:
            return note_id
    """)
    result = cli("run", str(path))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == (f"resourcekit: error: importing {path} failed at {path}:6: resourcekit.errors."
                        "TemplateSyntaxError: unclosed expression '{' at position 8 in 'notes://{note_id'")
    assert lines[-2:] == ["  notes://{note_id", "          ^"]  # the traceback still points at the fault


def test_a_mistyped_flag_is_reported_under_its_commands_usage():
    result = cli("run", "app.py", "--transprot", "http")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("usage: resourcekit run [-h]")
    assert lines[-1] == "resourcekit run: error: unrecognized arguments: --transprot http (did you mean --transport?)"
    result = cli("list", "app.py", "--jsn")
    assert result.stderr.strip().splitlines()[-1] == ("resourcekit list: error: unrecognized arguments: --jsn "
                                                      "(did you mean --json?)")
    result = cli("read", "app.py", "notes://a", "extra")
    assert result.stderr.strip().splitlines()[-1] == "resourcekit read: error: unrecognized arguments: extra"


def test_no_app(tmp_path):
    path = write(tmp_path, "empty.py", "x = 1\n")
    result = cli("run", str(path))
    assert result.returncode == 1
    assert "defines no App" in result.stderr


def test_named_attr_and_conventions(tmp_path):
    path = write(tmp_path, "two.py", """
        from resourcekit import App
        first = App("first")
        second = App("second")

        @first.resource("a://x")
        def x() -> str:
            return "from first"

        @second.resource("a://x")
        def y() -> str:
            return "from second"
    """)
    assert "several Apps" in cli("list", str(path)).stderr
    assert cli("read", f"{path}:second", "a://x").stdout == "from second\n"
    assert "no App named 'third'" in cli("read", f"{path}:third", "a://x").stderr
    conventional = write(tmp_path, "conv.py", """
        from resourcekit import App
        other = App("other")
        server = App("server")

        @server.resource("a://x")
        def x() -> str:
            return "server wins"
    """)
    assert cli("read", str(conventional), "a://x").stdout == "server wins\n"


def test_module_level_decorators_use_the_default_app(tmp_path):
    path = write(tmp_path, "script.py", """
        import resourcekit

        @resourcekit.resource("hello://world")
        def hello() -> str:
            return "hi"
    """)
    assert cli("read", str(path), "hello://world").stdout == "hi\n"


def test_list_human_and_json():
    result = cli("list", str(APPS / "basic_app.py"))
    assert result.returncode == 0
    assert result.stdout.startswith("basic: 39 resources, ")
    assert "text://hello" in result.stdout and "user://{user_id}/profile{?verbose}" in result.stdout
    data = orjson.loads(cli("list", "--json", str(COOKBOOK / "notes.py")).stdout)
    assert {r["uri"] for r in data["resources"]} >= {"config://settings", "notes://1"}


def test_read_human_and_json_and_errors():
    app = str(APPS / "basic_app.py")
    assert cli("read", app, "text://hello").stdout == "hello, world\n"
    data = orjson.loads(cli("read", "--json", app, "bin://data.bin").stdout)
    assert data["contents"][0]["mimeType"] == "application/octet-stream"
    missing = cli("read", app, "nope://x")
    assert missing.returncode == 1 and "Resource not found: nope://x (code -32002)" in missing.stderr


def test_http_without_uvicorn_says_what_to_install(tmp_path):
    shadow = write(tmp_path, "uvicorn.py", "raise ImportError('hidden for this test')\n")
    result = subprocess.run(
        [*command("run", str(APPS / "basic_app.py"), "--transport", "http")],
        capture_output=True, text=True, timeout=60,
        env={**env(), "PYTHONPATH": f"{shadow.parent}:{env()['PYTHONPATH']}"},
    )
    assert result.returncode == 1
    assert "pip install 'resourcekit[http]'" in result.stderr


def test_list_counts_one_resource_and_one_template_in_the_singular(tmp_path):
    path = write(tmp_path, "one.py", """
        from resourcekit import App
        app = App("one")
        app.resource("a://b")(lambda: "x")
        app.template("a://{x}/y")(lambda x: x)
    """)
    assert cli("list", str(path)).stdout.startswith("one: 1 resource, 1 template\n")


# --- the CLI's limit flags (the 2026-11-23 review) ------------------------------------------------


def test_cli_limit_flags_reach_the_http_server() -> None:
    flags = ("--max-sessions", "1", "--max-uri-length", "64", "--max-message-size", "4096")
    with http_server_process(APPS / "basic_app.py", *flags) as url:
        plain = {"content-type": "application/json", "accept": "application/json"}
        first = httpx.post(url, content=orjson.dumps(INIT), headers=plain, timeout=10)
        second = httpx.post(url, content=orjson.dumps(INIT), headers=plain, timeout=10)
        assert first.status_code == second.status_code == 200
        evicted = httpx.post(url, content=orjson.dumps(request(1, "ping")), timeout=10,
                             headers={**plain, "mcp-session-id": first.headers["mcp-session-id"]})
        assert evicted.status_code == 404  # max_sessions=1: the idle first session made room
        long_uri = "x://" + "a" * 100
        read = httpx.post(url, content=orjson.dumps(request(2, "resources/read", {"uri": long_uri})), timeout=10,
                          headers={**plain, "mcp-session-id": second.headers["mcp-session-id"]})
        assert read.json()["error"]["data"]["limit"] == "max_uri_length"
        too_big = httpx.post(url, content=b" " * 5000 + orjson.dumps(request(3, "ping")), timeout=10,
                             headers={**plain, "mcp-session-id": second.headers["mcp-session-id"]})
        assert too_big.status_code == 413


@pytest.mark.parametrize("flag", [["--max-sessions", "3"], ["--session-idle-timeout", "5"], ["--port", "9"],
                                  ["--max-replay-bytes", "10"], ["--body-timeout", "5"],
                                  ["--redis-wait", "5"]])
def test_http_only_flags_refused_over_stdio(flag: list[str]) -> None:
    done = subprocess.run(command("run", str(APPS / "basic_app.py"), *flag), env=env(), capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"resourcekit: error: {flag[0]} only applies to --transport http"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    package = tmp_path / "proj" / "acme" / "mcp"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package.parent / "data.py").write_text("GREETING = 'hello from a package'\n")
    (package / "server.py").write_text(textwrap.dedent("""\
        from resourcekit import App
        from ..data import GREETING
        from . import helpers

        app = App("acme")

        @app.resource("text://greeting")
        def greeting() -> str:
            return helpers.shout(GREETING)
        """))
    (package / "helpers.py").write_text("def shout(text: str) -> str:\n    return text.upper()\n")
    return tmp_path / "proj"


NOTES = """\
    from resourcekit import App

    app = App("notes")


    @app.resource("notes://today")
    def today() -> str:
        return "write tests"
"""


FIRST_READ = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
             b'"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
             b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
             b'{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"notes://today"}}\n')


def python(path: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, path.name], input=stdin, capture_output=True, env=env(), timeout=60,
                          cwd=path.parent)


# --- @app.resource without parentheses (issue 12, the first ten minutes) --------------------------


def test_the_cli_shows_that_mistake_at_its_line(tmp_path: Path):
    path = tmp_path / "app.py"
    path.write_text("from resourcekit import App\napp = App('a')\n\n@app.resource\ndef hello() -> str:\n"
                    "    return 'hi'\n")
    result = cli("list", str(path))
    assert result.returncode == 1
    # the line Python names for a decorator's failure: its own since 3.11, the def's before
    line, shown = (4, "    @app.resource\n") if sys.version_info >= (3, 11) else (5, "    def hello() -> str:\n")
    assert f"failed at {path}:{line}: resourcekit.errors.DefinitionError: @app.resource needs the URI" in result.stderr
    assert shown in result.stderr and "registry.py" not in result.stderr


def test_syntax_errors_show_their_place(tmp_path: Path):
    path = tmp_path / "app.py"
    path.write_text("from resourcekit import App\napp = App(\n")
    result = cli("list", str(path))
    assert result.returncode == 1 and f"failed at {path}:2: SyntaxError" in result.stderr
    assert "^" in result.stderr and "importlib" not in result.stderr


# --- module targets and packages (issue 12, the first ten minutes) --------------------------------


def test_module_targets_and_files_inside_packages(project: Path):
    for target in ("acme.mcp.server:app", "acme.mcp.server"):
        result = cli("read", target, "text://greeting", cwd=project)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "HELLO FROM A PACKAGE\n"
    # a file inside a package, from anywhere: imported under its dotted name, so relative imports work
    result = cli("read", str(project / "acme" / "mcp" / "server.py"), "text://greeting", cwd=project.parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "HELLO FROM A PACKAGE\n"
    missing = cli("read", "acme.nothing:app", "x://y", cwd=project)
    assert missing.returncode == 1 and "no such file or module: acme.nothing" in missing.stderr


@pytest.mark.anyio
async def test_run_a_module_target_with_the_official_client(project: Path):
    async with stdio_session("acme.mcp.server:app", cwd=project) as session:
        assert (await session.read_resource("text://greeting")).contents[0].text == "HELLO FROM A PACKAGE"


# --- a terminal, a pipe that closes, flags that do not apply, a busy port (issue 12, the first ten minutes)


def test_on_a_terminal_stdio_says_it_waits_for_a_client():
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(command("run", str(APPS / "basic_app.py")), stdin=terminal, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env())
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        proc.terminate()
        proc.communicate(timeout=10)
    finally:
        os.close(controller)
        os.close(terminal)
    assert "waiting for an MCP client on stdin" in line and "resourcekit dev" in line
    assert str(APPS / "basic_app.py") in line
    with RawServer(APPS / "basic_app.py") as server:  # from a pipe (a real client): nothing said
        assert server.initialize()["result"]["serverInfo"]["name"] == "basic"
        server.close()
        assert "waiting" not in server.stderr


def test_list_into_a_pipe_that_closes_ends_quietly(tmp_path: Path):
    app = tmp_path / "many.py"
    app.write_text("from resourcekit import App\napp = App('many')\n"
                   "for i in range(20000):\n    app.resource(f'n://{i}')(lambda: 'x')\n")
    listing = subprocess.Popen(command("list", str(app)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    assert listing.stdout is not None and listing.stderr is not None
    first = listing.stdout.readline()
    listing.stdout.close()  # what `| head -1` does
    error = listing.stderr.read().decode()
    listing.wait(30)
    assert first.startswith(b"many: 20000 resources")
    assert error == ""


@pytest.mark.parametrize("flag", [["--port", "9"], ["--reload"], ["--host", "0.0.0.0"], ["--workers", "2"]])
def test_http_flags_with_stdio_are_refused(flag: list[str]):
    result = cli("run", str(APPS / "basic_app.py"), *flag)
    assert result.returncode == 1
    assert result.stderr == f"resourcekit: error: {flag[0]} only applies to --transport http\n"


def test_a_port_in_use_is_reported_before_serving():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("run", str(APPS / "basic_app.py"), "--transport", "http", "--port", str(port))
    assert result.returncode == 1
    assert result.stderr == (f"resourcekit: error: port {port} on 127.0.0.1 is already in use "
                             "(pick another with --port)\n")


# --- --version, LICENSE, CHANGELOG (issue 12, the first ten minutes) ------------------------------


def test_version_license_and_changelog():
    result = cli("--version")
    assert result.returncode == 0 and result.stdout == f"resourcekit {resourcekit.__version__}\n"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(rf'^version = "{re.escape(resourcekit.__version__)}"$', pyproject, re.M)
    assert re.search(r'^license = \{ text = "MIT" \}$', pyproject, re.M)
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License\n") and "WITHOUT WARRANTY OF ANY KIND" in license_text
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {resourcekit.__version__}" in changelog


# --- python app.py (issue 12, the first ten minutes) ----------------------------------------------


def test_python_app_py_serves_stdio_when_the_file_calls_run(tmp_path: Path):
    path = tmp_path / "app.py"
    path.write_text(textwrap.dedent(NOTES) + '\n\nif __name__ == "__main__":\n    app.run()\n')
    result = python(path, FIRST_READ)
    assert result.returncode == 0, result.stderr
    replies = [line for line in result.stdout.splitlines() if line]
    assert len(replies) == 2 and b'"text":"write tests"' in replies[1]
    assert b"served nothing" not in result.stderr


def test_python_app_py_without_run_exits_saying_how_to_serve(tmp_path: Path):
    path = tmp_path / "app.py"
    path.write_text(textwrap.dedent(NOTES))
    result = python(path)
    assert result.returncode == 0 and result.stdout == b""
    assert result.stderr.decode().splitlines() == [
        'resourcekit: app.py declared 1 resource and served nothing: end it with `if __name__ == "__main__": '
        'app.run()` to serve over stdio, or start it with `resourcekit run app.py`']
    # imported, run by the CLI, served in memory or failing on its own: nothing more is said
    assert "served nothing" not in cli("list", str(path)).stderr
    path.write_text(textwrap.dedent(NOTES) + textwrap.dedent("""
        import asyncio
        from resourcekit.testing import Client

        async def main():
            async with Client(app) as client:
                print(await client.read_text("notes://today"))

        asyncio.run(main())
    """))
    result = python(path)
    assert result.stdout == b"write tests\n" and result.stderr == b""
    path.write_text(textwrap.dedent(NOTES) + "raise LookupError('no database')\n")
    result = python(path)
    assert result.returncode == 1 and result.stderr.decode().splitlines()[-1] == "LookupError: no database"


def test_run_file_alone_gets_exactly_what_the_parser_would_make_of_it() -> None:
    """``resourcekit run FILE``, the line hosts spawn, builds no parser (start-up): what it gets must
    stay what the parser makes of the same line, every option at its default, as flags come and go."""
    from resourcekit import cli

    parsed = vars(cli._parser("run").parse_args(["run", "app.py"]))
    assert vars(cli._bare_run("app.py")) == parsed
