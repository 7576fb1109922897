"""HTTP sessions and their streams under hostile, broken and slow clients, ``ASGIApp`` driven
in-process (findings 5, 7, 9 and L3 of the 2026-11-23 review): the session table, a session's
principal, replay bounded in bytes and time, backpressure on GET and listen streams; a read whose
session ends or expires."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from resourcekit import App, Limits
from resourcekit.http import ASGIApp, HTTPError
from tests.support.asgi import ACCEPT, INIT, Call, app_gate, get_stream, in_flight, make_app, session, sid_of
from tests.support.wire import modern_meta, read_message, request

pytestmark = pytest.mark.anyio


# --- one home for limits ------------------------------------------------------------------


def test_asgi_app_takes_its_limits_from_the_app() -> None:
    app = make_app(max_sessions=7, session_idle_timeout=42.0)
    asgi = ASGIApp(app)
    assert (asgi.max_sessions, asgi.session_idle_timeout) == (7, 42.0)
    assert ASGIApp(App("defaults")).session_idle_timeout == Limits().session_idle_timeout == 600.0
    assert ASGIApp(app, max_sessions=3).max_sessions == 3  # the keyword still overrides


# --- finding 9: sessions --------------------------------------------------------------------


async def test_full_table_evicts_the_least_recently_used_idle_session(served) -> None:
    asgi = served(make_app(max_sessions=2))
    first, second = await session(asgi), await session(asgi)
    assert (await Call(asgi, body=request(1, "ping"), headers=first).done()).status == 200  # first used last
    third = await session(asgi)
    assert (await Call(asgi, body=request(2, "ping"), headers=second).done()).status == 404
    for alive in (first, third):
        assert (await Call(asgi, body=request(3, "ping"), headers=alive).done()).status == 200


async def test_full_table_of_busy_sessions_answers_503(served) -> None:
    asgi = served(make_app(max_sessions=2))
    streams = [get_stream(asgi, await session(asgi)) for _ in range(2)]
    for stream in streams:
        await stream.wait_for_body(b"id: ")  # open: the priming event
    refused = await Call(asgi, body=INIT, headers=[ACCEPT]).done()
    assert refused.status == 503 and refused.header(b"retry-after") == b"5"
    streams[0].gone.set()  # a client goes away: its session is idle, and makes room
    await streams[0].done()
    assert (await Call(asgi, body=INIT, headers=[ACCEPT]).done()).status == 200


async def test_a_session_belongs_to_the_principal_that_created_it(served) -> None:
    def auth(headers: dict[str, str]) -> str:
        token = headers.get("authorization", "")
        if not token.startswith("Bearer "):
            raise HTTPError(401, "who are you?")
        return token[7:]

    asgi = served(make_app(), auth=auth)
    init = await Call(asgi, body=INIT, headers=[ACCEPT, ("authorization", "Bearer alice")]).done()
    sid = init.header(b"mcp-session-id")
    assert init.status == 200 and sid is not None
    as_alice = [ACCEPT, ("mcp-session-id", sid.decode()), ("authorization", "Bearer alice")]
    as_bob = [ACCEPT, ("mcp-session-id", sid.decode()), ("authorization", "Bearer bob")]
    for method in ("POST", "GET", "DELETE"):
        body = request(1, "ping") if method == "POST" else None
        assert (await Call(asgi, method, body=body, headers=as_bob).done()).status == 404
    assert (await Call(asgi, body=request(2, "ping"), headers=as_alice).done()).status == 200


async def test_get_stream_ends_after_its_lifetime(served) -> None:
    asgi = served(make_app(max_stream_lifetime=0.2))
    stream = get_stream(asgi, await session(asgi))
    await stream.done()
    assert stream.status == 200 and stream.complete  # ended cleanly: the client reconnects
    assert asgi.open_streams == 0


# --- finding 5 and L3: replay ----------------------------------------------------------------


async def test_replay_is_bounded_in_bytes_per_session(served) -> None:
    asgi = served(make_app(max_replay_bytes=64 * 1024))
    headers = await session(asgi, ("accept", "text/event-stream"))
    calls = [await Call(asgi, body=request(i, "resources/read", {"uri": "big://ten-k"}), headers=headers).done()
             for i in range(1, 41)]
    kept = asgi.sessions[sid_of(headers)].replay
    assert 0 < kept.size <= 64 * 1024
    assert kept.size == sum(len(e[2]) for s in kept.streams.values() for e in s.events)
    last = calls[-1].events()[0]["id"]  # the newest response is still resumable
    first = calls[0].events()[0]["id"]  # the oldest was dropped
    key, _, n = last.rpartition(".")
    resumed = await get_stream(asgi, headers, raw=[(b"last-event-id", f"{key}.{int(n) - 1}".encode())]).done()
    assert b'"id":40,' in resumed.body_bytes
    key, _, n = first.rpartition(".")
    early = await get_stream(asgi, headers, raw=[(b"last-event-id", f"{key}.{int(n) - 1}".encode())]).done()
    assert b'"id":1,' not in early.body_bytes  # dropped to stay within the budget


async def test_finished_stream_kept_only_for_a_grace_period(served) -> None:
    asgi = served(make_app())
    headers = await session(asgi, ("accept", "text/event-stream"))
    call = await Call(asgi, body=request(1, "resources/read", {"uri": "counter://value"}), headers=headers).done()
    event_id = call.events()[0]["id"]
    key, _, _ = event_id.rpartition(".")
    again = await get_stream(asgi, headers, raw=[(b"last-event-id", f"{key}.0".encode())]).done()
    assert again.status == 200 and b'"id":1' in again.body_bytes  # within the grace period
    huge = await get_stream(asgi, headers, raw=[(b"last-event-id", f"{key}.{'9' * 5000}".encode())]).done()
    assert huge.status == 400 and b"Last-Event-ID" in huge.body_bytes
    asgi.sessions[sid_of(headers)].replay.grace = 0.0
    late = await get_stream(asgi, headers, raw=[(b"last-event-id", f"{key}.0".encode())]).done()
    assert late.status == 400


async def test_resumed_post_stream_sends_each_message_on_one_stream_only(served) -> None:
    app = make_app()
    asgi = served(app)
    headers = await session(asgi)
    await Call(asgi, body=request(1, "logging/setLevel", {"level": "info"}), headers=headers).done()
    post = Call(asgi, body=request(2, "resources/read", {"uri": "slow://logged"}), headers=headers)
    await post.wait_for_body(b"started")
    log_id = next(e for e in post.events() if "started" in e["data"])["id"]
    resumer = get_stream(asgi, headers, raw=[(b"last-event-id", log_id.encode())])
    await resumer.delivered.wait()  # the resumer's response started: it has taken the stream over
    app_gate(app).set()
    await resumer.done()
    await post.done()
    assert b"finished" in resumer.body_bytes
    assert b"finished" not in post.body_bytes and post.complete  # the cut stream ended, without it


# --- finding 7: backpressure ------------------------------------------------------------------


async def test_stalled_get_stream_queues_one_update_per_uri(served) -> None:
    app = make_app()
    asgi = served(app)
    headers = await session(asgi)
    await Call(asgi, body=request(1, "resources/subscribe", {"uri": "counter://value"}), headers=headers).done()
    stream = get_stream(asgi, headers, stall_after=1)  # stuck on the priming event
    await stream.stalled.wait()
    session_ = asgi.sessions[sid_of(headers)]
    assert session_.listener is not None
    for _ in range(500):
        session_.deliver({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                          "params": {"uri": "counter://value"}})
        session_.deliver({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
    assert len(session_.listener) == 2
    stream.task.cancel()


async def test_stream_that_cannot_keep_up_is_closed_with_a_warning(served, caplog) -> None:
    asgi = served(make_app(max_pending_notifications=10))
    headers = await session(asgi)
    stream = get_stream(asgi, headers, stall_after=1)  # stuck on the priming event
    await stream.stalled.wait()
    session_ = asgi.sessions[sid_of(headers)]
    with caplog.at_level(logging.WARNING, logger="resourcekit"):
        for i in range(11):
            session_.deliver({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": i}})
        await stream.done()
    assert not stream.complete  # the server drops the connection
    assert session_.listener is None and asgi.open_streams == 0
    assert any("GET stream closed" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    for i in range(100):  # with no stream open, the session's buffer is bounded too
        session_.deliver({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": i}})
    assert len(session_.outbox) <= 10


async def test_stalled_listen_stream_coalesces_then_closes(served, caplog) -> None:
    asgi = served(make_app(max_pending_notifications=5))
    listen = Call(asgi, body=request("L", "subscriptions/listen", {
        "_meta": modern_meta(), "notifications": {"resourcesListChanged": True}}),
        headers=[ACCEPT, ("mcp-protocol-version", "2026-07-28"), ("mcp-method", "subscriptions/listen")],
        stall_after=1)
    await listen.stalled.wait()  # the acknowledgement is stuck in a full socket
    subscriptions = asgi.server.subscriptions
    for _ in range(200):
        subscriptions.list_changed()
    await asyncio.sleep(0)
    assert not listen.task.done()  # 200 list_changed are one pending message
    (listen_request,) = list(subscriptions._listens)
    with caplog.at_level(logging.WARNING, logger="resourcekit"):
        for i in range(6):
            listen_request.notify({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": i}})
        await listen.done()
    assert not subscriptions._listens and asgi.open_streams == 0  # the listen ended with its stream
    assert any("listen stream was closed" in r.getMessage() for r in caplog.records)


# --- a read and its session --------------------------------------------------------------------


async def test_a_read_waiting_when_its_session_ends_gets_404(served) -> None:
    """A read whose sync handler is still running when the client deletes its session: the POST
    waiting for it is answered 404 (initialize again), not left open nor answered late."""
    gate = threading.Event()
    app = App("t")

    @app.resource("slow://a")
    def slow() -> str:
        assert gate.wait(10)
        return "slow"

    asgi = served(app)
    headers = await session(asgi)
    try:
        waiting = Call(asgi, body=read_message(1, "slow://a"), headers=headers)
        await in_flight(asgi, headers, 1)
        assert (await Call(asgi, "DELETE", headers=headers).done()).status == 204
        assert (await waiting.done()).status == 404
        assert waiting.json()["error"]["code"] == -32600
    finally:
        gate.set()


async def test_a_plain_read_of_an_idle_or_unknown_session_is_refused(served) -> None:
    """A read naming an unknown session id gets 404, one of a session idle past its timeout 404
    (and the session is gone), one without a session id 400."""
    asgi = served(make_app())
    headers = await session(asgi)
    counter = read_message(1, "counter://value")
    assert (await Call(asgi, body=counter, headers=headers).done()).status == 200
    unknown = await Call(asgi, body=counter, headers=[ACCEPT, ("mcp-session-id", "no-such-session")]).done()
    assert unknown.status == 404 and unknown.json()["error"]["code"] == -32600
    asgi.sessions[sid_of(headers)].last_seen -= asgi.sessions.limits.idle_timeout + 1
    expired = await Call(asgi, body=counter, headers=headers).done()
    assert expired.status == 404 and "expired" in expired.json()["error"]["message"]
    assert sid_of(headers) not in asgi.sessions
    without = await Call(asgi, body=counter, headers=[ACCEPT]).done()
    assert without.status == 400 and "Mcp-Session-Id" in without.json()["error"]["message"]
