"""The app's lifespan (issue 32, items 1 and 5): declared once, checked at decoration, entered by
whatever serves (stdio, HTTP, each worker, ``testing.Client``, ``list``/``read``), never at import
nor by ``install``; its state reaches handlers as ``ctx.state``; a raising one stops start-up."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from resourcekit import App, Context, LifespanDefinitionError, LifespanFailed
from resourcekit.errors import DefinitionError
from resourcekit.http import ASGIApp
from resourcekit.testing import Client
from tests.support.http_server import free_port, open_session, post, wait_for_port
from tests.support.process import APPS, RawServer, cli, command, env
from tests.support.wire import modern

pytestmark = pytest.mark.anyio

APP = APPS / "lifespan_app.py"
GREETING = "hello from the lifespan"


def events(log: Path) -> list[str]:
    """The lifespan's notes, without their process ids."""
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


# --- declaring ---------------------------------------------------------------------------------


def test_a_function_that_is_not_an_async_generator_is_refused_at_decoration_by_name() -> None:
    app = App("t")

    def plain() -> None: ...

    async def no_yield() -> None: ...

    def sync_generator() -> Any:
        yield 1

    for fn, said in ((plain, "not an async generator"), (no_yield, "without 'yield'"),
                     (sync_generator, "plain generator")):
        with pytest.raises(LifespanDefinitionError, match=said) as raised:
            app.lifespan(fn)
        assert raised.value.function.endswith(fn.__name__) and fn.__name__ in str(raised.value)
        assert isinstance(raised.value, DefinitionError)


def test_two_yields_or_a_yield_in_a_loop_are_refused_at_decoration() -> None:
    app = App("t")

    async def twice() -> AsyncIterator[int]:
        yield 1
        yield 2

    async def looping() -> AsyncIterator[int]:
        for i in range(3):
            yield i

    for fn in (twice, looping):
        with pytest.raises(LifespanDefinitionError, match=r"lifespan .*\(\) has 2 yields") as raised:
            app.lifespan(fn)
        assert fn.__name__ in raised.value.function


def test_a_nested_function_s_yield_is_not_counted_and_the_decorator_returns_the_function() -> None:
    app = App("t")

    async def once() -> AsyncIterator[dict[str, int]]:
        def helper() -> Any:
            yield 0
        yield {"n": len(list(helper()))}

    assert app.lifespan(once) is once
    with pytest.raises(DefinitionError, match="already has a lifespan"):
        app.lifespan(once)


def test_a_lifespan_with_two_parameters_is_refused() -> None:
    async def two(app: App, other: int) -> AsyncIterator[None]:
        yield

    with pytest.raises(LifespanDefinitionError, match="takes 2 parameters"):
        App("t").lifespan(two)


# --- in process: testing.Client, App(lifespan=...), ctx.state ---------------------------------------


async def test_testing_client_runs_the_lifespan_and_handlers_read_its_state() -> None:
    app = App("t")
    seen: list[str] = []

    @app.lifespan
    async def lifespan(the_app: App) -> AsyncIterator[dict[str, str]]:
        seen.append(f"enter {the_app.name}")
        yield {"db": "pool"}
        seen.append("exit")

    @app.resource("state://db")
    def db(ctx: Context) -> str:
        return str(ctx.state["db"])

    @app.template("state://keys/{key}", lister=lambda: [{"key": k} for k in app.state],
                  complete={"key": lambda typed: [k for k in app.state if k.startswith(typed)]})
    def key(key: str) -> str:
        return key

    assert app.state is None and seen == []
    async with Client(app) as client:
        assert seen == ["enter t"]
        assert await client.read_text("state://db") == "pool"
        assert [r["uri"] for r in await client.list_resources()] == ["state://db", "state://keys/db"]
        assert await client.complete("state://keys/{key}", "key", "d") == ["db"]
        async with Client(app) as second:  # one entry per process, shared
            assert await second.read_text("state://db") == "pool"
        assert seen == ["enter t"] and app.state == {"db": "pool"}
    assert seen == ["enter t", "exit"] and app.state is None


