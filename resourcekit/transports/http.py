"""Streamable HTTP as a plain ASGI application (no web framework underneath).

Only HTTP framing lives here: sessions, SSE streams, status codes and the
header checks of each revision.  Every protocol rule is the core's
(``resourcekit.protocol``).  A POST whose body carries
``_meta["io.modelcontextprotocol/protocolVersion"]`` is served statelessly as
2026-07-28; anything else belongs to a handshake-era session that
``initialize`` opened and ``Mcp-Session-Id`` names.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import inspect
import ipaddress
import itertools
import logging
import os
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

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

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
JSON = b"application/json"
SSE = b"text/event-stream"
# JSON-RPC errors that are about the HTTP request itself, not the resource asked for
_BAD_REQUEST_CODES = frozenset({-32700, -32600, -32020, -32021, -32022})


class HTTPError(Exception):
    """Raise from an ``auth`` hook (or anywhere in this module) to answer with a status."""

    def __init__(self, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers)


class _Stream:
    """One SSE stream of a session: its events are numbered and kept for replay."""

    __slots__ = ("buffer", "delivered", "key", "listener", "next_id")

    def __init__(self, key: str, replay: int) -> None:
        self.key = key
        self.next_id = 0
        self.delivered = 0  # the last event a live listener was sent
        self.buffer: deque[tuple[int, bytes]] = deque(maxlen=replay)
        self.listener: asyncio.Queue[bytes | None] | None = None

    def _record(self, payload: bytes) -> bytes:
        self.next_id += 1
        data = b"id: " + f"{self.key}.{self.next_id}".encode() + payload
        self.buffer.append((self.next_id, data))
        return data

    def event(self, message: Any) -> bytes:
        return self._record(b"\nevent: message\ndata: " + orjson.dumps(message) + b"\n\n")

    def priming(self) -> bytes:
        """The 2025-11-25 priming event: an id and empty data, so a client can resume from it."""
        return self._record(b"\ndata: \n\n")

    def after(self, event_id: int) -> list[bytes]:
        return [data for number, data in self.buffer if number > event_id]


class _Inbox:
    """What the core answers to one POST, in order; cheaper than an asyncio.Queue."""

    __slots__ = ("items", "waiter")

    def __init__(self) -> None:
        self.items: deque[Any] = deque()
        self.waiter: asyncio.Future[None] | None = None

    def put(self, message: Any) -> None:
        self.items.append(message)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def wait(self) -> asyncio.Future[None]:
        waiter = self.waiter = asyncio.get_running_loop().create_future()
        if self.items:
            waiter.set_result(None)
        return waiter


class _Session:
    __slots__ = ("conn", "id", "last_seen", "standalone", "streams", "version_counter")

    def __init__(self, sid: str, replay: int) -> None:
        self.id = sid
        self.conn: Connection | None = None
        self.last_seen = time.monotonic()
        self.standalone = _Stream(f"{sid[:8]}-0", replay)
        self.streams: dict[str, _Stream] = {self.standalone.key: self.standalone}
        self.version_counter = itertools.count(1)

    def deliver(self, message: Any) -> None:
        """Messages not tied to a request go to the standalone GET stream (or its buffer)."""
        data = self.standalone.event(message)
        if self.standalone.listener is not None:
            self.standalone.listener.put_nowait(data)

    def new_stream(self, replay: int) -> _Stream:
        stream = _Stream(f"{self.id[:8]}-{next(self.version_counter)}", replay)
        self.streams[stream.key] = stream
        if len(self.streams) > 64:  # keep the most recent POST streams for replay only
            oldest = next(k for k in self.streams if k != self.standalone.key)
            del self.streams[oldest]
        return stream


class ASGIApp:
    """Serve an App's MCP endpoint at ``path`` (``/mcp``) to any ASGI server.

    ``allowed_origins``: extra ``Origin`` values allowed besides loopback ones.
    ``allowed_hosts``: ``Host`` names allowed; by default, when the server is bound
    to a loopback address, only loopback names (DNS-rebinding protection).
    ``auth``: ``auth(headers)`` (sync or async) returns to allow, or raises
    ``HTTPError(401 or 403, message)`` to refuse.
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
        self.allowed_origins = frozenset(o.rstrip("/") for o in allowed_origins)
        self.allowed_hosts = None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)
        self.session_idle_timeout = session_idle_timeout
        self.max_sessions = max_sessions
        self.max_streams = max_streams
        self.keepalive = keepalive
        self.replay = replay
        self.auth = auth
        self.sessions: dict[str, _Session] = {}
        self.open_streams = 0
        self._server: Server | None = None
        self._reaper: asyncio.Task[None] | None = None

    # --- ASGI entry ------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            try:
                await self._http(scope, receive, send)
            except HTTPError as exc:
                await _respond(send, exc.status, _error_body(exc.status, exc.message), exc.headers)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.server  # noqa: B018 - bind to the loop now rather than on the first request
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    @property
    def server(self) -> Server:
        if self._server is None:
            self._server = Server(self.app)
            self._server.start()
            self._reaper = asyncio.get_running_loop().create_task(self._reap())
        return self._server

    def close(self) -> None:
        """End every session and listen stream (server shutdown)."""
        if self._server is not None:
            self.app.tracker.close_listens()
        for session in list(self.sessions.values()):
            self._end(session)
        if self._reaper is not None:
            self._reaper.cancel()
        if self._server is not None:
            self._server.close()
            self._server = None

    # --- request routing -----------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if root and path.startswith(root):  # mounted inside another app (Starlette, FastAPI)
            path = path[len(root):]
        if (path.rstrip("/") or "/") != self.path:
            await _respond(send, 404, b"Not Found", content_type=b"text/plain")
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        self._check_host_and_origin(scope, headers)
        if self.auth is not None:
            outcome = self.auth(headers)
            if inspect.isawaitable(outcome):
                await outcome
        method = scope.get("method", "GET")
        if method == "POST":
            await self._post(headers, receive, send)
        elif method == "GET":
            await self._get(headers, receive, send)
        elif method == "DELETE":
            await self._delete(headers, send)
        else:
            raise HTTPError(405, f"Method {method} not allowed", [(b"allow", b"GET, POST, DELETE")])

    def _check_host_and_origin(self, scope: Scope, headers: dict[str, str]) -> None:
        host = _hostname(headers.get("host", ""))
        bound = scope.get("server") or ("", None)
        loopback_bind = _is_loopback(str(bound[0]))
        if self.allowed_hosts is not None:
            if host not in self.allowed_hosts and host not in LOOPBACK_NAMES:
                raise HTTPError(421, f"Host {host!r} is not allowed")
        elif loopback_bind and host and host not in LOOPBACK_NAMES:
            raise HTTPError(421, f"Host {host!r} is not allowed for a server bound to loopback")
        origin = headers.get("origin")
        if origin is None or (origin == "null" and not loopback_bind):
            return
        origin = origin.rstrip("/")
        if origin in self.allowed_origins:
            return
        origin_host = _hostname(urlsplit(origin).netloc)
        if origin_host in LOOPBACK_NAMES:
            return
        if not loopback_bind and origin_host and origin_host == host:
            return  # same-origin requests to a public deployment
        raise HTTPError(403, f"Origin {origin!r} is not allowed")

    # --- POST ------------------------------------------------------------------------

    async def _post(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        content_type = headers.get("content-type", "")
        if not content_type.lower().startswith("application/json"):
            raise HTTPError(415, "Content-Type must be application/json")
        accept = headers.get("accept", "*/*").lower()
        if "application/json" not in accept and "text/event-stream" not in accept and "*/*" not in accept:
            raise HTTPError(406, "Accept must list application/json and text/event-stream")
        body = await self._read_body(receive)
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            await _json(send, 400, error_response(None, ParseError(f"Parse error: {exc}")))
            return
        if _is_modern(message, headers):
            await self._post_modern(message, headers, receive, send)
        else:
            await self._post_session(message, headers, receive, send)

    async def _read_body(self, receive: Receive) -> bytes:
        limit = self.app.max_message_size
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise HTTPError(400, "client disconnected")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise HTTPError(413, f"Body larger than {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    async def _post_modern(self, message: Any, headers: dict[str, str], receive: Receive, send: Send) -> None:
        try:
            _check_modern_headers(message, headers)
        except MCPError as exc:
            rid = message.get("id") if isinstance(message, dict) else None
            await _json(send, 400, error_response(rid, exc, True))
            return
        conn = self.server.connect(_discard, stateless=True)
        try:
            await self._exchange(conn, message, receive, send, version=None, cancel_on_disconnect=True)
        finally:
            conn.close()

    async def _post_session(self, message: Any, headers: dict[str, str], receive: Receive, send: Send) -> None:
        if isinstance(message, dict) and message.get("method") == "initialize" and "id" in message:
            await self._initialize(message, receive, send)
            return
        sid = headers.get(SESSION_HEADER)
        if not sid:
            await _json(send, 400, error_response(None, InvalidRequest(
                "Bad Request: Mcp-Session-Id header is required (initialize first, or send a "
                f"2026-07-28 request with _meta['{META_PROTOCOL_VERSION}'])")))
            return
        session = self._session(sid)
        version = headers.get(VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_VERSIONS:
            await _json(send, 400, error_response(None, InvalidRequest(
                f"Bad Request: unsupported MCP-Protocol-Version {version!r}",
                {"supported": list(HANDSHAKE_VERSIONS)})))
            return
        assert session.conn is not None
        await self._exchange(session.conn, message, receive, send, version=session.conn.protocol_version,
                             session=session, cancel_on_disconnect=False)

    async def _initialize(self, message: dict[str, Any], receive: Receive, send: Send) -> None:
        self._expire()
        if len(self.sessions) >= self.max_sessions:
            raise HTTPError(503, "Too many sessions", [(b"retry-after", b"5")])
        sid = secrets.token_urlsafe(24)
        session = _Session(sid, self.replay)
        session.conn = self.server.connect(session.deliver)
        self.sessions[sid] = session
        await self._exchange(session.conn, message, receive, send, version=None, session=session,
                             cancel_on_disconnect=False, extra_headers=[(b"mcp-session-id", sid.encode())])
        if session.conn.protocol_version is None:  # initialize failed: no session
            self._end(session)

    async def _exchange(
        self,
        conn: Connection,
        message: Any,
        receive: Receive,
        send: Send,
        *,
        version: str | None,
        cancel_on_disconnect: bool,
        session: _Session | None = None,
        extra_headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        """Hand one POST body to the core and stream back what it answers."""
        if not _expects_answer(message):
            conn.receive(message)
            await _respond(send, 202, b"", extra_headers)
            return
        inbox = _Inbox()
        conn.receive(message, inbox.put)
        rid = message.get("id") if isinstance(message, dict) else None
        first = inbox.items.popleft() if inbox.items else None
        if first is None:
            first = await self._next(inbox, receive, conn, rid, cancel_on_disconnect)
            if first is None:
                return  # the client went away
        if _is_final(first):
            await _json(send, _status_of(first, conn), first, extra_headers)
            return
        # notifications came first: switch to an SSE response
        if self.open_streams >= self.max_streams:
            conn.cancel(rid)
            raise HTTPError(503, "Too many open streams", [(b"retry-after", b"5")])
        stream = session.new_stream(self.replay) if session is not None else _Stream("s", 0)
        self.open_streams += 1
        try:
            await send({"type": "http.response.start", "status": 200, "headers": _sse_headers(extra_headers)})
            if (version or conn.protocol_version) == "2025-11-25":
                await _body(send, stream.priming())
            item: Any = first
            while True:
                await _body(send, stream.event(item))
                if _is_final(item):
                    break
                item = await self._next(inbox, receive, conn, rid, cancel_on_disconnect, stream=True,
                                        send=send)
                if item is None:
                    return
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.open_streams -= 1

    async def _next(
        self,
        inbox: _Inbox,
        receive: Receive,
        conn: Connection,
        rid: Any,
        cancel_on_disconnect: bool,
        *,
        stream: bool = False,
        send: Send | None = None,
    ) -> Any:
        """The next message for this response, or None when the client disconnected."""
        if inbox.items:
            return inbox.items.popleft()
        if not (stream or cancel_on_disconnect):
            # a handshake-era request: a disconnect is not a cancellation (2025-11-25), so
            # there is nothing to watch for: just wait for the answer
            await inbox.wait()
            return inbox.items.popleft()
        watcher = asyncio.ensure_future(receive())
        try:
            while True:
                waiter: asyncio.Future[Any] = inbox.wait()
                done, _ = await asyncio.wait({waiter, watcher}, timeout=self.keepalive if stream else None,
                                             return_when=asyncio.FIRST_COMPLETED)
                if inbox.items:
                    return inbox.items.popleft()
                if watcher in done:
                    if watcher.result().get("type") == "http.disconnect":
                        if cancel_on_disconnect or _is_listen(conn, rid):
                            conn.cancel(rid)
                        return None
                    watcher = asyncio.ensure_future(receive())
                    continue
                if stream and send is not None:
                    await _body(send, b": keep-alive\n\n")
        finally:
            watcher.cancel()

    # --- GET and DELETE ---------------------------------------------------------------

    async def _get(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        sid = headers.get(SESSION_HEADER)
        if not sid or headers.get(VERSION_HEADER) in MODERN_VERSIONS:
            raise HTTPError(405, "GET needs a handshake-era session; 2026-07-28 uses subscriptions/listen",
                            [(b"allow", b"POST")])
        if "text/event-stream" not in headers.get("accept", "").lower() and "*/*" not in headers.get("accept", ""):
            raise HTTPError(406, "Accept must list text/event-stream")
        session = self._session(sid)
        stream = session.standalone
        replay: list[bytes] = []
        last = headers.get("last-event-id")
        if last:
            key, _, number = last.rpartition(".")
            previous = session.streams.get(key)
            if previous is None or not number.isdigit():
                raise HTTPError(400, "Unknown Last-Event-ID")
            replay = previous.after(int(number))
            if previous is not stream:
                # resuming a POST stream: send what it missed, then end
                await send({"type": "http.response.start", "status": 200, "headers": _sse_headers()})
                for data in replay:
                    await _body(send, data)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
        else:
            replay = stream.after(stream.delivered)  # what arrived while no GET stream was open
        if stream.listener is not None:
            raise HTTPError(409, "This session already has an open GET stream")
        if self.open_streams >= self.max_streams:
            raise HTTPError(503, "Too many open streams", [(b"retry-after", b"5")])
        listener: asyncio.Queue[bytes | None] = asyncio.Queue()
        stream.listener = listener
        self.open_streams += 1
        try:
            await send({"type": "http.response.start", "status": 200, "headers": _sse_headers()})
            if session.conn is not None and session.conn.protocol_version == "2025-11-25" and not last:
                await _body(send, stream.priming())
            for data in replay:
                await _body(send, data)
            stream.delivered = stream.next_id
            watcher = asyncio.ensure_future(receive())
            try:
                while True:
                    getter = asyncio.ensure_future(listener.get())
                    done, _ = await asyncio.wait({getter, watcher}, timeout=self.keepalive,
                                                 return_when=asyncio.FIRST_COMPLETED)
                    if getter in done:
                        live = getter.result()
                        if live is None:
                            break
                        session.last_seen = time.monotonic()
                        stream.delivered = stream.next_id
                        await _body(send, live)
                        continue
                    getter.cancel()
                    if watcher in done:
                        if watcher.result().get("type") == "http.disconnect":
                            return
                        watcher = asyncio.ensure_future(receive())
                        continue
                    await _body(send, b": keep-alive\n\n")
            finally:
                watcher.cancel()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            if stream.listener is listener:
                stream.listener = None
            self.open_streams -= 1

    async def _delete(self, headers: dict[str, str], send: Send) -> None:
        sid = headers.get(SESSION_HEADER)
        if not sid:
            raise HTTPError(405, "DELETE ends a handshake-era session: send Mcp-Session-Id", [(b"allow", b"POST")])
        self._end(self._session(sid))
        await _respond(send, 204, b"")

    # --- sessions ------------------------------------------------------------------------

    def _session(self, sid: str) -> _Session:
        session = self.sessions.get(sid)
        if session is None:
            raise HTTPError(404, "Session not found or expired: initialize again")
        if time.monotonic() - session.last_seen > self.session_idle_timeout and session.standalone.listener is None:
            self._end(session)
            raise HTTPError(404, "Session expired: initialize again")
        session.last_seen = time.monotonic()
        return session

    def _end(self, session: _Session) -> None:
        self.sessions.pop(session.id, None)
        if session.conn is not None:
            session.conn.close()
        if session.standalone.listener is not None:
            session.standalone.listener.put_nowait(None)

    def _expire(self) -> None:
        now = time.monotonic()
        for session in list(self.sessions.values()):
            if now - session.last_seen > self.session_idle_timeout and session.standalone.listener is None:
                self._end(session)

    async def _reap(self) -> None:
        interval = min(max(self.session_idle_timeout / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            self._expire()


# --- helpers ------------------------------------------------------------------------


def _discard(message: Any) -> None:
    """Stateless connections have no channel beside the response."""


def _is_modern(message: Any, headers: Mapping[str, str]) -> bool:
    if headers.get(VERSION_HEADER) in MODERN_VERSIONS:
        return True
    if isinstance(message, dict):
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta
    return False


def _check_modern_headers(message: Any, headers: Mapping[str, str]) -> None:
    if not isinstance(message, dict):
        raise InvalidRequest("Invalid Request: 2026-07-28 bodies are a single JSON-RPC message")
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    body_version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    header_version = headers.get(VERSION_HEADER)
    if body_version is None:
        raise InvalidParams(f"Invalid params: _meta['{META_PROTOCOL_VERSION}'] is required",
                            {"missing": [META_PROTOCOL_VERSION]})
    if header_version is None:
        raise HeaderMismatch("Header mismatch: MCP-Protocol-Version header is required",
                             {"header": "MCP-Protocol-Version"})
    if header_version != body_version:
        raise HeaderMismatch("Header mismatch: MCP-Protocol-Version differs from _meta protocolVersion",
                             {"header": "MCP-Protocol-Version", "expected": body_version, "actual": header_version})
    method = message.get("method")
    if "mcp-method" not in headers:
        raise HeaderMismatch("Header mismatch: Mcp-Method header is required", {"header": "Mcp-Method"})
    if headers["mcp-method"] != method:
        raise HeaderMismatch("Header mismatch: Mcp-Method differs from the body's method",
                             {"header": "Mcp-Method", "expected": method, "actual": headers["mcp-method"]})
    if method == "resources/read" and isinstance(params, dict):
        name = headers.get("mcp-name")
        if name is None:
            raise HeaderMismatch("Header mismatch: Mcp-Name header is required", {"header": "Mcp-Name"})
        decoded = _decode_header(name)
        if decoded != params.get("uri"):
            raise HeaderMismatch("Header mismatch: Mcp-Name differs from params.uri",
                                 {"header": "Mcp-Name", "expected": params.get("uri"), "actual": decoded})


def _decode_header(value: str) -> str | None:
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
    return value


def _expects_answer(message: Any) -> bool:
    if isinstance(message, list):
        return any(isinstance(m, dict) and "id" in m and "method" in m for m in message) or any(
            not isinstance(m, dict) for m in message) or not message
    if not isinstance(message, dict):
        return True
    return ("method" in message and "id" in message) or ("method" not in message and "id" not in message)


def _is_final(message: Any) -> bool:
    return isinstance(message, list) or "id" in message


def _is_listen(conn: Connection, rid: Any) -> bool:
    request = conn.inflight.get(rid)
    return request is not None and request.method == "subscriptions/listen"


def _status_of(message: Any, conn: Connection) -> int:
    if isinstance(message, dict) and "error" in message:
        code = message["error"].get("code")
        if code == -32601 and conn.stateless:
            return 404
        if code in _BAD_REQUEST_CODES:
            return 400
        if conn.stateless and code == -32602 and isinstance(message["error"].get("data"), dict) \
                and "missing" in message["error"]["data"]:
            return 400
    return 200


def _hostname(netloc: str) -> str:
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[: netloc.find("]") + 1] if "]" in netloc else netloc
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def _is_loopback(address: str) -> bool:
    if address in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def _sse_headers(extra: list[tuple[bytes, bytes]] | None = None) -> list[tuple[bytes, bytes]]:
    headers = [(b"content-type", SSE), (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]
    return headers + (extra or [])


def _error_body(status: int, message: str) -> bytes:
    return orjson.dumps(error_response(None, InvalidRequest(message) if status < 500 else MCPError(message)))


async def _body(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


async def _respond(
    send: Send,
    status: int,
    body: bytes,
    headers: list[tuple[bytes, bytes]] | None = None,
    content_type: bytes = JSON,
) -> None:
    all_headers = list(headers or [])
    if body:
        all_headers += [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, message: Any, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await _respond(send, status, orjson.dumps(message), headers)


# --- running ------------------------------------------------------------------------------


def run_http(app: App | None, *, host: str = "127.0.0.1", port: int = 8000, reload_target: str | None = None,
             **options: Any) -> None:
    """Serve with uvicorn (the ``http`` extra); logs go to stderr."""
    try:
        import uvicorn
    except ImportError:
        raise SystemExit("resourcekit: error: HTTP needs uvicorn: pip install 'resourcekit[http]'") from None
    from .stdio import configure_logging

    configure_logging()
    level = os.environ.get("RESOURCEKIT_LOG_LEVEL", "warning").lower()
    if reload_target is not None:
        os.environ["RESOURCEKIT_TARGET"] = reload_target
        directory = os.path.dirname(os.path.abspath(reload_target.split(":")[0]))
        uvicorn.run("resourcekit.transports.http:_reload_factory", factory=True, reload=True,
                    reload_dirs=[directory], host=host, port=port, log_level=level)
        return
    assert app is not None
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(ASGIApp(app, **options), host=host, port=port, log_level=level, lifespan="on")


def _reload_factory() -> ASGIApp:
    from ..cli import load_app

    return ASGIApp(load_app(os.environ["RESOURCEKIT_TARGET"]))

