"""The ASGI lifespan protocol: start-up enters the app's lifespan (``App.lifespan``), then starts the
endpoint; shutdown ends sessions and streams, then exits the app's lifespan."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ...errors import LifespanFailed

if TYPE_CHECKING:
    from ...lifespan import Lifespan
    from ._headers import Receive, Send

__all__ = ["lifespan_events"]

log = logging.getLogger("resourcekit")


async def lifespan_events(lifespan: Lifespan, start: Callable[[], None], stop: Callable[[], Awaitable[None]],
                          receive: Receive, send: Send) -> None:
    """Answer the server's lifespan messages: ``start`` the endpoint inside the app's lifespan,
    ``stop`` it (sessions, streams, Redis) before leaving it."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            try:
                await lifespan.enter()
            except LifespanFailed as exc:  # the server logs the message: one line says it all
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            try:
                start()
            except Exception as exc:
                log.exception("starting the MCP endpoint failed")
                await lifespan.exit()
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await stop()
            await lifespan.exit()
            await send({"type": "lifespan.shutdown.complete"})
            return
