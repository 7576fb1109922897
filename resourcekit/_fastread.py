"""``resources/read`` in a session, in as few steps as the answer allows.

The most frequent request of a stdio session: a handshake-era read, no ``_meta``, no
extension that changes the result, no access log or span, a handler without a
``Context``.  A transport that writes encoded replies hands its input here, a block of
lines at a time (``Connection.feed_lines``; ``Connection.feed`` one message): each line
is decoded, and a read checked for what the general path would check (an id, a URI within
the limit, an id not in flight, room for one more in flight, a match) and added to the
batch of this block, with what every read looks at taken from the connection once.  A
worker runs the batch (``_fastbatch``): it calls the handlers, hashes and encodes the
whole replies and writes them, all at once (``send_bytes`` may be called from any
thread), so the loop thread only decodes lines, looks URIs up and is not woken for
finished reads.  An ``async def`` handler's read is a task on the loop instead (``AsyncRead``:
no request record, dispatch or result dict of the general path; the replies of one loop
iteration in one write), unless a telemetry provider is configured (its own spans need the
general path's parent).  Cancellation, the in-flight cap and ids behave as on the general path;
anything else (and every failure) goes the general way (``Connection.receive``),
answered exactly as before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from . import telemetry
from ._fastbatch import BIG_KEY, ReadBatch
from ._shortread import READ, ShortRead, reply_line
from .eras import error_response
from .errors import LimitExceeded, ParseError
from .request import Request, Send

if TYPE_CHECKING:
    from .protocol import Connection

__all__ = ["read_lines", "write_out"]

log = logging.getLogger("resourcekit")
_now = time.perf_counter
_NO_ARGUMENTS: dict[str, Any] = {}  # a resource's handler takes none (never changed: only passed on)


class FastRead(ShortRead):
    """A read in flight that a worker answers with the encoded reply (see the module).

    Made without Request's ``__init__`` (``read_lines``): a read stores its connection, id, URI,
    handler, arguments and ``cancelled``; ``params`` is the read's URI alone (no other of
    Request's fields reaches a handler).
    """

    __slots__ = ()
    # made with no arguments, fields stored by ``read_lines``: object's __init__ (C), not Request's
    __init__ = object.__init__

    # Request's other fields, asked only when a read fails or is cancelled
    @property
    def reply(self) -> Send:  # type: ignore[override]
        return self.conn.send

    @property
    def params(self) -> dict[str, Any]:  # type: ignore[override]
        return {"uri": self.uri}

    def deliver(self, answer: Any) -> None:
        if self.conn.send_bytes is not None:
            self.conn.send_bytes(answer)


class _TimedRead(FastRead):
    """A fast read whose duration telemetry records."""

    __slots__ = ("started",)
    started: float


class AsyncRead(FastRead):
    """A fast read of an ``async def`` handler: a task on the loop (``run_async``), its reply
    encoded as a worker encodes a sync handler's and written with the others of its loop
    iteration in one write (``deliver``), after the messages sent through ``Connection.send``
    in that iteration (a notification sent after it may go out first, as a worker's may)."""

    __slots__ = ("task",)  # a slot of its own: ShortRead hides Request's under ``task = None``

    answer_of = reply_line

    def deliver(self, answer: Any) -> None:
        """The reply, written with the others of this loop iteration (one write, not one each;
        ``Connection.close`` writes what is left, so a session that ends now loses none)."""
        conn = self.conn
        out = conn.fast_out
        if out is None:
            out = conn.fast_out = []
            conn.server.loop.call_soon(write_out, conn)
        out.append(answer)


def write_out(conn: Connection) -> None:
    """On the loop, after the iteration whose async reads ended (or when the session ends):
    their replies in one write."""
    out, conn.fast_out = conn.fast_out, None
    if out and conn.send_bytes is not None:
        conn.send_bytes(out[0] if len(out) == 1 else b"".join(out))


def read_lines(conn: Connection, lines: Iterable[bytes | str]) -> None:
    """Decode and handle each line that is not blank; a read that may take this path joins the
    connection's batch, the others go the general way (``Connection.receive``).

    The connection's transport takes encoded replies (``send_bytes``).  One whose input comes
    in blocks calls this with the lines of a block, then ``end_of_input``; otherwise the
    batch is submitted on the next loop iteration.  What every read looks at is taken from
    the connection once per call.
    """
    loads, receive = orjson.loads, conn.receive
    batch = conn.fast_batch
    if batch is None and _fast_session(conn):
        # the connection's state, looked at when a batch starts: within one loop iteration only
        # a telemetry provider configured meanwhile could change it, and its spans begin a read later
        batch = conn.fast_batch = ReadBatch(conn, conn.send_bytes)  # type: ignore[arg-type]
        if not conn.input_ends_batches:  # else the transport submits it at the end of its block of input
            conn.server.loop.call_soon(batch.submit)
    if batch is None:
        for line in lines:
            if line and not line.isspace():
                try:
                    receive(loads(line))
                except orjson.JSONDecodeError as exc:
                    conn.send(error_response(None, ParseError(f"Parse error: {exc}")))
        return
    inflight, limits, router, items = conn.inflight, conn.limits, conn.app.router, batch.items
    create_task = conn.server.loop.create_task
    exact, resolve = router.exact, router.resolve
    max_inflight, max_uri_length, traced = limits.max_inflight, limits.max_uri_length, conn.traced
    for line in lines:
        if not line:
            continue
        try:
            msg = loads(line)
        except orjson.JSONDecodeError as exc:
            if not line.isspace():
                conn.send(error_response(None, ParseError(f"Parse error: {exc}")))
            continue
        # the checks of the general path: an id, a URI within the limit, an id not in flight,
        # room for one more in flight, a match of a handler without a Context
        handler = None
        kwargs = _NO_ARGUMENTS
        if type(msg) is dict and msg.get("method") == READ:
            params = msg.get("params")
            rid = msg.get("id")
            uri = params.get("uri") if type(params) is dict and "_meta" not in params else None
            if (
                type(uri) is str and uri and len(uri) <= max_uri_length and (type(rid) is int or type(rid) is str)
                and rid not in inflight and len(inflight) < max_inflight and msg.get("jsonrpc") == "2.0"
            ):
                handler = exact.get(uri)  # the most frequent case, inline
                if handler is None:
                    found = resolve(uri)
                    if found is not None:
                        handler, kwargs = found
        if handler is None or handler.sig.context_param is not None:
            receive(msg)
            continue
        dropped = 0
        is_async = handler.sig.is_async
        if traced and telemetry.ON:  # a span only if sampled (decided here, by the SDK's ratio rule)
            # a span is wanted, the sampler decides in the SDK, or an async handler's own spans need
            # the general path's parent (a non-recording one when dropped): the general path
            dropped = 0 if is_async else telemetry.dropped_root()
            if not dropped:
                receive(msg)
                continue
            timed = _TimedRead()
            timed.started = _now()
            req: FastRead = timed
        else:
            req = AsyncRead() if is_async else FastRead()
        req.conn = conn
        req.id = rid
        req.uri = uri  # type: ignore[assignment]
        req.handler = handler
        req.kwargs = kwargs
        req.cancelled = False
        if is_async:  # a task on the loop, not a worker: inflight first, as the general path
            inflight[rid] = req
            req.task = None  # (an eager task factory runs the handler's first step in create_task)
            req.task = create_task(req.run_async())
            continue
        memo = handler.memo
        if memo is not None and memo.get(BIG_KEY):  # a batch of its own: big ones hash in parallel
            single = ReadBatch(conn, batch.send_bytes)
            single.items.append(req)
            single.size = 1
            inflight[rid] = req  # before the job: its worker pops it when it answers
            try:
                single.queue(conn.server.runner)
            except LimitExceeded:  # too many jobs waiting: the general path says so
                del inflight[rid]
                if dropped:
                    telemetry.redraw(dropped)  # its span is decided by the same trace id there
                receive(msg)
                continue
        else:
            items.append(req)
            inflight[rid] = req


def _fast_session(conn: Connection) -> bool:
    """May the connection's reads take this path?  After initialize, a session whose transport
    takes encoded replies, no extension that changes reads, no access log, no span."""
    return not (conn.send_bytes is None or conn.protocol_version is None or conn.stateless or conn.optin.sep_2093
                or conn.principal is not None or conn.new_request is not Request)
