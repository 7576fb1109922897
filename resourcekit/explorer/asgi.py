"""``Explorer``: the explorer's static files at ``/``, everything else to the MCP endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..transports.http.asgi import ASGIApp

__all__ = ["STATIC", "Explorer"]

STATIC = Path(__file__).resolve().parent / "static"
_TYPES = {".html": b"text/html; charset=utf-8", ".js": b"text/javascript; charset=utf-8",
          ".css": b"text/css; charset=utf-8", ".svg": b"image/svg+xml", ".png": b"image/png"}
# the page talks to its own origin only: scripts, styles and connections from here, images
# also from data: and blob: URLs (resources read as images are shown that way)
_POLICY = (b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
           b"img-src 'self' data: blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def _files() -> dict[str, tuple[bytes, bytes]]:
    """URL path -> (content type, body), read once: ``/`` is ``index.html``."""
    files: dict[str, tuple[bytes, bytes]] = {}
    for path in sorted(STATIC.iterdir()):
        if path.is_file() and path.suffix in _TYPES:
            files["/" + path.name] = (_TYPES[path.suffix], path.read_bytes())
    files["/"] = files["/index.html"]
    return files


class Explorer:
    """Serve the explorer page around an ``ASGIApp`` (``resourcekit dev``).

    ``GET /``, ``/index.html``, ``/app.js``, ``/style.css``: the page, with a Content
    Security Policy allowing nothing from other origins. Any other request (``/mcp``,
    ``/healthz``, lifespan) goes to ``mcp``, which keeps its Host and Origin checks.
    """

    def __init__(self, mcp: ASGIApp) -> None:
        self.app = mcp  # also where uvicorn's header limits are found (``_uvicorn._limits_of``)
        self.files = _files()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("method") in ("GET", "HEAD"):
            found = self.files.get(scope.get("path", ""))
            if found is not None:
                content_type, body = found
                await send({"type": "http.response.start", "status": 200, "headers": [
                    (b"content-type", content_type), (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"no-cache"), (b"x-content-type-options", b"nosniff"),
                    (b"content-security-policy", _POLICY), (b"referrer-policy", b"no-referrer")]})
                await send({"type": "http.response.body", "body": body if scope["method"] == "GET" else b""})
                return
        await self.app(scope, receive, send)
