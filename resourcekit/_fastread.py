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
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import orjson
from orjson import dumps

from . import telemetry
from ._runner import QUIET, STALL
from .contents import TEXT_MIME
from .eras import HANDSHAKE, error_response
from .errors import LimitExceeded, ParseError, ResourceNotFound
from .methods.reading import HEAD, TAIL_TEXT, TAILS, read_reply, text_tail
from .optin import OptIn
from .request import Request, Send

if TYPE_CHECKING:
    from .handler import Handler
    from .protocol import Connection

__all__ = ["read_lines"]

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
    """A read in flight that a worker answers with the encoded reply (see the module).

    Made without Request's ``__init__`` (``_start``): a read stores its connection, id, URI, handler,
    arguments and ``cancelled``; what is the same for every fast read of a session is a class
    attribute or comes from the connection (these hide Request's slots of the same name).
    """

    __slots__ = ("handler", "kwargs", "uri")
    handler: Handler
    kwargs: dict[str, Any]
    uri: str

    method = _READ
    era = HANDSHAKE
    modern = False
    task = None
    principal = None
    meta: dict[str, Any] = {}  # never changed: no Context sees it
    started = 0.0  # when telemetry times it (a sampled-out request: its duration only): _TimedRead
    # made with no arguments, fields stored by ``_start``: object's __init__ (C) rather than Request's
    __init__ = object.__init__

    # Request's other fields, asked only when a read fails or is cancelled
    @property
    def reply(self) -> Send:  # type: ignore[override]
        return self.conn.send

    @property
    def params(self) -> dict[str, Any]:  # type: ignore[override]
        return {"uri": self.uri}

    @property
    def version(self) -> str | None:  # type: ignore[override]
        return self.conn.protocol_version

    @property
    def log_level(self) -> str | None:  # type: ignore[override]
        return self.conn.log_level

    @property
    def optin(self) -> OptIn:  # type: ignore[override]
        return self.conn.optin

    def finish(self, ok: bool, value: Any) -> None:
        """On the loop: write the reply, unless the read was cancelled meanwhile."""
        if self.cancelled:
            return
        if ok:
            self.conn.inflight.pop(self.id, None)
            if self.conn.send_bytes is not None:
                self.conn.send_bytes(value)
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


class _TimedRead(FastRead):
    """A fast read whose duration telemetry records."""

    __slots__ = ("started",)
    started: float


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

    __slots__ = ("answered", "conn", "items", "lock", "replies", "send_bytes", "size")

    def __init__(self, conn: Connection, send_bytes: SendBytes) -> None:
        self.conn = conn
        self.send_bytes = send_bytes
        self.items: deque[FastRead] = deque()  # reads no worker took yet
        # reads done, not yet answered, with the reply (bytes), the exception, or None (cancelled)
        self.replies: deque[tuple[FastRead, Any]] = deque()
        self.lock = threading.Lock()  # answering: in the worker, or in the loop's check
        self.size = 0
        self.answered = 0

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
            watch = conn.fast_watch
            if watch is None:
                watch = conn.fast_watch = _Watch(conn)
            watch.add(self)

    def run(self) -> Any:
        """In a worker (maybe in several at once): make the replies, then write them."""
        items, replies, conn = self.items, self.replies, self.conn
        # read_reply of a short text, its most frequent case, at once (text_reply, inlined)
        tails, seen, seen_max, tracker, exact = TAILS, conn.seen, conn.seen_max, conn.app.tracker, conn.app.router.exact
        observe, versions, instance_versions = tracker.observe, tracker.versions, tracker.instance_versions
        while items:
            try:
                req = items.popleft()
            except IndexError:  # another worker took the last one
                break
            if req.cancelled:  # cancelled while it waited for a worker: nobody wants it
                replies.append((req, None))
                continue
            handler = req.handler
            try:
                kwargs = req.kwargs
                value = handler.fn(**kwargs) if kwargs else handler.fn()
                if type(value) is str and len(value) <= TAIL_TEXT:
                    uri, mime = req.uri, handler.mime_type or TEXT_MIME
                    known = tails.get(uri)
                    if known is not None and known[0] == value and known[1] == mime:
                        tail, version = known[2], known[3]
                    else:
                        tail, version = text_tail(uri, mime, value)
                    # recorded as read_result records it, unless it is what is there already
                    if (versions.get(uri) if uri in exact else instance_versions.get(uri)) is not version:
                        observe(uri, version)
                    if seen.get(uri) is not version:  # a session's: never stateless
                        if len(seen) >= seen_max and uri not in seen:
                            seen.clear()
                        seen[uri] = version
                    data = HEAD + dumps(req.id) + tail
                else:
                    data = read_reply(req, handler, req.uri, value)
                    if len(data) >= _BIG and not handler.remembered(_BIG_KEY):
                        handler.remember(_BIG_KEY, True)
            except BaseException as exc:  # the loop answers it (Request.fail)
                if isinstance(exc, ResourceNotFound):
                    conn.app.router.forget(req.uri)  # no cache slot for what is not there
                replies.append((req, exc))
            else:
                replies.append((req, data))
        self.answer()
        return QUIET

    def answer(self) -> None:
        """Write the replies made so far (a cancelled read's is dropped); from any thread."""
        lines = []
        timed: list[FastRead] = []
        with self.lock:
            replies, inflight = self.replies, self.conn.inflight
            done = 0
            while replies:
                req, value = replies.popleft()
                done += 1
                if req.cancelled:
                    continue
                if type(value) is bytes:
                    inflight.pop(req.id, None)  # before the reply: the client may reuse the id then
                    lines.append(value)
                    if req.started:
                        timed.append(req)
                else:
                    self.conn.server.runner.deliver(req.finish, False, value)
            self.answered += done
            if lines:
                self.send_bytes(lines[0] if len(lines) == 1 else b"".join(lines))
        for req in timed:
            telemetry.timed(req.conn, _READ, req.started)

    def check(self, left: int) -> bool:
        """On the loop, every ``STALL`` seconds or so (``_Watch``): write the replies made so
        far, and queue the batch again if no read was taken since the last look (``left``
        then waited for a worker); False: every read is answered."""
        self.answer()
        if self.answered >= self.size or self.conn.closed:
            return False
        if self.items and len(self.items) == left:  # none taken meanwhile: stuck behind a slow read, or queued
            with contextlib.suppress(LimitExceeded):  # too many jobs waiting: look again later
                self.conn.server.runner.submit(self.run, _failed)
        return True


