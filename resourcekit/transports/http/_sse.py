"""Server-sent events: encoding, the inbox a response waits on, resumable streams.

A handshake-era stream numbers its events ``KEY.N`` and keeps the last few, so a client
can resume it with GET + ``Last-Event-ID``; 2026-07-28 streams carry no ids.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ...methods.subscriptions import coalescing_key, newest_wins
from ._headers import Headers, HTTPError, Receive, Send, encode

KEEPALIVE = b": keep-alive\n\n"
PRIMING_VERSION = "2025-11-25"  # the first revision with the SSE priming event (SEP-1699)
FINISHED_GRACE = 30.0  # seconds a finished stream stays resumable
POST_STREAMS_KEPT = 64  # streams a session keeps for Last-Event-ID at most

# what a waiting response can be woken with besides a message from the core
CANCELLED: Any = object()  # notifications/cancelled took the request away: no answer follows
ENDED: Any = object()  # the session (or the server) ended, or a newer GET stream took over

class Inbox(deque[Any]):
    """Messages for one response, in order (the inbox is their deque); cheaper than an asyncio.Queue.

    ``watcher`` is the pending ``receive()`` that reports the client going away, for
    the responses that need to know (2026-07-28 requests, long-lived streams).

    One is made per POST, so it has no ``__init__``: what it has not set yet is read from the
    class.  An inbox is itself whatever it holds (a key of ``Session.waiting``), so it hashes
    and compares as an object.  GET and listen streams take a ``BoundedInbox``.
    """

    __hash__ = object.__hash__  # type: ignore[assignment]
    __eq__ = object.__eq__
    __ne__ = object.__ne__

    waiter: asyncio.Future[None] | None = None
    watcher: asyncio.Future[dict[str, Any]] | None = None

    def put(self, message: Any) -> None:
        self.append(message)
        waiter = self.waiter  # ``wake``, written out: a call less on every answer
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def wake(self, *_: object) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def wait(self) -> asyncio.Future[None]:
        waiter = self.waiter = asyncio.get_running_loop().create_future()
        if self:
            waiter.set_result(None)
        return waiter

    def take(self) -> list[Any]:
        """The messages not yet consumed (sentinels aside), removed."""
        items = [m for m in self if m is not ENDED and m is not CANCELLED]
        self.clear()
        return items

    def stop_watching(self) -> None:
        if self.watcher is not None and not self.watcher.done():
            self.watcher.cancel()

    async def next(self, receive: Receive, watch: bool, keepalive: Send | None = None, every: float = 0.0) -> Any:
        """The next message for this response, or None when the client went away.

        ``watch``: notice a disconnect. ``keepalive``: on a quiet stream, write a comment
        line there every ``every`` seconds.
        """
        if self:
            return self.popleft()
        loop = asyncio.get_running_loop()
        while True:
            if watch and self.watcher is None:
                self.watcher = asyncio.ensure_future(receive())
                self.watcher.add_done_callback(self.wake)
            timer = loop.call_later(every, self.wake) if keepalive is not None else None
            await self.wait()
            if timer is not None:
                timer.cancel()
            if self:
                return self.popleft()
            watcher = self.watcher
            if watcher is not None and watcher.done():
                self.watcher = None
                if watcher.cancelled() or watcher.result().get("type") == "http.disconnect":
                    return None
                continue  # some other message: keep watching
            if keepalive is not None:
                await keepalive({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})


class BoundedInbox(Inbox):
    """An inbox of at most ``limit`` messages (GET and listen streams): an ``updated`` or
    ``content_changed`` for a URI already queued, or a second ``list_changed``, is merged into
    the queued one; past ``limit`` other messages the inbox *overflows*: it is emptied, takes
    nothing more, and ``on_overflow`` is called (the stream is closed)."""

    def __init__(self, limit: int, on_overflow: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.limit = limit
        self.keys: dict[tuple[str, ...], Any] = {}  # coalescing key -> the queued message
        self.others = 0  # queued messages that do not coalesce
        self.overflowed = False
        self.on_overflow = on_overflow

    def put(self, message: Any) -> None:
        if self.overflowed:
            return
        key = coalescing_key(message)
        if key is not None:
            queued = self.keys.get(key)
            if queued is not None:
                if newest_wins(message):
                    queued.clear()  # nobody else holds a queued message
                    queued.update(message)
                return
            self.keys[key] = message
        elif message is not ENDED and message is not CANCELLED:
            self.others += 1
            if self.others > self.limit:
                self.overflow()
                return
        super().put(message)

    def overflow(self) -> None:
        self.overflowed = True
        self.clear()
        self.keys.clear()
        self.others = 0
        if self.on_overflow is not None:
            self.on_overflow()

    def popleft(self) -> Any:
        message = super().popleft()
        key = coalescing_key(message)
        if key is not None:
            if self.keys.get(key) is message:
                del self.keys[key]
        elif message is not ENDED and message is not CANCELLED:
            self.others -= 1
        return message

    def take(self) -> list[Any]:
        items = super().take()
        self.keys.clear()
        self.others = 0
        return items


class Stream:
    """One SSE stream of a session: events are numbered ``KEY.N`` and the last few kept
    (within the session's ``Replay`` budget), so a client can resume this stream, and
    only this one, with GET + ``Last-Event-ID``."""

    __slots__ = ("done", "events", "finished_at", "key", "last", "replay", "resumer")

    def __init__(self, key: bytes, replay: Replay) -> None:
        self.key = key
        self.last = 0
        self.replay = replay
        self.events: deque[tuple[int, int, bytes]] = deque()  # (session-wide order, N, event)
        self.resumer: Inbox | None = None  # a GET that resumed this POST stream while it runs
        self.done = False
        self.finished_at = 0.0

    def event(self, message: Any) -> bytes:
        """Number and keep one event; a resumer (if any) gets it too."""
        self.last += 1
        data = b"id: %s.%d\nevent: message\ndata: %s\n\n" % (self.key, self.last, encode(message))
        self.replay.keep(self, self.last, data)
        if self.replay.mirror is not None:
            self.replay.mirror(self.key, self.last, data)
        if self.resumer is not None:
            self.resumer.put(data)
        return data

    def priming(self) -> bytes:
        """An id and empty data, so the client can resume from the very start (2025-11-25)."""
        self.last += 1
        if self.replay.mirror is not None:
            self.replay.mirror(self.key, self.last, b"")
        return b"id: %s.%d\ndata: \n\n" % (self.key, self.last)

    def after(self, number: int) -> list[bytes]:
        return [data for _, n, data in self.events if n > number]

    def finish(self) -> None:
        self.done = True
        self.finished_at = time.monotonic()
        if self.replay.mirror is not None:
            self.replay.mirror(self.key, self.last, None)
        if self.resumer is not None:
            self.resumer.put(ENDED)


class Replay:
    """A session's streams and the events they keep for ``Last-Event-ID``.

    At most ``budget`` bytes in all, whole events dropped oldest first (an event larger
    than the budget is never kept), at most ``per_stream`` events a stream, and a
    finished stream only ``grace`` seconds: resumption exists for streams cut before
    their response, which a client notices at once.
    """

    __slots__ = ("budget", "grace", "mirror", "per_stream", "seq", "size", "streams")

    def __init__(self, budget: int, per_stream: int, grace: float = FINISHED_GRACE) -> None:
        self.budget = budget
        self.per_stream = per_stream
        self.grace = grace
        self.seq = 0
        self.size = 0  # bytes of the events kept
        self.streams: dict[bytes, Stream] = {}
        # scale-out: (stream key, N, event or None once finished), so other workers can resume it
        self.mirror: Callable[[bytes, int, bytes | None], None] | None = None

    def open(self, key: bytes) -> Stream:
        self.prune()
        stream = self.streams[key] = Stream(key, self)
        return stream

    def keep(self, stream: Stream, number: int, data: bytes) -> None:
        if len(data) > self.budget or stream.key not in self.streams:
            return
        self.seq += 1
        stream.events.append((self.seq, number, data))
        self.size += len(data)
        if len(stream.events) > self.per_stream:
            self.size -= len(stream.events.popleft()[2])
        while self.size > self.budget:
            oldest = min((s for s in self.streams.values() if s.events), key=lambda s: s.events[0][0])
            self.size -= len(oldest.events.popleft()[2])

    def prune(self) -> None:
        """Forget finished streams past their grace period, and the oldest beyond the count."""
        cutoff = time.monotonic() - self.grace
        finished = [s for s in self.streams.values() if s.done]
        excess = len(self.streams) - POST_STREAMS_KEPT
        for stream in finished:
            if stream.finished_at < cutoff or excess > 0:
                excess -= 1
                self.forget(stream)

    def forget(self, stream: Stream) -> None:
        if self.streams.pop(stream.key, None) is stream:
            self.size -= sum(len(data) for _, _, data in stream.events)
            stream.events.clear()


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
    return b"event: message\ndata: " + encode(message) + b"\n\n"


async def write(send: Send, data: bytes) -> None:
    """One chunk of a response that goes on."""
    await send({"type": "http.response.body", "body": data, "more_body": True})
