"""Observers of requests, as wrappers of plan steps: the access log.

One log line per request at INFO (``RESOURCEKIT_LOG_LEVEL=INFO``): method, URI, outcome,
duration.  The level is looked at once, when a ``Server`` starts: below INFO no step is
wrapped and nothing is timed or formatted.  At INFO every step of every plan is wrapped: the
request notes when it began and the observer hears its outcome (``Request.watch``), whichever
thread answers it.  Requests refused before a step ran (unknown method, bad parameters) are
logged by ``refused``.  OpenTelemetry's spans wrap the request's reply the same way
(``telemetry.Traced``): neither changes which code serves a request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import MCPError

if TYPE_CHECKING:
    from .request import Request

__all__ = ["Step", "access_log_enabled", "logged", "refused"]

log = logging.getLogger("resourcekit")
_now = time.perf_counter

#: what a plan holds for a method: a method (``methods``), or one an observer wraps
Step = Callable[["Request"], Any]


def access_log_enabled() -> bool:
    return log.isEnabledFor(logging.INFO)


def logged(step: Step) -> Step:
    """``step``, its requests logged with their outcome and duration."""

    def observed(req: Request) -> Any:
        req.started = _now()
        req.watch = _answered
        return step(req)

    return observed


def _answered(req: Request, outcome: Any) -> None:
    if outcome is None:
        text = "ok"
    elif outcome == "cancelled":
        text = "cancelled"
    else:
        text = _error(outcome)
    _line(req.method, req.params, text, _now() - req.started)


def refused(method: str, params: dict[str, Any], exc: BaseException, request: Request | None) -> None:
    """A request answered with an error before it ran (``request`` is None if it was not even made)."""
    started = getattr(request, "started", None) or _now()  # unset: refused before its step began
    _line(method, params, _error(exc), _now() - started)


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
