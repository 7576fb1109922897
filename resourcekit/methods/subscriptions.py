"""Who hears of changes: ``resources/subscribe`` / ``unsubscribe`` (handshake era),
``subscriptions/listen`` (2026-07-28), and the notifications they receive.

``Subscriptions`` is one server's table of subscribers: handshake sessions and
listen streams.  The tracker re-reads what changed and calls ``changed(uri,
version)`` / ``list_changed()`` here; this module decides *who* is told and how:
``notifications/resources/updated``, then seed 000's
``notifications/resources/content_changed`` for subscribers that opted in.

A listen stream that asks for ``embedResources`` (SEP-3119, a draft: experimental) gets the
new contents inside ``updated``, as a read returns them, from the re-read that found the change;
past ``Limits.max_embedded_bytes``, or for a resource that is gone, the plain form.

Exactly once: each subscriber keeps the version it last heard of per URI, and
is told only when a re-read finds another.  That starting version is fixed
before the subscription is confirmed: the version this session last read of
the URI, else a read taken before the reply; so a change made right after
``resources/subscribe`` (or an acknowledged ``subscriptions/listen``) is never
lost.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import telemetry
from ..errors import InvalidParams, LimitExceeded, MethodNotFound
from ..extensions import RESOURCES_GET, wants
from ..revisions import META_SUBSCRIPTION_ID, META_VERSION
from ..telemetry import spans
from ._base import PENDING, Method, check_uri, readable, str_param
from .wire import fresh_resource, seed_fields

if TYPE_CHECKING:
    from .._runner import ThreadRunner
    from ..contents import Content
    from ._base import RequestView as Request
    from ._base import ServerView as Server
    from ._base import SessionView as Connection

__all__ = ["HANDSHAKE", "STATELESS", "Subscriptions", "coalescing_key", "newest_wins"]

UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"
CONTENT_CHANGED = "notifications/resources/content_changed"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


# --- notifications that wait for a reader: "look again" about the same thing once is enough ------


def coalescing_key(message: Any) -> tuple[str, ...] | None:
    """What makes a queued notification redundant: the same kind about the same URI."""
    if type(message) is not dict:
        return None
    method = message.get("method")
    if method == LIST_CHANGED:
        return (method,)
    if method in (UPDATED, CONTENT_CHANGED):
        params = message.get("params")
        if type(params) is dict:
            about = params.get("resource") if method == CONTENT_CHANGED else params
            uri = about.get("uri") if type(about) is dict else None
            if type(uri) is str:
                return (method, uri)
    return None


def newest_wins(message: dict[str, Any]) -> bool:
    """Whether ``message`` replaces a waiting one with its coalescing key (it carries what the
    resource is now: ``content_changed``, an ``updated`` with contents), or adds nothing to it."""
    if message.get("method") == CONTENT_CHANGED:
        return True
    params = message.get("params")
    return type(params) is dict and "contents" in params


class Subscriber:
    """Someone to tell: a handshake-era session, or one 2026-07-28 listen stream."""

    __slots__ = ("content_changed", "embed", "emit", "list_changed", "uris")

    def __init__(self, emit: Callable[[dict[str, Any]], None], list_changed: bool, content_changed: bool,
                 embed: bool = False) -> None:
        self.emit = emit
        self.list_changed = list_changed
        self.content_changed = content_changed  # opted in to seed 000's content_changed
        self.embed = embed  # asked for the contents inside updated (SEP-3119's embedResources)
        self.uris: dict[str, str] = {}  # URI -> the version this subscriber last heard of


class Subscriptions:
    """One server's subscribers; the tracker reports changes here."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.tracker = server.app.tracker
        self._by_uri: dict[str, set[Subscriber]] = {}
        self._sessions: dict[Connection, Subscriber] = {}
        self._listens: dict[Request, Subscriber] = {}
        self._lifetimes: dict[Request, asyncio.TimerHandle] = {}

    # what the tracker needs of whoever it reports to
    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self.server.loop

    @property
    def runner(self) -> ThreadRunner:
        return self.server.runner

    # --- handshake sessions ----------------------------------------------------------------

    def count(self, conn: Connection) -> int:
        return len(self.of(conn))

    def total(self) -> int:
        """Subscriptions held here: (subscriber, URI) pairs."""
        return sum(map(len, list(self._by_uri.values())))  # also from a metric reader's thread

    def of(self, conn: Connection) -> dict[str, str]:
        """The URIs ``conn`` subscribed to, with the version it last heard of."""
        sub = self._sessions.get(conn)
        return sub.uris if sub is not None else {}

    def subscribe(self, conn: Connection, uri: str, version: str) -> None:
        sub = self._sessions.get(conn)
        if sub is None:
            sub = self._sessions[conn] = Subscriber(conn.send, False, wants(conn.client_capabilities, RESOURCES_GET))
        self._add(sub, uri, version)

    def unsubscribe(self, conn: Connection, uri: str) -> None:
        sub = self._sessions.get(conn)
        if sub is not None:
            self._remove(sub, uri)

    def drop(self, conn: Connection) -> None:
        """A connection closed: forget its subscriptions and end its listen streams."""
        sub = self._sessions.pop(conn, None)
        if sub is not None:
            for uri in list(sub.uris):
                self._remove(sub, uri)
        for request in [r for r in self._listens if r.conn is conn]:
            self.end_listen(request)

    # --- 2026-07-28 listen streams -----------------------------------------------------------

    async def listen(self, req: Request) -> Any:
        wanted = req.params.get("notifications")
        if type(wanted) is not dict:
            raise InvalidParams("Invalid params: 'notifications' must be an object")
        uris = wanted.get("resourceSubscriptions", [])
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            raise InvalidParams("Invalid params: resourceSubscriptions must be a list of URIs")
        uris = list(dict.fromkeys(uris))
        limit = self.server.app.limits.max_listen_uris
        if len(uris) > limit:
            raise LimitExceeded("max_listen_uris", limit, f"Invalid params: more than {limit} resourceSubscriptions")
        app = self.server.app
        for uri in uris:
            readable(req, check_uri(req, uri))
        asked = bool(uris) or wanted.get("resourcesListChanged") is True
        # what the app switched off is acknowledged as not honoured: it can never arrive
        list_changed = wanted.get("resourcesListChanged") is True and app.list_changed
        # SEP-3119 (draft) has not settled where the flag goes: beside the filters, or in them
        embed = wanted.get("embedResources") is True or req.params.get("embedResources") is True
        if not app.subscribe:
            uris = []
            embed = False
        subscription_id = req.id
        versions, _ = await self.starting_versions(req.conn, uris, {})
        if req.cancelled:
            return PENDING

        def emit(message: dict[str, Any]) -> None:
            params = message.setdefault("params", {})
            params.setdefault("_meta", {})[META_SUBSCRIPTION_ID] = subscription_id
            req.notify(message)

        honoured: dict[str, Any] = {}
        if list_changed:
            honoured["resourcesListChanged"] = True
        if uris:
            honoured["resourceSubscriptions"] = uris
        if embed:
            honoured["embedResources"] = True
        # the acknowledgement is the first message of the stream, before any update
        emit({"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": {"notifications": honoured}})
        if not honoured and (asked or not (app.subscribe or app.list_changed)):
            req.respond({"_meta": {META_SUBSCRIPTION_ID: req.id}})  # nothing to wait for: the stream ends
            return PENDING
        sub = Subscriber(emit, list_changed, req.optin.resources_get, embed)
        self._listens[req] = sub
        for uri in uris:
            self._add(sub, uri, versions[uri])
        if req.conn.stateless:  # an HTTP stream: it ends (with its result) and the client listens anew
            lifetime = self.server.app.limits.max_stream_lifetime
            self._lifetimes[req] = self.loop.call_later(lifetime, self._finish, req)
        return PENDING

    def _finish(self, req: Request) -> None:
        self.end_listen(req)
        req.respond({"_meta": {META_SUBSCRIPTION_ID: req.id}})

    async def starting_versions(self, conn: Connection, uris: list[str],
                                known: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
        """The version each subscriber starts from: the one ``known`` holds (what the session
        last read), else read now (a sync handler in ``conn``'s turn: its lane of its runner).

        Also which versions were remembered rather than read: once subscribed, those URIs
        are checked again, for they may have changed since the session read them.
        """
        # one lookup per URI: reads in workers may start the table over between two
        versions = {uri: version for uri in uris if (version := known.get(uri)) is not None}
        remembered = list(versions)
        unknown = [uri for uri in uris if uri not in versions]
        run = functools.partial(conn.runner.call, lane=conn.lane)
        read = await asyncio.gather(*(self.tracker.read_version(uri, run) for uri in unknown))
        versions.update(zip(unknown, read, strict=True))
        return versions, remembered

    def end_listen(self, req: Request) -> None:
        lifetime = self._lifetimes.pop(req, None)
        if lifetime is not None:
            lifetime.cancel()
        sub = self._listens.pop(req, None)
        if sub is not None:
            for uri in list(sub.uris):
                self._remove(sub, uri)

    def close_listens(self) -> None:
        """Server shutdown: end every listen stream gracefully with its result."""
        for req in list(self._listens):
            self._finish(req)

    # --- the table ----------------------------------------------------------------------------

    def _add(self, sub: Subscriber, uri: str, version: str) -> None:
        if uri in sub.uris:
            return
        sub.uris[uri] = version
        self._by_uri.setdefault(uri, set()).add(sub)
        self.tracker.watch(uri)

    def _remove(self, sub: Subscriber, uri: str) -> None:
        if sub.uris.pop(uri, None) is None:
            return
        subscribers = self._by_uri.get(uri)
        if subscribers is not None:
            subscribers.discard(sub)
            if not subscribers:
                del self._by_uri[uri]
        self.tracker.unwatch(uri)

    # --- what the tracker reports ---------------------------------------------------------------

    def embeds(self, uri: str) -> bool:
        return any(sub.embed for sub in self._by_uri.get(uri, ()))

    def changed(self, uri: str, version: str, contents: list[Content] | None = None) -> None:
        """``uri`` was re-read: tell each subscriber that heard of another version."""
        told = []
        embedded: list[dict[str, Any]] | None = None
        for sub in list(self._by_uri.get(uri, ())):
            if sub.uris.get(uri, version) != version:
                sub.uris[uri] = version
                params: dict[str, Any] = {"uri": uri}
                if sub.embed and contents is not None:
                    if embedded is None:
                        embedded = _embedded(contents, self.server.app.limits.max_embedded_bytes)
                    if embedded:
                        params["contents"] = embedded
                sub.emit({"jsonrpc": "2.0", "method": UPDATED, "params": params})
                told.append(sub)
        targets = [sub for sub in told if sub.content_changed]
        if targets:
            self._content_changed(uri, targets)
        if told and spans.active():  # spans linked to what caused the change
            why = telemetry.causes.current(uri)
            telemetry.causes.sent(UPDATED, uri, len(told), why)
            telemetry.causes.sent(CONTENT_CHANGED, uri, len(targets), why)

    def _content_changed(self, uri: str, targets: list[Subscriber]) -> None:
        """Seed 000: what the resource looks like now, right after ``updated``."""
        match = self.server.app.router.match(uri)
        if match is None:
            return
        resource = fresh_resource(match.handler, None, uri)
        seed_fields(resource, match.handler, self.tracker)
        for sub in targets:
            sub.emit({"jsonrpc": "2.0", "method": CONTENT_CHANGED, "params": {"resource": dict(resource)}})

    def list_changed(self) -> None:
        message = {"jsonrpc": "2.0", "method": LIST_CHANGED}
        told = 0
        for conn in list(self.server.connections):
            # a shared session hears it from the store, once, whichever process holds it
            if conn.protocol_version is not None and not conn.closed and conn.shared is None:
                conn.send(dict(message))
                told += 1
        for sub in list(self._listens.values()):
            if sub.list_changed:
                sub.emit(dict(message))
                told += 1
        if told and spans.active():
            telemetry.causes.sent(LIST_CHANGED, None, told, telemetry.causes.causes(telemetry.causes.LIST))


def _embedded(contents: list[Content], limit: int) -> list[dict[str, Any]]:
    """The contents as a read returns them (shared by every notification: never changed), or []
    past ``limit`` bytes."""
    if sum(content.size for content in contents) > limit:
        return []
    return [content.to_wire(META_VERSION) for content in contents]


# --- the methods --------------------------------------------------------------------------------


def _uris(req: Request) -> list[str]:
    """``uri``, or seed 000's ``uris`` list."""
    uris = req.params.get("uris")
    if uris is None:
        return [check_uri(req, str_param(req, "uri"))]
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) and u for u in uris):
        raise InvalidParams("Invalid params: 'uris' must be a non-empty list of URIs", {"param": "uris"})
    return [check_uri(req, uri) for uri in dict.fromkeys(uris)]


