"""Run sync jobs in worker threads, fairly between sessions, delivering results to the loop in batches.

Every session has a ``Lane``: its jobs, in the order they came.  Workers take turns over the lanes
that have jobs (a ring: a lane served goes to its back), taking up to ``TAKE`` jobs at once, lane
after lane in the ring's order (one lock for a block of pipelined reads, or for the reads of many
HTTP sessions), and running them in order; a worker stuck in a slow one gives the others back to
their lanes (below), so one session's slow handlers never keep another session's fast read waiting
longer than a worker takes to free up, or than the next look takes to start one.  Jobs submitted
during one loop iteration reach the workers together, once, at the end of the iteration (the
*tick*): one lock and one wake-up for a whole block of pipelined requests.  Idle workers wait on a
C queue for a token.

A worker that leaves a lane (for another, or to wait) calls its ``flush``: the replies it made for
that session are written together (``core.outbox``); one serving a lane long, every
``FLUSH_EVERY`` jobs.

One stall rule, looked at by the loop every ``STALL`` seconds while jobs are waiting or running:

- a worker still in the job it was in at the last look is stuck: its lane's replies made so far
  are flushed (a slow read holds up no reply made before it), and the jobs it took with the slow
  one go back to their lanes for another worker;
- jobs wait and no worker took a job since the last look: an idle worker is woken, or if none
  is idle (every worker is stuck) a thread is started (up to ``max_workers``).

The first thread starts when the first jobs come.  Another starts, up to one per core, only while
jobs keep coming and the process leaves the interpreter idle: at a look that finds jobs waiting and
no worker idle, when no worker came back to an empty ring since the last look and the process used
less than ``SPARE`` of a core meanwhile, so that its workers wait on something else than the GIL
(a database, a file) and one more can run then.  Jobs that merely take turns for the GIL start no
thread: a second worker would only fight the first for it (on 2 cores, alternating runs of one
commit: a template read cost 7.2 µs of CPU with a second worker started, 6.1 µs with one).

A lane is *held* while its session owes a reader that does not read too many bytes: no worker
takes its jobs until it is released.  At most ``max_queued`` jobs wait over all lanes; beyond that
``submit`` refuses.  Workers put results on a deque and wake the loop only when no wake-up is
already pending, so under load one wake-up delivers many results; the deque is FIFO: what a
worker ``post``s before its result (a handler's log message) reaches the loop first.
"""

from __future__ import annotations

import _queue as queue  # SimpleQueue without queue.py, which re-exports it: 0.3 ms less start-up
import asyncio
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from itertools import repeat, starmap
from typing import Any

from ._jobs import QUIET, Call, Callback, Job, Lane, Worker
from .errors import LimitExceeded

__all__ = ["FLUSH_EVERY", "SPARE", "STALL", "TAKE", "ThreadRunner"]

log = logging.getLogger("resourcekit")

# seconds between the loop's looks at the workers: twice the GIL's switch interval, so a worker
# merely waiting its turn for the GIL does not count as stuck
STALL = 0.01
# cores the process may use at most, over a look's interval while jobs wait, for another thread to
# start (below the cores): the interpreter is idle that often, its workers wait on something else
SPARE = 0.75
# jobs a worker takes at once, from one lane or several (one lock for a block of pipelined reads);
# a worker stuck in one of them gives the others back at the loop's next look
TAKE = 64
FLUSH_EVERY = 256  # jobs of one lane a worker runs in a row at most before it calls the lane's flush


# no look yet: ``drained`` -1 (never a count) keeps the first look from starting a spare thread
_UNLOOKED: tuple[int, list[tuple[int, int] | None], int, float, float] = (-1, [], -1, 0.0, 0.0)


