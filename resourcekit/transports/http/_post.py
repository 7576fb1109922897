"""POST to the MCP endpoint: admission, the body, then the exchange of its era.

The path of every request a client makes after ``initialize``, so it runs as one coroutine
down to ``exchange`` (each coroutine level is paid again on every resumption): checks that
need no I/O are plain functions, the header values are compared as bytes where they come
in, and the Host/Origin verdict is cached per distinct header values (``ASGIApp.admit``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol, cast

import orjson

from ...core import error_response
from ...core.plan import STATELESS
from ...errors import InvalidRequest, MCPError, ParseError
from ...revisions import HANDSHAKE_VERSIONS, META_PROTOCOL_VERSION
from ._bytes import sink_for
from ._exchange import exchange
from ._gate import with_cors
from ._headers import (
    HANDSHAKE_HEADERS,
    MODERN_HEADERS,
    SESSION_HEADER,
    VERSION_HEADER,
    HTTPError,
    Receive,
    RequestHeaders,
    Scope,
    Send,
    check_length,
    check_modern_headers,
    error_body,
    post_accepts,
    read_rest,
    respond,
    respond_json,
)

if TYPE_CHECKING:
    from ...core import Server
    from ...limits import Limits
    from ...methods.streaming import Slots
    from ._gate import Authorize
    from ._redis_sessions import SharedSessions
    from ._sessions import SessionTable
    from ._sse import OpenStreams

__all__ = ["Endpoint", "post", "refuse"]


class Endpoint(Protocol):
    """What a POST asks of the endpoint it was sent to (``asgi.ASGIApp``, which calls ``post``)."""

    path: str
    posted: dict[tuple[Any, ...], tuple[str | None, tuple[bool, bool]]]

    @property
    def closed(self) -> bool: ...
    @property
    def limits(self) -> Limits: ...
    @property
    def authorize(self) -> Authorize | None: ...
    @property
    def sessions(self) -> SessionTable: ...
    @property
    def shared(self) -> SharedSessions | None: ...
    @property
    def streams(self) -> OpenStreams: ...
    @property
    def server(self) -> Server: ...
    @property
    def byte_streams(self) -> Slots: ...

    def admit(self, scope: Scope, headers: RequestHeaders, send: Send) -> Send: ...

    def judge(self, scope: Scope, headers: RequestHeaders, key: Any) -> str | None: ...

    def keep(self, key: tuple[Any, ...], origin: str | None, accepted: tuple[bool, bool]) -> None: ...

    def check_open(self) -> None: ...

    async def route(self, scope: Scope, receive: Receive, send: Send) -> None: ...

log = logging.getLogger("resourcekit")


async def post(endpoint: Endpoint, scope: Scope, receive: Receive, send: Send, mounted: bool = False) -> None:
    """``ASGIApp.__call__``: a POST to the endpoint is served here, down to the exchange; any
    other request goes to ``ASGIApp.route``.
    ``mounted``: a POST that ``route`` found (the app is mounted under a root path)."""
    # (an http scope always has its method and path: ASGI requires them)
    if not mounted and (scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != endpoint.path
                        or scope.get("root_path")):
        await endpoint.route(scope, receive, send)
        return
    cors = send  # a refusal goes out with CORS headers too, once the origin is allowed
    try:
        # a plain dict unless an auth hook wants ``RequestHeaders`` (its type costs every request more)
        authorize = endpoint.authorize
        raw = scope.get("headers", ())
        headers: dict[bytes, bytes] = dict(raw) if authorize is None else RequestHeaders(raw)
        # Host, Origin, bound address, Content-Type, Accept: clients send the same few, so what
        # ``endpoint.admit`` and ``post_accepts`` made of them is kept (``endpoint.posted``); a header
        # line repeated (Host?): the lines themselves, a key never kept, so ``judge`` reads them
        key = (headers.get(b"host") if len(headers) == len(raw) else raw, headers.get(b"origin"), scope.get("server"),
               headers.get(b"content-type"), headers.get(b"accept"))
        try:
            origin, accepted = endpoint.posted[key]
        except (KeyError, TypeError):  # not seen yet (or an address given as a list): admit, 421 or 403
            origin, accepted = endpoint.judge(scope, RequestHeaders(headers), key[:3]), None
        out = cors = send if origin is None else with_cors(send, origin)  # CORS headers for an allowed origin
        if endpoint.closed:
            endpoint.check_open()  # 503
        principal = None if authorize is None else await authorize(cast(RequestHeaders, headers), scope)
        if accepted is None:  # 415 or 406 (after the auth hook's verdict, as always)
            accepted = post_accepts(key[3], key[4])
            endpoint.keep(key, origin, accepted)
        limit = endpoint.limits.max_message_size
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            check_length(declared, limit)  # 400 or 413
        first = await receive()
        body = first.get("body", b"")
        if first.get("more_body") or first["type"] != "http.request" or len(body) > limit:
            body = await read_rest(first, receive, limit)
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            await respond_json(out, 400, error_response(None, ParseError(f"Parse error: {exc}")))
            return
        version = headers.get(VERSION_HEADER)
        if type(message) is dict:
            params = message.get("params")
            meta = params.get("_meta") if type(params) is dict else None
            if version in MODERN_HEADERS or (type(meta) is dict and META_PROTOCOL_VERSION in meta):  # 2026-07-28
                await _post_modern(endpoint, message, headers, receive, out, accepted, principal)
                return
            if message.get("method") == "initialize" and "id" in message:
                await _initialize(endpoint, message, receive, out, accepted, principal)
                return
        elif version in MODERN_HEADERS:
            await _post_modern(endpoint, message, headers, receive, out, accepted, principal)
            return
        sid = headers.get(SESSION_HEADER)
        if not sid:
            await respond_json(out, 400, error_response(None, InvalidRequest(
                "Bad Request: Mcp-Session-Id header is required (initialize first, or send a "
                f"2026-07-28 request with _meta['{META_PROTOCOL_VERSION}'])")))
            return
        shared = endpoint.shared
        session = endpoint.sessions.lookup(sid.decode("latin-1"), principal) if shared is None else \
            await shared.find(sid.decode("latin-1"), principal, endpoint.server.connect)
        if version is not None and version not in HANDSHAKE_HEADERS:
            await respond_json(out, 400, error_response(None, InvalidRequest(
                f"Bad Request: unsupported MCP-Protocol-Version {version.decode('latin-1')!r}",
                {"supported": list(HANDSHAKE_VERSIONS)})))
            return
        assert session.conn is not None
        if shared is not None:
            out = shared.prepare(session, message, out)
        await exchange(session.conn, message, receive, out, accepted, endpoint.streams, session=session,
                       principal=principal, sink=sink_for(message, endpoint.byte_streams, headers))
    except Exception as exc:
        await refuse(scope, cors, exc)


async def refuse(scope: Scope, send: Send, exc: Exception) -> None:
    """The answer to a request that raised: its ``HTTPError``'s status, else 500 (and a log entry)."""
    if isinstance(exc, HTTPError):
        await respond(send, exc.status, error_body(exc.status, exc.message), exc.headers)
        return
    log.error("error serving %s %s", scope.get("method"), scope.get("path"), exc_info=exc)
    with contextlib.suppress(Exception):  # the response may have started already
        await respond(send, 500, error_body(500, "Internal error"))


