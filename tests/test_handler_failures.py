"""A handler that raises what is not an ``Exception`` (issue 29, point 1), against real processes:
a ``CancelledError`` nobody asked for (a handler awaiting a shared task another client's cancel
cancelled), ``SystemExit`` and ``KeyboardInterrupt``, from sync and async handlers.  Each is a
handler failure: answered -32603 at once, logged naming the method, the URI and the handler
(``module:function``), its ``max_inflight`` slot free again and the server serving on.  The same
in-process for every session profile: ``test_reading``."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.support.http_server import http_server_process, post
from tests.support.process import APPS, RawServer
from tests.support.wire import read, read_message, request

APP = APPS / "raising_app.py"
HANDLERS = {"sync": "raising_app:raise_sync", "async": "raising_app:raise_async"}
RAISED = ["cancelled", "exit", "interrupt"]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_over_stdio_more_such_reads_than_max_inflight_are_all_answered_and_the_next_is_served(kind: str) -> None:
    with RawServer(APP) as server:
        server.initialize()
        count = 300  # more than max_inflight (256): a slot kept by each would leave the last "busy"
        answers = {}
        for wave in range(0, count, 50):  # 50 in flight at a time: each wave under the cap
            server.send_raw(b"".join(read(rid, f"{kind}://{RAISED[rid % 3]}") + b"\n"
                                     for rid in range(wave + 1, wave + 51)))
            while len(answers) < wave + 50:
                message = server.recv()
                answers[message["id"]] = message
        assert {m["error"]["code"] for m in answers.values()} == {-32603}
        assert {m["error"]["message"] for m in answers.values()} == {"Internal error"}
        response = server.request("next", "resources/read", {"uri": "fine://x"})
        assert response["result"]["contents"][0]["text"] == "fine"
        server.close()
    for what in RAISED:
        assert f"resources/read {kind}://{what} (handler {HANDLERS[kind]}) failed" in server.stderr


def test_over_http_the_post_is_answered_at_once(tmp_path: Path) -> None:
    log = tmp_path / "stderr"
    with http_server_process(APP, log=log) as url:
        init = post(url, request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                   "clientInfo": {"name": "t", "version": "0"}}))
        headers = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        for kind in ("sync", "async"):
            for what in RAISED:
                started = time.monotonic()
                response = post(url, read_message(1, f"{kind}://{what}"), headers, timeout=5)
                assert response.status_code == 200
                assert response.json()["error"] == {"code": -32603, "message": "Internal error"}
                assert time.monotonic() - started < 2  # answered, not left open
        assert post(url, read_message(2, "fine://x"), headers).json()["result"]["contents"][0]["text"] == "fine"
    logged = log.read_text()
    for kind in ("sync", "async"):
        for what in RAISED:
            assert f"resources/read {kind}://{what} (handler {HANDLERS[kind]}) failed" in logged


@pytest.mark.anyio
@pytest.mark.parametrize("raised", [asyncio.CancelledError, KeyboardInterrupt, SystemExit])
async def test_a_lister_or_a_completer_raising_a_base_exception_is_answered(
        raised: type[BaseException], caplog: pytest.LogCaptureFixture) -> None:
    """A lister's or a completer's own cancellation, SystemExit or KeyboardInterrupt is a failure of
    its request: -32603, logged, and the session serves on."""
    from resourcekit import App, MCPError
    from resourcekit.testing import Client

    def boom(*_: object) -> list[str]:
        raise raised()

    app = App("t")
    app.template("item://{n}", lister=boom, complete={"n": boom})(lambda n: f"item {n}")
    app.resource("fine://x")(lambda: "fine")
    async with Client(app) as client:
        with pytest.raises(MCPError) as listed:
            await client.list_resources()
        with pytest.raises(MCPError) as completed:
            await client.complete("item://{n}", "n", "1")
        assert listed.value.code == completed.value.code == -32603
        assert await client.read_text("fine://x") == "fine"
    assert "resources/list" in caplog.text and "completion/complete" in caplog.text
