"""An in-process transport: both ends on one event loop, messages still go through JSON.

The session is a stream of JSON lines through an outbox, as over stdio: the same pipeline serves
``testing.Client`` as serves a real client (a worker hands its reply on itself; the lines reach
this end on the loop).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from .._runner import ThreadRunner
from ..core import Connection, Server

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = ["MemoryTransport"]


class MemoryTransport:
    """Send requests to an App's protocol core and await their responses."""

    def __init__(self, app: Registry, on_notification: Callable[[dict[str, Any]], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.server = Server(app)
        limits = app.limits
        self.server.start(ThreadRunner(self._loop, limits.max_workers, limits.max_queued_jobs))
        self.conn: Connection = self.server.stream(self._write)
        self._on_notification = on_notification
        self._ids = itertools.count(1)
        self._waiting: dict[Any, asyncio.Future[dict[str, Any]]] = {}

    def _write(self, data: bytes) -> None:
        """Lines from the outbox, from any thread: read on the loop, as a client would read them."""
        if threading.get_ident() == self._loop_thread:
            self._read(data)
        else:
            self._loop.call_soon_threadsafe(self._read, data)

    def _read(self, data: bytes) -> None:
        for line in data.splitlines():
            self._deliver(orjson.loads(line))

    def _deliver(self, message: Any) -> None:
        if isinstance(message, list):
            for item in message:
                self._deliver(item)
            return
        future = self._waiting.pop(message.get("id"), None) if "id" in message else None
        if future is not None:
            if not future.done():
                future.set_result(message)
        else:
            self._on_notification(message)

    def next_id(self) -> int:
        return next(self._ids)

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[message["id"]] = future
        self.conn.feed(orjson.dumps(message))
        try:
            return await future
        finally:
            self._waiting.pop(message["id"], None)

    def notify(self, message: dict[str, Any]) -> None:
        self.conn.feed(orjson.dumps(message))

    def close(self) -> None:
        self.conn.close()
        self.server.close()
