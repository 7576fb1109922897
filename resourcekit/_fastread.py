"""``resources/read`` of a sync handler in a session, in as few steps as the answer allows.

The most frequent request of a stdio session: a handshake-era read, no ``_meta``, no
extension that changes the result, no access log or span, a sync handler without a
``Context``.  ``Connection.feed`` hands such a message here before anything else; this
checks what the general path would check (an id, a URI within the limit, an id not
in flight, room for one more in flight, a match) and adds the read to the batch of this
loop iteration.  A worker runs the batch: it calls the handlers, hashes and encodes the
whole replies and writes them, all at once (``send_bytes`` may be called from any
thread), so the loop thread only decodes lines, looks URIs up and is not woken for
finished reads.  Cancellation, the in-flight cap and ids behave as on the general path;
anything else (and every failure) goes the general way, answered exactly as before.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import telemetry
from ._runner import QUIET, STALL
from .eras import HANDSHAKE, error_response
from .errors import LimitExceeded, ResourceNotFound
from .methods.reading import read_reply
from .request import Request

if TYPE_CHECKING:
    from .handler import Handler
    from .protocol import Connection

__all__ = ["read_fast"]

log = logging.getLogger("resourcekit")

SendBytes = Callable[[bytes], None]
_READ = "resources/read"
# a handler whose replies are this big (bytes) gets a job per read, not a place in a batch:
# the hashing of several runs in parallel, outside the GIL
_BIG = 1 << 16
_BIG_KEY = "big_reads"
_now = time.perf_counter
_NO_ARGUMENTS: dict[str, Any] = {}  # a resource's handler takes none (never changed: only passed on)


class FastRead(Request):
    """A read in flight that the worker answers with the encoded reply (see the module)."""

    __slots__ = ("handler", "kwargs", "send_bytes", "started", "uri")

    # the same for every fast read, so class attributes rather than slots set per read (these
    # hide Request's slots of the same name, and are never set on a read)
    method = _READ
    era = HANDSHAKE
    modern = False
    task = None
    principal = None
    meta: dict[str, Any] = {}  # never changed: no Context sees it

    def __init__(self, conn: Connection, rid: Any, params: dict[str, Any], uri: str, handler: Handler,
                 kwargs: dict[str, Any], send_bytes: SendBytes) -> None:
        # Request.__init__ for this case (no _meta, the session's era), without its branches
        self.conn = conn
        self.id = rid
        self.params = params
        self.version = conn.protocol_version
        self.log_level = conn.log_level
        self.reply = conn.send
        self.cancelled = False
        self.optin = conn.optin
        self.uri = uri
        self.handler = handler
        self.kwargs = kwargs
        self.send_bytes = send_bytes
        self.started = 0.0  # when telemetry is on (a sampled-out request: its duration only)

    def run(self) -> bytes | None:
        """In a worker: the handler's value, as the whole reply."""
        if self.cancelled:
            return None  # cancelled while it waited for a worker: nobody wants it
        try:
            value = self.handler.fn(**self.kwargs)
        except ResourceNotFound:
            self.conn.app.router.forget(self.uri)  # no cache slot for what is not there
            raise
        data = read_reply(self, self.handler, self.uri, value)
        if len(data) >= _BIG and not self.handler.remembered(_BIG_KEY):
            self.handler.remember(_BIG_KEY, True)
        return data

    def finish(self, ok: bool, value: Any) -> None:
        """On the loop: write the reply, unless the read was cancelled meanwhile."""
        if self.cancelled:
            return
        if ok:
            self.conn.inflight.pop(self.id, None)
            self.send_bytes(value)
            if self.started:
                telemetry.timed(self.conn, _READ, self.started)
        else:
            self.fail(value)
            if self.started:
                telemetry.timed(self.conn, _READ, self.started, error_response(None, value, HANDSHAKE)["error"]["code"])

    def cancel(self) -> None:
        super().cancel()
        if self.started:
            telemetry.timed(self.conn, _READ, self.started, "cancelled")


