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
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from orjson import OPT_APPEND_NEWLINE, dumps, loads

from .._jobs import QUIET, Lane
from ..eras import Era, error_response
from ..errors import MCPError, ResourceNotFound, unencodable
from ..methods._base import PENDING
from ..telemetry.spans import Traced

if TYPE_CHECKING:
    from ..declaration import Handler
    from ..extensions import OptIn
    from ..methods._base import RequestView
    from .views import ProfileView, Session

__all__ = ["Batch", "Request", "Send", "Sink", "Watch", "awaited"]

log = logging.getLogger("resourcekit")
# bytes: a reply a worker hands to the session's sink this big is counted (its lane's ``grew``: the
# outbox writes such replies once they add up), so that what the reader owes is known in time
COUNTED_REPLY = 4096

#: where messages for a client go: a JSON-RPC message (a dict, or a list for a batch), or a
#: successful response already encoded as one JSON line (``bytes``)
Send = Callable[[Any], None]
#: where a worker hands the replies it made for a session (``Outbox.put``), from any thread
Sink = Callable[[bytes], None]
#: an observer told of a request's outcome: None (answered), the exception, or "cancelled"
Watch = Callable[["Request", Any], None]


class Request:
    """One request in flight: where its answer goes, and the profile it is answered in.

    Made by the engine alone (``Connection._receive_block``), one per request, its fields stored
    there: with no ``__init__`` of its own, making one is a C call (a Python ``__init__`` cost a
    small read a twentieth more)."""

    __slots__ = (
        "cancelled", "conn", "handler", "id", "kwargs", "lane", "method", "on_cancel", "params", "principal",
        "profile", "reply", "reply_of", "sink", "started", "task", "uri", "watch",
    )
    conn: Session
    id: Any
    method: str
    params: dict[str, Any]
    profile: ProfileView  # era, version, log level, opt-ins: shared, never changed
    reply: Send
    sink: Sink | None  # where a worker hands its reply on itself (the session's outbox); None: through the loop
    principal: Any  # who sent it (HTTP with auth), for resourcekit.scopes
    cancelled: bool
    watch: Watch | None  # an observer's (the access log)
    # a request its step handed to a worker (``run``) carries what to call: ``handler`` with ``kwargs``
    # for ``uri``, its value made the reply by ``reply_of``; set by the step (``methods.reading.serve``)
    handler: Handler
    kwargs: dict[str, Any]
    uri: str
    reply_of: Callable[[RequestView, Handler, str, Any], bytes]
    lane: Lane  # its session's (the runner's job: ``run``, ``done``)
    # set only by who needs them (a request is made per line: each store counts), read with getattr:
    started: float  # by an observer that times it (the access log)
    task: asyncio.Task[Any]  # an async step's (the engine)
    on_cancel: Callable[[RequestView], None] | None  # the method's own cancellation (listen)

    # --- the profile's ------------------------------------------------------------------------

    @property
    def era(self) -> Era:
        return self.profile.era

    @property
    def modern(self) -> bool:
        return self.profile.modern

    @property
    def version(self) -> str | None:
        return self.profile.version

    @property
    def log_level(self) -> str | None:
        return self.profile.log_level

    @property
    def optin(self) -> OptIn:
        return self.profile.optin

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
        """Answer with ``result``, encoded here (a tool's own failure is one for the observers)."""
        if self.cancelled:
            return
        data = self.encode(result)
        self.answer(data, "tool error" if self.watch is not None and result.get("isError") is True else None)

    def encode(self, result: dict[str, Any]) -> bytes:
        """The response carrying ``result``, as one JSON line (in a worker for a sync handler's
        read); a result JSON cannot carry (a lone surrogate in a str) is still answered: -32603."""
        profile = self.profile
        if profile.modern:
            profile.era.decorate(result, self.conn.server.server_info)
        try:
            return dumps({"jsonrpc": "2.0", "id": self.id, "result": result}, option=OPT_APPEND_NEWLINE)
        except TypeError as exc:
            log.error("the result of %s could not be encoded", self.describe(), exc_info=exc)
            return dumps(error_response(self.id, unencodable()), option=OPT_APPEND_NEWLINE)

    def answer(self, data: Any, outcome: Any = None, sink: Sink | None = None) -> None:
        """The response (one encoded JSON line, or an error message): out of flight, its observer
        told the ``outcome`` (None: answered), then on its way: to ``reply`` on the loop, or from
        the worker that made it to the session's ``sink``.

        Out of flight before the reply, for the client may reuse the id once it has it; safe in a
        worker: one pop (the loop may cancel it right after), and what the pop took put back if
        the id was reused by another request in between."""
        if self.cancelled:
            return
        inflight = self.conn.inflight
        taken = inflight.pop(self.id, None)
        if taken is not self and taken is not None:
            inflight.setdefault(self.id, taken)
        if self.watch is not None:
            self.watch(self, outcome)
        (self.reply if sink is None else sink)(data)

    def fail(self, exc: BaseException) -> None:
        """Answer ``exc``: an ``MCPError`` as its wire error, anything else as -32603 (logged with
        the method, the URI and the handler; the client sees none of it)."""
        if self.cancelled:
            return
        if not isinstance(exc, MCPError):
            log.error("%s failed", self.describe(), exc_info=_from_user(exc))
        if type(self.reply) is Traced:
            self.reply.exception = exc
        try:
            message = error_response(self.id, exc, self.profile.era)
            dumps(message)  # a message or data JSON cannot carry (a lone surrogate): still answered
        except TypeError as error:
            log.error("the error of %s could not be encoded", self.describe(), exc_info=error)
            message = error_response(self.id, unencodable())
        self.answer(message, exc)

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
        """In a worker: call the handler and make the reply; hand it on from here to the session's
        ``sink`` when it has one (written with the worker's others for the session, a big one at
        once), else return it for ``done`` on the loop."""
        if self.cancelled:
            return QUIET  # cancelled while it waited for a worker: nobody wants it
        kwargs = self.kwargs
        handler = self.handler
        try:
            data = self.reply_of(self, handler, self.uri, handler.fn(**kwargs) if kwargs else handler.fn())
        except ResourceNotFound:
            self.conn.app.router.forget(self.uri)  # no cache slot for what is not there
            raise
        sink = self.sink
        if sink is not None:
            self.answer(data, None, sink)
            if len(data) >= COUNTED_REPLY:
                grew = self.lane.grew
                if grew is not None:
                    grew(len(data))
            return QUIET
        return data

    done = complete

    def cancel(self) -> None:
        if self.cancelled:
            return
        self.cancelled = True
        task = getattr(self, "task", None)
        if task is not None and not task.done():
            task.cancel()
        on_cancel = getattr(self, "on_cancel", None)
        if on_cancel is not None:
            on_cancel(self)
        watch = self.watch
        if watch is not None:
            watch(self, "cancelled")
        reply = self.reply
        if type(reply) is Traced:  # its span ends now
            reply.cancel()
            reply = reply.inner
        if type(reply) is Batch:
            reply.settle()  # the batch is answered without this member


async def awaited(request: Request, outcome: Awaitable[Any]) -> None:
    """An async step's ``outcome``, in the task the engine made for it: the request's answer, or its
    failure (a cancellation nobody asked for, the handler awaiting something another client
    cancelled, or SystemExit or KeyboardInterrupt from a handler, is one: answered too)."""
    try:
        result = await outcome
    except BaseException as exc:
        if not request.cancelled:
            request.fail(exc)
        return
    if result is not PENDING:
        request.complete(True, result)


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