class _Watch:
    """The batches of a connection that may still have reads to answer, looked at by one timer
    every ``STALL`` seconds while there are any (not a timer per batch).

    A batch is first looked at on the second tick after it came: ``STALL`` to ``2 * STALL``
    seconds after, so that a batch merely waiting its turn is not queued again.
    """

    __slots__ = ("batches", "conn", "fresh", "ticking")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.batches: list[tuple[_Batch, int]] = []  # with how many reads waited for a worker at the last look
        self.fresh: list[_Batch] = []  # came since the last tick
        self.ticking = False

    def add(self, batch: _Batch) -> None:
        self.fresh.append(batch)
        if not self.ticking:
            self.ticking = True
            self.conn.server.loop.call_later(STALL, self.tick)

    def tick(self) -> None:
        kept = [(batch, len(batch.items)) for batch, left in self.batches
                if batch.answered < batch.size and batch.check(left)]
        fresh, self.fresh = self.fresh, []
        kept.extend((batch, batch.size) for batch in fresh if batch.answered < batch.size)
        self.batches = kept
        if kept and not self.conn.closed:
            self.conn.server.loop.call_later(STALL, self.tick)
        else:
            self.ticking = False
            self.batches = []


def _failed(ok: bool, value: Any) -> None:
    """A batch job's own outcome, were it ever delivered: it answers its reads itself."""
    if not ok:
        log.error("a batch of reads failed", exc_info=value)


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
        batch = conn.fast_batch = _Batch(conn, conn.send_bytes)  # type: ignore[arg-type]
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
    exact, max_inflight, max_uri_length, traced = router.exact, limits.max_inflight, limits.max_uri_length, conn.traced
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
        # room for one more in flight, a match of a sync handler without a Context
        handler = None
        kwargs = _NO_ARGUMENTS
        if type(msg) is dict and msg.get("method") == _READ:
            params = msg.get("params")
            rid = msg.get("id")
            uri = params.get("uri") if type(params) is dict and "_meta" not in params else None
            if (
                type(uri) is str and uri and len(uri) <= max_uri_length and (type(rid) is int or type(rid) is str)
                and rid not in inflight and len(inflight) < max_inflight and msg.get("jsonrpc") == "2.0"
            ):
                handler = exact.get(uri)
                if handler is None:
                    # the router's match cache, read here: a hit needs no Match, nor a copy of its values
                    # (the handler's call binds them; a handler whose values may be lists gets copies)
                    hit = router._cache.get(uri)
                    if hit is not None and hit[0] not in router._listy:
                        handler, kwargs = hit[0], hit[1]
                    else:
                        match = router.match(uri)
                        if match is not None:
                            handler, kwargs = match.handler, match.kwargs
        if handler is None or handler.sig.is_async or handler.sig.context_param is not None:
            receive(msg)
            continue
        dropped = 0
        if traced and telemetry.ON:  # a span only if sampled (decided here, by the SDK's ratio rule)
            dropped = telemetry.dropped_root()
            if not dropped:  # a span is wanted, or the sampler decides in the SDK: the general path
                receive(msg)
                continue
            timed = _TimedRead()
            timed.started = _now()
            req: FastRead = timed
        else:
            req = FastRead()
        req.conn = conn
        req.id = rid
        req.uri = uri  # type: ignore[assignment]
        req.handler = handler
        req.kwargs = kwargs
        req.cancelled = False
        memo = handler.memo
        if memo is not None and memo.get(_BIG_KEY):  # a batch of its own: big ones hash in parallel
            single = _Batch(conn, batch.send_bytes)
            single.items.append(req)
            single.size = 1
            try:
                conn.server.runner.submit(single.run, _failed)
            except LimitExceeded:  # too many jobs waiting: the general path says so
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
