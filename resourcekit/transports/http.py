"""Streamable HTTP as a plain ASGI application (no web framework underneath).

Only HTTP framing lives here: sessions, SSE streams, status codes, and the header
checks of each revision.  Every protocol rule is the core's (``resourcekit.protocol``).
A POST whose body carries ``_meta["io.modelcontextprotocol/protocolVersion"]`` (or whose
``MCP-Protocol-Version`` header names a stateless revision) is served statelessly as
2026-07-28; anything else belongs to a handshake-era session that ``initialize`` opened
and ``Mcp-Session-Id`` names.

What goes back on a POST is decided by what the core answers, never by the method:
nothing at all means a notification or a response (202); a final message first means
one JSON body; a notification first (log messages, a listen acknowledgement) means an
SSE stream that lasts until the final message.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import functools
import inspect
import ipaddress
import logging
import os
import secrets
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from types import FrameType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from .._loader import load_app, split_target
from ..errors import HeaderMismatch, InvalidParams, InvalidRequest, MCPError, ParseError
from ..protocol import Connection, Server, error_response
from ..versions import HANDSHAKE_VERSIONS, META_PROTOCOL_VERSION, MODERN_VERSIONS

if TYPE_CHECKING:
    from ..app import App

__all__ = ["ASGIApp", "HTTPError", "run_http"]

log = logging.getLogger("resourcekit")

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
AuthHook = Callable[[dict[str, str]], Any]
Headers = list[tuple[bytes, bytes]]

SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"
PRIMING_VERSION = "2025-11-25"  # the first revision with the SSE priming event (SEP-1699)
ALLOW = [(b"allow", b"GET, POST, DELETE, OPTIONS")]
JSON = b"application/json"
KEEPALIVE = b": keep-alive\n\n"
POST_STREAMS_KEPT = 64  # finished POST streams a session keeps for Last-Event-ID
SHUTDOWN_GRACE = 5  # seconds uvicorn waits for open responses when stopping
# JSON-RPC errors about the HTTP request itself rather than the resource asked for
_BAD_REQUEST_CODES = frozenset({-32700, -32600, -32020, -32021, -32022})

# what a waiting response can be woken with besides a message from the core
_CANCELLED: Any = object()  # notifications/cancelled took the request away: no answer follows
_ENDED: Any = object()  # the session (or the server) ended, or a newer GET stream took over


class HTTPError(Exception):
    """Raise from an ``auth`` hook (or anywhere in this module) to answer with a status."""

    def __init__(self, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers)


class _Headers(dict[bytes, bytes]):
    """Request headers as ASGI gives them (names lower-cased); values decoded on demand."""

    __slots__ = ()

    def text(self, name: bytes, default: str = "") -> str:
        value = self.get(name)
        return default if value is None else value.decode("latin-1")

    def opt(self, name: bytes) -> str | None:
        value = self.get(name)
        return None if value is None else value.decode("latin-1")

    def decoded(self) -> dict[str, str]:
        return {k.decode("latin-1"): v.decode("latin-1") for k, v in self.items()}


class _Inbox:
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
        items = [m for m in self.items if m is not _ENDED and m is not _CANCELLED]
        self.items.clear()
        return items

    def stop_watching(self) -> None:
        if self.watcher is not None and not self.watcher.done():
            self.watcher.cancel()


class _Stream:
    """One SSE stream of a session: events are numbered ``KEY.N`` and the last few kept,
    so a client can resume this stream (and only this one) with GET + ``Last-Event-ID``."""

    __slots__ = ("done", "events", "key", "last", "resumer")

    def __init__(self, key: bytes, replay: int) -> None:
        self.key = key
        self.last = 0
        self.events: deque[tuple[int, bytes]] = deque(maxlen=replay)
        self.resumer: _Inbox | None = None  # a GET that resumed this POST stream while it runs
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
            self.resumer.put(_ENDED)


class _Session:
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
        self.streams: dict[bytes, _Stream] = {}
        self.standalone = self.new_stream()
        self.listener: _Inbox | None = None  # the open GET stream, if any
        self.outbox: deque[Any] = deque(maxlen=replay)  # messages waiting for a GET stream
        self.waiting: dict[_Inbox, list[Any]] = {}  # POSTs awaiting answers -> their request ids

    def new_stream(self) -> _Stream:
        stream = _Stream(b"%s-%d" % (self.nonce.encode(), self.counter), self.replay)
        self.counter += 1
        if len(self.streams) > POST_STREAMS_KEPT:
            oldest = next(k for k in self.streams if k != self.standalone.key)
            del self.streams[oldest]
        self.streams[stream.key] = stream
        return stream

    def deliver(self, message: Any) -> None:
        """The Connection's ``send``: messages not tied to a request go to the GET stream."""
        if self.listener is not None:
            self.listener.put(message)
        else:
            if len(self.outbox) == self.outbox.maxlen:
                log.debug("session %s…: no GET stream open, dropping the oldest buffered message", self.id[:6])
            self.outbox.append(message)

    def wake_cancelled(self) -> None:
        """After a notification: POSTs whose requests were cancelled will get no answer."""
        if not self.waiting or self.conn is None:
            return
        inflight = self.conn.inflight
        for inbox, ids in self.waiting.items():
            if not inbox.items and not any(rid in inflight for rid in ids):
                inbox.put(_CANCELLED)

    def busy(self) -> bool:
        return self.listener is not None or (self.conn is not None and bool(self.conn.inflight))