class ThreadRunner:
    def __init__(self, loop: asyncio.AbstractEventLoop, max_workers: int = 32, max_queued: int = 4096) -> None:
        self._loop = loop
        self._max_workers = max_workers
        self._max_queued = max_queued
        # threads started while jobs wait and the interpreter has room (the look), more only when
        # every one is stuck: fast jobs, merely waiting for the GIL, start no thread to fight over it
        self._eager = min(max_workers, os.cpu_count() or 1)
        self._submitted = 0  # by the loop thread
        self._taken = 0  # by workers, under the lock
        self._ring: deque[Lane] = deque()  # lanes with jobs a worker may take, in turn
        self._cond = threading.Lock()  # the ring, the lanes' ``queued``, ``_idle`` and ``_taken``
        # idle workers wait for a token here (a C queue: waking one costs a put, not a Condition's
        # lock dance); ``_idle`` counts those no token was put for yet
        self._wakes: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._idle = 0
        self._workers: list[Worker] = []
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.shared = Lane()  # jobs of no session (skills, trackers)
        self._touched: list[Lane] = []  # lanes submitted to in this tick
        self._tick = 0
        self.publishing = False
        self._done: deque[tuple[Callback, bool, Any]] = deque()
        self._wake_pending = False
        self._watching = False  # the loop's look is scheduled
        self._drained = 0  # takes that found no job (under the lock)
        # at the last look: jobs taken, each worker's progress, takes that found none, the process's
        # CPU time and the loop's time
        self._looked: tuple[int, list[tuple[int, int] | None], int, float, float] = _UNLOOKED

    # --- the loop's side ---------------------------------------------------------------------

    def submit(self, job: Job) -> None:
        """Run ``job`` in a worker, after the jobs its lane holds already (see ``Job``; ``shared``:
        the lane of jobs of no session).  LimitExceeded: too many jobs wait."""
        lane = job.lane
        submitted = self._submitted
        if submitted - self._taken >= self._max_queued:
            raise LimitExceeded("max_queued_jobs", self._max_queued, "Server busy: too many jobs waiting",
                                code=-32603)
        self._submitted = submitted + 1
        lane.jobs.append(job)
        if lane.tick != self._tick:  # the lane's first job of this tick: it joins the ring at the tick's end
            lane.tick = self._tick
            self._touched.append(lane)
            if not self.publishing:
                self.publishing = True
                self._loop.call_soon(self.publish)

    def defer(self) -> bool:
        """The caller submits a block of jobs (a block of input) and calls ``publish`` at its end,
        which saves the loop an iteration; False: a publish is due already, this iteration's."""
        if self.publishing:
            return False
        self.publishing = True
        return True

    def publish(self) -> None:
        """At the end of the loop iteration (or of a block of input, ``defer``): the lanes submitted
        to join the ring, workers wake."""
        self.publishing = False
        touched, self._touched = self._touched, []
        self._tick += 1
        self._join(touched)

    def _join(self, lanes: Iterable[Lane]) -> None:
        """``lanes`` with jobs join the ring, workers wake."""
        if self._closed:
            return
        spawn = False
        with self._cond:
            ring = self._ring
            waiting = 0
            for lane in lanes:
                if lane.jobs and not lane.held:
                    waiting += len(lane.jobs)
                    if not lane.queued:
                        lane.queued = True
                        ring.append(lane)
            added = (waiting + TAKE - 1) // TAKE  # a worker per TAKE jobs, of however many lanes
            if added:
                if self._idle:
                    self._wake_workers(added)  # those idle, at most (a stuck one: the stall rule's)
                else:  # none idle: the first thread (more: the look's, while the interpreter has room)
                    spawn = not self._threads
        if spawn:
            self._spawn()
        if added and not self._watching:  # the look starts from here: a stuck worker is seen at the first
            self._watching = True
            self._looked = (self._taken, [w.progress() for w in self._workers], *_UNLOOKED[2:])
            self._loop.call_later(STALL, self._look)

    def hold(self, lane: Lane) -> None:
        """No worker takes ``lane``'s jobs until ``release`` (its session owes a reader too much)."""
        lane.held = True

    def release(self, lane: Lane) -> None:
        """Workers take ``lane``'s jobs again (from the loop)."""
        if not lane.held:
            return
        lane.held = False
        if lane.jobs:
            self._join((lane,))  # at once

    def _look(self) -> None:
        """Every ``STALL`` seconds while jobs wait or run: the stall rule (see the module)."""
        taken, jobs, drained, cpu, at = self._looked
        clocks = (time.process_time(), self._loop.time())
        workers = list(self._workers)
        now = [w.progress() for w in workers]
        gave_back = False
        for i, worker in enumerate(workers):
            lane = worker.lane
            if lane is None or i >= len(jobs) or now[i] is None or jobs[i] != now[i]:
                continue
            # stuck in a slow job: the replies made before it go out now, the jobs it took with it
            # go back to their lanes for another worker
            self._flush(lane)
            if worker.batch:
                gave_back |= self._give_back(worker.batch, lane)
        with self._cond:
            waiting = bool(self._ring)
            # jobs wait and none was taken since the last look (or a stuck worker gave some back)
            stuck = waiting and (self._taken == taken or gave_back)
            if stuck and self._idle:
                self._wake_workers(1)  # an idle worker that was not woken for them
                stuck = False
            # or jobs wait, no worker came back to an empty ring, and the interpreter had room: one more
            spare = (waiting and not self._idle and self._drained == drained and len(self._threads) < self._eager
                     and clocks[0] - cpu < SPARE * (clocks[1] - at))
            self._looked = (self._taken, now, self._drained, *clocks)
        if stuck or spare:
            self._spawn()
        if (waiting or any(p is not None for p in now)) and not self._closed:
            self._loop.call_later(STALL, self._look)
        else:
            self._watching = False
            self._looked = _UNLOOKED

    def _give_back(self, batch: deque[Job], served: Lane | None) -> bool:
        """The jobs a stuck worker took and has not started, back at the head of their lanes, in
        order (the worker takes from the other end, one at a time, so each job goes one way; under
        the lock, so that the look's give-back and the worker's for a held lane come one after the
        other, each putting what it took ahead of what the other put back).  Their lanes rejoin the
        ring in the order they were taken, the one the worker was serving (``served``) last: it had
        its turn."""
        with self._cond:
            moved: list[Job] = []
            while True:
                try:
                    moved.append(batch.pop())
                except IndexError:
                    break
            self._taken -= len(moved)
            for job in moved:  # the last first: each lane's in order again
                job.lane.jobs.appendleft(job)
            for lane in [*(job.lane for job in reversed(moved) if job.lane is not served), served]:
                if lane is not None and lane.jobs and not lane.queued and not lane.held:
                    lane.queued = True
                    self._ring.append(lane)
        return bool(moved)

    def _wake_workers(self, wanted: int) -> None:
        """Under the lock: wake up to ``wanted`` idle workers."""
        n = min(wanted, self._idle)
        self._idle -= n
        for _ in range(n):
            self._wakes.put(None)

    def _spawn(self) -> None:
        with self._cond:
            if len(self._threads) >= self._max_workers or self._closed:
                return
            worker = Worker()
            thread = threading.Thread(target=self._work, args=(worker,),
                                      name=f"resourcekit-worker-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            self._workers.append(worker)
        thread.start()

    async def call(self, fn: Callable[[], Any], lane: Lane | None = None) -> Any:
        """``await runner.call(fn)``: run ``fn()`` in a worker from the loop and get its result."""
        future: asyncio.Future[Any] = self._loop.create_future()

        def done(ok: bool, value: Any) -> None:
            if not future.done():
                (future.set_result if ok else future.set_exception)(value)

        def job() -> Any:
            # its awaiter was cancelled (a cancelled request) before a worker took it: nobody wants it
            return None if future.cancelled() else fn()

        self.submit(Call(job, done, self.shared if lane is None else lane))
        return await future

    def close(self) -> None:
        with self._cond:
            self._closed = True
            for _ in self._threads:
                self._wakes.put(None)

    # --- the workers' side -------------------------------------------------------------------

    def post(self, fn: Callable[[Any], None], value: Any) -> None:
        """From a worker: call ``fn(value)`` on the loop, in order with the results."""
        self._done.append((lambda ok, v: fn(v), True, value))
        self._wake()

    def _work(self, me: Worker) -> None:
        cond, ring, done, batch, wakes = self._cond, self._ring, self._done, me.batch, self._wakes
        left: Lane | None = None  # the lane of the jobs this worker ran last: its replies wait for its flush
        ran = 0  # jobs of ``left`` taken since its last flush
        while True:  # a batch: up to TAKE jobs taken, lane after lane in turn, then run
            me.lane = None
            n = 0
            taken: list[tuple[Lane, int]] = []  # the batch's lanes, in order, with how many jobs of each
            with cond:
                while True:
                    while ring and n < TAKE:
                        lane = ring[0]
                        if lane.held:  # held lanes leave the ring until released
                            ring.popleft().queued = False
                            continue
                        jobs = lane.jobs
                        k = len(jobs)
                        if k > TAKE - n:
                            k = TAKE - n
                        if k == 1:  # (an HTTP session's, mostly: one request at a time)
                            batch.append(jobs.popleft())
                        else:  # k pops in one C call (the loop appends to ``jobs`` meanwhile, without the lock)
                            batch.extend(starmap(jobs.popleft, repeat((), k)))
                        taken.append((lane, k))
                        n += k
                        if jobs:
                            ring.rotate(-1)  # round robin: the next lane's turn (this batch is full)
                        else:
                            ring.popleft()
                            lane.queued = False
                    if n:
                        self._taken += n
                        me.takes += 1
                        break
                    self._drained += 1
                    if left is not None or self._closed:
                        break  # its replies first (outside the lock), then wait
                    self._idle += 1
                    cond.release()
                    try:
                        wakes.get()
                    finally:
                        cond.acquire()
            if not n:
                if left is not None:
                    self._flush(left)
                    left = None
                elif self._closed:
                    return
                continue
            for lane, k in taken:
                if lane is not left:  # the replies made for the lane left go out together
                    if left is not None and left.flush is not None:
                        self._flush(left)
                    left = lane
                    ran = 0
                elif ran >= FLUSH_EVERY:
                    self._flush(lane)
                    ran = 0
                me.lane = lane  # (after the flush: a worker writing replies is in no lane's job)
                ran += k
                # the lane's k jobs, in order: counted, not popped until the deque raises (an exception
                # per batch cost an HTTP session's read, one job a lane, 1.5k instructions)
                for _ in range(k):
                    try:
                        job = batch.popleft()
                    except IndexError:  # the loop's look gave the rest back (a stalled worker's)
                        break
                    if lane.held:  # its session owes its reader too much: not now
                        batch.appendleft(job)
                        self._give_back(batch, lane)
                        break
                    try:
                        value = job.run()
                    except BaseException as exc:  # delivered to the loop, which decides
                        done.append((job.done, False, exc))
                    else:
                        if value is QUIET:
                            continue
                        done.append((job.done, True, value))
                    if not self._wake_pending and not self._wake():
                        return  # loop closed while we worked: nobody to tell
                if not batch:  # done, or the rest was given back
                    break

    @staticmethod
    def _flush(lane: Lane) -> None:
        """The replies a worker made for ``lane``'s session go out (its outbox's ``flush``)."""
        flush = lane.flush
        if flush is not None:
            try:
                flush()
            except Exception:
                log.exception("writing a session's replies failed")

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