def _post_modern(endpoint: Endpoint, message: Any, headers: dict[bytes, bytes], receive: Receive, send: Send,
                 accepted: tuple[bool, bool], principal: Any) -> Coroutine[Any, Any, None]:
    """A 2026-07-28 POST: what ``post`` awaits (a plain function, so that each resumption of the
    exchange passes one coroutine less)."""
    try:
        check_modern_headers(message, headers)
    except MCPError as exc:
        rid = message.get("id") if isinstance(message, dict) else None
        return respond_json(send, 400, error_response(rid, exc, STATELESS))
    listen = message.get("method") == "subscriptions/listen"
    if not accepted[1] and listen:
        raise HTTPError(406, "subscriptions/listen answers with a stream: Accept must list text/event-stream")
    conn = endpoint.server.connect(_discard, stateless=True)
    bound = endpoint.limits.max_pending_notifications if listen else 0
    return exchange(conn, message, receive, send, accepted, endpoint.streams, watch=True, bound=bound,
                    principal=principal, sink=sink_for(message, endpoint.byte_streams, headers))


async def _initialize(endpoint: Endpoint, message: dict[str, Any], receive: Receive, send: Send,
                      accepted: tuple[bool, bool], principal: Any) -> None:
    sessions = endpoint.sessions
    session = sessions.create(endpoint.server.connect, principal)
    assert session.conn is not None
    if endpoint.shared is not None:
        send = endpoint.shared.storing(session, send)
    try:
        await exchange(session.conn, message, receive, send, accepted, endpoint.streams, session=session,
                       issue_session=True, principal=principal)
    finally:
        if session.conn.protocol_version is None:  # initialize failed: no session
            sessions.end(session)


def _discard(message: Any) -> None:
    """Stateless connections have no channel beside the response."""
