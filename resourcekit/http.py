"""The MCP endpoint as a plain ASGI application, to mount in Starlette, FastAPI or any ASGI server.

``ASGIApp(app, path="/mcp", ...)`` serves one App (``app.asgi`` makes one with the defaults);
``HTTPError`` is what an ``auth`` hook raises to refuse a request with a status and a message.
This is the public home of both; the transport behind them (``resourcekit.transports.http``)
is internal.
"""

from __future__ import annotations

from .transports.http._headers import HTTPError
from .transports.http.asgi import ASGIApp

__all__ = ["ASGIApp", "HTTPError"]
