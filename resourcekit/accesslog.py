"""One log line per request at INFO: method, URI, outcome, duration (``RESOURCEKIT_LOG_LEVEL=INFO``).

The level is looked at once, when a ``Server`` starts: below INFO its connections make
plain ``Request`` objects and nothing is timed or formatted, so the hot path pays nothing.
At INFO they make ``LoggedRequest`` objects, which note the time they began and log
their outcome when they answer (or are cancelled).  Requests refused before they ran
(unknown method, bad parameters, an unknown URI) are logged by ``refused``.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from .errors import MCPError
from .request import Request

if TYPE_CHECKING:
    from .eras import Era
    from .protocol import Connection
    from .request import Send

__all__ = ["LoggedRequest", "enabled", "refused"]

log = logging.getLogger("resourcekit")


def enabled() -> bool:
    return log.isEnabledFor(logging.INFO)


def _subject(method: str, params: dict[str, Any]) -> str:
    """What the request is about: its URI, or a tool call's name (and URI)."""
    uri = params.get("uri")
    if method == "tools/call":
        arguments = params.get("arguments")
        inner = arguments.get("uri") if type(arguments) is dict else None
        return f"{params.get('name')}" + (f" {inner}" if type(inner) is str else "")
    return uri[:200] if type(uri) is str else ""


def _line(method: str, params: dict[str, Any], outcome: str, seconds: float) -> None:
    subject = _subject(method, params)
    log.info("%s%s: %s, %.2f ms", method, f" {subject}" if subject else "", outcome, seconds * 1000)


def _error(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        return f"error {exc.code} {exc.message}"
    return f"error -32603 Internal error ({type(exc).__name__})"


def refused(method: str, params: dict[str, Any], exc: BaseException, request: Request | None) -> None:
    """A request answered with an error before it ran (``request`` is None if it was not even made)."""
    started = request.started if isinstance(request, LoggedRequest) else time.perf_counter()
    _line(method, params, _error(exc), time.perf_counter() - started)


class LoggedRequest(Request):
    """A ``Request`` that logs its outcome and duration."""

    __slots__ = ("started",)

    def __init__(self, conn: Connection, rid: Any, method: str, params: dict[str, Any], version: str | None,
                 era: Era, log_level: str | None, reply: Send) -> None:
        self.started = time.perf_counter()
        super().__init__(conn, rid, method, params, version, era, log_level, reply)

    def respond(self, result: dict[str, Any]) -> None:
        if not self.cancelled:
            outcome = "tool error" if result.get("isError") is True else "ok"
            _line(self.method, self.params, outcome, time.perf_counter() - self.started)
        super().respond(result)

    def fail(self, exc: BaseException) -> None:
        if not self.cancelled:
            _line(self.method, self.params, _error(exc), time.perf_counter() - self.started)
        super().fail(exc)

    def cancel(self) -> None:
        if not self.cancelled:
            _line(self.method, self.params, "cancelled", time.perf_counter() - self.started)
        super().cancel()
