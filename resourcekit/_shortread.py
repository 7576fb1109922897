"""What the short paths' reads have in common: over stdio (``_fastread``) and over HTTP
(``transports.http._fastpost``), a session's plain read in flight.

Such a read is a ``Request`` whose method, era and other fields are the same for every read
of its kind (class attributes here, hiding ``Request``'s slots of the same name) or come from
its session when asked; a worker makes its whole answer, and ``finish`` hands it on, unless
it was cancelled meanwhile.  When telemetry times it (a sampled-out root request) its
duration, error code or cancellation is recorded as on the general path.
"""

from __future__ import annotations

import asyncio
import logging
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from orjson import OPT_APPEND_NEWLINE, dumps

from . import telemetry
from .contents import TEXT_MIME
from .eras import HANDSHAKE, error_response
from .errors import ResourceNotFound, unencodable
from .methods.reading import TAIL_TEXT, read_result, text_reply
from .request import Request

if TYPE_CHECKING:
    from .handler import Handler

__all__ = ["READ", "ShortRead", "reply_line"]

log = logging.getLogger("resourcekit")

READ = "resources/read"


class ShortRead(Request):
    """A read in flight on a short path: ``deliver`` is where its answer goes."""

    __slots__ = ("handler", "kwargs", "uri")
    handler: Handler
    kwargs: dict[str, Any]
    uri: str

    method = READ
    era = HANDSHAKE
    modern = False
    task: asyncio.Task[Any] | None = None  # (an async one's is its own slot: _fastread.AsyncRead)
    principal = None
    meta: dict[str, Any] = {}  # never changed: no Context sees it
    started = 0.0  # when telemetry times it: a subclass's slot then
    # the session's, read when asked (nothing on the short paths asks)
    version = property(attrgetter("conn.protocol_version"))
    log_level = property(attrgetter("conn.log_level"))
    optin = property(attrgetter("conn.optin"))

    def deliver(self, answer: Any) -> None:
        """The answer a worker made, to whoever waits for it (the subclass says who)."""
        raise NotImplementedError

    def answer_of(self, value: Any) -> Any:
        """An async handler's value as what ``deliver`` takes (the subclass says how)."""
        raise NotImplementedError

    async def run_async(self) -> None:
        """The read of an ``async def`` handler, as a task on the loop (in the subclass's slot
        ``task``, so that cancelling the read cancels it, as on the general path): the handler
        awaited, its value made the answer, and that handed on (``finish``)."""
        handler, kwargs = self.handler, self.kwargs
        try:
            answer = self.answer_of(await (handler.fn(**kwargs) if kwargs else handler.fn()))
        except asyncio.CancelledError:
            if self.cancelled:
                return
            raise
        except BaseException as exc:  # answered as the general path answers it (Request.fail)
            if isinstance(exc, ResourceNotFound):
                self.conn.app.router.forget(self.uri)  # no cache slot for what is not there
            self.finish(False, exc)
            return
        self.finish(True, answer)

    def finish(self, ok: bool, value: Any) -> None:
        """On the loop: the answer on, unless the read was cancelled meanwhile; a failure is
        answered as the general path answers it (``Request.fail``)."""
        if self.cancelled:
            return
        if ok:
            self.conn.inflight.pop(self.id, None)
            self.deliver(value)
            if self.started:
                telemetry.timed(self.conn, READ, self.started)
        else:
            self.fail(value)
            if self.started:
                telemetry.timed(self.conn, READ, self.started, error_response(None, value, HANDSHAKE)["error"]["code"])

    def cancel(self) -> None:
        super().cancel()
        if self.started:
            telemetry.timed(self.conn, READ, self.started, "cancelled")


def reply_line(req: ShortRead, value: Any, newline: bool = True) -> bytes:
    """A short read's whole reply to the handler's ``value``, as JSON (one line, or without its
    newline for an HTTP body): a short text's from its remembered tail (``text_reply``), else its
    result encoded.  A value that is no content raises, as on the general path; a result JSON
    cannot carry (a lone surrogate in a ``str``) is answered as ``Request.respond`` answers it
    there (-32603, logged)."""
    handler = req.handler
    if type(value) is str and len(value) <= TAIL_TEXT:
        try:
            line = text_reply(req.conn, req.id, req.uri, handler.mime_type or TEXT_MIME, value)
            return line if newline else line[:-1]
        except TypeError:  # JSON cannot carry the text: answered below
            pass
    result = read_result(req, handler, req.uri, value)
    option = OPT_APPEND_NEWLINE if newline else 0
    try:
        return dumps({"jsonrpc": "2.0", "id": req.id, "result": result}, option=option)
    except TypeError as exc:
        log.error("the result of %s could not be encoded", READ, exc_info=exc)
        return dumps(error_response(req.id, unencodable()), option=option)
