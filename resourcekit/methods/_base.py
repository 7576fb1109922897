"""What every method module shares: what a method may ask of a request and of its session, the
``PENDING`` answer, parameter checks, caching hints.

A method takes a request (``RequestView``) and returns a result dict (answered at once), an
awaitable (run as a task), or ``PENDING`` (it arranged to answer later, e.g.
from a worker thread).  It raises ``MCPError`` for anything the client got wrong.

``RequestView``, ``SessionView`` and ``ServerView`` are the interface the methods need of the
engine above them (``core``'s ``Request``, ``Connection`` and ``Server`` satisfy them
structurally): the methods name no class of the engine, so the arrows point down even for types.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .._jobs import Call
from ..errors import InvalidParams, LimitExceeded, ResourceNotFound
from ..pagination import decode_cursor
from ..scopes import check_read

if TYPE_CHECKING:
    from .._jobs import Lane
    from .._runner import ThreadRunner
    from ..declaration import Handler
    from ..eras import Era
    from ..extensions import OptIn
    from ..limits import Limits
    from ..registry import Registry
    from ..router import Match, Router
    from ..tracking import Tracker

__all__ = [
    "PENDING", "Method", "Notification", "ProfileView", "RequestView", "ServerView", "SessionView",
    "SharedSubscriptions", "SubscriptionsView", "cache_hints", "check_uri", "in_worker", "readable", "str_param",
    "uri_param",
]

PENDING: Any = object()


class SharedSubscriptions(Protocol):
    """A session's subscriptions kept in a store several processes share (scale-out): whichever
    process detects a change tells the session there, once per version."""

    async def subscriptions(self) -> dict[str, str]: ...

    async def subscribe(self, versions: dict[str, str]) -> None: ...

    async def unsubscribe(self, uris: list[str]) -> None: ...


class SubscriptionsView(Protocol):
    """What the subscription methods ask of the server's subscribers (``subscriptions.Subscriptions``)."""

    def of(self, conn: SessionView) -> dict[str, str]: ...

    def subscribe(self, conn: SessionView, uri: str, version: str) -> None: ...

    def unsubscribe(self, conn: SessionView, uri: str) -> None: ...

    async def starting_versions(self, conn: SessionView, uris: list[str],
                                known: Mapping[str, str]) -> tuple[dict[str, str], list[str]]: ...

    async def listen(self, req: RequestView) -> Any: ...

    def end_listen(self, req: RequestView) -> None: ...


class ServerView(Protocol):
    """What a method may ask of what every session of one App shares (``core.Server``)."""

    @property
    def app(self) -> Registry: ...
    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...
    @property
    def runner(self) -> ThreadRunner: ...
    @property
    def server_info(self) -> dict[str, Any]: ...
    @property
    def transport(self) -> str | None: ...  # "tcp" (HTTP), "pipe" (stdio), None (in memory)
    @property
    def connections(self) -> Collection[SessionView]: ...
    @property
    def subscriptions(self) -> SubscriptionsView: ...

    def on_loop(self) -> bool: ...


class SessionView(Protocol):
    """What a method may ask of a request's session (``core.Connection``); ``initialize`` and
    ``logging/setLevel`` write the handshake-era state it keeps."""

    protocol_version: str | None
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any]
    optin: OptIn
    log_level: str | None
    initialized: bool

    @property
    def app(self) -> Registry: ...
    @property
    def server(self) -> ServerView: ...
    @property
    def limits(self) -> Limits: ...
    @property
    def lane(self) -> Lane: ...
    @property
    def runner(self) -> ThreadRunner: ...
    @property
    def router(self) -> Router: ...
    @property
    def tracker(self) -> Tracker: ...
    @property
    def send(self) -> Callable[[Any], None]: ...
    @property
    def seen(self) -> dict[str, str]: ...
    @property
    def seen_max(self) -> int: ...
    @property
    def shared(self) -> SharedSubscriptions | None: ...
    @property
    def stateless(self) -> bool: ...
    @property
    def closed(self) -> bool: ...

    def replan(self) -> None: ...

    def cancel(self, rid: Any) -> bool: ...


