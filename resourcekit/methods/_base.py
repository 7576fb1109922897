"""What every method module shares: the ``PENDING`` answer, parameter checks, caching hints.

A method takes the ``Request`` and returns a result dict (answered at once), an
awaitable (run as a task), or ``PENDING`` (it arranged to answer later, e.g.
from a worker thread).  It raises ``MCPError`` for anything the client got wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._runner import Call
from ..errors import InvalidParams, LimitExceeded
from ..pagination import decode_cursor

if TYPE_CHECKING:
    from ..core import Connection, Request
    from ..handler import Handler

__all__ = ["PENDING", "Method", "Notification", "cache_hints", "check_uri", "in_worker", "str_param", "uri_param"]

PENDING: Any = object()

Method = Callable[["Request"], Any]
Notification = Callable[["Connection", dict[str, Any]], None]


def keyset_after(req: Request, kind: str) -> int:
    """Where a keyset-paged list resumes: the sequence number in the request's cursor, else 0."""
    cursor = req.params.get("cursor")
    return 0 if cursor is None else decode_cursor(cursor, (kind,))[1][0]


def str_param(req: Request, name: str) -> str:
    value = req.params.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"Invalid params: '{name}' must be a non-empty string", {"param": name})
    return value


def uri_param(req: Request, name: str = "uri") -> str:
    """A URI parameter, refused before any matching when it is over the length limit."""
    uri = req.params.get(name)
    if type(uri) is str and uri and len(uri) <= req.conn.limits.max_uri_length:
        return uri  # the common case, in one test
    return check_uri(req, str_param(req, name))


def check_uri(req: Request, uri: str) -> str:
    limit = req.conn.limits.max_uri_length
    if len(uri) > limit:
        raise LimitExceeded("max_uri_length", limit, f"Invalid params: URI longer than {limit} characters")
    return uri


def cache_hints(req: Request, result: dict[str, Any], handler: Handler | None = None) -> dict[str, Any]:
    """2026-07-28 results say how long they may be cached, and by whom."""
    if req.modern:
        app = req.conn.app
        ttl = handler.ttl_ms if handler is not None and handler.ttl_ms is not None else app.ttl_ms
        scope = handler.cache_scope if handler is not None and handler.cache_scope else app.cache_scope
        result["ttlMs"] = ttl
        result["cacheScope"] = scope if req.principal is None else "private"  # an answer for this token
    return result


def in_worker(req: Request, fn: Callable[[], dict[str, Any]]) -> Any:
    """Answer ``req`` with ``fn()`` run in a worker thread (in its session's lane), encoded there,
    unless it is cancelled before it starts."""

    def job() -> bytes | None:
        return None if req.cancelled else req.encode(fn())

    req.conn.runner.submit(Call(job, req.complete), req.conn.lane)
    return PENDING