async def test_app_takes_an_async_context_manager_factory() -> None:
    closed: list[bool] = []

    @contextlib.asynccontextmanager
    async def pool() -> AsyncIterator[str]:
        try:
            yield "connected"
        finally:
            closed.append(True)

    app = App("t", lifespan=pool)

    @app.resource("state://pool")
    async def show(ctx: Context) -> str:
        return str(ctx.state)

    async with Client(app) as client:
        assert await client.read_text("state://pool") == "connected"
    assert closed == [True]


async def test_without_a_lifespan_the_state_is_none() -> None:
    app = App("t")

    @app.resource("state://none")
    def none(ctx: Context) -> str:
        return repr(ctx.state)

    async with Client(app) as client:
        assert await client.read_text("state://none") == "None"


async def test_a_raising_lifespan_fails_the_client_with_its_message_and_can_be_entered_again() -> None:
    app = App("t")
    attempts: list[int] = []

    @app.lifespan
    async def flaky() -> AsyncIterator[int]:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("database unreachable")
        yield len(attempts)

    with pytest.raises(LifespanFailed, match=r"flaky\(\) failed at start-up: RuntimeError: database unreachable"):
        async with Client(app):
            pass
    async with Client(app):
        assert app.state == 2


# --- mounted: ASGI lifespan events, or the host's lifespan --------------------------------------------


async def test_asgi_lifespan_events_enter_and_exit_the_app_s_lifespan() -> None:
    app = App("t")
    seen: list[str] = []

    @app.lifespan
    async def lifespan() -> AsyncIterator[str]:
        seen.append("enter")
        yield "state"
        seen.append("exit")

    asgi = ASGIApp(app)
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    task = asyncio.ensure_future(asgi({"type": "lifespan"}, inbox.get, send))
    await inbox.put({"type": "lifespan.startup"})
    while not sent:
        await asyncio.sleep(0.01)
    assert sent[-1]["type"] == "lifespan.startup.complete" and app.state == "state" and seen == ["enter"]
    await inbox.put({"type": "lifespan.shutdown"})
    await asyncio.wait_for(task, 5)
    assert sent[-1]["type"] == "lifespan.shutdown.complete" and seen == ["enter", "exit"] and app.state is None


async def test_a_raising_lifespan_fails_asgi_startup_with_its_message() -> None:
    app = App("t")

    @app.lifespan
    async def broken() -> AsyncIterator[None]:
        raise OSError("no such socket")
        yield

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "lifespan.startup"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await ASGIApp(app)({"type": "lifespan"}, receive, send)
    assert sent == [{"type": "lifespan.startup.failed",
                     "message": "the lifespan broken() failed at start-up: OSError: no such socket"}]


async def test_a_host_app_s_lifespan_runs_the_mounted_app_s_lifespan() -> None:
    from starlette import applications as starlette
    from starlette.routing import Mount

    app = App("t")
    seen: list[str] = []

    @app.lifespan
    async def lifespan() -> AsyncIterator[str]:
        seen.append("enter")
        yield "mounted state"
        seen.append("exit")

    @app.resource("state://mounted")
    def mounted(ctx: Context) -> str:
        return str(ctx.state)

    mcp = ASGIApp(app)
    host = starlette.Starlette(routes=[Mount("/api", app=mcp)], lifespan=mcp.lifespan)
    async with host.router.lifespan_context(host):
        assert seen == ["enter"]
        transport = httpx.ASGITransport(app=host)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            message, headers = modern("resources/read", {"uri": "state://mounted"})
            reply = await http.post("/api/mcp", json=message,
                                    headers={**headers, "mcp-name": "state://mounted",
                                             "accept": "application/json, text/event-stream"})
            assert reply.status_code == 200 and "mounted state" in reply.text, (reply.status_code, reply.text)
    assert seen == ["enter", "exit"]


