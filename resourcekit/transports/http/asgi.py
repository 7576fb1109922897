"""``ASGIApp``: the MCP endpoint as a plain ASGI application.

Every request enters ``_post.post`` (``ASGIApp.__call__``): a POST to the endpoint is served
there, through the gate to the exchange (statelessly for 2026-07-28, else within a session);
anything else comes to ``route``: GET to a session's
event stream, DELETE to the end of a session, health, metadata, lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from ..._runner import ThreadRunner
from ...core import Server
from ...logs import Repeats
from ...methods.streaming import Slots
from ...revisions import MODERN_VERSIONS
from ._gate import AuthHook, bare_host, check_host_and_origin, gate, preflight_headers, well_known, with_cors
from ._headers import (
    ALLOW,
    SESSION_HEADER,
    VERSION_HEADER,
    HTTPError,
    Receive,
    RequestHeaders,
    Scope,
    Send,
    accepts,
    respond,
)
from ._lifespan import lifespan_events
from ._post import post, refuse
from ._sessions import Session, SessionLimits, SessionTable
from ._sse import ENDED, PRIMING_VERSION, Inbox, OpenStreams, resume, sse_headers, write

if TYPE_CHECKING:
    from ...registry import Registry
    from ._redis_sessions import SharedSessions

log = logging.getLogger("resourcekit")

HEALTH = ("/healthz", "/readyz")
_UNJUDGED: Any = object()  # (no verdict in ``admitted``)


class ASGIApp:
    """Serve an App's MCP endpoint at ``path`` (``/mcp``) to any ASGI server.

    ``allowed_origins``: ``Origin`` values allowed besides loopback ones (they also get
    CORS headers, so browser pages there can call the endpoint).
    ``allowed_hosts``: ``Host`` names allowed; by default, when the server is bound to a
    loopback address, only loopback names (DNS-rebinding protection). Set it when serving
    on a public interface.
    ``auth``: ``resourcekit.auth.OAuthResourceServer`` (docs/authorization.md), or a hook
    ``auth(headers)`` (sync or async) that returns the principal (None or True: anyone) or
    raises ``HTTPError(401 or 403, message)``. A session is "not found" (404) for any
    principal but the one that created it.

    The limits come from ``app.limits`` (``resourcekit.Limits``: ``max_sessions``,
    ``session_idle_timeout``, ``max_replay_bytes``, ``max_stream_lifetime``,
    ``max_pending_notifications``, ``max_message_size``); ``session_idle_timeout`` and
    ``max_sessions`` given here override them. ``max_streams``: open SSE responses, beyond
    it 503. ``keepalive``: seconds between SSE comment lines on quiet streams.
    ``replay``: events kept per stream for resumption (within ``max_replay_bytes``).
    ``redis``: a Redis URL (any form redis-py takes; the ``redis`` extra): sessions, change
    notifications, polling leases and GET-stream events are shared with every worker using
    the same Redis and ``redis_prefix`` (see ``resourcekit.scaleout``).
    ``GET /healthz`` answers 200 while serving; ``GET /readyz`` 503 until started, once
    closing, and while the configured Redis is unreachable.

    Under a plain ASGI server the ``lifespan`` protocol starts and stops it, and enters and
    exits the app's own lifespan (``App.lifespan``; each worker process its own). Mounted where
    lifespan events are not forwarded (Starlette's ``Mount``), it starts on the first request
    without the app's lifespan: use ``lifespan`` as the host app's lifespan (or enter it in
    yours) to run the app's lifespan and to end sessions and streams cleanly.
    """

    def __init__(
        self,
        app: Registry,
        *,
        path: str = "/mcp",
        allowed_origins: Iterable[str] = (),
        allowed_hosts: Iterable[str] | None = None,
        session_idle_timeout: float | None = None,
        max_sessions: int | None = None,
        max_streams: int = 1000,
        keepalive: float = 15.0,
        replay: int = 256,
        auth: AuthHook | Any = None,
        redis: str | None = None,
        redis_prefix: str = "resourcekit:",
    ) -> None:
        self.app = app
        self.path = path.rstrip("/") or "/"
        # Host/Origin verdicts by (Host, Origin, bound address): clients send the same few
        self.admitted: dict[tuple[bytes | None, bytes | None, Any], str | None] = {}
        # and of POSTs, with their Content-Type and Accept: (CORS origin, ``post_accepts``) (``_post``)
        self.posted: dict[tuple[Any, ...], tuple[str | None, tuple[bool, bool]]] = {}
        self.allowed_origins = allowed_origins  # (the setters normalize them)
        self.allowed_hosts = allowed_hosts
        self.auth, self.authorize = auth, gate(auth, app)
        self.limits = limits = app.limits.replace(session_idle_timeout=session_idle_timeout,
                                                  max_sessions=max_sessions)
        table = SessionLimits(limits.session_idle_timeout, limits.max_sessions, limits.max_replay_bytes, replay,
                              limits.max_pending_notifications)
        self.repeats = Repeats(log, limits.log_repeat_interval)  # warnings a client can cause at will
        self.shared: SharedSessions | None = None
        if redis:
            from ...scaleout.broker import RedisBroker
            from ._redis_sessions import SharedSessions

            self.shared = SharedSessions(table, RedisBroker(redis, redis_prefix, max_events=replay), self.repeats)
        self.sessions: SessionTable = self.shared if self.shared is not None else SessionTable(table)
        self.streams = OpenStreams(max_streams, keepalive)
        self.byte_streams = Slots(limits.max_byte_streams)  # resources/stream responses (SEP-2532)
        self.closed = False
        self._server: Server | None = None
        self._reaper: asyncio.Task[None] | None = None

    # each limit lives with what it limits; read it here under the constructor's name
    session_idle_timeout = property(attrgetter("sessions.limits.idle_timeout"))
    max_sessions = property(attrgetter("sessions.limits.max_sessions"))
    replay = property(attrgetter("sessions.limits.replay_events"))
    max_streams = property(attrgetter("streams.limit"))
    keepalive = property(attrgetter("streams.keepalive"))
    open_streams = property(attrgetter("streams.count"))

    @property
    def allowed_hosts(self) -> frozenset[str] | None:
        return self._allowed_hosts

    @allowed_hosts.setter
    def allowed_hosts(self, hosts: Iterable[str] | None) -> None:
        self._allowed_hosts = None if hosts is None else frozenset(bare_host(h) for h in hosts)
        self.admitted.clear()
        self.posted.clear()

    @property
    def allowed_origins(self) -> frozenset[str]:
        return self._allowed_origins

    @allowed_origins.setter
    def allowed_origins(self, origins: Iterable[str]) -> None:
        self._allowed_origins = frozenset(o.rstrip("/").lower() for o in origins)
        self.admitted.clear()
        self.posted.clear()

    # --- ASGI entry and lifecycle -------------------------------------------------------

    # every request comes in here: a POST to the endpoint is served there in one coroutine, the
    # rest goes to ``route``
    __call__ = post

    async def route(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Any request but a POST to the endpoint (``post`` sends those here)."""
        kind = scope["type"]
        if kind == "http":
            try:
                await self._http(scope, receive, send)
            except Exception as exc:
                await refuse(scope, send, exc)
        elif kind == "lifespan":
            await lifespan_events(self.app._lifespan, self.start, self._stop, receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    @contextlib.asynccontextmanager
    async def lifespan(self, _host_app: object = None) -> AsyncIterator[None]:
        """For a host app's lifespan: ``Starlette(..., lifespan=mcp.lifespan)``; it also enters
        and exits the app's own lifespan (``App.lifespan``)."""
        async with self.app._lifespan.running():
            self.start()
            try:
                yield
            finally:
                self.close()

    def start(self) -> None:
        """Bind to the running event loop (called by lifespan, or by the first request)."""
        self.closed = False
        self.server  # noqa: B018

    @property
    def server(self) -> Server:
        if self._server is None:
            if self.closed:  # shut down: a request admitted before (its body came after) starts none again
                self.check_open()  # 503
            if self.app._lifespan.idle:
                log.warning("the app's lifespan %s() is not running: this endpoint started on a request, "
                            "without lifespan events; run it from the host app's lifespan (ASGIApp.lifespan, "
                            "see docs/lifespan.md)", self.app._lifespan.name)
            self._server = Server(self.app, "tcp")
            limits = self.limits
            self._server.start(ThreadRunner(asyncio.get_running_loop(), limits.max_workers,
                                            limits.max_queued_jobs))
            self._reaper = asyncio.get_running_loop().create_task(self.sessions.reap())
            if self.shared is not None:
                self.shared.broker.start(self.app.tracker)
        return self._server

    def close(self) -> None:
        """End every session and stream: listen streams get their final result, GET streams
        end, waiting POSTs are answered. Requests arriving afterwards get 503 until ``start``."""
        self.closed = True
        if self._server is not None:
            self._server.subscriptions.close_listens()
        for session in list(self.sessions.values()):
            self.sessions.end(session)
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        if self._server is not None:
            self._server.close()
            self._server = None

    async def _stop(self) -> None:
        self.close()
        if self.shared is not None:
            await self.shared.broker.close()

    def close_soon(self) -> None:
        """``close`` from any thread or a signal handler."""
        if self._server is not None:
            self._server.loop.call_soon_threadsafe(self.close)

    # --- request routing ------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if root and path.startswith(root):  # mounted inside another app (Starlette, FastAPI)
            path = path[len(root):]
        if path in HEALTH and scope.get("method") == "GET":
            ready = self._server is not None and not self.closed and (self.shared is None
                                                                       or self.shared.broker.healthy)
            ok = path == "/healthz" or ready
            await respond(send, 200 if ok else 503, b"ok\n" if ok else b"not ready\n", content_type=b"text/plain")
            return
        if (path.rstrip("/") or "/") != self.path:
            document = well_known(self.auth, path, self.app)  # RFC 9728 metadata: public, for any page
            await (respond(send, 404, b"Not Found", content_type=b"text/plain") if document is None
                   else respond(send, 200, document, [(b"access-control-allow-origin", b"*")]))
            return
        method = scope.get("method", "GET")
        if method == "POST":
            await post(self, scope, receive, send, True)
            return
        headers = RequestHeaders(scope.get("headers", ()))
        send = self.admit(scope, headers, send)
        try:  # a refusal goes out with CORS headers too, once the origin is allowed
            if method == "OPTIONS":  # CORS preflight: no credentials are sent, so no auth either
                await respond(send, 204, b"", preflight_headers(headers) if headers.get(b"origin") else ALLOW)
                return
            self.check_open()
            principal = None if self.authorize is None else await self.authorize(headers, scope)
            if method == "GET":
                await self._get(headers, receive, send, principal)
            elif method == "DELETE":
                await self._delete(headers, send, principal)
            else:
                raise HTTPError(405, f"Method {method} not allowed", ALLOW)
        except Exception as exc:
            await refuse(scope, send, exc)

    def admit(self, scope: Scope, headers: RequestHeaders, send: Send) -> Send:
        """The Host and Origin checks (400, 421, 403); ``send`` with CORS headers for an allowed origin."""
        raw = scope.get("headers", ())
        # a header line repeated (Host, perhaps): the lines themselves, a key never kept, so every
        # such request is judged from them (``single_host``)
        key = (headers.get(b"host") if len(headers) == len(raw) else raw, headers.get(b"origin"), scope.get("server"))
        try:
            origin = self.admitted[key]
        except (KeyError, TypeError):  # not seen yet (or an address or the header lines given as a list)
            origin = self.judge(scope, headers, key)
        return send if origin is None else with_cors(send, origin)

    def judge(self, scope: Scope, headers: RequestHeaders, key: Any) -> str | None:
        """``admit`` for Host and Origin values not seen yet: checked, and the verdict kept
        (``admitted``; ``post`` looks there first)."""
        origin = check_host_and_origin(scope, headers, self.allowed_hosts, self.allowed_origins)
        if key[0] is None:  # no Host (HTTP/1.0): not a verdict for an HTTP/1.1 request without one
            return origin
        if len(self.admitted) >= 256:  # distinct values are few unless someone makes them up
            self.admitted.clear()
        with contextlib.suppress(TypeError):
            self.admitted[key] = origin
        return origin

    def keep(self, key: tuple[Any, ...], origin: str | None, accepted: tuple[bool, bool]) -> None:
        """What a POST's headers were found to allow (``post`` looks in ``posted`` first), unless
        its Host/Origin verdict is no longer ``admitted``'s (the allowed hosts or origins changed
        while the auth hook was awaited: the next POST is judged again)."""
        if len(self.posted) >= 256:  # distinct values are few unless someone makes them up
            self.posted.clear()
        with contextlib.suppress(TypeError):
            if self.admitted.get(key[:3], _UNJUDGED) == origin:
                self.posted[key] = (origin, accepted)

    def check_open(self) -> None:
        """503 while the server shuts down."""
        if self.closed:
            raise HTTPError(503, "Server is shutting down", [(b"retry-after", b"5")])

    async def session_of(self, sid: str, principal: Any) -> Session:
        """The session ``sid`` of ``principal`` (404 if none), in this process or through Redis."""
        if self.shared is None:
            return self.sessions.lookup(sid, principal)
        return await self.shared.find(sid, principal, self.server.connect)

    # --- GET and DELETE ---------------------------------------------------------------

    async def _get(self, headers: RequestHeaders, receive: Receive, send: Send, principal: Any) -> None:
        sid = headers.opt(SESSION_HEADER)
        if not sid or headers.opt(VERSION_HEADER) in MODERN_VERSIONS:
            raise HTTPError(405, "GET needs a handshake-era session; 2026-07-28 uses subscriptions/listen",
                            [(b"allow", b"POST")])
        if not accepts(headers.text(b"accept"))[1]:
            raise HTTPError(406, "Accept must list text/event-stream")
        session = await self.session_of(sid, principal)
        replay: list[bytes] = []
        last = headers.opt(b"last-event-id")
        if self.shared is not None and await self.shared.serve_get(session, last, receive, send, self.streams,
                                                                    self.limits.max_stream_lifetime):
            return
        if last:
            resumed, replay = session.replay_after(last)
            if resumed is not session.standalone:
                await resume(resumed, replay, receive, send, self.streams)
                return
        self.streams.claim()
        pump: asyncio.Future[None] | None = None

        def overflowed() -> None:
            self.repeats.warning("session %s…: GET stream closed: the client left %d notifications unread",
                                 session.id[:6], self.limits.max_pending_notifications)
            if pump is not None:
                pump.cancel()

        listener, pending = session.attach_listener(overflowed)
        # a stream ends after max_stream_lifetime (the client reconnects), so no session is held for good
        timer = asyncio.get_running_loop().call_later(self.limits.max_stream_lifetime, listener.put, ENDED)
        try:
            pump = asyncio.ensure_future(self._get_stream(session, listener, pending, replay, not last,
                                                          receive, send))
            await asyncio.wait({pump})
            if not pump.cancelled():
                pump.result()
        finally:
            timer.cancel()
            if pump is not None:
                pump.cancel()
            listener.stop_watching()
            self.streams.release()
            session.detach_listener(listener)

    async def _get_stream(self, session: Session, listener: Inbox, pending: list[Any], replay: list[bytes],
                          priming: bool, receive: Receive, send: Send) -> None:
        stream = session.standalone
        await send({"type": "http.response.start", "status": 200, "headers": sse_headers()})
        assert session.conn is not None
        if priming and session.conn.protocol_version == PRIMING_VERSION:
            await write(send, stream.priming())
        for data in replay:
            await write(send, data)
        for message in pending:
            await write(send, stream.event(message))
        while True:
            item = await listener.next(receive, True, send, self.streams.keepalive)
            if item is None:
                return  # the client went away
            if item is ENDED:
                break
            await write(send, stream.event(item))
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _delete(self, headers: RequestHeaders, send: Send, principal: Any) -> None:
        sid = headers.opt(SESSION_HEADER)
        if not sid:
            raise HTTPError(405, "DELETE ends a handshake-era session: send Mcp-Session-Id", [(b"allow", b"POST")])
        session = await self.session_of(sid, principal)
        if self.shared is not None:
            await self.shared.delete(session)
        else:
            self.sessions.end(session)
        await respond(send, 204, b"")