class ASGIApp:
    """Serve an App's MCP endpoint at ``path`` (``/mcp``) to any ASGI server.

    ``allowed_origins``: ``Origin`` values allowed besides loopback ones (they also get
    CORS headers, so browser pages there can call the endpoint).
    ``allowed_hosts``: ``Host`` names allowed; by default, when the server is bound to a
    loopback address, only loopback names (DNS-rebinding protection). Set it when serving
    on a public interface.
    ``auth``: ``auth(headers)`` (sync or async; header names lower-cased) returns to allow,
    or raises ``HTTPError(401 or 403, message)`` to refuse.
    ``session_idle_timeout``: seconds without a request (and no GET stream or request in
    flight) after which a handshake-era session and its subscriptions end.
    ``max_sessions`` / ``max_streams``: beyond them, 503. ``keepalive``: seconds between
    SSE comment lines on quiet streams. ``replay``: events kept per stream for resumption,
    and messages buffered for a session while no GET stream is open.

    Under a plain ASGI server the ``lifespan`` protocol starts and stops it. Mounted in
    another app that does not forward lifespan events (Starlette's ``Mount``), it starts
    on the first request; use ``lifespan`` as (or inside) the host app's lifespan to end
    sessions and streams cleanly at shutdown.
    """

    def __init__(
        self,
        app: App,
        *,
        path: str = "/mcp",
        allowed_origins: Iterable[str] = (),
        allowed_hosts: Iterable[str] | None = None,
        session_idle_timeout: float = 1800.0,
        max_sessions: int = 1000,
        max_streams: int = 1000,
        keepalive: float = 15.0,
        replay: int = 256,
        auth: AuthHook | None = None,
    ) -> None:
        self.app = app
        self.path = path.rstrip("/") or "/"
        self.allowed_origins = frozenset(o.rstrip("/").lower() for o in allowed_origins)
        self.allowed_hosts = None if allowed_hosts is None else frozenset(_bare_host(h) for h in allowed_hosts)
        self.session_idle_timeout = session_idle_timeout
        self.max_sessions = max_sessions
        self.max_streams = max_streams
        self.keepalive = keepalive
        self.replay = replay
        self.auth = auth
        self.sessions: dict[str, _Session] = {}
        self.open_streams = 0
        self.closed = False
        self._server: Server | None = None
        self._reaper: asyncio.Task[None] | None = None

    # --- ASGI entry and lifecycle -------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            try:
                await self._http(scope, receive, send)
            except HTTPError as exc:
                await _respond(send, exc.status, _error_body(exc.status, exc.message), exc.headers)
            except Exception:
                log.exception("error serving %s %s", scope.get("method"), scope.get("path"))
                with contextlib.suppress(Exception):  # the response may have started already
                    await _respond(send, 500, _error_body(500, "Internal error"))
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    self.start()
                except Exception as exc:
                    log.exception("starting the MCP endpoint failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    @contextlib.asynccontextmanager
    async def lifespan(self, _host_app: object = None) -> AsyncIterator[None]:
        """For a host app's lifespan: ``Starlette(..., lifespan=mcp.lifespan)``."""
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
            self._server = Server(self.app)
            self._server.start()
            self._reaper = asyncio.get_running_loop().create_task(self._reap())
        return self._server

    def close(self) -> None:
        """End every session and stream: listen streams get their final result, GET streams
        end, waiting POSTs are answered. Requests arriving afterwards get 503 until ``start``."""
        self.closed = True
        if self._server is not None:
            self.app.tracker.close_listens()
        for session in list(self.sessions.values()):
            self._end(session)
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        if self._server is not None:
            self._server.close()
            self._server = None

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
        if (path.rstrip("/") or "/") != self.path:
            await _respond(send, 404, b"Not Found", content_type=b"text/plain")
            return
        headers = _Headers(scope.get("headers", ()))
        origin = self._check_host_and_origin(scope, headers)
        if origin is not None:
            send = _with_cors(send, origin)
        method = scope.get("method", "GET")
        if method == "OPTIONS":  # CORS preflight: no credentials are sent, so no auth either
            await _respond(send, 204, b"", _preflight_headers(headers) if origin else ALLOW)
            return
        if self.closed:
            raise HTTPError(503, "Server is shutting down", [(b"retry-after", b"5")])
        if self.auth is not None:
            outcome = self.auth(headers.decoded())
            if inspect.isawaitable(outcome):
                await outcome
        if method == "POST":
            await self._post(headers, receive, send)
        elif method == "GET":
            await self._get(headers, receive, send)
        elif method == "DELETE":
            await self._delete(headers, send)
        else:
            raise HTTPError(405, f"Method {method} not allowed", ALLOW)

    def _check_host_and_origin(self, scope: Scope, headers: _Headers) -> str | None:
        """Refuse DNS rebinding and foreign pages; return an Origin to grant CORS to."""
        host = _bare_host(headers.text(b"host"))
        bound = scope.get("server")
        loopback_bind = bound is not None and _is_loopback(str(bound[0]))
        if self.allowed_hosts is not None:
            if host not in self.allowed_hosts and not _is_loopback(host):
                raise HTTPError(421, f"Host {host!r} is not allowed")
        elif loopback_bind and host and not _is_loopback(host):
            raise HTTPError(421, f"Host {host!r} is not allowed for a server bound to loopback")
        origin = headers.opt(b"origin")
        if origin is None:
            return None  # not a browser: nothing to check
        normalized = origin.rstrip("/").lower()
        if normalized in self.allowed_origins:
            return origin
        if normalized != "null":
            scheme, _, netloc = normalized.partition("://")
            origin_host = _bare_host(netloc)
            if scheme in ("http", "https") and _is_loopback(origin_host):
                return origin
            # same origin, but only for a host name the operator allowed: with DNS
            # rebinding an attacker's page and Host header name the same foreign host
            if self.allowed_hosts is not None and origin_host == host:
                return origin
        raise HTTPError(403, f"Origin {origin!r} is not allowed")

    # --- POST ----------------------------------------------------------------------

    async def _post(self, headers: _Headers, receive: Receive, send: Send) -> None:
        if not headers.text(b"content-type").lower().startswith("application/json"):
            raise HTTPError(415, "Content-Type must be application/json")
        accepts = _accepts(headers.text(b"accept"))
        if not (accepts[0] or accepts[1]):
            raise HTTPError(406, "Accept must list application/json and text/event-stream")
        body = await self._read_body(headers, receive)
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            await _json(send, 400, error_response(None, ParseError(f"Parse error: {exc}")))
            return
        if _is_modern(message, headers):
            await self._post_modern(message, headers, receive, send, accepts)
        else:
            await self._post_session(message, headers, receive, send, accepts)

    async def _read_body(self, headers: _Headers, receive: Receive) -> bytes:
        limit = self.app.max_message_size
        declared = headers.text(b"content-length")
        if declared.isdigit() and int(declared) > limit:
            raise HTTPError(413, f"Body larger than {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise HTTPError(400, "Client disconnected")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise HTTPError(413, f"Body larger than {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body"):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _post_modern(
        self, message: Any, headers: _Headers, receive: Receive, send: Send, accepts: tuple[bool, bool]
    ) -> None:
        try:
            _check_modern_headers(message, headers)
        except MCPError as exc:
            rid = message.get("id") if isinstance(message, dict) else None
            await _json(send, 400, error_response(rid, exc, True))
            return
        if not accepts[1] and message.get("method") == "subscriptions/listen":
            raise HTTPError(406, "subscriptions/listen answers with a stream: Accept must list text/event-stream")
        conn = self.server.connect(_discard, stateless=True)
        await self._exchange(conn, message, receive, send, accepts, watch=True)

    async def _post_session(
        self, message: Any, headers: _Headers, receive: Receive, send: Send, accepts: tuple[bool, bool]
    ) -> None:
        if type(message) is dict and message.get("method") == "initialize" and "id" in message:
            await self._initialize(message, receive, send, accepts)
            return
        sid = headers.opt(SESSION_HEADER)
        if not sid:
            await _json(send, 400, error_response(None, InvalidRequest(
                "Bad Request: Mcp-Session-Id header is required (initialize first, or send a "
                f"2026-07-28 request with _meta['{META_PROTOCOL_VERSION}'])")))
            return
        session = self._session(sid)
        version = headers.opt(VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_VERSIONS:
            await _json(send, 400, error_response(None, InvalidRequest(
                f"Bad Request: unsupported MCP-Protocol-Version {version!r}",
                {"supported": list(HANDSHAKE_VERSIONS)})))
            return
        assert session.conn is not None
        await self._exchange(session.conn, message, receive, send, accepts, session=session)

    async def _initialize(
        self, message: dict[str, Any], receive: Receive, send: Send, accepts: tuple[bool, bool]
    ) -> None:
        self._expire()
        if len(self.sessions) >= self.max_sessions:
            raise HTTPError(503, "Too many sessions", [(b"retry-after", b"5")])
        session = _Session(secrets.token_urlsafe(24), self.replay)
        session.conn = self.server.connect(session.deliver)
        self.sessions[session.id] = session
        try:
            await self._exchange(session.conn, message, receive, send, accepts, session=session,
                                 issue_session=True)
        finally:
            if session.conn.protocol_version is None:  # initialize failed: no session
                self._end(session)

    async def _exchange(
        self,
        conn: Connection,
        message: Any,
        receive: Receive,
        send: Send,
        accepts: tuple[bool, bool],
        *,
        watch: bool = False,
        session: _Session | None = None,
        issue_session: bool = False,
    ) -> None:
        """Hand one POST body to the core and send back what it answers.

        ``watch``: a disconnect cancels the request (2026-07-28); in the handshake era it
        does not (the client cancels with notifications/cancelled), so nobody listens.
        """
        inbox = _Inbox()
        conn.receive(message, inbox.put)
        ids = _request_ids(message)
        if not inbox.items and not any(rid in conn.inflight for rid in ids):
            # a notification or a response: nothing will follow
            await _respond(send, 202, b"")
            if session is not None:
                session.wake_cancelled()
            return
        if session is not None:
            session.waiting[inbox] = ids
        try:
            json_ok, sse_ok = accepts
            first = inbox.items.popleft() if inbox.items else await self._next(inbox, receive, watch)
            if not sse_ok:  # a JSON-only client: request-scoped notifications cannot reach it
                while first is not None and first is not _CANCELLED and first is not _ENDED \
                        and not _is_final(first):
                    first = await self._next(inbox, receive, watch)
            if first is None:
                return  # the client went away (the request is cancelled below)
            if first is _CANCELLED or first is _ENDED:
                await self._unanswered(send, first, sse_ok)
                return
            extra: Headers = []
            if issue_session and session is not None and conn.protocol_version is not None:
                extra.append((b"mcp-session-id", session.id.encode()))
            status = _status_of(first, conn) if _is_final(first) else 0
            if status and (json_ok or status != 200):  # an HTTP-level error is JSON whatever Accept says
                await _json(send, status, first, extra)
            else:  # notifications come first (or the client takes nothing but SSE)
                await self._stream(conn, first, inbox, receive, send, ids, watch, session, extra)
        finally:
            inbox.stop_watching()
            if session is not None:
                session.waiting.pop(inbox, None)
            elif conn.inflight:  # a stateless request left behind (disconnect, error): cancel it
                conn.close()

    async def _stream(
        self,
        conn: Connection,
        first: Any,
        inbox: _Inbox,
        receive: Receive,
        send: Send,
        ids: list[Any],
        watch: bool,
        session: _Session | None,
        extra: Headers,
    ) -> None:
        """Answer as SSE: notifications as they come, then the final message."""
        if self.open_streams >= self.max_streams:
            for rid in ids:
                conn.cancel(rid)
            raise HTTPError(503, "Too many open streams", [(b"retry-after", b"5")])
        stream = session.new_stream() if session is not None else None
        self.open_streams += 1
        try:
            await send({"type": "http.response.start", "status": 200, "headers": _sse_headers(extra)})
            if stream is not None and conn.protocol_version == PRIMING_VERSION:
                await _body(send, stream.priming())
            item = first
            while True:
                await _body(send, stream.event(item) if stream is not None else _plain_event(item))
                if _is_final(item):
                    break
                item = await self._next(inbox, receive, watch, send)
                if item is None:
                    return
                if item is _CANCELLED or item is _ENDED:
                    break
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.open_streams -= 1
            if stream is not None:
                stream.finish()

    async def _unanswered(self, send: Send, why: Any, sse_ok: bool) -> None:
        """The request will get no answer: its session ended, or the client cancelled it."""
        if why is _ENDED:
            raise HTTPError(404, "Session terminated: initialize again")
        if sse_ok:  # an event stream that ends without a response
            await send({"type": "http.response.start", "status": 200, "headers": _sse_headers()})
            await send({"type": "http.response.body", "body": b""})
        else:
            await _respond(send, 202, b"")

    async def _next(self, inbox: _Inbox, receive: Receive, watch: bool, keepalive: Send | None = None) -> Any:
        """The next message for this response, or None when the client went away.

        ``watch``: notice a disconnect. ``keepalive``: on a quiet stream, write a comment
        line every ``self.keepalive`` seconds.
        """
        if inbox.items:
            return inbox.items.popleft()
        loop = asyncio.get_running_loop()
        while True:
            if watch and inbox.watcher is None:
                inbox.watcher = asyncio.ensure_future(receive())
                inbox.watcher.add_done_callback(inbox.wake)
            timer = loop.call_later(self.keepalive, inbox.wake) if keepalive is not None else None
            await inbox.wait()
            if timer is not None:
                timer.cancel()
            if inbox.items:
                return inbox.items.popleft()
            watcher = inbox.watcher
            if watcher is not None and watcher.done():
                inbox.watcher = None
                if watcher.cancelled() or watcher.result().get("type") == "http.disconnect":
                    return None
                continue  # some other message: keep watching
            if keepalive is not None:
                await keepalive({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})

    # --- GET and DELETE ---------------------------------------------------------------

    async def _get(self, headers: _Headers, receive: Receive, send: Send) -> None:
        sid = headers.opt(SESSION_HEADER)
        if not sid or headers.opt(VERSION_HEADER) in MODERN_VERSIONS:
            raise HTTPError(405, "GET needs a handshake-era session; 2026-07-28 uses subscriptions/listen",
                            [(b"allow", b"POST")])
        if not _accepts(headers.text(b"accept"))[1]:
            raise HTTPError(406, "Accept must list text/event-stream")
        session = self._session(sid)
        stream = session.standalone
        replay: list[bytes] = []
        last = headers.opt(b"last-event-id")
        if last:
            key, _, number = last.rpartition(".")
            resumed = session.streams.get(key.encode("latin-1"))
            if resumed is None or not number.isdigit():
                raise HTTPError(400, "Unknown Last-Event-ID: not a stream of this session")
            replay = resumed.after(int(number))
            if resumed is not stream:
                await self._resume(resumed, replay, receive, send)
                return
        if self.open_streams >= self.max_streams:
            raise HTTPError(503, "Too many open streams", [(b"retry-after", b"5")])
        pending = list(session.outbox)
        session.outbox.clear()
        if session.listener is not None:  # the newest GET stream takes over (the old one may be half-open)
            pending = session.listener.take() + pending
            session.listener.put(_ENDED)
        listener = session.listener = _Inbox()
        self.open_streams += 1
        try:
            await send({"type": "http.response.start", "status": 200, "headers": _sse_headers()})
            assert session.conn is not None
            if not last and session.conn.protocol_version == PRIMING_VERSION:
                await _body(send, stream.priming())
            for data in replay:
                await _body(send, data)
            for message in pending:
                await _body(send, stream.event(message))
            while True:
                item = await self._next(listener, receive, True, send)
                if item is None or item is _ENDED:
                    break
                await _body(send, stream.event(item))
            if item is not None:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            listener.stop_watching()
            self.open_streams -= 1
            if session.listener is listener:
                session.listener = None
                # undelivered messages wait for the next GET stream
                session.outbox = deque([*listener.take(), *session.outbox], maxlen=self.replay)

    async def _resume(self, stream: _Stream, replay: list[bytes], receive: Receive, send: Send) -> None:
        """GET + Last-Event-ID of a POST stream: what it missed, then the rest live."""
        if self.open_streams >= self.max_streams:
            raise HTTPError(503, "Too many open streams", [(b"retry-after", b"5")])
        resumer: _Inbox | None = None
        if not stream.done:
            if stream.resumer is not None:
                stream.resumer.put(_ENDED)
            resumer = stream.resumer = _Inbox()
        self.open_streams += 1
        try:
            await send({"type": "http.response.start", "status": 200, "headers": _sse_headers()})
            for data in replay:
                await _body(send, data)
            while resumer is not None:
                item = await self._next(resumer, receive, True, send)
                if item is None:
                    return
                if item is _ENDED:
                    break
                await _body(send, item)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.open_streams -= 1
            if resumer is not None:
                resumer.stop_watching()
                if stream.resumer is resumer:
                    stream.resumer = None

    async def _delete(self, headers: _Headers, send: Send) -> None:
        sid = headers.opt(SESSION_HEADER)
        if not sid:
            raise HTTPError(405, "DELETE ends a handshake-era session: send Mcp-Session-Id", [(b"allow", b"POST")])
        self._end(self._session(sid))
        await _respond(send, 204, b"")

    # --- sessions ----------------------------------------------------------------------

    def _session(self, sid: str) -> _Session:
        session = self.sessions.get(sid)
        now = time.monotonic()
        if session is None:
            raise HTTPError(404, "Session not found or expired: initialize again")
        if now - session.last_seen > self.session_idle_timeout and not session.busy():
            self._end(session)
            raise HTTPError(404, "Session expired: initialize again")
        session.last_seen = now
        return session

    def _end(self, session: _Session) -> None:
        """End a session: its subscriptions and requests, its GET stream, its waiting POSTs."""
        self.sessions.pop(session.id, None)
        if session.conn is not None:
            session.conn.close()
        if session.listener is not None:
            session.listener.put(_ENDED)
        for inbox in session.waiting:
            inbox.put(_ENDED)
        for stream in session.streams.values():
            if stream.resumer is not None:
                stream.resumer.put(_ENDED)

    def _expire(self) -> None:
        cutoff = time.monotonic() - self.session_idle_timeout
        for session in [s for s in self.sessions.values() if s.last_seen < cutoff]:
            if not session.busy():
                log.info("session %s… expired", session.id[:6])
                self._end(session)

    async def _reap(self) -> None:
        interval = min(max(self.session_idle_timeout / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            self._expire()


# --- helpers ------------------------------------------------------------------------


def _discard(message: Any) -> None:
    """Stateless connections have no channel beside the response."""


def _request_ids(message: Any) -> list[Any]:
    """Ids of the requests in a body (a response or a notification has none)."""
    if type(message) is dict:
        return [message["id"]] if "method" in message and "id" in message else []
    if type(message) is list:
        return [m["id"] for m in message if type(m) is dict and "method" in m and "id" in m]
    return []


def _is_modern(message: Any, headers: _Headers) -> bool:
    if headers.opt(VERSION_HEADER) in MODERN_VERSIONS:
        return True
    if type(message) is dict:
        params = message.get("params")
        meta = params.get("_meta") if type(params) is dict else None
        return type(meta) is dict and META_PROTOCOL_VERSION in meta
    return False


def _check_modern_headers(message: Any, headers: _Headers) -> None:
    """2026-07-28: the mirrored headers must be present and equal the body (-32020)."""
    if type(message) is not dict:
        raise InvalidRequest("Invalid Request: 2026-07-28 bodies are a single JSON-RPC message")
    params = message.get("params")
    meta = params.get("_meta") if type(params) is dict else None
    body_version = meta.get(META_PROTOCOL_VERSION) if type(meta) is dict else None
    if body_version is None:
        raise InvalidParams(f"Invalid params: _meta['{META_PROTOCOL_VERSION}'] is required",
                            {"missing": [META_PROTOCOL_VERSION]})
    header_version = headers.opt(VERSION_HEADER)
    if header_version is None:
        raise HeaderMismatch("Header mismatch: MCP-Protocol-Version header is required",
                             {"header": "MCP-Protocol-Version"})
    if header_version != body_version:
        raise HeaderMismatch("Header mismatch: MCP-Protocol-Version differs from _meta protocolVersion",
                             {"header": "MCP-Protocol-Version", "expected": body_version, "actual": header_version})
    method = message.get("method")
    header_method = headers.opt(b"mcp-method")
    if header_method is None:
        if "id" not in message:
            return  # a notification: the revision defines no header rules for those
        raise HeaderMismatch("Header mismatch: Mcp-Method header is required", {"header": "Mcp-Method"})
    if header_method != method:
        raise HeaderMismatch("Header mismatch: Mcp-Method differs from the body's method",
                             {"header": "Mcp-Method", "expected": method, "actual": header_method})
    if method == "resources/read" and "id" in message:
        name = headers.opt(b"mcp-name")
        if name is None:
            raise HeaderMismatch("Header mismatch: Mcp-Name header is required", {"header": "Mcp-Name"})
        uri = params.get("uri") if type(params) is dict else None
        decoded = _decode_header(name)
        if decoded != uri:
            raise HeaderMismatch("Header mismatch: Mcp-Name differs from params.uri",
                                 {"header": "Mcp-Name", "expected": uri, "actual": name})


def _decode_header(value: str) -> str | None:
    """A ``=?base64?...?=`` value decoded (None if malformed); any other value as is."""
    if value.startswith("=?base64?") and value.endswith("?=") and len(value) >= 11:
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
    if not value.isascii() or not value.isprintable():
        return None  # raw non-ASCII or control characters: invalid, never equal
    return value


@functools.lru_cache(maxsize=64)
def _accepts(accept: str) -> tuple[bool, bool]:
    """(JSON acceptable, SSE acceptable) from an Accept header; none means anything."""
    if not accept.strip():
        return True, True
    json_ok = sse_ok = False
    for part in accept.lower().split(","):
        media, *parameters = part.split(";")
        media = media.strip()
        if any(_is_zero_q(p) for p in parameters):
            continue  # q=0: explicitly not acceptable
        if media in ("application/json", "application/*", "*/*"):
            json_ok = True
        if media in ("text/event-stream", "text/*", "*/*"):
            sse_ok = True
    return json_ok, sse_ok


def _is_zero_q(parameter: str) -> bool:
    name, _, value = parameter.partition("=")
    if name.strip() != "q":
        return False
    try:
        return float(value) == 0
    except ValueError:
        return False


def _is_final(message: Any) -> bool:
    return type(message) is list or "id" in message


def _status_of(message: Any, conn: Connection) -> int:
    if type(message) is dict and "error" in message:
        error = message["error"]
        code = error.get("code")
        if code == -32601 and conn.stateless:
            return 404
        if code in _BAD_REQUEST_CODES:
            return 400
        data = error.get("data")
        if conn.stateless and code == -32602 and type(data) is dict and "missing" in data:
            return 400  # a required _meta field is missing
    return 200


@functools.lru_cache(maxsize=256)
def _bare_host(netloc: str) -> str:
    """``Host``/netloc → lower-case host without port, brackets or trailing dot."""
    netloc = netloc.strip().lower()
    if not netloc:
        return ""
    try:
        host = urlsplit("//" + netloc).hostname or ""
    except ValueError:
        return netloc
    return host.rstrip(".")


@functools.lru_cache(maxsize=256)
def _is_loopback(host: str) -> bool:
    """Is a bare host (no port; brackets optional) a loopback name or address?"""
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _sse_headers(extra: Headers | None = None) -> Headers:
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
               (b"x-accel-buffering", b"no")]
    return headers + extra if extra else headers


def _plain_event(message: Any) -> bytes:
    """An SSE event without an id: 2026-07-28 streams are not resumable."""
    return b"event: message\ndata: " + orjson.dumps(message) + b"\n\n"


def _preflight_headers(headers: _Headers) -> Headers:
    requested = headers.text(b"access-control-request-headers")
    return [(b"access-control-allow-methods", b"GET, POST, DELETE"),
            (b"access-control-allow-headers", requested.encode("latin-1")),
            (b"access-control-max-age", b"600")]


def _with_cors(send: Send, origin: str) -> Send:
    """Let a browser page at an allowed origin read the response (and the session id)."""
    cors = [(b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-expose-headers", b"mcp-session-id, mcp-protocol-version"),
            (b"vary", b"origin")]

    async def send_with_cors(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *cors]}
        await send(message)

    return send_with_cors


def _error_body(status: int, message: str) -> bytes:
    """A JSON-RPC error without an id, for a refusal at the HTTP level."""
    return orjson.dumps(error_response(None, InvalidRequest(message) if status < 500 else MCPError(message)))


async def _body(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


async def _respond(send: Send, status: int, body: bytes, headers: Headers | None = None,
                   content_type: bytes = JSON) -> None:
    all_headers = list(headers) if headers else []
    if body:
        all_headers.append((b"content-type", content_type))
    if status != 204:  # a 204 carries no Content-Length (RFC 9110)
        all_headers.append((b"content-length", b"%d" % len(body)))
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, message: Any, headers: Headers | None = None) -> None:
    await _respond(send, status, orjson.dumps(message), headers)


# --- running ------------------------------------------------------------------------------


def run_http(app: App | None, *, host: str = "127.0.0.1", port: int = 8000, reload_target: str | None = None,
             **options: Any) -> None:
    """Serve with uvicorn (the ``http`` extra) until SIGINT/SIGTERM; logs go to stderr.

    ``options`` go to ``ASGIApp``. ``reload_target`` (``FILE[:ATTR]``) restarts the server
    whenever a file in that app's directory changes (``resourcekit run --reload``).
    """
    try:
        import uvicorn
    except ImportError:
        raise SystemExit("resourcekit: error: HTTP needs uvicorn: pip install 'resourcekit[http]'") from None
    from .stdio import configure_logging

    configure_logging()
    level = os.environ.get("RESOURCEKIT_LOG_LEVEL", "warning").lower()
    shown = f"[{host}]" if ":" in host else host
    if reload_target is not None:
        os.environ["RESOURCEKIT_TARGET"] = reload_target
        directory = os.path.dirname(os.path.abspath(split_target(reload_target)[0]))
        print(f"resourcekit: serving {reload_target} at http://{shown}:{port}/mcp, reloading on changes "
              f"in {directory}", file=sys.stderr)
        uvicorn.run("resourcekit.transports.http:_reload_factory", factory=True, reload=True,
                    reload_dirs=[directory], host=host, port=port, log_level=level,
                    timeout_graceful_shutdown=SHUTDOWN_GRACE)
        return
    assert app is not None
    asgi = ASGIApp(app, **options)

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            # uvicorn waits for open responses before it sends lifespan.shutdown: end the
            # long-lived streams (GET, listen) now so that stopping takes no time
            asgi.close_soon()
            super().handle_exit(sig, frame)

    # no proxy-header rewriting (nothing here trusts a proxy by default) and no Date/Server
    # headers: together they cost more per request than MCP's own work
    config = uvicorn.Config(asgi, host=host, port=port, log_level=level, lifespan="on",
                            timeout_graceful_shutdown=SHUTDOWN_GRACE, proxy_headers=False,
                            date_header=False, server_header=False)
    print(f"resourcekit: serving {app.name!r} at http://{shown}:{port}{asgi.path}", file=sys.stderr)
    with contextlib.suppress(KeyboardInterrupt):
        _Server(config).run()


def _reload_factory() -> ASGIApp:
    return ASGIApp(load_app(os.environ["RESOURCEKIT_TARGET"]))