# --- real processes -------------------------------------------------------------------------------


def test_stdio_handler_reads_the_state_and_sigterm_runs_the_exit(tmp_path: Path, monkeypatch: Any) -> None:
    log = tmp_path / "lifespan.log"
    monkeypatch.setenv("LIFESPAN_LOG", str(log))
    with RawServer(APP) as server:
        server.initialize()
        assert events(log) == ["enter"]
        reply = server.request(1, "resources/read", {"uri": "state://greeting"})
        assert reply["result"]["contents"][0]["text"] == GREETING
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(10) == 0
    assert events(log) == ["enter", "exit"]


def test_stdio_end_of_input_runs_the_exit(tmp_path: Path, monkeypatch: Any) -> None:
    log = tmp_path / "lifespan.log"
    monkeypatch.setenv("LIFESPAN_LOG", str(log))
    with RawServer(APP) as server:
        server.initialize()
        assert server.close() == 0
    assert events(log) == ["enter", "exit"]


def test_http_handler_reads_the_state_and_sigterm_runs_the_exit(tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    port = free_port()
    proc = subprocess.Popen(command("run", str(APP), "--transport", "http", "--port", str(port)),
                            env={**env(), "LIFESPAN_LOG": str(log)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        wait_for_port(port, proc)
        assert events(log) == ["enter"]  # before the first request
        url = f"http://127.0.0.1:{port}/mcp"
        headers = open_session(url)
        reply = post(url, {"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                           "params": {"uri": "state://greeting"}}, headers)
        assert GREETING in reply.text
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it stopped
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()
    assert events(log) == ["enter", "exit"]


def test_not_entered_at_import_nor_by_install(tmp_path: Path, monkeypatch: Any) -> None:
    log = tmp_path / "lifespan.log"
    monkeypatch.setenv("LIFESPAN_LOG", str(log))
    imported = subprocess.run([sys.executable, "-c", "import lifespan_app; print(lifespan_app.app.state)"],
                              cwd=APPS, capture_output=True, text=True, env=env(), timeout=60)
    assert imported.returncode == 0 and imported.stdout == "None\n", imported.stderr
    installed = cli("install", "claude-desktop", str(APP), "--config", str(tmp_path / "config.json"))
    assert installed.returncode == 0, installed.stderr
    assert (tmp_path / "config.json").exists()
    assert not log.exists()


def test_list_and_read_enter_and_exit_it_around_their_answer(tmp_path: Path, monkeypatch: Any) -> None:
    log = tmp_path / "lifespan.log"
    monkeypatch.setenv("LIFESPAN_LOG", str(log))
    read = cli("read", str(APP), "state://greeting")
    assert read.returncode == 0 and read.stdout == GREETING + "\n", read.stderr
    assert events(log) == ["enter", "exit"]
    listed = cli("list", str(APP))
    assert listed.returncode == 0 and "state://echo/greeting" in listed.stdout, listed.stderr
    assert events(log) == ["enter", "exit", "enter", "exit"]


@pytest.mark.parametrize("how", ["stdio", "http", "read"])
def test_a_raising_lifespan_stops_start_up_with_its_message(how: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("LIFESPAN_FAIL", "no database at /srv/app.db")
    said = "the lifespan connect() failed at start-up: RuntimeError: no database at /srv/app.db"
    if how == "http":
        port = free_port()
        done = subprocess.run(command("run", str(APP), "--transport", "http", "--port", str(port)),
                              capture_output=True, text=True, env=env(), timeout=60)
    elif how == "stdio":
        done = cli("run", str(APP), input="")
    else:
        done = cli("read", str(APP), "state://greeting")
    assert done.returncode != 0 and done.stdout == ""
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
    if how != "http":  # uvicorn adds its own "Application startup failed. Exiting."
        assert done.stderr == f"resourcekit: error: {said}\n"
