""""The first ten minutes": what a new user runs into first, each fixed (issue 12)."""

from __future__ import annotations

import os
import pty
import re
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import resourcekit
from resourcekit import App, DefinitionError, MCPError, resource, template
from resourcekit.core import HANDSHAKE, Server
from resourcekit.core.plan import plan_for
from resourcekit.extensions import NONE
from resourcekit.testing import Client
from tests.helpers import APPS, ROOT, RawServer, command, env
from tests.mcp_client import stdio_session


def run(*args: str, cwd: Path | None = None, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(*args), capture_output=True, text=True, env=env(), timeout=60, cwd=cwd,
                          **kwargs)  # type: ignore[call-overload]


# --- @app.resource without parentheses ----------------------------------------------------------


def test_decorators_without_their_uri_say_how_to_write_them():
    app = App("x")
    with pytest.raises(DefinitionError, match=re.escape('write @app.resource("notes://today") above def hello()')):

        @app.resource  # type: ignore[arg-type]
        def hello() -> str:
            return "hi"

    with pytest.raises(DefinitionError, match=re.escape('@app.template("notes://{name}") above def note()')):

        @app.template  # type: ignore[arg-type]
        def note(name: str) -> str:
            return name

    with pytest.raises(DefinitionError, match="@app.resource"):
        resource(lambda: "x")  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="@app.template"):
        template(lambda: "x")  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="takes the URI as a string"):
        app.resource(42)  # type: ignore[arg-type]
    assert len(app.resources) == 0


def test_the_cli_shows_that_mistake_at_its_line(tmp_path: Path):
    path = tmp_path / "app.py"
    path.write_text("from resourcekit import App\napp = App('a')\n\n@app.resource\ndef hello() -> str:\n"
                    "    return 'hi'\n")
    result = run("list", str(path))
    assert result.returncode == 1
    # the line Python names for a decorator's failure: its own since 3.11, the def's before
    line, shown = (4, "    @app.resource\n") if sys.version_info >= (3, 11) else (5, "    def hello() -> str:\n")
    assert f"failed at {path}:{line}: resourcekit.errors.DefinitionError: @app.resource needs the URI" in result.stderr
    assert shown in result.stderr and "registry.py" not in result.stderr


def test_syntax_errors_show_their_place(tmp_path: Path):
    path = tmp_path / "app.py"
    path.write_text("from resourcekit import App\napp = App(\n")
    result = run("list", str(path))
    assert result.returncode == 1 and f"failed at {path}:2: SyntaxError" in result.stderr
    assert "^" in result.stderr and "importlib" not in result.stderr


# --- module targets and packages ---------------------------------------------------------------


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


