"""Polling: ``poll=`` re-reads on a timer, the case of change detection that needs no watcher.

- A resource or template declared with ``poll=`` has its watched URIs re-read every ``poll``
  seconds while they are watched (one task per declaration, not per URI: a template with 1,000
  watched instances is one timer).  With several workers, one polls each URI: the one holding
  its lease in Redis.
- A template with ``poll=`` and a lister also has its listed instances compared every ``poll``
  seconds while a server runs (the first ``Limits.page_scan_budget`` of them): another set is a
  ``notify_list_changed()``, which tells clients when the whole list's version moved.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from . import contents, telemetry
from .declaration import iter_lister_page
from .telemetry import spans

if TYPE_CHECKING:
    from .declaration import Handler
    from .limits import Limits
    from .router import Router

__all__ = ["Pollers"]

log = logging.getLogger("resourcekit")


class Polled(Protocol):
    """What the pollers ask of the app (``Registry``)."""

    @property
    def router(self) -> Router: ...
    @property
    def limits(self) -> Limits: ...
    @property
    def telemetry(self) -> bool: ...


class PollHost(Protocol):
    """What the pollers ask of the tracker they re-read through (``tracking.Tracker``)."""

    @property
    def registry(self) -> Polled: ...
    @property
    def loop(self) -> asyncio.AbstractEventLoop | None: ...

    async def leases(self, uris: list[str], ttl: float) -> list[str] | None:
        """Of ``uris``, those this process polls (None: one process is all, it polls them all)."""

    def schedule(self, uri: str) -> None: ...

    def notify_list_changed(self) -> None: ...

    async def in_thread(self, fn: Callable[[], Any]) -> Any: ...

    def log_failure(self, uri: str, exc: BaseException) -> None: ...


class Pollers:
    """One app's polls: of watched URIs (``poll=``) and of templates' listed instances."""

    def __init__(self, host: PollHost) -> None:
        self.host = host
        self._polled: dict[Handler, set[str]] = {}  # watched URIs of each handler with poll=
        self._pollers: dict[Handler, asyncio.Task[None]] = {}
        self._list_polls: dict[Handler, asyncio.Task[None]] = {}  # templates with poll= and a lister

    @property
    def lists(self) -> list[Handler]:
        """The templates whose listings are polled now."""
        return list(self._list_polls)

    def close(self) -> None:
        """The server stopped: every poll ends (they start again with the next one)."""
        for task in [*self._pollers.values(), *self._list_polls.values()]:
            task.cancel()
        self._polled.clear()
        self._pollers.clear()
        self._list_polls.clear()

    # --- watched URIs ----------------------------------------------------------------------------

    def watch(self, uri: str) -> None:
        match = self.host.registry.router.match(uri)
        loop = self.host.loop
        if match is None or match.handler.poll is None or loop is None:
            return
        handler = match.handler
        self._polled.setdefault(handler, set()).add(uri)
        if handler not in self._pollers:
            self._pollers[handler] = loop.create_task(self._poll(handler))

    def unwatch(self, uri: str) -> None:
        for handler, uris in list(self._polled.items()):
            if uri in uris:
                uris.discard(uri)
                if not uris:
                    del self._polled[handler]
                    poller = self._pollers.pop(handler, None)
                    if poller is not None:
                        poller.cancel()
                return

    async def _poll(self, handler: Handler) -> None:
        assert handler.poll is not None
        while True:
            await asyncio.sleep(handler.poll)
            uris = list(self._polled.get(handler, ()))
            try:  # one process polls each URI: the one holding its lease
                held = await self.host.leases(uris, max(3 * handler.poll, 2.0))
                uris = uris if held is None else held
            except Exception as exc:
                log.warning("polling leases unavailable (%s): polling here meanwhile", exc)
            if self.host.registry.telemetry and spans.active():
                telemetry.causes.caused(uris, "poll")
            for uri in uris:
                self.host.schedule(uri)

    # --- listed instances ------------------------------------------------------------------------

    def start_lists(self, templates: Any) -> None:
        """A poll for each of ``templates`` with ``poll=`` and a lister that has none yet."""
        loop = self.host.loop
        if loop is None:
            return
        for handler in templates:
            if handler.poll is not None and handler.lister is not None and handler not in self._list_polls:
                self._list_polls[handler] = loop.create_task(self._poll_list(handler))

    async def _poll_list(self, handler: Handler) -> None:
        assert handler.poll is not None
        budget = self.host.registry.limits.page_scan_budget

        def listed() -> str:
            digest = contents.blake2b(digest_size=16)
            for item in iter_lister_page(handler, 0, budget - 1):
                digest.update(orjson.dumps(item, default=str, option=orjson.OPT_SORT_KEYS))
            return digest.hexdigest()

        seen: str | None = None
        while self.host.registry.router.templates.get(handler.uri) is handler:  # until it is removed
            try:
                now = await self.host.in_thread(listed)
            except Exception as exc:
                self.host.log_failure(handler.uri, exc)
            else:
                if seen is not None and now != seen:
                    self.host.notify_list_changed()
                seen = now
            await asyncio.sleep(handler.poll)
        self._list_polls.pop(handler, None)
