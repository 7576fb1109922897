"""Run sync handlers in worker threads, delivering results to the loop in batches.

``loop.run_in_executor`` costs a future, a wrapping future and one loop wake-up
per call.  Here workers put results on a deque and wake the loop only when no
wake-up is already pending, so under load one wake-up delivers many results.
The deque is FIFO: what a worker ``post``s before its result (a handler's log
message) reaches the loop first.

A new thread starts when no worker is idle (up to ``max_workers``), and when a job
still waits ``STALL`` seconds after it came while workers looked idle, no worker is
idle now and none took a job meanwhile (every worker is stuck in a slow job): a fast
job never queues behind a slow one while a thread could be had, and a burst of fast
jobs, merely waiting for the GIL, does not wake 32 threads to fight over it.  At most ``max_queued`` jobs
wait; beyond that ``submit`` refuses.

A ``BatchJob`` is a job several workers may run at once (a batch of reads), queued again while
it has work left and a worker is stuck in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from .errors import LimitExceeded

__all__ = ["QUIET", "BatchJob", "ThreadRunner"]

log = logging.getLogger("resourcekit")

Callback = Callable[[bool, Any], None]
# seconds a job may wait for an idle worker before it gets a thread: twice the GIL's switch
# interval, so a worker merely waiting its turn for the GIL does not count as stuck
STALL = 0.01
# what a job returns when it saw to its outcome itself (a batch of reads that wrote its replies):
# nothing to deliver, the loop is not woken
QUIET: Any = object()


class ThreadRunner:
    def __init__(self, loop: asyncio.AbstractEventLoop, max_workers: int = 32, max_queued: int = 4096) -> None:
        self._loop = loop
        self._max_workers = max_workers
        self._max_queued = max_queued
        # jobs submitted (by the loop thread only) and taken (by workers, numbered by an atomic
        # counter): a hint that the queue moves (two workers may store their numbers out of order:
        # the queue's length is the queue's own, ``qsize``)
        self._submitted = 0
        self._taken = 0
        self._takes = itertools.count(1)
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Callback] | None] = queue.SimpleQueue()
        self._done: deque[tuple[Callback, bool, Any]] = deque()
        self._wake_pending = False
        self._threads: list[threading.Thread] = []
        self._waiting: deque[None] = deque()  # one item per worker waiting for a job (atomic ops)
        self._lock = threading.Lock()
        self._closed = False
        self._watching = False  # a check for a stalled job is scheduled

    def submit(self, fn: Callable[[], Any], callback: Callback) -> None:
        """Run ``fn()`` in a worker; ``callback(ok, result_or_exception)`` runs on the loop
        (unless ``fn`` returned ``QUIET``)."""
        queued = self._jobs.qsize()
        if queued >= self._max_queued:
            raise LimitExceeded("max_queued_jobs", self._max_queued, "Server busy: too many jobs waiting",
                                code=-32603)
        self._submitted += 1
        self._jobs.put((fn, callback))
        if len(self._threads) < self._max_workers:
            if not self._waiting:
                self._spawn()
            elif not self._watching:
                # an "idle" worker may be busy already: it took a job and has not said so yet (on
                # 3.13 a put hands the job to a waiting worker at once, so the queue's length does
                # not show it either): if this job still waits shortly, it gets a thread of its
                # own.  One look per STALL at most, however many jobs come
                self._watching = True
                self._loop.call_later(STALL, self._unstall, self._submitted, self._taken)

    def _unstall(self, job: int, taken: int) -> None:
        """Called STALL after job ``job`` came (``taken`` jobs then taken): spawn if every worker is
        stuck, and look again while jobs wait (one behind the job a new thread takes may be stuck too).

        The queue itself says when the wait is over (``_taken`` is a hint: two workers may
        store their numbers out of order), so an idle server never keeps looking."""
        if self._jobs.empty() or len(self._threads) >= self._max_workers or self._closed:
            self._watching = False  # nothing waits (jobs queued after ``job`` are watched too)
            return
        if not self._waiting and self._taken == taken:  # nobody idle, nothing taken: all are stuck
            self._spawn()
        self._loop.call_later(STALL, self._unstall, job, self._taken)

    def _spawn(self) -> None:
        with self._lock:
            if len(self._threads) < self._max_workers and not self._closed:
                thread = threading.Thread(
                    target=self._work, name=f"resourcekit-worker-{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()

    def post(self, fn: Callable[[Any], None], value: Any) -> None:
        """From a worker: call ``fn(value)`` on the loop, in order with the results."""
        self._done.append((lambda ok, v: fn(v), True, value))
        self._wake()

    def deliver(self, callback: Callback, ok: bool, value: Any) -> None:
        """From a worker: ``callback(ok, value)`` on the loop, as if a job had ended (a job
        that runs several, such as a batch of reads, answers each as it ends)."""
        self._done.append((callback, ok, value))
        if not self._wake_pending:
            self._wake()

    async def call(self, fn: Callable[[], Any]) -> Any:
        """``await runner.call(fn)``: run ``fn()`` in a worker from the loop and get its result."""
        future: asyncio.Future[Any] = self._loop.create_future()

        def done(ok: bool, value: Any) -> None:
            if not future.done():
                (future.set_result if ok else future.set_exception)(value)

        def job() -> Any:
            # its awaiter was cancelled (a cancelled request) before a worker took it: nobody wants it
            return None if future.cancelled() else fn()

        self.submit(job, done)
        return await future

    def _work(self) -> None:
        jobs, done, waiting, takes = self._jobs, self._done, self._waiting, self._takes
        while True:
            waiting.append(None)
            job = jobs.get()
            waiting.pop()
            if job is None:
                return
            self._taken = next(takes)
            fn, callback = job
            try:
                value = fn()
            except BaseException as exc:  # delivered to the loop, which decides
                done.append((callback, False, exc))
            else:
                if value is QUIET:
                    continue
                done.append((callback, True, value))
            if not self._wake_pending and not self._wake():
                return  # loop closed while we worked: nobody to tell

    def _wake(self) -> bool:
        if not self._wake_pending:
            self._wake_pending = True
            try:
                self._loop.call_soon_threadsafe(self._deliver)
            except RuntimeError:
                return False
        return True

    def _deliver(self) -> None:
        self._wake_pending = False
        done = self._done
        while done:
            callback, ok, value = done.popleft()
            try:
                callback(ok, value)
            except Exception:  # a bug of the callback's: the results after it still go on now
                log.exception("delivering a worker's result failed")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._jobs.put(None)


class BatchJob:
    """A job that several workers may run at once, each taking the next part of its work (a
    batch of reads): ``queue`` hands it to the workers, ``requeue`` again when it has work left
    and no worker took any of it since the last look (one is stuck in a slow part), so that
    another worker (started if none is idle) goes on with it.

    It is queued again only once every job queued for it started: one still waiting in the
    queue goes on with it when a worker comes (another would only wait behind it), and a queue
    filled by looks would refuse other requests (``max_queued_jobs``).  A subclass's ``run``
    begins with ``self.runs.append(None)`` (inline, not a call: a batch of reads is the hot
    path), sees to its outcomes itself and returns ``QUIET``.
    """

    __slots__ = ("jobs", "runs")

    def __init__(self) -> None:
        self.jobs = 0  # queued (by the loop), and started by a worker (one item each:
        self.runs: list[None] = []  # appends are atomic): one still waits in the queue while fewer started

    def run(self) -> Any:
        raise NotImplementedError

    def queue(self, runner: ThreadRunner) -> None:
        """On the loop: hand the job to ``runner``'s workers; LimitExceeded: too many jobs wait."""
        runner.submit(self.run, _unexpected)
        self.jobs += 1

    def requeue(self, runner: ThreadRunner) -> None:
        """On the loop, when no worker took any of the work left since the last look: queue the
        job again, unless a job of it still waits for a worker, or too many jobs wait (the next
        look tries again)."""
        if len(self.runs) == self.jobs:
            with contextlib.suppress(LimitExceeded):
                self.queue(runner)


def _unexpected(ok: bool, value: Any) -> None:
    """A batch job's own outcome, were it ever delivered: it answers its parts itself."""
    if not ok:
        log.error("a batch of reads failed", exc_info=value)