class ProfileView(Protocol):
    """What decides how a request is served (``core.plan.Profile``): a request answers for its own."""

    @property
    def era(self) -> Era: ...
    @property
    def modern(self) -> bool: ...
    @property
    def version(self) -> str | None: ...
    @property
    def log_level(self) -> str | None: ...
    @property
    def optin(self) -> OptIn: ...


class RequestView(ProfileView, Protocol):
    """What a method may ask of a request (``core.Request``): its parameters, its session, and
    the ways to answer it; its profile's fields are its own."""

    on_cancel: Callable[[RequestView], None] | None  # the method's own cancellation (listen)
    sink: Callable[[bytes], None] | None  # where a worker hands its reply on (a ``Context`` handler's: None)
    # what a worker runs for it (``run``, a job of ``ThreadRunner``): set by the read step
    handler: Handler
    kwargs: dict[str, Any]
    uri: str
    reply_of: Callable[[RequestView, Handler, str, Any], bytes]
    # where its answer goes (the transport's channel, perhaps wrapped by telemetry or a batch)
    reply: Callable[[Any], None]

    @property
    def conn(self) -> SessionView: ...
    @property
    def id(self) -> Any: ...
    @property
    def method(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def meta(self) -> dict[str, Any]: ...
    @property
    def principal(self) -> Any: ...
    @property
    def cancelled(self) -> bool: ...
    lane: Lane  # its session's, set by the step that makes it a job of the runner (``run``, ``done``)

    def run(self) -> Any: ...

    def done(self, ok: bool, value: Any) -> None: ...

    def encode(self, result: dict[str, Any]) -> bytes: ...

    def respond(self, result: dict[str, Any]) -> None: ...

    def answer(self, data: bytes) -> None: ...

    def complete(self, ok: bool, value: Any) -> None: ...

    def fail(self, exc: BaseException) -> None: ...

    def notify(self, message: dict[str, Any]) -> None: ...


Method = Callable[[RequestView], Any]
Notification = Callable[[SessionView, dict[str, Any]], None]


def keyset_after(req: RequestView, kind: str) -> int:
    """Where a keyset-paged list resumes: the sequence number in the request's cursor, else 0."""
    cursor = req.params.get("cursor")
    return 0 if cursor is None else decode_cursor(cursor, (kind,))[1][0]


def str_param(req: RequestView, name: str) -> str:
    value = req.params.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"Invalid params: '{name}' must be a non-empty string", {"param": name})
    return value


def uri_param(req: RequestView, name: str = "uri") -> str:
    """A URI parameter, refused before any matching when it is over the length limit."""
    uri = req.params.get(name)
    if type(uri) is str and uri and len(uri) <= req.conn.limits.max_uri_length:
        return uri  # the common case, in one test
    return check_uri(req, str_param(req, name))


def readable(req: RequestView, uri: str) -> Match:
    """The match of ``uri``, for a caller who may read it: ResourceNotFound when nothing serves it,
    InsufficientScope when the caller's token lacks its scopes (``scopes.check_read``)."""
    app = req.conn.app
    match = app.router.match(uri)
    if match is None:
        raise ResourceNotFound(uri)
    check_read(req.principal, app, match.handler, uri)
    return match


def check_uri(req: RequestView, uri: str) -> str:
    limit = req.conn.limits.max_uri_length
    if len(uri) > limit:
        raise LimitExceeded("max_uri_length", limit, f"Invalid params: URI longer than {limit} characters")
    return uri


def cache_hints(req: RequestView, result: dict[str, Any], handler: Handler | None = None) -> dict[str, Any]:
    """2026-07-28 results say how long they may be cached, and by whom."""
    if req.modern:
        app = req.conn.app
        ttl = handler.ttl_ms if handler is not None and handler.ttl_ms is not None else app.ttl_ms
        scope = handler.cache_scope if handler is not None and handler.cache_scope else app.cache_scope
        result["ttlMs"] = ttl
        result["cacheScope"] = scope if req.principal is None else "private"  # an answer for this token
    return result


def in_worker(req: RequestView, fn: Callable[[], dict[str, Any]]) -> Any:
    """Answer ``req`` with ``fn()`` run in a worker thread (in its session's lane), encoded there,
    unless it is cancelled before it starts."""

    def job() -> bytes | None:
        return None if req.cancelled else req.encode(fn())

    req.conn.runner.submit(Call(job, req.complete, req.conn.lane))
    return PENDING
