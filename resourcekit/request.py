"""One request in flight, and the batch it may belong to.

A ``Request`` knows where its answer goes (``reply``), in which era it is
answered, and whether it was cancelled; a cancelled request answers nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .eras import Era, error_response
from .errors import MCPError, unencodable
from .methods import ON_CANCEL
from .optin import OptIn
from .telemetry import Traced
from .versions import META_CLIENT_CAPABILITIES

if TYPE_CHECKING:
    from .protocol import Connection

__all__ = ["Batch", "Request", "Send"]

log = logging.getLogger("resourcekit")

Send = Callable[[Any], None]


class Request:
    """One request in flight: where its answer goes and in which era it is answered."""

    __slots__ = (
        "cancelled", "conn", "era", "id", "log_level", "meta", "method", "modern", "optin", "params",
        "principal", "reply", "task", "version",
    )

    def __init__(
        self,
        conn: Connection,
        rid: Any,
        method: str,
        params: dict[str, Any],
        version: str | None,
        era: Era,
        log_level: str | None,
        reply: Send,
    ) -> None:
        self.conn = conn
        self.id = rid
        self.method = method
        self.params = params
        self.version = version
        self.era = era
        self.modern = era.stateless
        self.log_level = log_level
        self.reply = reply
        self.task: asyncio.Task[Any] | None = None
        self.cancelled = False
        self.principal = conn.principal  # who sent it (HTTP with auth), for resourcekit.scopes
        meta = params.get("_meta")
        self.meta: dict[str, Any] = meta if type(meta) is dict else {}
        # the extensions this request's client opted into: the session's, or its own _meta's
        self.optin = OptIn.of(self.client_capabilities) if era.stateless else conn.optin

    @property
    def client_capabilities(self) -> dict[str, Any]:
        if self.modern:
            caps = self.meta.get(META_CLIENT_CAPABILITIES)
            return caps if type(caps) is dict else {}
        return self.conn.client_capabilities

    def respond(self, result: dict[str, Any]) -> None:
        if self.cancelled:
            return
        self.conn.inflight.pop(self.id, None)
        if self.modern:
            self.era.decorate(result, self.conn.server.server_info)
        try:
            self.reply({"jsonrpc": "2.0", "id": self.id, "result": result})
        except TypeError as exc:  # a result JSON cannot carry (a lone surrogate in a str): still answered
            log.error("the result of %s could not be encoded", self.method, exc_info=exc)
            self.reply(error_response(self.id, unencodable()))

    def fail(self, exc: BaseException) -> None:
        if self.cancelled:
            return
        self.conn.inflight.pop(self.id, None)
        if not isinstance(exc, MCPError):
            log.error("handler for %s failed", self.method, exc_info=exc)
        if type(self.reply) is Traced:
            self.reply.exception = exc
        try:
            self.reply(error_response(self.id, exc, self.era))
        except TypeError as error:  # a message or data JSON cannot carry (a lone surrogate): still answered
            log.error("the error of %s could not be encoded", self.method, exc_info=error)
            self.reply(error_response(self.id, unencodable()))

    def notify(self, message: dict[str, Any]) -> None:
        """A notification tied to this request (log messages), on its reply channel."""
        if not self.cancelled:
            self.reply(message)

    def complete(self, ok: bool, value: Any) -> None:
        """Callback for worker threads: ``value`` is the result dict or the exception."""
        if ok:
            self.respond(value)
        else:
            self.fail(value)

    def cancel(self) -> None:
        self.cancelled = True
        if self.task is not None and not self.task.done():
            self.task.cancel()
        on_cancel = ON_CANCEL.get(self.method)
        if on_cancel is not None:
            on_cancel(self)
        reply = self.reply
        if type(reply) is Traced:  # its span ends now
            reply.cancel()
            reply = reply.inner
        if type(reply) is Batch:
            reply.settle()  # the batch is answered without this member


class Batch:
    """Collects the responses of one batch and sends them together once every member settled."""

    __slots__ = ("missing", "reply", "responses")

    def __init__(self, reply: Send) -> None:
        self.reply = reply
        self.responses: list[Any] = []
        self.missing = -1  # unknown until every item was handled

    def __call__(self, message: Any) -> None:
        if type(message) is dict and "id" in message:
            self.responses.append(message)
            self.settle()
        else:
            self.reply(message)  # request-scoped notifications go out as they come

    def expect(self, inflight: int) -> None:
        """Every item was handled; ``inflight`` of them will answer later."""
        self.missing = inflight
        self._flush()

    def settle(self) -> None:
        if self.missing > 0:
            self.missing -= 1
            self._flush()

    def _flush(self) -> None:
        if self.missing == 0:
            self.missing = -2  # sent
            if self.responses:
                self.reply(self.responses)
