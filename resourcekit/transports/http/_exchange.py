"""One POST body in, one response out: nothing (202), one JSON body, or an SSE stream.

What goes back is decided by what the core answers, never by the method: nothing at
all means a notification or a response (202); a final message first means one JSON
body; a notification first (log messages, a listen acknowledgement) means an SSE stream
that lasts until the final message.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

from ...core import Connection
from ...methods.streaming import ByteStream
from ._bytes import PostSink, send_bytes
from ._headers import (
    JSON_TYPE,
    LENGTHS,
    Headers,
    HTTPError,
    Receive,
    Send,
    content_length,
    encode,
    forbidden_headers,
    respond,
    status_of,
)
from ._sessions import Session
from ._sse import CANCELLED, ENDED, PRIMING_VERSION, Inbox, OpenStreams, Stream, plain_event, sse_headers, write

log = logging.getLogger("resourcekit")

# seconds a 2026-07-28 request waits for its answer before a disconnect of its client is watched
# for (a pending receive() in a task of its own, then cancelled, cost a quarter of a quick read)
WATCH_AFTER = 0.005
# the waits that began in this iteration of each loop, woken together WATCH_AFTER seconds after it
_WATCHED: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}


async def exchange(
    conn: Connection,
    message: Any,
    receive: Receive,
    send: Send,
    accepts: tuple[bool, bool],
    streams: OpenStreams,
    *,
    watch: bool = False,
    session: Session | None = None,
    issue_session: bool = False,
    bound: int = 0,
    principal: Any = None,
    sink: PostSink | None = None,
) -> None:
    """Hand one POST body to the core and send back what it answers.

    ``watch``: a disconnect cancels the request (2026-07-28; noticed from ``WATCH_AFTER`` seconds
    on, a request answered sooner runs to its end); in the handshake era it does not (the
    client cancels with notifications/cancelled), so nobody listens.
    ``principal``: who sent it (the ``auth`` hook's answer), for the scope checks.
    ``bound``: a long-lived stream (``subscriptions/listen``) queues at most that many
    notifications for a client that does not read them; past it the stream is closed.
    ``sink``: the body is one ``resources/stream`` request (``_bytes``): answered with the
    resource's bytes, or with its JSON-RPC error as one JSON body.
    """
    inbox = Inbox(bound)
    conn.principal = principal  # the requests made here copy it (the core is synchronous up to them)
    if sink is None:
        conn.receive(message, inbox.put)
    else:
        sink.put = inbox.put
        conn.receive(message, sink)
    items = inbox.items
    # ``_request_ids``, inlined for the common body
    ids = ([message["id"]] if "method" in message and "id" in message else []) if type(message) is dict \
        else _request_ids(message)
    if not items:  # (an id that cannot be in flight, a list say, was answered: items are there)
        inflight = conn.inflight
        for rid in ids:
            if rid in inflight:
                break
        else:  # a notification or a response: nothing will follow
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            if session is not None:
                session.wake_cancelled()
            return
    if session is not None:
        session.waiting[inbox] = ids
    try:
        json_ok, sse_ok = accepts if sink is None else (True, False)  # bytes, else an error as JSON
        if items:
            first = inbox.pop()
        elif watch:  # the client is watched once the answer takes a while: most come sooner
            waiter = inbox.wait()
            _wake_later(waiter)
            await waiter
            first = inbox.pop() if items else await inbox.next(receive, True)
        else:  # nothing but the core wakes this inbox: ``next`` without its loop
            while not items:
                await inbox.wait()
            first = inbox.pop()
        if not sse_ok:  # a JSON-only client: request-scoped notifications cannot reach it
            while first is not None and first is not CANCELLED and first is not ENDED \
                    and not _is_final(first):
                first = await inbox.next(receive, watch)
        if first is None:
            return  # the client went away (the request is cancelled below)
        if first is CANCELLED or first is ENDED:
            await unanswered(send, first, sse_ok)
            return
        if type(first) is ByteStream:
            assert sink is not None
            await send_bytes(first, sink, inbox, receive, send, conn)
            return
        # the common answer, encoded by the core (or a result): 200, one JSON body
        if type(first) is bytes or (type(first) is dict and "result" in first and "id" in first):
            status = 200
        else:
            status = status_of(first, conn) if _is_final(first) else 0
        if status and (json_ok or status != 200):  # an HTTP-level error is JSON whatever Accept says
            body = encode(first)  # an unencodable result: its -32603
            size = len(body)
            headers = [JSON_TYPE, LENGTHS.get(size) or content_length(size)]
            if issue_session:
                headers.extend(_issued(session, conn))
            if status == 403:
                headers.extend(forbidden_headers(first, principal))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
        else:  # notifications come first (or the client takes nothing but SSE)
            await _stream(conn, first, inbox, receive, send, ids, watch, session,
                          _issued(session, conn) if issue_session else [], streams)
    finally:
        if sink is not None:
            sink.finish()
        inbox.stop_watching()
        if session is not None:
            session.waiting.pop(inbox, None)
        elif conn.inflight:  # a stateless request left behind (disconnect, error): cancel it
            conn.close()


def _issued(session: Session | None, conn: Connection) -> Headers:
    """The header that hands out the session id, once ``initialize`` succeeded."""
    return [(b"mcp-session-id", session.id.encode())] if session is not None and conn.protocol_version is not None \
        else []


def _wake_later(waiter: asyncio.Future[None]) -> None:
    """Wake ``waiter`` ``WATCH_AFTER`` seconds after this loop iteration, unless it is done by then:
    the waits of one iteration share a timer (one per request cost a tenth of a stateless read)."""
    if waiter.done():
        return
    loop = waiter.get_loop()
    batch = _WATCHED.get(loop)
    if batch is None:
        batch = _WATCHED[loop] = []
        loop.call_soon(_start_timer, loop, batch)
    batch.append(waiter)


def _start_timer(loop: asyncio.AbstractEventLoop, batch: list[asyncio.Future[None]]) -> None:
    """At the end of the iteration: the waits it began are woken together, later."""
    if _WATCHED.get(loop) is batch:
        del _WATCHED[loop]
    loop.call_later(WATCH_AFTER, _wake_all, batch)


def _wake_all(batch: list[asyncio.Future[None]]) -> None:
    for waiter in batch:
        if not waiter.done():
            waiter.set_result(None)


async def _stream(
    conn: Connection,
    first: Any,
    inbox: Inbox,
    receive: Receive,
    send: Send,
    ids: list[Any],
    watch: bool,
    session: Session | None,
    extra: Headers,
    streams: OpenStreams,
) -> None:
    """Answer as SSE: notifications as they come, then the final message."""
    try:
        streams.claim()
    except HTTPError:
        for rid in ids:
            conn.cancel(rid)
        raise
    stream = session.new_stream() if session is not None else None
    try:
        await send({"type": "http.response.start", "status": 200, "headers": sse_headers(extra)})
        if stream is not None and conn.protocol_version == PRIMING_VERSION:
            await write(send, stream.priming())
        relay = _relay(first, inbox, receive, send, watch, stream, streams.keepalive)
        if not inbox.limit:
            await relay
            return
        pump = asyncio.ensure_future(relay)
        inbox.on_overflow = functools.partial(_overflowed, conn, pump)
        try:
            await asyncio.wait({pump})
        finally:
            pump.cancel()
        if not pump.cancelled():
            pump.result()
    finally:
        streams.release()
        if stream is not None:
            stream.finish()


async def _relay(item: Any, inbox: Inbox, receive: Receive, send: Send, watch: bool, stream: Stream | None,
                 every: float) -> None:
    """Write notifications as they come, then the final message, and end the response.

    Once a GET with ``Last-Event-ID`` resumed this stream, the client has lost this
    response: it is ended, and what follows goes to the resumer only.
    """
    live = True
    while True:
        data = stream.event(item) if stream is not None else plain_event(item)
        if live and stream is not None and stream.resumer is not None:
            live = False
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        if live:
            await write(send, data)
        if _is_final(item):
            break
        item = await inbox.next(receive, watch, send if live else None, every)
        if item is None:
            return
        if item is CANCELLED or item is ENDED:
            break
    if live:
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _overflowed(conn: Connection, pump: asyncio.Future[None]) -> None:
    log.warning("a subscriptions/listen stream was closed: its client left %d notifications unread",
                conn.app.limits.max_pending_notifications)
    pump.cancel()
    conn.close()  # ends the listen request and its subscriptions


async def unanswered(send: Send, why: Any, sse_ok: bool) -> None:
    """The request will get no answer: its session ended, or the client cancelled it."""
    if why is ENDED:
        raise HTTPError(404, "Session terminated: initialize again")
    if sse_ok:  # an event stream that ends without a response
        await send({"type": "http.response.start", "status": 200, "headers": sse_headers()})
        await send({"type": "http.response.body", "body": b""})
    else:
        await respond(send, 202, b"")


def _request_ids(message: Any) -> list[Any]:
    """Ids of the requests in a body (a response or a notification has none)."""
    if type(message) is dict:
        return [message["id"]] if "method" in message and "id" in message else []
    if type(message) is list:
        return [m["id"] for m in message if type(m) is dict and "method" in m and "id" in m]
    return []


def _is_final(message: Any) -> bool:
    return type(message) is bytes or type(message) is list or type(message) is ByteStream or "id" in message
