"""A session's ``resources/read`` over HTTP, in as few steps as the answer allows.

The most frequent POST of a handshake-era session: a read without ``_meta``, no extension that
changes the result, no ``auth`` hook, no Redis, no access log or span, a handler without a
``Context``, a client that takes JSON.  ``post`` hands such a body here once the session is
found; this checks what the general path would check (an id, a URI within the limit, an id not
in flight, room for one more in flight, a match) and adds the read to the batch of this loop
iteration.  One worker job runs the batch (the handlers still run off the loop): each read's
whole response body is encoded there (a short text's reply is encoded but for its id once per
URI and text, as over stdio: ``text_reply``), and the outcomes go back to the loop in one wake-up,
which only hands each POST its response.  A read that blocks holds up no other: the loop queues a
batch again when none of its reads was taken for ``STALL`` seconds.  A cancelled read (``notifications/cancelled``, the
end of its session) wakes its POST with what ``exchange`` would be woken with, so cancellation,
the in-flight cap and ids behave as there; anything else (and every failure of these checks)
goes the general way, answered exactly as before, and a handler's exception is answered as the
general path answers it.  An ``async def`` handler's read is a task on the loop instead of a
place in a batch (``HttpAsyncRead``), unless a telemetry provider is configured (its own spans
need the general path's parent).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from ... import telemetry
from ..._runner import QUIET, STALL, BatchJob
from ..._shortread import ShortRead, reply_line
from ...errors import LimitExceeded, ResourceNotFound
from ...request import Request
from ._exchange import unanswered
from ._headers import JSON_TYPE, LENGTHS, Send, content_length, encode, status_of
from ._sse import CANCELLED, ENDED

if TYPE_CHECKING:
    from ..._runner import ThreadRunner
    from ...protocol import Connection

__all__ = ["HttpAsyncRead", "HttpRead", "Reads", "answered", "read_http"]

_now = time.perf_counter
_bare = object.__new__
Response = tuple[dict[str, Any], dict[str, Any]]  # http.response.start, http.response.body


class HttpRead(ShortRead):
    """A read in flight whose worker makes the whole response (see the module): ``deliver``
    (and ``reply``, for a failure) wake the POST waiting for it.

    Cancelled (``notifications/cancelled``, or the session's end), it wakes its POST at once
    with what ``exchange`` would have been woken with.
    """

    __slots__ = ("started", "waiter")
    started: float
    waiter: asyncio.Future[Any]
    # made by ``read_http`` on a bare instance, its fields stored there (no __init__ call per read)

    def deliver(self, answer: Any) -> None:
        """Where the answer goes (``Request.fail`` calls ``reply``): to the POST waiting for it."""
        waiter = self.waiter
        if not waiter.done():
            waiter.set_result(answer)

    reply = deliver

    def run(self) -> Response | None:
        """In a worker: the handler's value, as the whole response."""
        if self.cancelled:
            return None  # cancelled while it waited for a worker: nobody wants it
        handler, kwargs = self.handler, self.kwargs
        try:
            value = handler.fn(**kwargs) if kwargs else handler.fn()
        except ResourceNotFound:
            self.conn.app.router.forget(self.uri)  # no cache slot for what is not there
            raise
        return self.response(value)

    def response(self, value: Any) -> Response:
        """The handler's value as the two ASGI messages of the response."""
        body = reply_line(self, value, newline=False)
        # the two ASGI messages of the response, made here: the loop only sends them
        size = len(body)
        return ({"type": "http.response.start", "status": 200,
                 "headers": [JSON_TYPE, LENGTHS.get(size) or content_length(size)]},
                {"type": "http.response.body", "body": body})

    def cancel(self) -> None:
        """``notifications/cancelled`` (the POST gets no answer), or the end of the session (404)."""
        super().cancel()
        self.reply(ENDED if self.conn.closed else CANCELLED)


class HttpAsyncRead(HttpRead):
    """A read of an ``async def`` handler: a task on the loop (``run_async``) makes the response."""

    __slots__ = ("task",)  # a slot of its own: ShortRead hides Request's under ``task = None``

    answer_of = HttpRead.response


class Reads:
    """The plain reads of one loop iteration, handed to the workers as one job (``_Batch``).

    A read that blocks must not hold up the others of its batch: every ``STALL`` seconds while
    batches have reads no worker took, one that took none since the last look is queued again,
    so that another worker (started if none is idle) goes on with it.
    """

    __slots__ = ("batch", "checking", "loop", "out")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop  # the server's: every read comes on it
        self.batch: _Batch | None = None  # this iteration's, until submitted
        self.out: list[_Batch] = []  # submitted with several reads: watched until all are taken
        self.checking = False

    def add(self, req: HttpRead) -> None:
        batch = self.batch
        if batch is None:
            batch = self.open(req.conn)
        batch.items.append(req)

    def open(self, conn: Connection) -> _Batch:
        """This iteration's batch, new: submitted once the loop is done with the iteration."""
        batch = self.batch = _Batch(conn.server.runner)
        self.loop.call_soon(self.submit, self.loop)
        return batch

    def submit(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the loop, after the iteration that made the batch: hand it to the workers."""
        batch = self.batch
        if batch is None:
            return
        self.batch = None
        size = len(batch.items)  # before a worker takes any
        try:
            batch.queue(batch.runner)
        except LimitExceeded as exc:  # too many jobs waiting: each read says so
            for req in batch.items:
                req.finish(False, exc)
            batch.items.clear()
            return
        if size > 1:
            self.out.append(batch)
            if not self.checking:
                self.checking = True
                loop.call_later(STALL, self.check, loop)

    def check(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the loop, every ``STALL`` seconds while batches have reads no worker took."""
        out = []
        for batch in self.out:
            # reads left that someone waits for (once the server closed, every one was cancelled)
            if any(not req.cancelled for req in list(batch.items)):
                if batch.taken == batch.seen:  # none taken meanwhile: stuck behind a slow read
                    batch.requeue(batch.runner)
                batch.seen = batch.taken
                out.append(batch)
        self.out = out
        if out:
            loop.call_later(STALL, self.check, loop)
        else:
            self.checking = False


class _Batch(BatchJob):
    """Reads for the workers, as one job that may run in several workers at once; their
    outcomes go back to the loop together (``flush``), as they come."""

    __slots__ = ("flushing", "items", "results", "runner", "seen", "taken")

    def __init__(self, runner: ThreadRunner) -> None:
        BatchJob.__init__(self)  # not super(): a third of the cost, per batch
        self.runner = runner
        self.items: deque[HttpRead] = deque()  # reads no worker took yet
        self.results: deque[tuple[HttpRead, bool, Any]] = deque()  # outcomes the loop has not seen
        self.flushing = False  # a flush is on its way to the loop
        self.taken = 0  # by any worker: a hint of progress
        self.seen = -1  # ``taken`` when the loop last looked

    def run(self) -> Any:
        """In a worker: each read in turn, its outcome handed to the loop as it ends (one wake-up
        for the outcomes that come while the loop is busy)."""
        items, results = self.items, self.results
        self.runs.append(None)  # started (BatchJob)
        while True:
            try:
                req = items.popleft()
            except IndexError:  # none left (another worker may have taken the last one)
                return QUIET
            self.taken += 1
            try:
                results.append((req, True, req.run()))
            except BaseException as exc:  # the loop answers it (Request.fail)
                results.append((req, False, exc))
            if not self.flushing:
                self.flushing = True
                self.runner.deliver(self.flush, True, None)

    def flush(self, _ok: bool, _value: Any) -> None:
        """On the loop: answer the reads that ended (``HttpRead.done``, inlined for a body)."""
        self.flushing = False  # before taking them: an outcome added from now on brings another flush
        results = self.results
        while results:
            req, ok, value = results.popleft()
            if ok and not req.started:
                if not req.cancelled:
                    req.conn.inflight.pop(req.id, None)
                    waiter = req.waiter
                    if not waiter.done():
                        waiter.set_result(value)
            else:
                req.finish(ok, value)


def read_http(conn: Connection, msg: dict[str, Any], params: dict[str, Any], reads: Reads) -> HttpRead | None:
    """Start the read ``msg`` asks for (its ``params``: a dict without ``_meta``); None: nothing
    done, the general path takes it."""
    rid = msg.get("id")
    uri = params.get("uri")
    inflight = conn.inflight
    limits = conn.limits
    if (
        (type(rid) is not int and type(rid) is not str)
        or type(uri) is not str or not uri or len(uri) > limits.max_uri_length
        or rid in inflight or len(inflight) >= limits.max_inflight or msg.get("jsonrpc") != "2.0"
        or conn.protocol_version is None or conn.optin.sep_2093 or conn.new_request is not Request
    ):
        return None
    found = conn.app.router.resolve(uri)
    if found is None:
        return None
    handler, kwargs = found
    sig = handler.sig
    if sig.context_param is not None:
        return None
    dropped = 0
    if conn.traced and telemetry.ON:  # a span only if sampled (decided here, by the SDK's ratio rule)
        if sig.is_async:  # its own spans need the general path's parent (non-recording when dropped)
            return None
        dropped = telemetry.dropped_root()
        if not dropped:  # a span is wanted, or the sampler decides in the SDK: the general path
            return None
    loop = reads.loop
    req = _bare(HttpAsyncRead if sig.is_async else HttpRead)
    req.conn = conn
    req.id = rid
    req.params = params
    req.cancelled = False
    req.uri = uri
    req.handler = handler
    req.kwargs = kwargs
    req.waiter = loop.create_future()
    req.started = _now() if dropped else 0.0
    if sig.is_async:  # a task on the loop, not a worker
        inflight[rid] = req
        req.task = None  # (an eager task factory runs the handler's first step in create_task)
        req.task = loop.create_task(req.run_async())
        return req
    batch = reads.batch  # ``reads.add``, inlined
    if batch is None:
        batch = reads.open(conn)
    batch.items.append(req)
    inflight[rid] = req
    return req


async def answered(req: HttpRead, answer: Any, send: Send, sse_ok: bool) -> None:
    """Send what a read got instead of its body (``post`` sends that): nothing (cancelled), a
    404 (its session ended), or an error, as ``exchange`` would."""
    if answer is ENDED or answer is CANCELLED:
        await unanswered(send, answer, sse_ok)
        return
    body = encode(answer)  # an error JSON cannot carry (a handler's message): its -32603, as in ``exchange``
    await send({"type": "http.response.start", "status": status_of(answer, req.conn),
                "headers": [JSON_TYPE, (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})
