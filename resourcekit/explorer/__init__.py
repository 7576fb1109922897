"""``resourcekit dev``: the app's Streamable HTTP endpoint plus a resource explorer page.

- ``asgi``: ``Explorer``, the ASGI wrapper serving the page's static files at ``/`` and
  everything else (``/mcp``, health checks) through the wrapped ``ASGIApp``.
- ``serve``: ``run_dev``, uvicorn on loopback, optional reloading, opening the browser.
- ``static/``: the page itself (plain HTML, CSS and JavaScript; no build step, nothing
  fetched from elsewhere): a client of ``/mcp`` like any other.
"""

from __future__ import annotations

__all__ = ["DEFAULT_PORT"]

DEFAULT_PORT = 6280  # here, not in ``serve``: the CLI's help needs it and no more at start-up
