"""Cancellation (``notifications/cancelled``): a cancelled request says nothing and never runs,
the rest of its batch is answered, for every session profile; over HTTP a cancelled read's POST
ends without a response and an async handler sees its cancellation."""

from __future__ import annotations

import asyncio
import threading

import orjson
import pytest

from resourcekit import App, Limits
from tests.support.asgi import ACCEPT, Call, in_flight, session, sid_of
from tests.support.session import Session
from tests.support.wire import cancelled, read, read_message

pytestmark = pytest.mark.anyio


# --- findings 8 and 13: workers, in-flight requests, cancelled batch members ----------------------


async def test_cancelled_reads_say_nothing_and_never_run_and_the_others_answer(profile: str) -> None:
    """Reads queued behind the only worker, one cancelled before it starts: its handler never runs
    and it is never answered; the reads ahead of it and after it are, and nothing stays in flight."""
    app = App("t", limits=Limits(max_workers=1))
    release = threading.Event()
    calls: list[str] = []
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    app.resource("counted://x")(lambda: calls.append("ran") or "x")
    async with Session(app, profile) as (conn, wire):
        try:
            conn.feed(read(1, "slow://x"))
            await asyncio.sleep(0.05)  # the only worker is busy with it
            conn.feed_lines([read(2, "counted://x"), read(3, "counted://x"), read(4, "counted://x")])
            conn.feed(cancelled(3))
            release.set()
            assert set(await wire.answered({1, 2, 4})) == {1, 2, 4}
            await asyncio.sleep(0.1)
            assert calls == ["ran", "ran"] and 3 not in wire.by_id()
            assert conn.inflight == {}
        finally:
            release.set()


async def test_a_cancellation_naming_no_id_cancels_nothing(profile: str) -> None:
    """``requestId`` true or false is no id (JSON has booleans): request 1 and request 0 run on."""
    app = App("t")
    release = threading.Event()
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    async with Session(app, profile) as (conn, wire):
        try:
            conn.feed_lines([read(0, "slow://x"), read(1, "slow://x")])
            await asyncio.sleep(0.05)
            for flag in (True, False):
                conn.feed(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                        "params": {"requestId": flag}}))
            release.set()
            assert set(await wire.answered({0, 1})) == {0, 1}
        finally:
            release.set()


async def test_a_batch_with_a_cancelled_member_is_answered(profile: str) -> None:
    """A 2025-03-26 batch whose slow member is cancelled: the batch is answered at once with its
    other members' replies alone."""
    app = App("t")
    release = threading.Event()
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    async with Session(app, profile, version="2025-03-26") as (conn, wire):
        try:
            conn.feed(orjson.dumps([read_message(1, "slow://x"), {"jsonrpc": "2.0", "id": 2, "method": "ping"}]))
            conn.feed(cancelled(1))
            got = await wire.answered({2}, 1.0)
            assert got[2]["result"] == {}
            assert [m for m in wire.messages if isinstance(m, list)] == [[got[2]]]
        finally:
            release.set()


# --- over HTTP: notifications/cancelled for a read whose POST is still waiting -------------------


def gated_app(gate: threading.Event | None = None, async_gate: asyncio.Event | None = None,
              ran: list[str] | None = None) -> App:
    """``text://a``; ``slow://sync``, blocking until ``gate`` is set; ``slow://async``, awaiting
    ``async_gate`` and noting in ``ran`` that it was cancelled."""
    app = App("t")
    app.resource("text://a")(lambda: "hello")

    @app.resource("slow://sync")
    def slow_sync() -> str:
        assert gate is not None and gate.wait(10)
        return "slow"

    @app.resource("slow://async")
    async def slow_async() -> str:
        assert async_gate is not None and ran is not None
        try:
            await async_gate.wait()
        except asyncio.CancelledError:
            ran.append("cancelled")
            raise
        return "slow"

    return app


@pytest.mark.parametrize("accept", [ACCEPT[1], "application/json"])
async def test_a_cancelled_read_over_http_says_nothing(served, accept: str) -> None:
    """A read in flight, cancelled by the client's ``notifications/cancelled`` (202): its POST ends
    without a response (an event stream with no event, or 202 to a JSON-only client), and the
    session serves the next read."""
    gate = threading.Event()
    asgi = served(gated_app(gate))
    headers = await session(asgi, ("accept", accept))
    try:
        slow = Call(asgi, body=read_message(1, "slow://sync"), headers=headers)
        await in_flight(asgi, headers, 1)
        cancel = await Call(asgi, body=orjson.loads(cancelled(1)), headers=headers).done()
        assert cancel.status == 202
        await slow.done()
        if accept == ACCEPT[1]:
            assert slow.status == 200 and slow.header(b"content-type") == b"text/event-stream"
            assert b"data:" not in slow.body_bytes
        else:
            assert slow.status == 202 and slow.body_bytes == b""
        gate.set()
        again = await Call(asgi, body=read_message(2, "text://a"), headers=headers).done()
        assert again.json()["result"]["contents"][0]["text"] == "hello"
        assert not asgi.sessions[sid_of(headers)].conn.inflight
    finally:
        gate.set()


async def test_cancelling_an_async_read_over_http_cancels_its_handler(served) -> None:
    """An ``async def`` read cancelled over HTTP: its handler sees the cancellation, its JSON-only
    POST ends with 202 and no body, its id leaves flight; a second such read, waiting when its
    session is deleted, is cancelled too and its POST gets 404."""
    gate, ran = asyncio.Event(), []
    asgi = served(gated_app(async_gate=gate, ran=ran))
    headers = await session(asgi)
    slow = Call(asgi, body=read_message(1, "slow://async"), headers=[("accept", "application/json"), headers[1]])
    await in_flight(asgi, headers, 1)
    assert (await Call(asgi, body=orjson.loads(cancelled(1)), headers=headers).done()).status == 202
    await slow.done()
    assert slow.status == 202 and slow.body_bytes == b""
    assert ran == ["cancelled"] and not asgi.sessions[sid_of(headers)].conn.inflight
    again = Call(asgi, body=read_message(2, "slow://async"), headers=headers)
    await in_flight(asgi, headers, 2)
    assert (await Call(asgi, "DELETE", headers=headers).done()).status == 204
    assert (await again.done()).status == 404
    assert ran == ["cancelled", "cancelled"]
