"""Handshake-era sessions shared by several workers through Redis (``ASGIApp(app, redis=URL)``).

The session table of each worker becomes a cache of the sessions in Redis: a session
created on one worker is found on any other (its state loaded once, then refreshed
lazily), its subscriptions and GET-stream events live in Redis, and DELETE or a state
change on one worker reaches the copies elsewhere over pub/sub.  GET streams read the
session's Redis stream, so ``Last-Event-ID`` (``r.<stream id>``) resumes on any worker.
Imported only with a Redis URL: it needs redis-py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import orjson

from ...core import Connection
from ...extensions import RESOURCES_GET, OptIn, wants
from ...logs import Repeats
from ...scaleout.broker import UNAVAILABLE, RedisBroker, safe_url
from ...scaleout.sessions import SessionStore, SharedSession, event_id_key
from ._headers import HTTPError, Receive, Send, is_digits
from ._sessions import Session, SessionLimits, SessionTable
from ._sse import ENDED, FINISHED_GRACE, PRIMING_VERSION, Inbox, OpenStreams, sse_headers, write

log = logging.getLogger("resourcekit")

RETRY_AFTER = [(b"retry-after", b"2")]
BLOCK_MS = 2000  # how long one XREAD of a GET stream waits before it looks around
UPDATED = "notifications/resources/updated"
Connect = Callable[[Callable[[Any], None]], Connection]


def principal_key(principal: Any) -> str:
    return "" if principal is None else orjson.dumps(principal, default=repr, option=orjson.OPT_SORT_KEYS).decode()


def _state(conn: Connection) -> dict[str, str]:
    return {"v": conn.protocol_version or "", "caps": orjson.dumps(conn.client_capabilities).decode(),
            "info": orjson.dumps(conn.client_info).decode(), "lvl": conn.log_level or "",
            "init": "1" if conn.initialized else "",
            "cc": "1" if wants(conn.client_capabilities, RESOURCES_GET) else ""}


def _apply(conn: Connection, state: dict[str, str]) -> None:
    conn.protocol_version = state.get("v") or None
    conn.client_capabilities = orjson.loads(state.get("caps") or "{}")
    conn.client_info = orjson.loads(state.get("info") or "{}")
    conn.log_level = state.get("lvl") or None
    conn.initialized = bool(state.get("init"))
    conn.optin = OptIn.of(conn.client_capabilities)
    conn.replan()  # the restored profile: its opt-ins and log level, as where it began


class SharedSessions(SessionTable):
    """This worker's cache of the sessions in Redis."""

    __slots__ = ("broker", "refreshed", "repeats", "store")

    def __init__(self, limits: SessionLimits, broker: RedisBroker, repeats: Repeats | None = None) -> None:
        super().__init__(limits)
        self.broker = broker
        self.store = SessionStore(broker, limits.idle_timeout)
        self.refreshed: dict[str, float] = {}
        self.repeats = Repeats(log) if repeats is None else repeats  # a line per request is no news
        broker.handlers.update(end=self._ended_elsewhere, state=self._changed_elsewhere,
                               cancel=self._cancelled_elsewhere)
        broker.on_reconnect.append(self.refreshed.clear)  # Redis may have forgotten them: look again

    def available(self) -> None:
        if not self.broker.healthy:
            self.repeats.warning("Redis at %s unreachable: answering 503", safe_url(self.broker.url))
            raise HTTPError(503, "Shared session store (Redis) unreachable", RETRY_AFTER)

    def _bind(self, session: Session) -> None:
        assert session.conn is not None
        writer = session.replay.mirror = Events(self, session.id)
        session.conn.send = lambda message: writer(None, 0, orjson.dumps(message))
        session.conn.shared = SharedSession(self.store, session.id)

    def create(self, connect: Connect, principal: Any = None) -> Session:
        self.available()
        session = super().create(connect, principal)
        self._bind(session)
        return session

    def prepare(self, session: Session, message: Any, send: Send) -> Send:
        """Before a POST of a known session: a ``notifications/cancelled`` for a request in flight
        elsewhere goes to every worker; then ``storing(send)``."""
        if type(message) is dict and message.get("method") == "notifications/cancelled":
            params = message.get("params")
            rid = params.get("requestId") if type(params) is dict else None
            if rid is not None and session.conn is not None and rid not in session.conn.inflight:
                self.broker.spawn(self.broker.publish("cancel", session.id, rid))
        return self.storing(session, send)

    def storing(self, session: Session, send: Send) -> Send:
        """``send`` that first writes the session's state to Redis if a request changed it,
        so the next request, on whichever worker, finds it."""
        assert session.conn is not None
        conn = session.conn
        before = _state(conn) if conn.protocol_version is not None else None

        async def send_stored(message: dict[str, Any]) -> None:
            nonlocal before
            if message["type"] == "http.response.start" and conn.protocol_version is not None:
                now = _state(conn)
                try:
                    if before is None:
                        await self.broker.answer(self.store.create(session.id, {**now,
                                                                                "p": principal_key(session.principal)}))
                        self.refreshed[session.id] = time.monotonic()
                    elif now != before:
                        await self.broker.answer(self.store.update(session.id, now))
                except UNAVAILABLE as exc:
                    self.repeats.error("Redis at %s: storing session state failed: %s", safe_url(self.broker.url), exc)
                    if before is None:  # a session nobody can find elsewhere: none at all
                        self.end(session)
                    raise HTTPError(503, "Shared session store (Redis) unreachable", RETRY_AFTER) from None
                before = now
            await send(message)

        return send_stored

    async def find(self, sid: str, principal: Any, connect: Connect) -> Session:
        """The session ``Mcp-Session-Id`` names, from this worker's cache or from Redis."""
        self.available()
        now = time.monotonic()
        try:
            session = self.get(sid)
            if session is None:
                state = await self.broker.answer(self.store.load(sid))
                if state is None or state.get("p", "") != principal_key(principal):
                    raise HTTPError(404, "Session not found or expired: initialize again")
                session = Session(sid, self.limits, principal)
                session.conn = connect(session.deliver)
                session.conn.session_id = session.id
                _apply(session.conn, state)
                self._bind(session)
                self[sid] = session
                self.refreshed[sid] = 0.0
            elif principal_key(session.principal) != principal_key(principal):
                raise HTTPError(404, "Session not found or expired: initialize again")
            if now - self.refreshed.get(sid, 0.0) > self.limits.idle_timeout / 4:
                if not await self.broker.answer(self.store.touch(sid)):
                    super().end(session)
                    raise HTTPError(404, "Session expired: initialize again")
                self.refreshed[sid] = now
        except UNAVAILABLE as exc:
            self.repeats.error("Redis at %s unreachable: %s", safe_url(self.broker.url), exc)
            raise HTTPError(503, "Shared session store (Redis) unreachable", RETRY_AFTER) from None
        session.last_seen = now
        self.move_to_end(sid)
        return session

    async def delete(self, session: Session) -> None:
        try:
            await self.broker.answer(self.store.end(session.id))
        except UNAVAILABLE:
            raise HTTPError(503, "Shared session store (Redis) unreachable", RETRY_AFTER) from None
        self.end(session)

    def end(self, session: Session) -> None:
        """Forget this worker's copy (the session itself lives on in Redis unless deleted)."""
        self.refreshed.pop(session.id, None)
        super().end(session)

    def _ended_elsewhere(self, sid: str) -> None:
        session = self.get(sid)
        if session is not None:
            self.end(session)

    def _cancelled_elsewhere(self, sid: str, rid: Any) -> None:
        session = self.get(sid)
        if session is not None and session.conn is not None and session.conn.cancel(rid):
            session.wake_cancelled()

    def _changed_elsewhere(self, sid: str) -> None:
        session = self.get(sid)
        if session is not None:
            self.broker.spawn(self._reload(session))

    async def _reload(self, session: Session) -> None:
        state = await self.store.load(session.id)
        if state is not None and session.conn is not None:
            _apply(session.conn, state)

    # --- GET: the session's stream, or a POST stream resumed ----------------------------------------

    async def serve_get(self, session: Session, last: str | None, receive: Receive, send: Send,
                        streams: OpenStreams, lifetime: float) -> bool:
        """Serve a GET here unless it resumes a POST stream this worker runs (False: the caller does)."""
        if not last or last.startswith("r."):
            await self.stream(session, last, receive, send, streams, lifetime)
            return True
        key, _, number = last.rpartition(".")
        if key.encode("latin-1") in session.streams or not is_digits(number):
            return False
        await self.resume_post(session.id, key, int(number), receive, send, streams)
        return True

    async def resume_post(self, sid: str, key: str, number: int, receive: Receive, send: Send,
                          streams: OpenStreams) -> None:
        """A POST response stream that another worker runs (or ran), from Redis: the events after
        ``number``, then the rest as they come, until its final message."""
        try:
            kept = await self.broker.answer(self.store.post_events(sid, key, "0-0", 0))
        except UNAVAILABLE:
            raise HTTPError(503, "Shared session store (Redis) unreachable", RETRY_AFTER) from None
        if not kept:
            raise HTTPError(400, "Unknown Last-Event-ID: not a stream of this session")
        streams.claim()
        inbox = Inbox()
        inbox.put(kept)
        pump = asyncio.ensure_future(self._pump_post(sid, key, kept[-1][0], inbox))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": sse_headers()})
            while True:
                batch = await inbox.next(receive, True, send, streams.keepalive)
                if batch is None:
                    return
                if batch is ENDED:
                    break
                for _, fields in batch:
                    if b"end" in fields:
                        inbox.put(ENDED)
                        break
                    if int(fields[b"n"]) > number and fields[b"m"]:  # (an empty one is a priming event)
                        await write(send, fields[b"m"])
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            pump.cancel()
            inbox.stop_watching()
            streams.release()

    async def _pump_post(self, sid: str, key: str, after: str, inbox: Inbox) -> None:
        idle = 0.0
        while idle < FINISHED_GRACE:  # nothing for that long: the worker running it is gone
            try:
                batch = await self.store.post_events(sid, key, after, BLOCK_MS)
            except UNAVAILABLE:
                await asyncio.sleep(0.5)
                idle += 0.5
                continue
            idle = 0.0 if batch else idle + BLOCK_MS / 1000
            if batch:
                after = batch[-1][0]
                inbox.put(batch)
        inbox.put(ENDED)

    # --- the GET stream --------------------------------------------------------------------------

    async def stream(self, session: Session, last: str | None, receive: Receive, send: Send,
                     streams: OpenStreams, lifetime: float) -> None:
        """A GET stream of the session's events in Redis, from ``Last-Event-ID`` or where the
        previous GET stream stopped; live until the client leaves or ``lifetime`` passes."""
        sid = session.id
        gap = False
        try:
            if last:
                after = last[2:] if last.startswith("r.") else ""
                if event_id_key(after) is None:
                    raise HTTPError(400, "Unknown Last-Event-ID: not a stream of this session")
                gap = await self.broker.answer(self.store.missed(sid, after))
            else:
                after = await self.broker.answer(self.store.cursor(sid))
            missed = await self.broker.answer(self.store.subscribed(sid)) if gap else []
        except UNAVAILABLE:
            raise HTTPError(503, "Shared session store (Redis) unreachable", RETRY_AFTER) from None
        streams.claim()
        listener, _ = session.attach_listener(lambda: None)
        timer = asyncio.get_running_loop().call_later(lifetime, listener.put, ENDED)
        pump = asyncio.ensure_future(self._pump(sid, after, listener))
        cursor = after
        try:
            await send({"type": "http.response.start", "status": 200, "headers": sse_headers()})
            assert session.conn is not None
            if not last and session.conn.protocol_version == PRIMING_VERSION:
                await write(send, b"id: r.%s\ndata: \n\n" % after.encode())
            if gap:  # what was dropped is unknown: every subscribed URI may have changed
                log.warning("session %s…: Last-Event-ID %s is older than the events kept; sending updated for "
                            "its %d subscriptions", sid[:6], last, len(missed))
                for uri in missed:
                    message = {"jsonrpc": "2.0", "method": UPDATED, "params": {"uri": uri}}
                    await write(send, b"event: message\ndata: %s\n\n" % orjson.dumps(message))
            while True:
                item = await listener.next(receive, True, send, streams.keepalive)
                if item is None:
                    return
                if item is ENDED:
                    break
                cursor, data = item
                await write(send, b"id: r.%s\nevent: message\ndata: %s\n\n" % (cursor.encode(), data))
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            timer.cancel()
            pump.cancel()
            listener.stop_watching()
            streams.release()
            session.detach_listener(listener)
            if cursor != after:
                self.broker.spawn(self.store.set_cursor(sid, cursor))

    async def _pump(self, sid: str, after: str, listener: Inbox) -> None:
        """Events from Redis into the stream's inbox; ends the stream if the session is gone."""
        cursor = after
        touched = time.monotonic()
        every = min(self.limits.idle_timeout / 4, 10.0)
        failed = False
        while True:
            try:
                if failed or time.monotonic() - touched > every:
                    if not await self.store.touch(sid):
                        listener.put(ENDED)
                        return
                    touched = time.monotonic()
                    failed = False
                for eid, data in await self.store.read(sid, cursor, BLOCK_MS):
                    listener.put((eid, data))
                    cursor = eid
            except UNAVAILABLE:
                failed = True
                await asyncio.sleep(0.5)
                continue
            while len(listener) > 512:  # the client reads slowly: Redis keeps the rest
                await asyncio.sleep(0.05)


class Events:
    """What a shared session's streams say goes to Redis in order, one write at a time: messages
    for its GET stream (``key`` None), and, as its ``Replay.mirror``, the events of its POST
    response streams, so a GET with ``Last-Event-ID`` resumes them on any worker."""

    __slots__ = ("pending", "sessions", "sid", "writing")

    def __init__(self, sessions: SharedSessions, sid: str) -> None:
        self.sessions = sessions
        self.sid = sid
        self.pending: list[tuple[bytes | None, int, bytes | None]] = []
        self.writing = False

    def __call__(self, key: bytes | None, number: int, data: bytes | None) -> None:
        self.pending.append((key, number, data))
        if not self.writing:
            self.writing = True
            self.sessions.broker.spawn(self._write())

    async def _write(self) -> None:
        try:
            while self.pending:
                events, self.pending = self.pending, []
                await self.sessions.store.append(self.sid, events, FINISHED_GRACE)
        finally:
            self.writing = False
            self.pending.clear()
