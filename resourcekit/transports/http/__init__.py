"""Streamable HTTP as a plain ASGI application (no web framework underneath).

Only HTTP framing lives here: sessions, SSE streams, status codes, and the header
checks of each revision.  Every protocol rule is the core's (``resourcekit.core``).
A POST whose body carries ``_meta["io.modelcontextprotocol/protocolVersion"]`` (or whose
``MCP-Protocol-Version`` header names a stateless revision) is served statelessly as
2026-07-28; anything else belongs to a handshake-era session that ``initialize`` opened
and ``Mcp-Session-Id`` names.

One module per concern, each importing only those listed after it:

- ``serve``: ``run_http``, uvicorn and reloading.
- ``_uvicorn``: uvicorn's httptools protocol with header sections bounded in size and time.
- ``asgi``: ``ASGIApp``, which routes a request through the others.
- ``_post``: a POST to the endpoint (``ASGIApp.__call__``), admitted, parsed and exchanged (one
  body in; nothing, one JSON body or an SSE stream out) in one coroutine.
- ``_exchange``: an exchange's SSE stream, its unanswered requests, its disconnect watch.
- ``_sessions``: handshake-era sessions, their table, expiry.
- ``_sse``: event encoding, the inbox a response waits on, resumable streams.
- ``_gate``: Host and Origin checks, CORS, the ``auth`` hook.
- ``_headers``: header parsing and checks, Accept, statuses, plain responses, ``HTTPError``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._headers import HTTPError
    from .asgi import ASGIApp
    from .serve import check_port, run_http

__all__ = ["ASGIApp", "HTTPError", "check_port", "run_http"]

_HOMES = {"ASGIApp": ".asgi", "HTTPError": "._headers", "run_http": ".serve", "check_port": ".serve"}


_PUBLIC = {"ASGIApp", "HTTPError"}  # their public home is resourcekit.http: read here, they warn


def __getattr__(name: str) -> Any:
    # the modules load on first use: a stdio server's start-up never pays for HTTP
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    if name in _PUBLIC:
        import warnings

        warnings.warn(f"resourcekit.transports.http.{name} is deprecated: import it from resourcekit.http "
                      "(the old path goes in the next release)", DeprecationWarning, stacklevel=2)
    else:
        globals()[name] = value
    return value
