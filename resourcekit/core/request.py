"""One request in flight, and the batch it may belong to.

A ``Request`` knows where its answer goes (``reply``), in which era it is answered, and whether
it was cancelled; a cancelled request answers nothing.  Its answer is made once, in one place:
``respond`` encodes a result (in the worker that made it, for a sync handler's read), ``answer``
hands the encoded line on and takes the request out of flight, ``fail`` answers an exception.
Observers (the access log) hear of the outcome through ``watch``; they never change the path.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from orjson import OPT_APPEND_NEWLINE, dumps, loads

from .._runner import QUIET
from ..eras import Era, error_response
from ..errors import MCPError, ResourceNotFound, unencodable
from ..telemetry.spans import Traced

if TYPE_CHECKING:
    from ..declaration import Handler
    from ..extensions import OptIn
    from ..methods._base import RequestView
    from .views import Session

__all__ = ["Batch", "Request", "Send", "Watch"]

log = logging.getLogger("resourcekit")

#: where messages for a client go: a JSON-RPC message (a dict, or a list for a batch), or a
#: successful response already encoded as one JSON line (``bytes``)
Send = Callable[[Any], None]
#: an observer told of a request's outcome: None (answered), the exception, or "cancelled"
Watch = Callable[["Request", Any], None]


class Request:
    """One request in flight: where its answer goes and in which era it is answered."""

    __slots__ = (
        "cancelled", "conn", "era", "handler", "id", "kwargs", "log_level", "method", "modern", "on_cancel", "optin",
        "params", "principal", "reply", "reply_of", "started", "task", "threadsafe", "uri", "version", "watch",
    )
    # a request its step handed to a worker (``run``) carries what to call: ``handler`` with ``kwargs``
    # for ``uri``, its value made the reply by ``reply_of``; set by the step (``methods.reading.serve``)
    handler: Handler
    kwargs: dict[str, Any]
    uri: str
    reply_of: Callable[[RequestView, Handler, str, Any], bytes]

    def __init__(
        self,
        conn: Session,
        rid: Any,
        method: str,
        params: dict[str, Any],
        version: str | None,
        era: Era,
        log_level: str | None,
        optin: OptIn,
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
        self.optin = optin  # the extensions this request's client opted into
        self.reply = reply
        # the reply may be handed on from a worker thread (the session's outbox takes it from any)
        self.threadsafe = reply is conn.send and conn.send_threadsafe
        self.task: asyncio.Task[Any] | None = None
        self.cancelled = False
        self.principal = conn.principal  # who sent it (HTTP with auth), for resourcekit.scopes
        self.watch: Watch | None = None  # an observer's (the access log)
        self.started = 0.0
        self.on_cancel: Callable[[RequestView], None] | None = None  # the method's own cancellation (listen)

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.params.get("_meta")
        return meta if type(meta) is dict else {}

    @property
    def client_capabilities(self) -> dict[str, Any]:
        if self.modern:
            from ..revisions import META_CLIENT_CAPABILITIES

            caps = self.meta.get(META_CLIENT_CAPABILITIES)
            return caps if type(caps) is dict else {}
        return self.conn.client_capabilities

    # --- the answer ---------------------------------------------------------------------------

    def respond(self, result: dict[str, Any]) -> None:
        """Answer with ``result``, encoded here."""
        if self.cancelled:
            return
        data = self.encode(result)
        if self.watch is not None and result.get("isError") is True:  # a tool's own failure
            self.leave()
            self.watch(self, "tool error")
            self.watch = None
        self.answer(data)

    def encode(self, result: dict[str, Any]) -> bytes:
        """The response carrying ``result``, as one JSON line (in a worker for a sync handler's
        read); a result JSON cannot carry (a lone surrogate in a str) is still answered: -32603."""
        if self.modern:
            self.era.decorate(result, self.conn.server.server_info)
        try:
            return dumps({"jsonrpc": "2.0", "id": self.id, "result": result}, option=OPT_APPEND_NEWLINE)
        except TypeError as exc:
            log.error("the result of %s could not be encoded", self.describe(), exc_info=exc)
            return dumps(error_response(self.id, unencodable()), option=OPT_APPEND_NEWLINE)

    def answer(self, data: bytes) -> None:
        """The response, encoded (one JSON line): out of flight, then on its way.  On the loop,
        or in a worker when the reply takes it from any thread (``threadsafe``)."""
        if self.cancelled:
            return
        self.leave()
        if self.watch is not None:
            self.watch(self, None)
        self.reply(data)

    def leave(self) -> None:
        """Out of flight, before the reply: the client may reuse the id once it has it.  Safe in a
        worker: pop, for the loop may cancel it right after a look, and put back what the pop
        took if the id was reused by another request in between."""
        inflight = self.conn.inflight
        if inflight.get(self.id) is self:
            taken = inflight.pop(self.id, None)
            if taken is not self and taken is not None:
                inflight.setdefault(self.id, taken)

    def fail(self, exc: BaseException) -> None:
        """Answer ``exc``: an ``MCPError`` as its wire error, anything else as -32603 (logged with
        the method, the URI and the handler; the client sees none of it)."""
        if self.cancelled:
            return
        self.leave()
        if not isinstance(exc, MCPError):
            log.error("%s failed", self.describe(), exc_info=_from_user(exc))
        if type(self.reply) is Traced:
            self.reply.exception = exc
        watch = self.watch
        if watch is not None:
            watch(self, exc)
        try:
            message = error_response(self.id, exc, self.era)
            dumps(message)  # a message or data JSON cannot carry (a lone surrogate): still answered
        except TypeError as error:
            log.error("the error of %s could not be encoded", self.describe(), exc_info=error)
            message = error_response(self.id, unencodable())
        self.reply(message)

    def describe(self) -> str:
        """What the request is, for a log line: its method, URI and the handler that serves it."""
        uri = self.params.get("uri")
        if type(uri) is not str:
            return self.method
        match = self.conn.app.router.match(uri)
        if match is None:
            return f"{self.method} {uri[:200]}"
        fn = match.handler.fn
        name = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
        return f"{self.method} {uri[:200]} (handler {name})"

    def notify(self, message: dict[str, Any]) -> None:
        """A notification tied to this request (log messages), on its reply channel."""
        if not self.cancelled:
            self.reply(message)

    def complete(self, ok: bool, value: Any) -> None:
        """Callback for worker threads: ``value`` is the result dict, its encoded line, or the exception."""
        if not ok:
            self.fail(value)
        elif type(value) is bytes:
            self.answer(value)
        elif value is not None:
            self.respond(value)

    # --- a worker's job (``ThreadRunner.submit``): the handler its step matched -----------------

    def run(self) -> Any:
        """In a worker: call the handler and make the reply; hand it on from here when the reply takes
        it from any thread (``threadsafe``), else return it for ``done`` on the loop."""
        if self.cancelled:
            return QUIET  # cancelled while it waited for a worker: nobody wants it
        kwargs = self.kwargs
        handler = self.handler
        try:
            data = self.reply_of(self, handler, self.uri, handler.fn(**kwargs) if kwargs else handler.fn())
        except ResourceNotFound:
            self.conn.app.router.forget(self.uri)  # no cache slot for what is not there
            raise
        if self.threadsafe:
            self.answer(data)
            return QUIET
        return data

    done = complete

    def cancel(self) -> None:
        if self.cancelled:
            return
        self.cancelled = True
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.on_cancel is not None:
            self.on_cancel(self)
        watch = self.watch
        if watch is not None:
            watch(self, "cancelled")
        reply = self.reply
        if type(reply) is Traced:  # its span ends now
            reply.cancel()
            reply = reply.inner
        if type(reply) is Batch:
            reply.settle()  # the batch is answered without this member


def _from_user(exc: BaseException) -> BaseException:
    """``exc`` with its traceback starting at the first frame outside resourcekit (the user's)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_globals.get("__name__", "").startswith(
            "resourcekit."):
        tb = tb.tb_next
    return exc.with_traceback(tb) if tb is not None else exc


class Batch:
    """Collects the responses of one batch and sends them together once every member settled."""

    __slots__ = ("missing", "reply", "responses")

    def __init__(self, reply: Send) -> None:
        self.reply = reply
        self.responses: list[Any] = []
        self.missing = -1  # unknown until every item was handled

    def __call__(self, message: Any) -> None:
        if type(message) is bytes:  # a member's response, encoded: the batch's answer is one list
            self.responses.append(loads(message))
            self.settle()
        elif type(message) is dict and "id" in message:
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
