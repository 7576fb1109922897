"""Reads of ``async def`` handlers on the short path over stdio (resourcekit/_fastread.py; over
HTTP: tests/test_http_fastpost.py): a task on the loop per read, not the general path's request
machinery, with the same answers, the replies of one loop iteration in one write, and
cancellation, the end of a session, ids in flight and the in-flight cap as on the general path."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

import anyio
import orjson
import pytest

from resourcekit import App, Blob, Limits, ResourceNotFound
from resourcekit._fastread import AsyncRead
from resourcekit.transports.stdio import serve_stdio
from tests.test_fastread import answered, read, session

pytestmark = pytest.mark.anyio


def async_app(gate: asyncio.Event | None = None, ran: list[str] | None = None) -> App:
    """test_fastread's demo resources, each an ``async def``; a long text, one with a lone
    surrogate, one that suspends (anyio), and one that waits for ``gate``."""
    app = App("t", telemetry=False)

    def add(uri: str, value: Any, **options: Any) -> None:
        async def handler() -> Any:
            return value

        app.resource(uri, **options)(handler)

    add("text://a", "hello")
    add("md://a", "# hi", mime_type="text/markdown")
    add("json://a", {"k": [1, 2]})
    add("blob://a", Blob(b"\x00\x01", "application/x-thing"))
    add("long://a", "x" * 5000)
    add("lone://a", "a\ud800b")

    @app.template("item://{n}")
    async def item(n: str) -> str:
        return f"item {n}"

    @app.resource("sleepy://a")
    async def sleepy() -> str:
        await anyio.sleep(0.01)  # a real suspension, anyio's: the read's task is a task like any
        return "awake"

    @app.resource("gone://a")
    async def gone() -> str:
        raise ResourceNotFound("gone://a")

    @app.resource("broken://a")
    async def broken() -> str:
        raise RuntimeError("boom")

    add("lone-long://a", "a\ud800b" * 200)  # past the short-text path
    add("lone-dict://a", {"k": "a\ud800b"})

    @app.template("missing://{n}")
    async def missing(n: str) -> str:
        raise ResourceNotFound(f"missing://{n}")

    @app.resource("stubborn://a")
    async def stubborn() -> str:
        assert gate is not None
        try:
            await gate.wait()
        except asyncio.CancelledError:  # swallowed: the read was cancelled all the same
            if ran is not None:
                ran.append("swallowed")
            return "too late"
        return "stubborn"

    @app.resource("slow://a")
    async def slow() -> str:
        assert gate is not None
        try:
            await gate.wait()
        except asyncio.CancelledError:
            if ran is not None:
                ran.append("cancelled")
            raise
        return "slow"

    return app


URIS = ["text://a", "md://a", "json://a", "blob://a", "long://a", "item://7", "sleepy://a", "gone://a", "broken://a",
        "nothing://x", "text://a"]


async def test_async_reads_answer_exactly_as_the_general_path() -> None:
    server, conn, fast = session(async_app())
    other, general_conn, general = session(async_app())
    general_conn.send_bytes = None  # no line transport: the general path
    try:
        for rid, uri in enumerate(URIS, 1):
            conn.feed(read(rid, uri))
            general_conn.feed(read(rid, uri))
        assert type(conn.inflight[1]) is AsyncRead  # the short path took it
        ids = set(range(1, len(URIS) + 1))
        got = await answered(fast, ids)
        assert got == await answered(general, ids)
        assert got[1]["result"]["contents"][0]["text"] == "hello"
        assert got[8]["error"]["code"] == -32002 and got[9]["error"]["code"] == -32603
        assert conn.inflight == {}
        # what a read records, as a sync read records it: the tracker's version, the session's
        version = got[1]["result"]["contents"][0]["_meta"]["io.resourcekit/version"]
        assert conn.seen["text://a"] == version == conn.app.tracker.version("text://a")
    finally:
        server.close()
        other.close()


async def test_a_result_json_cannot_carry_is_answered_as_the_general_path_answers_it_on_the_wire(
        caplog: pytest.LogCaptureFixture) -> None:
    server, conn, out = session(async_app())
    try:
        for rid, uri in enumerate(("lone://a", "lone-long://a", "lone-dict://a"), 1):
            conn.feed(read(rid, uri))  # a lone surrogate: no JSON encoder takes it
        got = await answered(out, {1, 2, 3})
        for rid in (1, 2):  # the text's reply could not be encoded
            assert got[rid]["error"] == {"code": -32603,
                                         "message": "Internal error: the result could not be encoded as JSON"}
        assert caplog.text.count("the result of resources/read could not be encoded") == 2
        # the dict's conversion to a text content fails first: the handler's failure, as there
        assert got[3]["error"] == {"code": -32603, "message": "Internal error"}
        assert conn.inflight == {}
    finally:
        server.close()


async def test_a_not_found_instance_leaves_no_cache_slot_and_a_failure_is_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    app = async_app()
    server, conn, out = session(app)
    try:
        conn.feed(read(1, "missing://1"))
        conn.feed(read(2, "broken://a"))
        got = await answered(out, {1, 2})
        assert got[1]["error"]["code"] == -32002 and "missing://1" not in app.router._cache
        assert got[2]["error"] == {"code": -32603, "message": "Internal error"}  # no traceback to the client
        assert "handler for resources/read failed" in caplog.text and "boom" in caplog.text
    finally:
        server.close()


async def test_the_replies_of_one_loop_iteration_go_out_in_one_write() -> None:
    server, conn, out = session(async_app())
    writes: list[bytes] = []
    conn.send_bytes = lambda data: (writes.append(data), out.extend(orjson.loads(x) for x in data.splitlines()))
    try:
        for rid in range(1, 11):
            conn.feed(read(rid, "text://a" if rid % 2 else f"item://{rid}"))
        assert set(await answered(out, set(range(1, 11)))) == set(range(1, 11))
        assert len(writes) == 1 and writes[0].count(b"\n") == 10
    finally:
        server.close()


async def test_a_waiting_async_read_holds_up_nobody_and_cancelling_it_cancels_its_handler() -> None:
    gate, ran = asyncio.Event(), []
    server, conn, out = session(async_app(gate, ran))
    try:
        conn.feed(read(1, "slow://a"))
        for rid in (2, 3):
            conn.feed(read(rid, "text://a"))
        assert set(await answered(out, {2, 3})) == {2, 3}
        assert type(conn.inflight[1]) is AsyncRead
        conn.feed(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}))
        for _ in range(100):
            if ran:
                break
            await asyncio.sleep(0.01)
        assert ran == ["cancelled"]  # the handler saw it, as on the general path
        gate.set()
        conn.feed(read(4, "slow://a"))  # the id and the handler are free again
        assert (await answered(out, {4}))[4]["result"]["contents"][0]["text"] == "slow"
        assert all(m.get("id") != 1 for m in out) and conn.inflight == {}
    finally:
        server.close()


async def test_a_handler_that_swallows_its_cancellation_is_not_answered() -> None:
    gate, ran = asyncio.Event(), []
    server, conn, out = session(async_app(gate, ran))
    try:
        conn.feed(read(1, "stubborn://a"))
        await asyncio.sleep(0.02)
        conn.feed(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}))
        await asyncio.sleep(0.05)
        assert ran == ["swallowed"] and out == [] and conn.inflight == {}
    finally:
        server.close()


EOF_APP = App("eof", telemetry=False)


@EOF_APP.resource("block://a")
async def _block() -> str:
    time.sleep(0.2)  # holds the loop while the client sends the next read and closes stdin
    return "blocked"


@EOF_APP.resource("yield://a")
async def _yielding() -> str:
    for _ in range(2):  # ends in the iteration in which the server wakes for the end of input
        await asyncio.sleep(0)
    return "hello"


def _eof_session() -> set[Any]:
    """serve_stdio on pipes: a read of block://a, then one of yield://a and the end of input."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    got: list[Any] = []

    def client() -> None:
        def send(message: dict[str, Any]) -> None:
            os.write(w_in, orjson.dumps(message) + b"\n")

        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        data = b""
        while b"\n" not in data:
            data += os.read(r_out, 65536)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "block://a"}})
        time.sleep(0.05)  # the server's loop is inside block()
        send({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "yield://a"}})
        os.close(w_in)
        while chunk := os.read(r_out, 65536):
            data += chunk
        got.extend(orjson.loads(line) for line in data.splitlines()[1:] if line.strip())

    thread = threading.Thread(target=client)
    thread.start()
    asyncio.run(serve_stdio(EOF_APP, stdin=os.fdopen(r_in, "rb", buffering=0), stdout_fd=w_out))
    thread.join(5)
    os.close(r_out)
    return {m.get("id") for m in got}