class _Batch:
    """Fast reads for the workers, as one job: those of one loop iteration (one block of input),
    or one read of a handler whose replies are big.

    A worker runs them in order, then writes all their replies at once, itself: the loop
    is not woken for them (only a failure goes back to it, to be answered as on the general
    path).  A read that blocks must not hold up the others: every ``STALL`` seconds until
    all are answered the loop writes the replies made so far, and while reads are left
    and none was taken meanwhile, queues the batch again, so that another worker (started
    if none is idle) goes on with it.
    """

    __slots__ = ("answered", "conn", "items", "lock", "replies", "send_bytes", "size", "taken")

    def __init__(self, conn: Connection, send_bytes: SendBytes) -> None:
        self.conn = conn
        self.send_bytes = send_bytes
        self.items: deque[FastRead] = deque()  # reads no worker took yet
        self.replies: deque[tuple[FastRead, bool, Any]] = deque()  # reads done, not yet answered
        self.lock = threading.Lock()  # answering: in the worker, or in the loop's check
        self.size = 0
        self.answered = 0
        self.taken = 0  # by any worker: a hint of progress

    def submit(self) -> None:
        """On the loop, once the block of input was read: hand the batch to the workers."""
        conn = self.conn
        if conn.fast_batch is not self:
            return  # submitted already
        conn.fast_batch = None  # the next read starts a new one
        if conn.closed:
            return
        self.size = len(self.items)
        if not self.size:  # the reads of this iteration all went the general way
            return
        try:
            conn.server.runner.submit(self.run, _failed)
        except LimitExceeded as exc:  # too many jobs waiting: each read says so
            for req in self.items:
                req.finish(False, exc)
            self.items.clear()
            return
        if self.size > 1:
            conn.server.loop.call_later(STALL, self.check, 0)

    def run(self) -> Any:
        """In a worker (maybe in several at once): make the replies, then write them."""
        items, replies = self.items, self.replies
        while items:
            try:
                req = items.popleft()
            except IndexError:  # another worker took the last one
                break
            self.taken += 1
            try:
                replies.append((req, True, req.run()))
            except BaseException as exc:  # the loop answers it (Request.fail)
                replies.append((req, False, exc))
        self.answer()
        return QUIET

    def answer(self) -> None:
        """Write the replies made so far (a cancelled read's is dropped); from any thread."""
        lines = []
        timed: list[FastRead] = []
        with self.lock:
            replies, inflight = self.replies, self.conn.inflight
            while replies:
                req, ok, value = replies.popleft()
                self.answered += 1
                if req.cancelled:
                    continue
                if ok:
                    inflight.pop(req.id, None)  # before the reply: the client may reuse the id then
                    lines.append(value)
                    if req.started:
                        timed.append(req)
                else:
                    self.conn.server.runner.deliver(req.finish, False, value)
            if lines:
                self.send_bytes(lines[0] if len(lines) == 1 else b"".join(lines))
        for req in timed:
            telemetry.timed(req.conn, _READ, req.started)

    def check(self, taken: int) -> None:
        """On the loop, every ``STALL`` seconds until every read is answered."""
        self.answer()
        if self.answered >= self.size or self.conn.closed:
            return
        if self.items and self.taken == taken:  # none taken meanwhile: stuck behind a slow read, or queued
            with contextlib.suppress(LimitExceeded):  # too many jobs waiting: look again later
                self.conn.server.runner.submit(self.run, _failed)
        self.conn.server.loop.call_later(STALL, self.check, self.taken)


def _failed(ok: bool, value: Any) -> None:
    """A batch job's own outcome, were it ever delivered: it answers its reads itself."""
    if not ok:
        log.error("a batch of reads failed", exc_info=value)


def read_fast(conn: Connection, msg: dict[str, Any], send_bytes: SendBytes) -> bool:
    """Start the read ``msg`` asks for, answered through ``send_bytes``; False: nothing done,
    the general path takes it."""
    params = msg.get("params")
    rid = msg.get("id")
    if type(params) is not dict or "_meta" in params or (type(rid) is not int and type(rid) is not str):
        return False
    uri = params.get("uri")
    inflight = conn.inflight
    if (
        type(uri) is not str or not uri or len(uri) > conn.limits.max_uri_length
        or rid in inflight or len(inflight) >= conn.limits.max_inflight or msg.get("jsonrpc") != "2.0"
    ):
        return False
    batch = conn.fast_batch
    if batch is None:
        # the connection, looked at when a batch starts (within one loop iteration only a
        # telemetry provider configured meanwhile could change it, and its spans begin a read
        # later): after initialize, no extension that changes reads, no access log, no span
        if (
            conn.protocol_version is None or conn.optin.sep_2093 or conn.principal is not None
            or conn.new_request is not Request
        ):
            return False
        batch = conn.fast_batch = _Batch(conn, send_bytes)
        if not conn.input_ends_batches:  # else the transport submits it at the end of its block of input
            conn.server.loop.call_soon(batch.submit)
    router = conn.app.router
    handler = router.exact.get(uri)
    if handler is not None:
        kwargs = _NO_ARGUMENTS
    else:
        match = router.match(uri)
        if match is None:
            return False
        handler, kwargs = match.handler, match.kwargs
    sig = handler.sig
    if sig.is_async or sig.context_param is not None:
        return False
    dropped = 0
    if conn.traced and telemetry.ON:  # a span only if sampled (decided here, by the SDK's ratio rule)
        dropped = telemetry.dropped_root()
        if not dropped:  # a span is wanted, or the sampler decides in the SDK: the general path
            return False
    req = FastRead(conn, rid, params, uri, handler, kwargs, send_bytes)
    if dropped:
        req.started = _now()
    if handler.memo is not None and handler.memo.get(_BIG_KEY):  # a batch of its own: big ones hash in parallel
        single = _Batch(conn, send_bytes)
        single.items.append(req)
        single.size = 1
        try:
            conn.server.runner.submit(single.run, _failed)
        except LimitExceeded:  # too many jobs waiting: the general path says so
            if dropped:
                telemetry.redraw(dropped)  # its span is decided by the same trace id there
            return False
    else:
        batch.items.append(req)
    inflight[rid] = req
    return True
