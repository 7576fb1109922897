"""Watchers: ``@app.watch(pattern)`` functions that run exactly while somebody is subscribed.

A watcher is an async function whose parameters are its pattern's variables (a URI template,
or a plain URI with none), typed as a template's, plus an optional ``Context``.  It is how a
change is noticed without polling: a file watcher, a ``LISTEN`` on a database channel, a
message-queue consumer; it reports with ``app.notify_changed(uri)``, and the content hash still
decides whether subscribers hear of it.

``Watchers`` runs one task per watched URI that a pattern matches: started when the URI gains
its first subscriber (any session, any transport; on Redis, on any worker), cancelled when it
loses its last one, after the watcher's grace (``DEFAULT_GRACE`` seconds unless declared): a
client that unsubscribes and subscribes again, or a session replaced by another, does not
restart it.  A watcher that raises (or returns) is logged with its URI and started again, one
second later the first time, then after twice as long each time, up to ``MAX_RESTART_DELAY``.

With several workers (``tracking.Broker``), each worker that has subscribers of a URI, or hears
of them elsewhere, is a candidate, and a lease in Redis decides which one runs its watcher:
renewed every ``LEASE_RENEW`` seconds for ``LEASE_TTL``, so when that worker dies another takes
over within ``LEASE_TTL + LEASE_RENEW`` seconds.  Redis unreachable, each candidate runs it
meanwhile (a change reported twice is one version: subscribers hear of it once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from .context import AppView, Context
from .declaration import uri_template
from .errors import (
    MissingParameterError,
    QueryDefaultError,
    UnknownParameterError,
    WatcherDefinitionError,
    bad_resource_uri,
)
from .signature import Signature, inspect_handler

__all__ = ["DEFAULT_GRACE", "Watcher", "Watchers"]

log = logging.getLogger("resourcekit")

#: seconds a watcher keeps running after its URI's last subscriber left
DEFAULT_GRACE = 2.0
MAX_GRACE = 3600.0
FIRST_RESTART_DELAY = 1.0
MAX_RESTART_DELAY = 30.0
#: a watcher that ran this long before it failed starts again after FIRST_RESTART_DELAY
STEADY = 60.0
LEASE_TTL = 3.0
LEASE_RENEW = 1.0
LEASES = "wlease:"  # the watchers' lease keys (polling's are "lease:")


class Leases(Protocol):
    """Where the workers' leases are kept (``scaleout.broker.RedisBroker``)."""

    async def leases(self, uris: list[str], ttl: float, kind: str = "lease:") -> list[str]: ...

    async def release(self, uris: list[str], kind: str) -> None: ...


class WatchHost(Protocol):
    """What the watchers ask of the tracker that counts subscribers (``tracking.Tracker``)."""

    @property
    def registry(self) -> AppView: ...
    @property
    def broker(self) -> Leases | None: ...
    @property
    def loop(self) -> asyncio.AbstractEventLoop | None: ...