def test_a_reply_made_as_the_session_ends_is_still_written() -> None:
    """An async read that ends in the loop iteration in which its session ends (the end of input)
    is answered, as every read in flight at the end of input is (found by a second reviewer: its
    reply waited for the next iteration's write, after the writer closed)."""
    for _ in range(3):
        assert _eof_session() == {1, 2}


async def test_the_end_of_a_session_cancels_its_async_reads() -> None:
    gate, ran = asyncio.Event(), []
    server, conn, out = session(async_app(gate, ran))
    try:
        conn.feed(read(1, "slow://a"))
        await asyncio.sleep(0.02)
        conn.close()
        await asyncio.sleep(0.02)
        assert ran == ["cancelled"] and out == [] and conn.inflight == {}
    finally:
        server.close()


async def test_an_id_in_flight_and_the_inflight_cap_hold_for_async_reads() -> None:
    gate = asyncio.Event()
    app = async_app(gate)
    app.limits = Limits(max_inflight=2)
    server, conn, out = session(app)
    try:
        for rid in (1, 1, 2, 3):
            conn.feed(read(rid, "slow://a"))
        await asyncio.sleep(0.05)
        errors = [m for m in out if "error" in m]
        assert [e["error"]["code"] for e in errors] == [-32600, -32603]
        assert errors[1]["error"]["data"] == {"limit": "max_inflight", "max": 2}
        gate.set()
        assert set(await answered(out, {1, 2})) == {1, 2}
    finally:
        server.close()
