"""Change tracking by content hash: versions and change detection only.

A resource's version is the hash of what it serves.  ``notify_changed(uri)``
only marks the URI dirty (from any thread, any number of times); one check on
the event loop re-reads each dirty URI that somebody watches and reports the
version it found; a burst of changes costs one re-read per check.

The tracker knows no connection or request: whoever watches (a server's
subscriptions) registers as a ``Reporter`` and hears ``changed(uri, version)``
and ``list_changed()``; it compares the version with the one each subscriber
last heard of, so a thousand calls with unchanged content tell nobody anything.

What it remembers is bounded: the versions of concrete resources (as many as
are registered), of watched URIs, and of at most ``MAX_INSTANCE_VERSIONS``
template instances read lately (unknown query parameters make infinitely many).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from . import contents, telemetry
from ._runner import ThreadRunner
from .contents import Content, combined_version, to_contents
from .context import AppView, Context
from .declaration import iter_lister_page
from .errors import ResourceNotFound
from .limits import put_bounded
from .polling import Pollers
from .telemetry import spans
from .watching import Watchers

if TYPE_CHECKING:
    from .declaration import Handler
    from .limits import Limits
    from .pagination import SeqIndex
    from .router import Router

__all__ = ["GONE", "Broker", "Reporter", "Tracker", "Watched"]

#: how a sync handler's read is run in a worker: ``await run(fn)`` (a session's turn, ``ThreadRunner.call``)
Run = Callable[[Callable[[], Any]], Awaitable[Any]]


class Watched(AppView, Protocol):
    """What the tracker asks of the registry whose resources it watches (``Registry``)."""

    @property
    def router(self) -> Router: ...
    @property
    def telemetry(self) -> bool: ...
    @property
    def limits(self) -> Limits: ...
    @property
    def resources(self) -> SeqIndex[Handler]: ...
    @property
    def templates(self) -> SeqIndex[Handler]: ...
    @property
    def list_changed(self) -> bool: ...

log = logging.getLogger("resourcekit")


class Reporter(Protocol):
    """Who hears of changes (one per running server); re-reads run on its loop and workers."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def runner(self) -> ThreadRunner: ...

    def changed(self, uri: str, version: str, contents: list[Content] | None = None) -> None:
        """``uri`` was re-read (``contents``: what it serves now) or another process found ``version``."""

    def embeds(self, uri: str) -> bool:
        """Does a subscriber of ``uri`` here want the new contents in the notification?"""

    def list_changed(self) -> None: ...


class Broker(Protocol):
    """What several processes share (``resourcekit.scaleout``); ``None`` when one process is all.

    The tracker tells it what it learns and asks it who polls; it tells the tracker, through
    ``schedule`` / ``schedule_list`` / ``watch_shared``, what the other processes learned.
    """

    #: URIs that subscribers held elsewhere (handshake sessions in the shared store) watch
    watched: set[str]

    def dirty(self, uri: str) -> None: ...  # from any thread

    def changed(self, uri: str, version: str) -> None: ...

    def list_dirty(self) -> None: ...  # from any thread

    def list_changed(self, version: str | None) -> None: ...

    async def leases(self, uris: list[str], ttl: float, kind: str = "lease:") -> list[str]: ...

    async def release(self, uris: list[str], kind: str) -> None: ...