class Watcher:
    """One ``@app.watch`` declaration, checked and compiled once."""

    __slots__ = ("fn", "grace", "name", "pattern", "sig", "template")

    def __init__(self, fn: Callable[..., Any], pattern: str, grace: float | None = None) -> None:
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
        self.name = str(name).rpartition("<locals>.")[2]
        if not isinstance(pattern, str) or not pattern:
            raise bad_resource_uri(pattern)
        self.pattern = pattern
        self.template = uri_template(pattern) if "{" in pattern or "}" in pattern else None
        if self.template is None and (":" not in pattern or " " in pattern or not pattern.isprintable()):
            raise bad_resource_uri(pattern)
        if grace is None:
            grace = DEFAULT_GRACE
        if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not 0 <= grace <= MAX_GRACE:
            raise WatcherDefinitionError(pattern, self.name, f"has grace={grace!r}: give seconds, "
                                                             f"0 to {MAX_GRACE:g}")
        self.grace = float(grace)
        self.sig = sig = inspect_handler(fn, serves=False)
        if not sig.is_async:
            raise WatcherDefinitionError(pattern, self.name, "is not an async function: declare it 'async def' "
                                                             "(it runs as a task while the URI is watched)")
        self.fn = fn
        variables = self.template.variables if self.template is not None else ()
        names = {variable.name for variable in variables}
        if self.template is not None and self.template.duplicates:
            twice, _ = self.template.duplicates[0]
            raise WatcherDefinitionError(pattern, self.name, f"has variable {twice!r} twice")
        for variable in variables:
            param = sig.params.get(variable.name)
            if param is None:
                raise MissingParameterError(pattern, variable.name, self.name)
            if variable.query and param.required:
                raise QueryDefaultError(pattern, variable.name, self.name)
        for pname, param in sig.params.items():
            if pname not in names and (self.template is not None or param.required):
                raise UnknownParameterError(pattern, pname, self.name, resource=False)

    def arguments(self, uri: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The typed arguments and raw values for ``uri``; None if the pattern does not match it."""
        if self.template is None:
            return ({}, {}) if uri == self.pattern else None
        raw = self.template.match(uri)
        if raw is None:
            return None
        try:
            return _convert(self.sig, raw), raw
        except (ValueError, TypeError, ArithmeticError):
            return None


def _convert(sig: Signature, raw: Mapping[str, Any]) -> dict[str, Any]:
    """Typed keyword arguments from matched strings, as a template's handler gets them."""
    kwargs: dict[str, Any] = {}
    for name, param in sig.params.items():
        value = raw.get(name)
        if value is None:
            if param.required:
                raise ValueError(f"missing {name}")
            continue
        if isinstance(value, list) and not param.convertor.is_list:
            if len(value) != 1:
                raise ValueError(f"{name} takes one value")
            value = value[0]
        kwargs[name] = param.convertor.parse(value)
    return kwargs


class _Running:
    """A watched URI: its watcher and arguments, its task while it runs here, the end timer."""

    __slots__ = ("args", "ending", "raw", "task", "watcher")

    def __init__(self, watcher: Watcher, args: dict[str, Any], raw: dict[str, Any]) -> None:
        self.watcher, self.args, self.raw = watcher, args, raw
        self.task: asyncio.Task[None] | None = None
        self.ending: asyncio.TimerHandle | None = None


class Watchers:
    """One app's watchers: what is declared, and the tasks of the URIs watched now."""

    def __init__(self, host: WatchHost) -> None:
        self.host = host
        self._exact: dict[str, Watcher] = {}
        self._templates: list[Watcher] = []  # most specific first, then first declared
        self._watched: dict[str, _Running] = {}
        self._leasing: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self.starts = 0  # tasks started (restarts not counted): visible to tests

    def declare(self, watcher: Watcher) -> Watcher:
        taken = self._exact.get(watcher.pattern) if watcher.template is None else next(
            (w for w in self._templates if w.template is not None and watcher.template is not None
             and w.template.canonical == watcher.template.canonical), None)
        if taken is not None:
            raise WatcherDefinitionError(watcher.pattern, watcher.name, f"repeats {taken.name}()'s pattern "
                                                                         f"{taken.pattern!r}: one watcher per pattern")
        if watcher.template is None:
            self._exact[watcher.pattern] = watcher
        else:
            self._templates.append(watcher)
            self._templates.sort(key=lambda w: w.template.specificity if w.template is not None else ())
        return watcher

    def find(self, uri: str) -> tuple[Watcher, dict[str, Any], dict[str, Any]] | None:
        """The watcher of ``uri`` (an exact pattern first, then the most specific template)."""
        watcher = self._exact.get(uri)
        if watcher is not None:
            return watcher, {}, {}
        for watcher in self._templates:
            found = watcher.arguments(uri)
            if found is not None:
                return watcher, found[0], found[1]
        return None

    def running(self, uri: str) -> bool:
        """Does ``uri``'s watcher run in this process now?"""
        entry = self._watched.get(uri)
        return entry is not None and entry.task is not None and not entry.task.done()

    # --- what the tracker says ---------------------------------------------------------------

    def watch(self, uri: str) -> None:
        """``uri`` gained its first subscriber (here, or elsewhere on Redis)."""
        if not self._exact and not self._templates:
            return
        entry = self._watched.get(uri)
        if entry is not None:
            if entry.ending is not None:  # back within the grace: the watcher runs on
                entry.ending.cancel()
                entry.ending = None
            return
        found = self.find(uri)
        if found is None or self.host.loop is None:
            return
        self._watched[uri] = _Running(*found)
        if self.host.broker is None:
            self._start(uri)
        else:
            self._lease_now()

    def unwatch(self, uri: str) -> None:
        """``uri`` lost its last subscriber: its watcher stops after its grace."""
        entry = self._watched.get(uri)
        loop = self.host.loop
        if entry is None or entry.ending is not None:
            return
        if loop is None or entry.watcher.grace == 0:
            self._end(uri)
        else:
            entry.ending = loop.call_later(entry.watcher.grace, self._end, uri)

    def close(self) -> None:
        """The server stopped: cancel every watcher now."""
        for uri in list(self._watched):
            self._end(uri, release=False)
        if self._leasing is not None:
            self._leasing.cancel()
            self._leasing = None

    # --- the tasks ------------------------------------------------------------------------------

    def _end(self, uri: str, release: bool = True) -> None:
        entry = self._watched.pop(uri, None)
        if entry is None:
            return
        if entry.ending is not None:
            entry.ending.cancel()
        ran = self._stop(entry)
        broker = self.host.broker
        if ran and release and broker is not None:
            loop = self.host.loop
            if loop is not None:
                loop.create_task(self._release(broker, uri))

    async def _release(self, broker: Leases, uri: str) -> None:
        """Let another worker take the lease at once if it is asked to run this watcher meanwhile."""
        with contextlib.suppress(Exception):
            await broker.release([uri], LEASES)

    def _start(self, uri: str) -> None:
        entry = self._watched.get(uri)
        loop = self.host.loop
        if entry is None or loop is None or (entry.task is not None and not entry.task.done()):
            return
        self.starts += 1
        entry.task = loop.create_task(self._run(uri, entry))

    @staticmethod
    def _stop(entry: _Running) -> bool:
        task, entry.task = entry.task, None
        if task is None or task.done():
            return False
        task.cancel()
        return True

    async def _run(self, uri: str, entry: _Running) -> None:
        watcher = entry.watcher
        loop = asyncio.get_running_loop()
        delay = FIRST_RESTART_DELAY
        while True:
            args = dict(entry.args)
            if watcher.sig.context_param is not None:
                args[watcher.sig.context_param] = Context(self.host.registry, uri, params=entry.raw)
            began = loop.time()
            try:
                await watcher.fn(**args)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # SystemExit too: a watcher's failure, never the server's
                if loop.time() - began >= STEADY:
                    delay = FIRST_RESTART_DELAY
                log.error("watcher %s() for %s failed; starting it again in %g s", watcher.name, uri, delay,
                          exc_info=exc)
            else:
                log.warning("watcher %s() for %s returned while %s is watched; starting it again in %g s",
                            watcher.name, uri, uri, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_RESTART_DELAY)

    # --- leases (several workers) ----------------------------------------------------------------

    def _lease_now(self) -> None:
        loop = self.host.loop
        if loop is None:
            return
        if self._leasing is None or self._leasing.done():
            self._wake = asyncio.Event()
            self._leasing = loop.create_task(self._lease())
        elif self._wake is not None:
            self._wake.set()

    async def _lease(self) -> None:
        assert self._wake is not None
        while self._watched:
            self._wake.clear()
            broker = self.host.broker
            uris = list(self._watched)
            if broker is None:  # the broker went away: this process is all there is
                held = set(uris)
            else:
                try:
                    held = set(await broker.leases(uris, LEASE_TTL, LEASES))
                except Exception as exc:
                    log.warning("watcher leases unavailable (%s): watchers run here meanwhile", exc)
                    held = set(uris)
            for uri in uris:
                entry = self._watched.get(uri)
                if entry is None:
                    continue
                if uri in held:
                    self._start(uri)
                else:
                    self._stop(entry)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), LEASE_RENEW)