def test_module_targets_and_files_inside_packages(project: Path):
    for target in ("acme.mcp.server:app", "acme.mcp.server"):
        result = run("read", target, "text://greeting", cwd=project)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "HELLO FROM A PACKAGE\n"
    # a file inside a package, from anywhere: imported under its dotted name, so relative imports work
    result = run("read", str(project / "acme" / "mcp" / "server.py"), "text://greeting", cwd=project.parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "HELLO FROM A PACKAGE\n"
    missing = run("read", "acme.nothing:app", "x://y", cwd=project)
    assert missing.returncode == 1 and "no such file or module: acme.nothing" in missing.stderr


@pytest.mark.anyio
async def test_run_a_module_target_with_the_official_client(project: Path):
    async with stdio_session("acme.mcp.server:app", cwd=project) as session:
        assert (await session.read_resource("text://greeting")).contents[0].text == "HELLO FROM A PACKAGE"


# --- a terminal, a pipe that closes, flags that do not apply, a busy port ------------------------


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
    result = run("run", str(APPS / "basic_app.py"), *flag)
    assert result.returncode == 1
    assert result.stderr == f"resourcekit: error: {flag[0]} only applies to --transport http\n"


def test_a_port_in_use_is_reported_before_serving():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("run", str(APPS / "basic_app.py"), "--transport", "http", "--port", str(port))
    assert result.returncode == 1
    assert result.stderr == (f"resourcekit: error: port {port} on 127.0.0.1 is already in use "
                             "(pick another with --port)\n")


# --- --version, LICENSE, CHANGELOG --------------------------------------------------------------


def test_version_license_and_changelog():
    result = run("--version")
    assert result.returncode == 0 and result.stdout == f"resourcekit {resourcekit.__version__}\n"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(rf'^version = "{re.escape(resourcekit.__version__)}"$', pyproject, re.M)
    assert re.search(r'^license = \{ text = "MIT" \}$', pyproject, re.M)
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License\n") and "WITHOUT WARRANTY OF ANY KIND" in license_text
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {resourcekit.__version__}" in changelog


# --- MCPError -----------------------------------------------------------------------------------


def test_mcp_error_cannot_lose_its_message():
    jsonrpc_order = MCPError(-32602, "Invalid date")
    assert (jsonrpc_order.code, jsonrpc_order.message, jsonrpc_order.data) == (-32602, "Invalid date", None)
    with_data = MCPError(-32001, "Quota exceeded", {"retryAfter": 30})
    assert with_data.to_error() == {"code": -32001, "message": "Quota exceeded", "data": {"retryAfter": 30}}
    keyword = MCPError("Quota exceeded", {"retryAfter": 30}, code=-32001)
    assert keyword.to_error() == with_data.to_error()
    assert MCPError("plain").to_error() == {"code": -32603, "message": "plain"}
    for mistake in (lambda: MCPError("msg", -32602), lambda: MCPError(-32602), lambda: MCPError(None),
                    lambda: MCPError(-32602, "msg", code=-32001), lambda: MCPError("m", code="x")):
        with pytest.raises(TypeError):
            mistake()


@pytest.mark.anyio
async def test_mcp_error_reaches_the_client_as_written():
    app = App("errors")

    @app.resource("err://quota")
    def quota() -> str:
        raise MCPError(-32001, "Quota exceeded", {"retryAfter": 30})

    async with Client(app) as client:
        with pytest.raises(MCPError) as info:
            await client.read("err://quota")
    assert info.value.to_error() == {"code": -32001, "message": "Quota exceeded", "data": {"retryAfter": 30}}


# --- logging ------------------------------------------------------------------------------------


def _requests_logged(*extra: str, log_env: str | None = None) -> list[str]:
    environment = {"RESOURCEKIT_LOG_LEVEL": log_env} if log_env else {}
    os.environ.update(environment)
    try:
        with RawServer(APPS / "basic_app.py", *extra) as server:
            server.initialize()
            server.request(1, "resources/read", {"uri": "text://hello"})
            server.request(2, "resources/read", {"uri": "nope://x"})
            server.request(3, "resources/read", {"uri": "user://7/profile"})
            server.request(4, "no/such")
            server.close()
            time.sleep(0.1)
            return [line for line in server.stderr.splitlines() if "resourcekit:" in line]
    finally:
        for key in environment:
            del os.environ[key]


def test_info_logs_one_line_per_request():
    lines = _requests_logged(log_env="INFO")
    pattern = r"INFO resourcekit: {} (ok|error .+), \d+\.\d\d ms$"
    assert re.search(pattern.format("initialize:"), lines[0])
    assert re.search(r"INFO resourcekit: resources/read text://hello: ok, \d+\.\d\d ms$", lines[1])
    assert re.search(r"resources/read nope://x: error -32002 Resource not found: nope://x, \d+\.\d\d ms$", lines[2])
    assert re.search(r"resources/read user://7/profile: ok, ", lines[3])
    assert re.search(r"no/such: error -32601 Method not found: no/such, ", lines[4])
    assert len(lines) == 5
    assert len(_requests_logged("--log-level", "info")) == 5
    assert _requests_logged() == []  # WARNING by default: nothing per request


def test_below_info_requests_are_not_even_timed():
    import logging

    logger = logging.getLogger("resourcekit")
    level = logger.level
    try:
        logger.setLevel(logging.WARNING)
        assert not Server(App("quiet")).logged  # no step of any plan is wrapped
        assert plan_for(HANDSHAKE, NONE, False)["ping"] is HANDSHAKE.methods["ping"]
        logger.setLevel(logging.INFO)
        assert Server(App("loud")).logged
        assert plan_for(HANDSHAKE, NONE, True)["ping"] is not HANDSHAKE.methods["ping"]
    finally:
        logger.setLevel(level)



# --- python app.py --------------------------------------------------------------------------------

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
    assert "served nothing" not in run("list", str(path)).stderr
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