class Tracker:
    def __init__(self, registry: Watched) -> None:
        self.registry = registry
        self.broker: Broker | None = None  # set while a scale-out broker serves this app
        self._exact = registry.router.exact  # changed in place, never replaced
        self.versions: dict[str, str] = {}  # latest version served of concrete resources, shown in listings
        self.instance_versions: dict[str, str] = {}  # the same for template instances, bounded
        self._watched: dict[str, int] = {}  # URI -> how many subscribers watch it
        self._reporters: list[Reporter] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._dirty: set[str] = set()
        self._check_scheduled = False
        self._list_scheduled = False
        self._list_force = False
        self._list_version: str | None = None
        self._failures: dict[str, float] = {}  # when a re-read last failed, per URI
        self.checks = 0  # how many re-reads ran: visible to tests and benchmarks
        self.watchers = Watchers(self)  # @app.watch: one task per watched URI a pattern matches
        self.pollers = Pollers(self)  # poll=: re-reads of watched URIs, listings compared
        self.served = False  # a server attached once (app._hint_if_nothing_served)

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    def attach(self, reporter: Reporter) -> None:
        if reporter not in self._reporters:
            self._reporters.append(reporter)
        if not self.served:  # what changed before anyone could list it told nobody anything
            self.served = True
            with self._lock:
                self._list_force = False
        self._loop = reporter.loop
        self.pollers.start_lists(self.registry.templates)

    def detach(self, reporter: Reporter) -> None:
        """A server stopped: forget it, and its loop unless another server runs on it."""
        if reporter in self._reporters:
            self._reporters.remove(reporter)
        self._loop = self._reporters[-1].loop if self._reporters else None
        if self._loop is None:
            self.watchers.close()
            self.pollers.close()
            with self._lock:
                self._check_scheduled = self._list_scheduled = False
                self._dirty.clear()

    # --- versions ---------------------------------------------------------------

    def observe(self, uri: str, version: str) -> None:
        """``version`` was just served for ``uri`` (from any thread)."""
        if uri in self._exact:
            self.versions[uri] = version
            return
        table = self.instance_versions  # put_bounded, inlined: every template read passes here
        if len(table) >= MAX_INSTANCE_VERSIONS and uri not in table:
            table.clear()
        table[uri] = version

    def version(self, uri: str) -> str | None:
        version = self.versions.get(uri)
        return version if version is not None else self.instance_versions.get(uri)

    def forget(self, uri: str) -> None:
        self.versions.pop(uri, None)
        self.instance_versions.pop(uri, None)

    async def read_version(self, uri: str, run: Run | None = None) -> str:
        """Read ``uri`` now and hash what it serves (``GONE`` when nothing does); a sync handler
        through ``run`` (a subscribing session's turn in its runner), else in a runner's shared lane."""
        return (await self._read_contents(uri, run))[0]

    async def _read_contents(self, uri: str, run: Run | None = None) -> tuple[str, list[Content] | None]:
        """Read ``uri`` now: its version and contents (``GONE`` and None when nothing serves it)."""
        try:
            return await self._read_contents_of(uri, run)
        except ResourceNotFound:
            return GONE, None

    # --- watching ------------------------------------------------------------------

    def watch(self, uri: str) -> None:
        """One more subscriber of ``uri``; the first starts polling it (``poll=``)."""
        count = self._watched.get(uri, 0)
        self._watched[uri] = count + 1
        if count == 0:
            self.pollers.watch(uri)
            self.watchers.watch(uri)

    def unwatch(self, uri: str) -> None:
        count = self._watched.get(uri, 0)
        if count > 1:
            self._watched[uri] = count - 1
            return
        self._watched.pop(uri, None)
        if self.broker is None or uri not in self.broker.watched:
            self.pollers.unwatch(uri)
            self.watchers.unwatch(uri)

    def subscribers(self, uri: str) -> int:
        return self._watched.get(uri, 0)

    # --- changes -----------------------------------------------------------------

    def notify_changed(self, uri: str) -> None:
        if self.registry.telemetry and spans.active():
            telemetry.causes.caused((uri,))  # the span current now, for the notification's link
        self._schedule(uri)
        if self.broker is not None:
            self.broker.dirty(uri)

    def schedule(self, uri: str) -> None:
        """Another process says ``uri`` may have changed: check it here (without telling it back)."""
        self._schedule(uri)

    def report(self, uri: str, version: str) -> None:
        """Another process found ``version`` of ``uri``: tell the subscribers here."""
        if uri not in self._watched:
            return
        if any(reporter.embeds(uri) for reporter in self._reporters):
            self._schedule(uri)  # read here: the notification carries the contents it finds
            return
        if spans.ON:
            telemetry.causes.reporting(uri)
        if version == GONE:
            self.forget(uri)
        else:
            self.observe(uri, version)
        for reporter in list(self._reporters):
            reporter.changed(uri, version)

    def watch_shared(self, uri: str) -> None:
        """Subscribers elsewhere watch ``uri``: poll it here too (one process at a time, by lease)."""
        assert self.broker is not None
        self.broker.watched.add(uri)
        self.pollers.watch(uri)
        self.watchers.watch(uri)

    def unwatch_shared(self, uri: str) -> None:
        assert self.broker is not None
        self.broker.watched.discard(uri)
        if uri not in self._watched:
            self.pollers.unwatch(uri)
            self.watchers.unwatch(uri)

    def _schedule(self, uri: str) -> None:
        loop = self._loop
        with self._lock:
            self._dirty.add(uri)
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
                if not dirty or not self._reporters:
                    self._check_scheduled = False
                    return
            watched = []
            shared = self.broker.watched if self.broker is not None else ()
            for uri in dirty:
                if uri in self._watched or uri in shared:
                    watched.append(uri)
                else:
                    self.forget(uri)  # nobody listens: forget, re-read lazily
            # re-read concurrently (sync handlers spread over the worker threads), each URI's
            # subscribers told once its own read is done: a slow one holds up no other
            await asyncio.gather(*(self._recheck(uri) for uri in watched), return_exceptions=True)

    async def _recheck(self, uri: str) -> None:
        try:
            version, contents = await self._read_contents(uri)
        except Exception as exc:
            self.log_failure(uri, exc)
            return
        self.checks += 1
        if version == GONE:  # deleted: no version to show in listings; subscribers hear it once
            self.forget(uri)
        else:
            self.observe(uri, version)
        if spans.ON:
            telemetry.causes.reporting(uri)  # the causes of this change, for the notifications
        if uri in self._watched:
            for reporter in list(self._reporters):
                reporter.changed(uri, version, contents)
        if self.broker is not None:
            self.broker.changed(uri, version)

    async def _read_contents_of(self, uri: str, run: Run | None) -> tuple[str, list[Content] | None]:
        match = self.registry.router.match(uri)
        if match is None:
            return GONE, None
        handler = match.handler
        kwargs = match.kwargs
        if handler.sig.context_param is not None:
            kwargs[handler.sig.context_param] = Context(self.registry, uri, params=match.raw)
        if handler.sig.is_async:
            contents = to_contents(uri, await handler.fn(**kwargs), handler.mime_type)
        else:
            contents = await self.in_thread(lambda: to_contents(uri, handler.fn(**kwargs), handler.mime_type), run)
        return combined_version(contents), contents

    def log_failure(self, uri: str, exc: BaseException) -> None:
        """A traceback the first time, then one line a minute at most: polling must not flood the log."""
        now = time.monotonic()
        last = self._failures.get(uri)
        if last is not None and now - last < FAILURE_LOG_INTERVAL:
            return
        put_bounded(self._failures, uri, now, MAX_INSTANCE_VERSIONS)
        if last is None:
            log.error("re-reading %s to check for changes failed", uri, exc_info=exc)
        else:
            log.error("re-reading %s to check for changes still fails: %r", uri, exc)

    async def in_thread(self, fn: Callable[[], Any], run: Run | None = None) -> Any:
        return await (run or self._reporters[-1].runner.call)(fn)

    async def leases(self, uris: list[str], ttl: float) -> list[str] | None:
        """Of ``uris``, those this process polls (``polling.Pollers``); None: all (no broker)."""
        return None if self.broker is None else await self.broker.leases(uris, ttl)

    # --- the list --------------------------------------------------------------------

    def on_registry_changed(self, handler: Handler) -> None:
        self.notify_list_changed(force=True)
        self.pollers.start_lists([handler])

    def notify_list_changed(self, force: bool = False) -> None:
        """Report list_changed, coalesced; unless ``force``, only if the list's version moved (never
        when the app declares no ``listChanged``)."""
        if not self.registry.list_changed:
            return
        if self.registry.telemetry and spans.active():
            telemetry.causes.caused((telemetry.causes.LIST,), "notify_list_changed")
        self.schedule_list(force)
        if self.broker is not None:
            self.broker.list_dirty()

    def schedule_list(self, force: bool = False) -> None:
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
        if not self._reporters:
            return
        if force:
            # a registration changed the list for certain: no need to enumerate it
            self._list_version = None
        else:
            version = await self.in_thread(self.list_version)
            if version is not None and version == self._list_version:
                return
            self._list_version = version
        for reporter in list(self._reporters):
            reporter.list_changed()
        if self.broker is not None:
            self.broker.list_changed(self._list_version)

    def list_version(self) -> str | None:
        """A hash of every listed URI and its metadata; None past the scan budget.

        Listers are enumerated for at most ``Limits.page_scan_budget`` items in all: a
        longer (or endless) list has no version, and every call reports it changed.
        """
        budget = self.registry.limits.page_scan_budget
        digest = contents.blake2b(digest_size=16)
        for handler in self.registry.resources:
            digest.update(orjson.dumps(handler.wire, option=orjson.OPT_SORT_KEYS))
        for handler in self.registry.templates:
            digest.update(orjson.dumps(handler.wire, option=orjson.OPT_SORT_KEYS))
            if handler.lister is not None:
                for item in iter_lister_page(handler, 0, budget):
                    budget -= 1
                    if budget < 0:
                        return None
                    digest.update(orjson.dumps(item, default=str, option=orjson.OPT_SORT_KEYS))
        return digest.hexdigest()


#: the version of a URI that nothing serves (deleted, or not found)
GONE = "<gone>"
MAX_INSTANCE_VERSIONS = 4096
FAILURE_LOG_INTERVAL = 60.0
