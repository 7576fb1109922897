"""POST to the MCP endpoint: admission, the body, then the exchange of its era.

The path of every request a client makes after ``initialize``, so it runs as one coroutine
down to the answer, the exchange included (each coroutine level is paid again on every
resumption): checks that need no I/O are plain functions, the header values are compared as
bytes where they come in, and the Host/Origin verdict is cached per distinct header values
(``ASGIApp.admit``).

The exchange hands the body to the core and sends back what it answers. What goes back is
decided by what the core answers, never by the method: nothing at all means a notification or
a response (202); a final message first means one JSON body; a notification first (log
messages, a listen acknowledgement) means an SSE stream that lasts until the final message
(``_exchange``).  A 2026-07-28 request has a connection of its own, and a disconnect of its
client cancels it (noticed from ``_exchange.WATCH_AFTER`` seconds on, a request answered
sooner runs to its end); in the handshake era a disconnect does not (the client cancels with
notifications/cancelled), so nobody listens.  A ``subscriptions/listen`` stream queues at most
``max_pending_notifications`` notifications for a client that does not read them; past it the
stream is closed.  A body that is one ``resources/stream`` request is answered with the
resource's bytes, or with its JSON-RPC error as one JSON body (``_bytes``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Protocol, cast

import orjson

from ...core import error_response
from ...core.plan import STATELESS
from ...errors import InvalidRequest, MCPError, ParseError
from ...methods.streaming import ByteStream
from ...revisions import HANDSHAKE_VERSIONS, META_PROTOCOL_VERSION
from ._bytes import PostSink, send_bytes
from ._exchange import answer_stream, is_final, issued, request_ids, unanswered, wake_later
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
    encode,
    error_body,
    forbidden_headers,
    post_accepts,
    read_rest,
    respond,
    respond_json,
    start_of,
    status_of,
)
from ._sse import CANCELLED, ENDED, BoundedInbox, Inbox

if TYPE_CHECKING:
    from ...core import Server
    from ...limits import Limits
    from ...methods.streaming import Slots
    from ._gate import Authorize
    from ._redis_sessions import SharedSessions
    from ._sessions import Session, SessionTable
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
    """``ASGIApp.__call__``: a POST to the endpoint is served here, its exchange included; any
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
        if declared is not None:
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
        session: Session | None = None
        issue_session = watch = False
        bound = 0
        method = None
        if type(message) is dict:
            method = message.get("method")
            params = message.get("params")
            meta = params.get("_meta") if type(params) is dict else None
            modern = version in MODERN_HEADERS or (type(meta) is dict and META_PROTOCOL_VERSION in meta)
            issue_session = not modern and method == "initialize" and "id" in message
        else:
            modern = version in MODERN_HEADERS
        if modern:  # 2026-07-28: a connection of its own, watched for a disconnect
            try:
                check_modern_headers(message, headers)
            except MCPError as exc:
                rid = message.get("id") if isinstance(message, dict) else None
                await respond_json(out, 400, error_response(rid, exc, STATELESS))
                return
            listen = method == "subscriptions/listen"
            if not accepted[1] and listen:
                raise HTTPError(406, "subscriptions/listen answers with a stream: Accept must list text/event-stream")
            conn = endpoint.server.connect(_discard, stateless=True, caller=caller_of(scope, principal))
            watch = True
            bound = endpoint.limits.max_pending_notifications if listen else 0
        elif issue_session:
            session = endpoint.sessions.create(endpoint.server.connect, principal)
            if endpoint.shared is not None:
                out = endpoint.shared.storing(session, out)
        else:
            sid = headers.get(SESSION_HEADER)
            if not sid:
                await respond_json(out, 400, error_response(None, InvalidRequest(
                    "Bad Request: Mcp-Session-Id header is required (initialize first, or send a "
                    f"2026-07-28 request with _meta['{META_PROTOCOL_VERSION}'])")))
                return
            shared = endpoint.shared
            if shared is None:
                session = endpoint.sessions.lookup(sid.decode("latin-1"), principal)
            else:
                session = await shared.find(sid.decode("latin-1"), principal, endpoint.server.connect)
            if version is not None and version not in HANDSHAKE_HEADERS:
                await respond_json(out, 400, error_response(None, InvalidRequest(
                    f"Bad Request: unsupported MCP-Protocol-Version {version.decode('latin-1')!r}",
                    {"supported": list(HANDSHAKE_VERSIONS)})))
                return
            if shared is not None:
                out = shared.prepare(session, message, out)
        if session is not None:
            assert session.conn is not None
            conn = session.conn
        # a body that is one resources/stream request: answered with the resource's bytes (``_bytes``)
        sink = PostSink(endpoint.byte_streams, headers) if method == "resources/stream" and "id" in message else None
        try:  # the exchange (in this coroutine: each level is paid again on every resumption)
            inbox = BoundedInbox(bound) if bound else Inbox()
            conn.principal = principal  # the requests made here copy it (the core is synchronous up to them)
            if sink is None:
                conn.receive(message, inbox.put)
            else:
                sink.put = inbox.put
                conn.receive(message, sink)
            ids = request_ids(message)
            if not inbox:  # (an id that cannot be in flight, a list say, was answered: items are there)
                inflight = conn.inflight
                for rid in ids:
                    if rid in inflight:
                        break
                else:  # a notification or a response: nothing will follow
                    await respond(out, 202, b"")
                    if session is not None:
                        session.wake_cancelled()
                    return
            if session is not None:
                session.waiting[inbox] = ids
            try:
                json_ok, sse_ok = accepted if sink is None else (True, False)  # bytes, else an error as JSON
                if inbox:
                    first = inbox.popleft()
                elif watch:  # the client is watched once the answer takes a while: most come sooner
                    waiter = inbox.wait()
                    wake_later(waiter)
                    await waiter
                    first = inbox.popleft() if inbox else await inbox.next(receive, True)
                else:  # nothing but the core wakes this inbox: ``next`` without its loop
                    while not inbox:
                        await inbox.wait()
                    first = inbox.popleft()
                if not sse_ok:  # a JSON-only client: request-scoped notifications cannot reach it
                    while first is not None and first is not CANCELLED and first is not ENDED and not is_final(first):
                        first = await inbox.next(receive, watch)
                if type(first) is bytes:  # the common answer, encoded by the core: 200, one JSON body
                    status = 200
                elif first is None:
                    return  # the client went away (the request is cancelled below)
                elif first is CANCELLED or first is ENDED:
                    await unanswered(out, first, sse_ok)
                    return
                elif type(first) is ByteStream:
                    assert sink is not None
                    await send_bytes(first, sink, inbox, receive, out, conn)
                    return
                elif type(first) is dict and "result" in first and "id" in first:
                    status = 200
                else:
                    status = status_of(first, conn) if is_final(first) else 0
                if status and (json_ok or status != 200):  # an HTTP-level error is JSON whatever Accept says
                    extra = issued(session, conn) if issue_session else None
                    if status == 403:
                        extra = [*(extra or ()), *forbidden_headers(first, principal)]
                    # the core's JSON line as it is (its newline is JSON's whitespace: no copy of the
                    # reply without it); a message as JSON (an unencodable result: its -32603)
                    body = first if type(first) is bytes else encode(first)
                    await out(start_of(status, body, extra))
                    await out({"type": "http.response.body", "body": body})
                else:  # notifications come first (or the client takes nothing but SSE)
                    await answer_stream(conn, first, inbox, receive, out, ids, watch, session,
                                        issued(session, conn) if issue_session else [], endpoint.streams)
            finally:
                if sink is not None:
                    sink.finish()
                if inbox.watcher is not None:
                    inbox.stop_watching()
                if session is not None:
                    session.waiting.pop(inbox, None)
                else:  # a stateless request's exchange is over (one left behind by a disconnect: cancelled)
                    conn.close()
        finally:
            if issue_session and conn.protocol_version is None:  # initialize failed: no session
                endpoint.sessions.end(session)  # type: ignore[arg-type]
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


def caller_of(scope: Scope, principal: Any) -> Hashable:
    """Who sent a 2026-07-28 request, for the lane its jobs share with the caller's others: the
    token's principal, and the client's address (behind a proxy, the proxy's: its clients share a
    lane).  An auth hook's principal that is no key of equal callers (unhashable, or hashed as an
    object: a new one per request) counts as none."""
    client = scope.get("client")
    host = client[0] if client else None
    hashed: Any = type(principal).__hash__
    if principal is None or hashed is object.__hash__:
        return host
    try:
        hash(principal)
    except Exception:  # unhashable (a dict), or a __hash__ of the hook's that fails
        return host
    return host, principal


def _discard(message: Any) -> None:
    """Stateless connections have no channel beside the response."""
