"""An in-process transport: both ends on one event loop, messages still go through JSON."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from ..protocol import Connection, Server

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = ["MemoryTransport"]


class MemoryTransport:
    """Send requests to an App's protocol core and await their responses."""

    def __init__(self, app: Registry, on_notification: Callable[[dict[str, Any]], None]) -> None:
        self.server = Server(app)
        self.server.start()
        self.conn: Connection = self.server.connect(self._deliver)
        self._on_notification = on_notification
        self._ids = itertools.count(1)
        self._waiting: dict[Any, asyncio.Future[dict[str, Any]]] = {}

    def _deliver(self, message: Any) -> None:
        message = orjson.loads(orjson.dumps(message))  # exactly what a wire would carry
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
