"""The request context a handler can ask for by annotating a parameter ``Context``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["AppView", "Context"]

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LEVEL_RANK = {name: rank for rank, name in enumerate(LEVELS)}


class AppView(Protocol):
    """What a handler may ask of its App through ``ctx.app`` (the ``resourcekit.App`` that serves it):
    who it is, and the change notifications."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...

    @property
    def state(self) -> Any: ...

    def notify_changed(self, uri: str) -> None: ...

    def notify_list_changed(self) -> None: ...


class Context:
    """What a handler may want to know about the request that called it.

    ``uri`` is the URI being read, ``params`` the raw (string) template values,
    ``protocol_version`` the revision the client speaks, ``meta`` the request's
    ``_meta``, ``principal`` who asked (a ``resourcekit.Principal`` over HTTP with
    OAuth: ``subject``, ``client_id``, ``scopes``, ``claims``; None when nobody
    authenticated, as over stdio), ``state`` what the app's lifespan yielded (None without
    one; see ``App.lifespan``).  ``log()`` sends a ``notifications/message`` to the client when it
    asked for messages at that level.

    A handler declares it by annotation, ``ctx: Context`` or ``ctx: Context | None = None``; resourcekit
    passes one on every read either way.  With the second, a test can call the function directly,
    ``note(3)``, and the handler sees ``ctx is None`` (the decorators return the function unchanged).
    """

    __slots__ = ("_emit", "_log_level", "app", "meta", "params", "principal", "protocol_version",
                 "request_id", "uri")

    def __init__(
        self,
        app: AppView,
        uri: str,
        *,
        params: Mapping[str, Any] | None = None,
        request_id: Any = None,
        protocol_version: str | None = None,
        meta: Mapping[str, Any] | None = None,
        log_level: str | None = None,
        emit: Any = None,
        principal: Any = None,
    ) -> None:
        self.app = app
        self.uri = uri
        self.params = dict(params or {})
        self.request_id = request_id
        self.protocol_version = protocol_version
        self.meta = dict(meta or {})
        self._log_level = log_level
        self._emit = emit
        self.principal = principal

    @property
    def state(self) -> Any:
        """What the app's lifespan yielded (a database pool, a client ...); None without a lifespan."""
        return self.app.state

    def log(self, level: str, data: Any, *, logger: str | None = None) -> bool:
        """Send a log message to the client; True if it was sent.

        Safe to call from sync handlers running in worker threads.
        """
        if level not in LEVEL_RANK:
            raise ValueError(f"unknown log level {level!r}; use one of {LEVELS}")
        if self._emit is None or self._log_level is None:
            return False
        if LEVEL_RANK[level] < LEVEL_RANK[self._log_level]:
            return False
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._emit({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
        return True

    def __repr__(self) -> str:
        return f"Context(uri={self.uri!r}, protocol_version={self.protocol_version!r})"
