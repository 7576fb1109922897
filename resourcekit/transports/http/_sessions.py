"""Handshake-era sessions: the record of one, and the table of all of them.

``initialize`` creates a session and ``Mcp-Session-Id`` names it afterwards. A session
owns its Connection, its SSE streams (for resumption), the open GET stream and what
waits for one; it ends on DELETE, at shutdown, or after ``idle_timeout`` seconds
without a request while nothing is open.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ...protocol import Connection
from ._headers import HTTPError
from ._sse import CANCELLED, ENDED, Inbox, Stream

log = logging.getLogger("resourcekit")

POST_STREAMS_KEPT = 64  # finished POST streams a session keeps for Last-Event-ID


class Session:
    """A handshake-era session: its Connection, its streams, and the POSTs waiting on it."""

    __slots__ = ("conn", "counter", "id", "last_seen", "listener", "nonce", "outbox", "replay",
                 "standalone", "streams", "waiting")

    def __init__(self, sid: str, replay: int) -> None:
        self.id = sid
        self.conn: Connection | None = None
        self.last_seen = time.monotonic()
        self.replay = replay
        # event ids name the stream; the nonce keeps ids of an earlier session from matching
        self.nonce = secrets.token_hex(4)
        self.counter = 0
        self.streams: dict[bytes, Stream] = {}
        self.standalone = self.new_stream()
        self.listener: Inbox | None = None  # the open GET stream, if any
        self.outbox: deque[Any] = deque(maxlen=replay)  # messages waiting for a GET stream
        self.waiting: dict[Inbox, list[Any]] = {}  # POSTs awaiting answers -> their request ids

    def new_stream(self) -> Stream:
        stream = Stream(b"%s-%d" % (self.nonce.encode(), self.counter), self.replay)
        self.counter += 1
        if len(self.streams) > POST_STREAMS_KEPT:
            oldest = next(k for k in self.streams if k != self.standalone.key)
            del self.streams[oldest]
        self.streams[stream.key] = stream
        return stream

    def replay_after(self, last_event_id: str) -> tuple[Stream, list[bytes]]:
        """The stream a ``Last-Event-ID`` names, and its kept events after that one."""
        key, _, number = last_event_id.rpartition(".")
        resumed = self.streams.get(key.encode("latin-1"))
        if resumed is None or not number.isdigit():
            raise HTTPError(400, "Unknown Last-Event-ID: not a stream of this session")
        return resumed, resumed.after(int(number))

    def deliver(self, message: Any) -> None:
        """The Connection's ``send``: messages not tied to a request go to the GET stream."""
        if self.listener is not None:
            self.listener.put(message)
        else:
            if len(self.outbox) == self.outbox.maxlen:
                log.debug("session %s…: no GET stream open, dropping the oldest buffered message", self.id[:6])
            self.outbox.append(message)

    def attach_listener(self) -> tuple[Inbox, list[Any]]:
        """A new GET stream, and the messages it starts with (those buffered meanwhile)."""
        pending = list(self.outbox)
        self.outbox.clear()
        if self.listener is not None:  # the newest GET stream takes over (the old one may be half-open)
            pending = self.listener.take() + pending
            self.listener.put(ENDED)
        listener = self.listener = Inbox()
        return listener, pending

    def detach_listener(self, listener: Inbox) -> None:
        if self.listener is listener:
            self.listener = None
            # undelivered messages wait for the next GET stream
            self.outbox = deque([*listener.take(), *self.outbox], maxlen=self.replay)

    def wake_cancelled(self) -> None:
        """After a notification: POSTs whose requests were cancelled will get no answer."""
        if not self.waiting or self.conn is None:
            return
        inflight = self.conn.inflight
        for inbox, ids in self.waiting.items():
            if not inbox.items and not any(rid in inflight for rid in ids):
                inbox.put(CANCELLED)

    def busy(self) -> bool:
        return self.listener is not None or (self.conn is not None and bool(self.conn.inflight))


class SessionTable(dict[str, Session]):
    """The live sessions by id, with the limits that apply to them."""

    __slots__ = ("idle_timeout", "max_sessions", "replay")

    def __init__(self, idle_timeout: float, max_sessions: int, replay: int) -> None:
        super().__init__()
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.replay = replay

    def create(self, connect: Callable[[Callable[[Any], None]], Connection]) -> Session:
        """A new session whose Connection ``connect`` opens; 503 when the table is full."""
        self.expire()
        if len(self) >= self.max_sessions:
            raise HTTPError(503, "Too many sessions", [(b"retry-after", b"5")])
        session = Session(secrets.token_urlsafe(24), self.replay)
        session.conn = connect(session.deliver)
        self[session.id] = session
        return session

    def lookup(self, sid: str) -> Session:
        """The session ``Mcp-Session-Id`` names, if it lives (404 otherwise); it is seen now."""
        session = self.get(sid)
        now = time.monotonic()
        if session is None:
            raise HTTPError(404, "Session not found or expired: initialize again")
        if now - session.last_seen > self.idle_timeout and not session.busy():
            self.end(session)
            raise HTTPError(404, "Session expired: initialize again")
        session.last_seen = now
        return session

    def end(self, session: Session) -> None:
        """End a session: its subscriptions and requests, its GET stream, its waiting POSTs."""
        self.pop(session.id, None)
        if session.conn is not None:
            session.conn.close()
        if session.listener is not None:
            session.listener.put(ENDED)
        for inbox in session.waiting:
            inbox.put(ENDED)
        for stream in session.streams.values():
            if stream.resumer is not None:
                stream.resumer.put(ENDED)

    def expire(self) -> None:
        cutoff = time.monotonic() - self.idle_timeout
        for session in [s for s in self.values() if s.last_seen < cutoff]:
            if not session.busy():
                log.info("session %s… expired", session.id[:6])
                self.end(session)

    async def reap(self) -> None:
        """Expire idle sessions on a timer, so that their subscriptions end without a request."""
        interval = min(max(self.idle_timeout / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            self.expire()
