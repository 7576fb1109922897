"""The answers of an exchange (``_post.post``) besides one JSON body: an SSE stream, none.

A notification the core answers first (log messages, a listen acknowledgement) opens an SSE
stream that lasts until the final message (``answer_stream``); a request cancelled, or whose
session ended, gets no answer (``unanswered``).  A 2026-07-28 request's client is watched for a
disconnect only once its answer takes a while (``wake_later``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

from ...core import Connection
from ...eras import is_request_id
from ...methods.streaming import ByteStream
from ._headers import Headers, HTTPError, Receive, Send, respond
from ._sessions import Session
from ._sse import (
    CANCELLED,
    ENDED,
    PRIMING_VERSION,
    BoundedInbox,
    Inbox,
    OpenStreams,
    Stream,
    plain_event,
    sse_headers,
    write,
)

log = logging.getLogger("resourcekit")

# seconds a 2026-07-28 request waits for its answer before a disconnect of its client is watched
# for (a pending receive() in a task of its own, then cancelled, cost a quarter of a quick read)
WATCH_AFTER = 0.005
# the waits that began in this iteration of each loop, woken together WATCH_AFTER seconds after it
_WATCHED: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}


def issued(session: Session | None, conn: Connection) -> Headers:
    """The header that hands out the session id, once ``initialize`` succeeded."""
    return [(b"mcp-session-id", session.id.encode())] if session is not None and conn.protocol_version is not None \
        else []


def wake_later(waiter: asyncio.Future[None]) -> None:
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


async def answer_stream(
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
        if type(inbox) is not BoundedInbox:  # (a listen stream's is: it may overflow)
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
        if is_final(item):
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


def request_ids(message: Any) -> list[Any]:
    """Ids of the requests in a body that may be in flight (a response or a notification has none,
    and a request whose id is no string or integer was refused at once)."""
    if type(message) is dict:
        return [message["id"]] if "method" in message and is_request_id(message.get("id")) else []
    if type(message) is list:
        return [m["id"] for m in message if type(m) is dict and "method" in m and is_request_id(m.get("id"))]
    return []


def is_final(message: Any) -> bool:
    return type(message) is bytes or type(message) is list or type(message) is ByteStream or "id" in message
