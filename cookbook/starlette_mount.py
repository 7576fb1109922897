"""Mount resourcekit inside a Starlette (or FastAPI) application.

The MCP endpoint is a plain ASGI app (``app.asgi``): mount it wherever you like, next
to your own routes. Here it answers at ``/api/mcp`` beside a health check at ``/health``.

Run it:
    uvicorn cookbook.starlette_mount:web --port 8000      # then point a client at /api/mcp
    (FastAPI works the same way: ``fastapi_app.mount("/api", mcp)``)

Starlette does not pass lifespan events to mounted apps, so the MCP app starts lazily on
its first request; closing it on shutdown (below) ends sessions and listen streams cleanly.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from resourcekit import App

app = App("inventory", version="1.0.0")
STOCK = {"apples": 12, "pears": 3}


@app.resource("inventory://stock")
def stock() -> dict[str, int]:
    """Current stock levels."""
    return STOCK


@app.template("inventory://stock/{item}")
def item(item: str) -> str:
    return f"{item}: {STOCK.get(item, 0)}"


mcp = app.asgi  # a plain ASGI app


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"ok": True, "resources": len(app.resources)})


@contextlib.asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    yield
    mcp.close()


web = Starlette(routes=[Route("/health", health), Mount("/api", app=mcp)], lifespan=lifespan)
