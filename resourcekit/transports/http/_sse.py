"""Server-sent events: encoding, the inbox a response waits on, resumable streams.

A handshake-era stream numbers its events ``KEY.N`` and keeps the last few, so a client
can resume it with GET + ``Last-Event-ID``; 2026-07-28 streams carry no ids.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import orjson

from ._headers import Headers, HTTPError, Receive, Send

KEEPALIVE = b": keep-alive\n\n"
PRIMING_VERSION = "2025-11-25"  # the first revision with the SSE priming event (SEP-1699)

# what a waiting response can be woken with besides a message from the core
CANCELLED: Any = object()  # notifications/cancelled took the request away: no answer follows
ENDED: Any = object()  # the session (or the server) ended, or a newer GET stream took over


class Inbox:
    """Messages for one response, in order; cheaper than an asyncio.Queue.

    ``watcher`` is the pending ``receive()`` that reports the client going away, for
    the responses that need to know (2026-07-28 requests, long-lived streams).
    """

    __slots__ = ("items", "waiter", "watcher")

    def __init__(self) -> None:
        self.items: deque[Any] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.watcher: asyncio.Future[dict[str, Any]] | None = None

    def put(self, message: Any) -> None:
        self.items.append(message)
        self.wake()

    def wake(self, *_: object) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def wait(self) -> asyncio.Future[None]:
        waiter = self.waiter = asyncio.get_running_loop().create_future()
        if self.items:
            waiter.set_result(None)
        return waiter

    def take(self) -> list[Any]:
        """The messages not yet consumed (sentinels aside), removed."""
        items = [m for m in self.items if m is not ENDED and m is not CANCELLED]
        self.items.clear()
        return items

    def stop_watching(self) -> None:
        if self.watcher is not None and not self.watcher.done():
            self.watcher.cancel()

    async def next(self, receive: Receive, watch: bool, keepalive: Send | None = None, every: float = 0.0) -> Any:
        """The next message for this response, or None when the client went away.

        ``watch``: notice a disconnect. ``keepalive``: on a quiet stream, write a comment
        line there every ``every`` seconds.
        """
        if self.items:
            return self.items.popleft()
        loop = asyncio.get_running_loop()
        while True:
            if watch and self.watcher is None:
                self.watcher = asyncio.ensure_future(receive())
                self.watcher.add_done_callback(self.wake)
            timer = loop.call_later(every, self.wake) if keepalive is not None else None
            await self.wait()
            if timer is not None:
                timer.cancel()
            if self.items:
                return self.items.popleft()
            watcher = self.watcher
            if watcher is not None and watcher.done():
                self.watcher = None
                if watcher.cancelled() or watcher.result().get("type") == "http.disconnect":
                    return None
                continue  # some other message: keep watching
            if keepalive is not None:
                await keepalive({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})


class Stream:
    """One SSE stream of a session: events are numbered ``KEY.N`` and the last few kept,
    so a client can resume this stream (and only this one) with GET + ``Last-Event-ID``."""

    __slots__ = ("done", "events", "key", "last", "resumer")

    def __init__(self, key: bytes, replay: int) -> None:
        self.key = key
        self.last = 0
        self.events: deque[tuple[int, bytes]] = deque(maxlen=replay)
        self.resumer: Inbox | None = None  # a GET that resumed this POST stream while it runs
        self.done = False

    def event(self, message: Any) -> bytes:
        self.last += 1
        data = b"id: %s.%d\nevent: message\ndata: %s\n\n" % (self.key, self.last, orjson.dumps(message))
        self.events.append((self.last, data))
        if self.resumer is not None:
            self.resumer.put(data)
        return data

    def priming(self) -> bytes:
        """An id and empty data, so the client can resume from the very start (2025-11-25)."""
        self.last += 1
        return b"id: %s.%d\ndata: \n\n" % (self.key, self.last)

    def after(self, number: int) -> list[bytes]:
        return [data for n, data in self.events if n > number]

    def finish(self) -> None:
        self.done = True
        if self.resumer is not None:
            self.resumer.put(ENDED)


class OpenStreams:
    """The SSE responses open at one endpoint, counted against ``limit`` (beyond it, 503),
    and how many seconds a quiet one waits before a keep-alive line."""

    __slots__ = ("count", "keepalive", "limit")

    def __init__(self, limit: int, keepalive: float) -> None:
        self.count = 0
        self.limit = limit
        self.keepalive = keepalive

    def claim(self) -> None:
        if self.count >= self.limit:
            raise HTTPError(503, "Too many open streams", [(b"retry-after", b"5")])
        self.count += 1

    def release(self) -> None:
        self.count -= 1


async def resume(stream: Stream, replay: list[bytes], receive: Receive, send: Send, streams: OpenStreams) -> None:
    """GET + Last-Event-ID of a POST stream: what it missed, then the rest live."""
    streams.claim()
    resumer: Inbox | None = None
    try:
        if not stream.done:
            if stream.resumer is not None:
                stream.resumer.put(ENDED)
            resumer = stream.resumer = Inbox()
        await send({"type": "http.response.start", "status": 200, "headers": sse_headers()})
        for data in replay:
            await write(send, data)
        while resumer is not None:
            item = await resumer.next(receive, True, send, streams.keepalive)
            if item is None:
                return
            if item is ENDED:
                break
            await write(send, item)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        streams.release()
        if resumer is not None:
            resumer.stop_watching()
            if stream.resumer is resumer:
                stream.resumer = None


def sse_headers(extra: Headers | None = None) -> Headers:
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
               (b"x-accel-buffering", b"no")]
    return headers + extra if extra else headers


def plain_event(message: Any) -> bytes:
    """An SSE event without an id: 2026-07-28 streams are not resumable."""
    return b"event: message\ndata: " + orjson.dumps(message) + b"\n\n"


async def write(send: Send, data: bytes) -> None:
    """One chunk of a response that goes on."""
    await send({"type": "http.response.body", "body": data, "more_body": True})
