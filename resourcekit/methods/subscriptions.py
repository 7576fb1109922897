"""Who hears of changes: ``resources/subscribe`` / ``unsubscribe`` (handshake era),
``subscriptions/listen`` (2026-07-28), and the notifications they receive.

``Subscriptions`` is one server's table of subscribers: handshake sessions and
listen streams.  The tracker decides *whether* a resource changed; it calls
``changed(uri)`` / ``list_changed()`` here, and this module decides *who* is
told and how: ``notifications/resources/updated``, then seed 000's
``notifications/resources/content_changed`` for subscribers that opted in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidParams, ResourceNotFound
from ..optin import RESOURCES_GET, wants
from ..versions import META_SUBSCRIPTION_ID
from ._base import PENDING, Method, str_param
from .listing import fresh_resource, seed_fields

if TYPE_CHECKING:
    import asyncio

    from .._runner import ThreadRunner
    from ..protocol import Connection, Request, Server

__all__ = ["HANDSHAKE", "ON_CANCEL", "STATELESS", "Subscriptions"]

UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"
CONTENT_CHANGED = "notifications/resources/content_changed"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


class Subscriber:
    """Someone to tell: a handshake-era session, or one 2026-07-28 listen stream."""

    __slots__ = ("content_changed", "emit", "list_changed", "uris")

    def __init__(self, emit: Callable[[dict[str, Any]], None], list_changed: bool, content_changed: bool) -> None:
        self.emit = emit
        self.list_changed = list_changed
        self.content_changed = content_changed  # opted in to seed 000's content_changed
        self.uris: set[str] = set()


class Subscriptions:
    """One server's subscribers; the tracker reports changes here."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.tracker = server.app.tracker
        self._by_uri: dict[str, set[Subscriber]] = {}
        self._sessions: dict[Connection, Subscriber] = {}
        self._listens: dict[Request, Subscriber] = {}

    # what the tracker needs of whoever it reports to
    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self.server.loop

    @property
    def runner(self) -> ThreadRunner:
        return self.server.runner

    # --- handshake sessions ----------------------------------------------------------------

    def subscribe(self, conn: Connection, uri: str) -> None:
        sub = self._sessions.get(conn)
        if sub is None:
            sub = self._sessions[conn] = Subscriber(conn.send, False, wants(conn.client_capabilities, RESOURCES_GET))
        self._add(sub, uri)

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

    def listen(self, req: Request) -> Any:
        wanted = req.params.get("notifications")
        if type(wanted) is not dict:
            raise InvalidParams("Invalid params: 'notifications' must be an object")
        uris = wanted.get("resourceSubscriptions", [])
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            raise InvalidParams("Invalid params: resourceSubscriptions must be a list of URIs")
        list_changed = wanted.get("resourcesListChanged") is True
        subscription_id = req.id

        def emit(message: dict[str, Any]) -> None:
            params = message.setdefault("params", {})
            params.setdefault("_meta", {})[META_SUBSCRIPTION_ID] = subscription_id
            req.notify(message)

        honoured: dict[str, Any] = {}
        if list_changed:
            honoured["resourcesListChanged"] = True
        if uris:
            honoured["resourceSubscriptions"] = list(dict.fromkeys(uris))
        # the acknowledgement is the first message of the stream, before any update
        emit({"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": {"notifications": honoured}})
        sub = Subscriber(emit, list_changed, req.optin.resources_get)
        self._listens[req] = sub
        for uri in dict.fromkeys(uris):
            self._add(sub, uri)
        return PENDING

    def end_listen(self, req: Request) -> None:
        sub = self._listens.pop(req, None)
        if sub is not None:
            for uri in list(sub.uris):
                self._remove(sub, uri)

    def close_listens(self) -> None:
        """Server shutdown: end every listen stream gracefully with its result."""
        for req in list(self._listens):
            self.end_listen(req)
            req.respond({"_meta": {META_SUBSCRIPTION_ID: req.id}})

    # --- the table ----------------------------------------------------------------------------

    def _add(self, sub: Subscriber, uri: str) -> None:
        if uri in sub.uris:
            return
        sub.uris.add(uri)
        self._by_uri.setdefault(uri, set()).add(sub)
        self.tracker.watch(uri)

    def _remove(self, sub: Subscriber, uri: str) -> None:
        if uri not in sub.uris:
            return
        sub.uris.discard(uri)
        subscribers = self._by_uri.get(uri)
        if subscribers is not None:
            subscribers.discard(sub)
            if not subscribers:
                del self._by_uri[uri]
        self.tracker.unwatch(uri)

    # --- what the tracker reports ---------------------------------------------------------------

    def changed(self, uri: str) -> None:
        """``uri`` has a new version: tell its subscribers."""
        subscribers = list(self._by_uri.get(uri, ()))
        for sub in subscribers:
            sub.emit({"jsonrpc": "2.0", "method": UPDATED, "params": {"uri": uri}})
        targets = [sub for sub in subscribers if sub.content_changed]
        if targets:
            self._content_changed(uri, targets)

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
        for conn in list(self.server.connections):
            if conn.protocol_version is not None and not conn.closed:
                conn.send(dict(message))
        for sub in list(self._listens.values()):
            if sub.list_changed:
                sub.emit(dict(message))


# --- the methods --------------------------------------------------------------------------------


def _uris(req: Request) -> list[str]:
    """``uri``, or seed 000's ``uris`` list."""
    uris = req.params.get("uris")
    if uris is None:
        return [str_param(req, "uri")]
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) and u for u in uris):
        raise InvalidParams("Invalid params: 'uris' must be a non-empty list of URIs", {"param": "uris"})
    return uris


def subscribe(req: Request) -> dict[str, Any]:
    app = req.conn.app
    uris = _uris(req)
    for uri in uris:
        if app.router.match(uri) is None:
            raise ResourceNotFound(uri)
    subscriptions = req.conn.server.subscriptions
    for uri in uris:
        subscriptions.subscribe(req.conn, uri)
    return {}


def unsubscribe(req: Request) -> dict[str, Any]:
    subscriptions = req.conn.server.subscriptions
    for uri in _uris(req):
        subscriptions.unsubscribe(req.conn, uri)
    return {}


def listen(req: Request) -> Any:
    return req.conn.server.subscriptions.listen(req)


def _end_listen(req: Request) -> None:
    req.conn.server.subscriptions.end_listen(req)


HANDSHAKE: dict[str, Method] = {"resources/subscribe": subscribe, "resources/unsubscribe": unsubscribe}
STATELESS: dict[str, Method] = {"subscriptions/listen": listen}
ON_CANCEL: dict[str, Callable[[Request], None]] = {"subscriptions/listen": _end_listen}
