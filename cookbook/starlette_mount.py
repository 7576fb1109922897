"""Mount resourcekit inside a Starlette (or FastAPI) application.

The MCP endpoint is a plain ASGI app that answers at ``/mcp`` below wherever it is
mounted: here ``/api/mcp``, beside the host app's own ``/health`` route.

Run it:
    uvicorn cookbook.starlette_mount:web --port 8000 --timeout-graceful-shutdown 5
    # then point an MCP client at http://127.0.0.1:8000/api/mcp

How:
* ``app.asgi`` is the endpoint with default options; for options (allowed origins and
  hosts, an ``auth`` hook, limits) build ``ASGIApp(app, ...)`` yourself, as below.
* Lifespan: Starlette does not pass lifespan events on to mounted apps, so give the
  host app the MCP app's own ``lifespan`` (or enter it inside yours, as below). At
  start-up it binds to the server's event loop; at shutdown it ends sessions and streams
  (listen streams get their final result). Without it, the endpoint starts on its first
  request and still works; it just does not say goodbye.
* uvicorn waits for open responses before it runs the lifespan shutdown, and SSE
  streams stay open: ``--timeout-graceful-shutdown`` bounds that wait.
  (``resourcekit run --transport http`` ends the streams on the signal itself.)
* FastAPI is the same: ``api = FastAPI(lifespan=mcp.lifespan); api.mount("/api", mcp)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from resourcekit import App
from resourcekit.http import ASGIApp

app = App("inventory", version="1.0.0")
STOCK = {"apples": 12, "pears": 3}


@app.resource("inventory://stock")
def stock() -> dict[str, int]:
    """Current stock levels."""
    return STOCK


@app.template("inventory://stock/{item}")
def item(item: str) -> str:
    return f"{item}: {STOCK.get(item, 0)}"


# a browser dashboard served from another origin may call the endpoint (CORS included)
mcp = ASGIApp(app, allowed_origins=["https://dashboard.example.com"])


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"ok": True, "resources": len(app.resources), "sessions": len(mcp.sessions)})


@contextlib.asynccontextmanager
async def lifespan(web_app: Starlette) -> AsyncIterator[None]:
    # the host's own start-up and shutdown work would go around this
    async with mcp.lifespan(web_app):
        yield


web = Starlette(routes=[Route("/health", health), Mount("/api", app=mcp)], lifespan=lifespan)
