"""Handshake-era sessions: the record of one, and the table of all of them.

``initialize`` creates a session and ``Mcp-Session-Id`` names it afterwards. A session
owns its Connection, its SSE streams (for resumption), the open GET stream and what
waits for one; it ends on DELETE, at shutdown, after ``idle_timeout`` seconds
without a request while nothing is open, or when the table is full and it is the least
recently used idle session.  It belongs to the principal the ``auth`` hook named.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ...core import Connection
from ...telemetry import spans as telemetry
from ._headers import HTTPError, is_digits
from ._sse import CANCELLED, ENDED, BoundedInbox, Inbox, Replay, Stream

log = logging.getLogger("resourcekit")


class Session:
    """A handshake-era session: its Connection, its streams, and the POSTs waiting on it."""

    __slots__ = ("conn", "counter", "id", "last_seen", "limits", "listener", "nonce", "opened", "outbox",
                 "principal", "replay", "standalone", "waiting")

    def __init__(self, sid: str, limits: SessionLimits, principal: Any = None) -> None:
        self.id = sid
        self.limits = limits
        self.principal = principal  # what the auth hook said of whoever created it
        self.conn: Connection | None = None
        self.last_seen = time.monotonic()
        # event ids name the stream; the nonce keeps ids of an earlier session from matching
        self.nonce = os.urandom(4).hex()
        self.counter = 0
        self.replay = Replay(limits.replay_bytes, limits.replay_events)
        self.standalone = self.new_stream()
        self.listener: Inbox | None = None  # the open GET stream, if any
        self.opened: float | None = None  # when it opened, while telemetry is on
        # messages waiting for a GET stream: coalesced like a stream's, the oldest dropped past the limit
        self.outbox = self._outbox()
        self.waiting: dict[Inbox, list[Any]] = {}  # POSTs awaiting answers -> their request ids

    @property
    def streams(self) -> dict[bytes, Stream]:
        return self.replay.streams

    def _outbox(self) -> Inbox:
        return BoundedInbox(self.limits.max_pending, self._outbox_full)

    def _outbox_full(self) -> None:
        log.warning("session %s…: no GET stream reads its notifications; %d dropped", self.id[:6],
                    self.limits.max_pending)
        self.outbox = self._outbox()

    def new_stream(self) -> Stream:
        stream = self.replay.open(b"%s-%d" % (self.nonce.encode(), self.counter))
        self.counter += 1
        return stream

    def replay_after(self, last_event_id: str) -> tuple[Stream, list[bytes]]:
        """The stream a ``Last-Event-ID`` names, and its kept events after that one."""
        key, _, number = last_event_id.rpartition(".")
        self.replay.prune()
        resumed = self.streams.get(key.encode("latin-1"))
        if resumed is None or not is_digits(number):
            raise HTTPError(400, "Unknown Last-Event-ID: not a stream of this session")
        return resumed, resumed.after(int(number))

    def deliver(self, message: Any) -> None:
        """The Connection's ``send``: messages not tied to a request go to the GET stream."""
        (self.outbox if self.listener is None else self.listener).put(message)

    def attach_listener(self, on_overflow: Callable[[], None]) -> tuple[Inbox, list[Any]]:
        """A new GET stream, and the messages it starts with (those buffered meanwhile)."""
        pending = self.outbox.take()
        if self.listener is not None:  # the newest GET stream takes over (the old one may be half-open)
            pending = self.listener.take() + pending
            self.listener.put(ENDED)
        listener = self.listener = BoundedInbox(self.limits.max_pending, on_overflow)
        if self.conn is not None and self.conn.traced:
            self.opened = telemetry.stream_opened(self.id)
        return listener, pending

    def detach_listener(self, listener: Inbox) -> None:
        if self.listener is listener:
            self.listener = None
            telemetry.stream_ended("get", self.opened)
            self.opened = None
            self.last_seen = time.monotonic()  # idle from now, not from when the stream opened
            # undelivered messages wait for the next GET stream
            waiting = self.outbox.take()
            for message in [*listener.take(), *waiting]:
                self.outbox.put(message)

    def wake_cancelled(self) -> None:
        """After a notification: POSTs whose requests were cancelled will get no answer."""
        if not self.waiting or self.conn is None:
            return
        inflight = self.conn.inflight
        for inbox, ids in self.waiting.items():
            if not inbox and not any(rid in inflight for rid in ids):
                inbox.put(CANCELLED)

    def busy(self) -> bool:
        """A request in flight or a stream open: neither expired nor evicted."""
        return (self.listener is not None or bool(self.waiting)
                or any(s.resumer is not None for s in self.streams.values())
                or (self.conn is not None and bool(self.conn.inflight)))


class SessionLimits:
    """What bounds one session and the table (from ``Limits``, or ``ASGIApp``'s overrides)."""

    __slots__ = ("idle_timeout", "max_pending", "max_sessions", "replay_bytes", "replay_events")

    def __init__(self, idle_timeout: float, max_sessions: int, replay_bytes: int, replay_events: int,
                 max_pending: int) -> None:
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.replay_bytes = replay_bytes
        self.replay_events = replay_events
        self.max_pending = max_pending


class SessionTable(OrderedDict[str, Session]):
    """The live sessions by id, least recently used first."""

    __slots__ = ("limits",)

    def __init__(self, limits: SessionLimits) -> None:
        super().__init__()
        self.limits = limits

    def create(self, connect: Callable[[Callable[[Any], None]], Connection], principal: Any = None) -> Session:
        """A new session whose Connection ``connect`` opens.

        At ``max_sessions`` the least recently used idle session makes room; when every
        session is busy, 503.
        """
        self.expire()
        if len(self) >= self.limits.max_sessions:
            idle = next((s for s in self.values() if not s.busy()), None)
            if idle is None:
                raise HTTPError(503, "Too many sessions", [(b"retry-after", b"5")])
            log.info("session %s… evicted (least recently used) for a new one", idle.id[:6])
            self.end(idle)
        session = Session(base64.urlsafe_b64encode(os.urandom(24)).decode(), self.limits, principal)
        session.conn = connect(session.deliver)
        session.conn.session_id = session.id
        self[session.id] = session
        return session

    def lookup(self, sid: str, principal: Any = None) -> Session:
        """The session ``Mcp-Session-Id`` names, if it lives and belongs to ``principal``
        (404 otherwise: another principal learns nothing of it); it is seen now."""
        session = self.get(sid)
        now = time.monotonic()
        if session is None or session.principal != principal:
            raise HTTPError(404, "Session not found or expired: initialize again")
        if now - session.last_seen > self.limits.idle_timeout and not session.busy():
            self.end(session)
            raise HTTPError(404, "Session expired: initialize again")
        session.last_seen = now
        self.move_to_end(sid)
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
        cutoff = time.monotonic() - self.limits.idle_timeout
        for session in [s for s in self.values() if s.last_seen < cutoff]:
            if not session.busy():
                log.info("session %s… expired", session.id[:6])
                self.end(session)

    async def reap(self) -> None:
        """Expire idle sessions on a timer, so that their subscriptions end without a request."""
        interval = min(max(self.limits.idle_timeout / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            self.expire()

