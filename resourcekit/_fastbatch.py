"""The worker side of fast reads (``_fastread``): a batch of reads run by one worker job, which
writes their replies itself, and the one timer per connection that looks after unanswered batches.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from orjson import dumps

from . import telemetry
from ._runner import QUIET, STALL, BatchJob
from ._shortread import READ, reply_line
from .contents import TEXT_MIME
from .errors import LimitExceeded, ResourceNotFound
from .methods.reading import HEAD, TAIL_TEXT, TAILS, text_tail

if TYPE_CHECKING:
    from ._fastread import FastRead
    from .protocol import Connection

__all__ = ["BIG_KEY", "BatchWatch", "ReadBatch", "SendBytes"]

SendBytes = Callable[[bytes], None]
# a handler whose replies are this big (bytes) gets a job per read, not a place in a batch:
# the hashing of several runs in parallel, outside the GIL
_BIG = 1 << 16
BIG_KEY = "big_reads"


class ReadBatch(BatchJob):
    """Fast reads for the workers, as one job: those of one loop iteration (one block of input),
    or one read of a handler whose replies are big.

    A worker runs them in order, then writes all their replies at once, itself: the loop
    is not woken for them (only a failure goes back to it, to be answered as on the general
    path).  A read that blocks must not hold up the others: until all are answered, every
    ``STALL`` seconds or so (``BatchWatch``) the loop writes the replies made so far, and
    while reads are left and none was taken meanwhile, queues the batch again (``requeue``).
    """

    __slots__ = ("answered", "conn", "items", "lock", "replies", "send_bytes", "size")

    def __init__(self, conn: Connection, send_bytes: SendBytes) -> None:
        BatchJob.__init__(self)  # not super(): a third of the cost, per batch
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
            self.queue(conn.server.runner)
        except LimitExceeded as exc:  # too many jobs waiting: each read says so
            for req in self.items:
                req.finish(False, exc)
            self.items.clear()
            return
        if self.size > 1:
            watch = conn.fast_watch
            if watch is None:
                watch = conn.fast_watch = BatchWatch(conn)
            watch.add(self)

    def run(self) -> Any:
        """In a worker (maybe in several at once): make the replies, then write them."""
        items, replies, conn = self.items, self.replies, self.conn
        self.runs.append(None)  # started (BatchJob)
        # reply_line of a short text, its most frequent case, at once (text_reply, inlined)
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
                        try:
                            tail, version = text_tail(uri, mime, value)
                        except TypeError:  # JSON cannot carry the text: answered as the general path answers it
                            replies.append((req, reply_line(req, value)))
                            continue
                    # recorded as read_result records it, unless it is what is there already
                    if (versions.get(uri) if uri in exact else instance_versions.get(uri)) is not version:
                        observe(uri, version)
                    if seen.get(uri) is not version:  # a session's: never stateless
                        if len(seen) >= seen_max and uri not in seen:
                            seen.clear()
                        seen[uri] = version
                    data = HEAD + dumps(req.id) + tail
                else:
                    data = reply_line(req, value)
                    if len(data) >= _BIG and not handler.remembered(BIG_KEY):
                        handler.remember(BIG_KEY, True)
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
                    taken = None
                    if inflight.get(req.id) is req:  # before the reply: the client may reuse the id then
                        # (not another request's: cancelled meanwhile, its id reused); pop, for the loop
                        # may cancel it right after the look (a KeyError lost the batch's other replies),
                        # and what the pop took is put back if the id was reused in between too
                        taken = inflight.pop(req.id, None)
                        if taken is not req and taken is not None:
                            inflight.setdefault(req.id, taken)
                    lines.append(value)
                    if req.started and taken is req:  # else cancelled meanwhile: recorded so (``cancel``)
                        timed.append(req)
                else:
                    self.conn.server.runner.deliver(req.finish, False, value)
            self.answered += done
            if lines:
                self.send_bytes(lines[0] if len(lines) == 1 else b"".join(lines))
        for req in timed:
            telemetry.timed(req.conn, READ, req.started)

    def check(self, left: int) -> bool:
        """On the loop, every ``STALL`` seconds or so (``BatchWatch``): write the replies made so
        far, and queue the batch again if no read was taken since the last look (``left``
        then waited for a worker); False: every read is answered."""
        self.answer()
        if self.answered >= self.size or self.conn.closed:
            return False
        if self.items and len(self.items) == left:  # none taken meanwhile: stuck behind a slow read
            self.requeue(self.conn.server.runner)
        return True


class BatchWatch:
    """The batches of a connection that may still have reads to answer, looked at by one timer
    every ``STALL`` seconds while there are any (not a timer per batch).

    A batch is first looked at on the second tick after it came: ``STALL`` to ``2 * STALL``
    seconds after, so that a batch merely waiting its turn is not queued again.
    """

    __slots__ = ("batches", "conn", "fresh", "ticking")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.batches: list[tuple[ReadBatch, int]] = []  # with how many reads waited for a worker at the last look
        self.fresh: list[ReadBatch] = []  # came since the last tick
        self.ticking = False

    def add(self, batch: ReadBatch) -> None:
        self.fresh.append(batch)
        if not self.ticking:
            self.ticking = True
            self.conn.server.loop.call_later(STALL, self.tick)

    def tick(self) -> None:
        kept = [(batch, len(batch.items)) for batch, left in self.batches
                if batch.answered < batch.size and batch.check(left)]
        fresh, self.fresh = self.fresh, []
        # left as now: a read a worker took at once (a blocking one) must not count as progress at
        # the next tick, or the reads behind it wait for the third
        kept.extend((batch, len(batch.items)) for batch in fresh if batch.answered < batch.size)
        self.batches = kept
        if kept and not self.conn.closed:
            self.conn.server.loop.call_later(STALL, self.tick)
        else:
            self.ticking = False
            self.batches = []