def _subscribable(req: Request) -> None:
    if not req.conn.app.subscribe:  # App(subscribe=False): the capability is not declared
        raise MethodNotFound(f"Method not found: {req.method}", {"method": req.method})


async def subscribe(req: Request) -> dict[str, Any]:
    _subscribable(req)
    conn = req.conn
    app = conn.app
    uris = _uris(req)
    for uri in uris:
        readable(req, uri)  # hearing of changes is reading
    subscriptions = conn.server.subscriptions
    limit = app.limits.max_subscriptions
    shared = conn.shared
    held = subscriptions.of(conn) if shared is None else await shared.subscriptions()
    _check_cap(held, uris, limit)
    versions, remembered = await subscriptions.starting_versions(conn, uris, conn.seen)
    if shared is None:  # other subscribes of this session may have landed meanwhile
        _check_cap(subscriptions.of(conn), uris, limit)
    if shared is not None:
        await shared.subscribe({uri: versions[uri] for uri in uris})
    else:
        for uri in uris:
            subscriptions.subscribe(conn, uri, versions[uri])
    for uri in remembered:  # subscribed first, so the check cannot miss it
        app.tracker.notify_changed(uri)
    return {}


def _check_cap(held: dict[str, str], uris: list[str], limit: int) -> None:
    if len(held) + sum(1 for uri in uris if uri not in held) > limit:
        raise LimitExceeded("max_subscriptions", limit, f"Invalid params: more than {limit} subscriptions")


def unsubscribe(req: Request) -> Any:
    _subscribable(req)
    if req.conn.shared is not None:
        return _unsubscribe_shared(req)
    subscriptions = req.conn.server.subscriptions
    for uri in _uris(req):
        subscriptions.unsubscribe(req.conn, uri)
    return {}


async def _unsubscribe_shared(req: Request) -> dict[str, Any]:
    assert req.conn.shared is not None
    await req.conn.shared.unsubscribe(_uris(req))
    return {}


def listen(req: Request) -> Any:
    req.on_cancel = _end_listen  # cancelling the request ends the stream
    return req.conn.server.subscriptions.listen(req)


def _end_listen(req: Request) -> None:
    req.conn.server.subscriptions.end_listen(req)


HANDSHAKE: dict[str, Method] = {"resources/subscribe": subscribe, "resources/unsubscribe": unsubscribe}
STATELESS: dict[str, Method] = {"subscriptions/listen": listen}
