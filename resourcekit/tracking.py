"""Change tracking by content hash.

A resource's version is the hash of what it serves.  ``notify_changed(uri)``
only marks the URI dirty (from any thread, any number of times); one check on
the event loop re-reads each dirty URI that somebody subscribed to, compares
the new version with the last one announced, and notifies only on a real
change.  A thousand calls with unchanged content therefore send nothing, and a
burst of changes costs one re-read per check.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from .contents import combined_version, to_contents
from .context import Context
from .errors import InvalidParams, ResourceNotFound
from .versions import META_SUBSCRIPTION_ID

if TYPE_CHECKING:
    from .app import App
    from .handler import Handler
    from .protocol import Connection, Request, Server

__all__ = ["Tracker"]

log = logging.getLogger("resourcekit")

UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"


class Subscriber:
    """Someone to tell: a handshake-era session, or one 2026-07-28 listen stream."""

    __slots__ = ("emit", "list_changed", "owner", "uris")

    def __init__(self, owner: Any, emit: Callable[[dict[str, Any]], None], list_changed: bool) -> None:
        self.owner = owner  # the Connection, or the listen Request
        self.emit = emit
        self.list_changed = list_changed
        self.uris: set[str] = set()


class Tracker:
    def __init__(self, app: App) -> None:
        self.app = app
        self._observed: dict[str, str] = {}  # latest version served, shown in listings
        self._announced: dict[str, str] = {}  # version subscribers last heard of
        self._by_uri: dict[str, set[Subscriber]] = {}
        self._sessions: dict[Connection, Subscriber] = {}
        self._listens: dict[Request, Subscriber] = {}
        self._servers: list[Server] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._dirty: set[str] = set()
        self._check_scheduled = False
        self._list_scheduled = False
        self._list_force = False
        self._list_version: str | None = None
        self._pollers: dict[str, asyncio.Task[None]] = {}
        self.checks = 0  # how many re-reads ran: visible to tests and benchmarks

    def attach(self, server: Server) -> None:
        if server not in self._servers:
            self._servers.append(server)
        self._loop = server.loop

    def detach(self, server: Server) -> None:
        """A server stopped: forget it, and its loop unless another server runs on it."""
        if server in self._servers:
            self._servers.remove(server)
        self._loop = self._servers[-1].loop if self._servers else None
        if self._loop is None:
            with self._lock:
                self._check_scheduled = self._list_scheduled = False
                self._dirty.clear()

    # --- versions ---------------------------------------------------------------

    def observe(self, uri: str, version: str) -> None:
        self._observed[uri] = version

    def version(self, uri: str) -> str | None:
        return self._observed.get(uri)

    # --- subscribing -------------------------------------------------------------

    def subscribe(self, conn: Connection, uri: str) -> None:
        sub = self._sessions.get(conn)
        if sub is None:
            sub = self._sessions[conn] = Subscriber(conn, conn.send, False)
        self._add(sub, uri)

    def unsubscribe(self, conn: Connection, uri: str) -> None:
        sub = self._sessions.get(conn)
        if sub is not None:
            self._remove(sub, uri)

    def drop(self, conn: Connection) -> None:
        sub = self._sessions.pop(conn, None)
        if sub is not None:
            for uri in list(sub.uris):
                self._remove(sub, uri)
        for request, listener in list(self._listens.items()):
            if request.conn is conn:
                self._end(request, listener)

    def listen(self, req: Request) -> Any:
        from ._methods import PENDING

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
        emit({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"notifications": honoured}})
        sub = Subscriber(req, emit, list_changed)
        self._listens[req] = sub
        for uri in dict.fromkeys(uris):
            self._add(sub, uri)
        return PENDING

    def end_listen(self, req: Request) -> None:
        sub = self._listens.get(req)
        if sub is not None:
            self._end(req, sub)

    def _end(self, req: Request, sub: Subscriber) -> None:
        self._listens.pop(req, None)
        for uri in list(sub.uris):
            self._remove(sub, uri)

    def close_listens(self) -> None:
        """Server shutdown: end every listen stream gracefully with its result."""
        for req in list(self._listens):
            self.end_listen(req)
            req.respond({"_meta": {META_SUBSCRIPTION_ID: req.id}})

    def _add(self, sub: Subscriber, uri: str) -> None:
        sub.uris.add(uri)
        subscribers = self._by_uri.setdefault(uri, set())
        first = not subscribers
        subscribers.add(sub)
        if first:
            if uri not in self._announced:
                self._schedule(uri, baseline=True)
            self._start_polling(uri)

    def _remove(self, sub: Subscriber, uri: str) -> None:
        sub.uris.discard(uri)
        subscribers = self._by_uri.get(uri)
        if subscribers is None:
            return
        subscribers.discard(sub)
        if not subscribers:
            del self._by_uri[uri]
            self._announced.pop(uri, None)
            poller = self._pollers.pop(uri, None)
            if poller is not None:
                poller.cancel()

    def subscribers(self, uri: str) -> int:
        return len(self._by_uri.get(uri, ()))

    # --- changes -----------------------------------------------------------------

    def notify_changed(self, uri: str) -> None:
        self._schedule(uri)

    def _schedule(self, uri: str, baseline: bool = False) -> None:
        loop = self._loop
        with self._lock:
            self._dirty.add(uri)
            if baseline:
                self._announced.setdefault(uri, _BASELINE)
            if self._check_scheduled or loop is None:
                return
            self._check_scheduled = True
        try:
            loop.call_soon_threadsafe(self._start_check)
        except RuntimeError:  # the loop is closed: the server is gone
            with self._lock:
                self._check_scheduled = False

    def _start_check(self) -> None:
        if self._loop is None:  # the server stopped in between
            self._check_scheduled = False
            return
        self._loop.create_task(self._check())

    async def _check(self) -> None:
        while True:
            with self._lock:
                dirty, self._dirty = self._dirty, set()
                if not dirty or not self._servers:
                    self._check_scheduled = False
                    return
            watched = []
            for uri in dirty:
                if uri in self._by_uri:
                    watched.append(uri)
                else:
                    self._observed.pop(uri, None)  # nobody listens: forget, re-read lazily
            # re-read concurrently: sync handlers spread over the worker threads
            versions = await asyncio.gather(*(self._read_version(u) for u in watched), return_exceptions=True)
            for uri, version in zip(watched, versions, strict=True):
                if isinstance(version, BaseException):
                    log.error("re-reading %s to check for changes failed", uri, exc_info=version)
                    continue
                self.checks += 1
                if version == _GONE:  # deleted: no version to show in listings
                    self._observed.pop(uri, None)
                else:
                    self._observed[uri] = version
                previous = self._announced.get(uri)
                if uri in self._by_uri:
                    self._announced[uri] = version
                if previous is None or previous is _BASELINE or previous == version:
                    continue
                self._send_updated(uri)

    async def _read_version(self, uri: str) -> str:
        try:
            return await self._read_version_of(uri)
        except ResourceNotFound:
            return _GONE  # deleted: subscribers hear about it once, and the log stays quiet

    async def _read_version_of(self, uri: str) -> str:
        match = self.app.router.match(uri)
        if match is None:
            return _GONE
        handler = match.handler
        kwargs = match.kwargs
        if handler.sig.context_param is not None:
            kwargs[handler.sig.context_param] = Context(self.app, uri, params=match.raw)
        if handler.sig.is_async:
            value = await handler.fn(**kwargs)
            return combined_version(to_contents(uri, value, handler.mime_type))
        version: str = await _in_thread(self._servers[-1], lambda: combined_version(
            to_contents(uri, handler.fn(**kwargs), handler.mime_type)))
        return version

    def _send_updated(self, uri: str) -> None:
        for sub in list(self._by_uri.get(uri, ())):
            sub.emit({"jsonrpc": "2.0", "method": UPDATED, "params": {"uri": uri}})
        hook = _ON_UPDATED.get("content_changed")
        if hook is not None:
            hook(self, uri)

    # --- polling ------------------------------------------------------------------

    def _start_polling(self, uri: str) -> None:
        if self._loop is None or uri in self._pollers:
            return
        match = self.app.router.match(uri)
        if match is None or match.handler.poll is None:
            return
        self._pollers[uri] = self._loop.create_task(self._poll(uri, match.handler))

    async def _poll(self, uri: str, handler: Handler) -> None:
        assert handler.poll is not None
        while True:
            await asyncio.sleep(handler.poll)
            self._schedule(uri)

    # --- the list --------------------------------------------------------------------

    def on_registry_changed(self, handler: Handler) -> None:
        self.notify_list_changed(force=True)

    def notify_list_changed(self, force: bool = False) -> None:
        """Send list_changed, coalesced; unless ``force``, only if the list's version moved."""
        loop = self._loop
        with self._lock:
            self._list_force = self._list_force or force
            if self._list_scheduled or loop is None:
                return
            self._list_scheduled = True
        try:
            loop.call_soon_threadsafe(self._start_list_check)
        except RuntimeError:
            with self._lock:
                self._list_scheduled = False

    def _start_list_check(self) -> None:
        if self._loop is None:  # the server stopped in between
            self._list_scheduled = False
            return
        self._loop.create_task(self._list_check())

    async def _list_check(self) -> None:
        with self._lock:
            self._list_scheduled = False
            force, self._list_force = self._list_force, False
        if not self._servers:
            return
        if force:
            # a registration changed the list for certain: no need to enumerate it
            self._list_version = None
        else:
            version = await _in_thread(self._servers[-1], self.list_version)
            if version == self._list_version:
                return
            self._list_version = version
        message = {"jsonrpc": "2.0", "method": LIST_CHANGED}
        for server in self._servers:
            for conn in list(server.connections):
                if conn.protocol_version is not None and not conn.closed:
                    conn.send(dict(message))
        for sub in list(self._listens.values()):
            if sub.list_changed:
                sub.emit(dict(message))

    def list_version(self) -> str:
        """A hash of every listed URI and its metadata (enumerates listers: not free)."""
        from .handler import iter_lister_page

        digest = hashlib.blake2b(digest_size=16)
        for handler in self.app.resources:
            digest.update(orjson.dumps(handler.wire, option=orjson.OPT_SORT_KEYS))
        for handler in self.app.templates:
            digest.update(orjson.dumps(handler.wire, option=orjson.OPT_SORT_KEYS))
            if handler.lister is not None:
                for item in iter_lister_page(handler, 0, 10**9):
                    digest.update(orjson.dumps(item, default=str, option=orjson.OPT_SORT_KEYS))
        return digest.hexdigest()


_BASELINE: Any = "<baseline pending>"
_GONE = "<gone>"
_ON_UPDATED: dict[str, Callable[[Tracker, str], None]] = {}


async def _in_thread(server: Server, fn: Callable[[], Any]) -> Any:
    return await server.runner.call(fn)
