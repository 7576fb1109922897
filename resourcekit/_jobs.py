"""What the runner (``_runner``) runs: jobs, each in the ``Lane`` of its session.

The vocabulary the engine and the methods share with the runner, without its machinery: a step
that hands a handler to a worker makes a ``Job`` (a ``Request``, or a ``Call``) of its session's
lane; a job that answered for itself returns ``QUIET``.  ``Worker`` is what the runner keeps of
each of its threads.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["QUIET", "Call", "Callback", "Job", "Lane", "Worker"]

Callback = Callable[[bool, Any], None]


class Job(Protocol):
    """What a worker runs, in its ``lane``: ``run()`` in the worker, then ``done(ok,
    result_or_exception)`` on the loop (unless ``run`` returned ``QUIET``: it saw to its outcome
    itself)."""

    @property
    def lane(self) -> Lane: ...

    def run(self) -> Any: ...

    def done(self, ok: bool, value: Any) -> None: ...


class Call:
    """A function as a job of ``lane``: ``fn()`` in a worker, ``callback(ok, value)`` on the loop."""

    __slots__ = ("done", "lane", "run")

    def __init__(self, fn: Callable[[], Any], callback: Callback, lane: Lane) -> None:
        self.run = fn
        self.done = callback
        self.lane = lane


# what a job returns when it saw to its outcome itself (a read that answered with its reply's
# bytes): nothing to deliver, the loop is not woken
QUIET: Any = object()


class Lane:
    """One session's jobs, in order: the runner's workers take the lanes in turn (``_runner``)."""

    __slots__ = ("flush", "grew", "held", "jobs", "queued", "tick")

    def __init__(self, flush: Callable[[], None] | None = None) -> None:
        self.jobs: deque[Job] = deque()
        self.flush = flush  # called when a worker leaves the lane, or is stuck in one of its jobs
        # told the size of a reply not small that a worker handed the session (its outbox counts them)
        self.grew: Callable[[int], None] | None = None
        self.queued = False  # in the runner's ring (changed under its lock)
        self.held = False  # its session owes a reader too much: no worker takes its jobs
        self.tick = -1  # the last tick it was submitted to


class Worker:
    """A runner's worker thread, as the runner sees it: its batch (the jobs it took at once) and
    what the loop's look needs: the lane whose job it runs, and how far it got (``progress``)."""

    __slots__ = ("batch", "lane", "takes")

    def __init__(self) -> None:
        self.batch: deque[Job] = deque()  # taken, not started yet (the look may give them back)
        self.lane: Lane | None = None
        self.takes = 0  # batches taken

    def progress(self) -> tuple[int, int] | None:
        """Where the worker is (None: between lanes): the same at two looks, it is stuck in one job
        (each job it starts leaves its batch shorter, each batch it takes counts)."""
        return None if self.lane is None else (self.takes, len(self.batch))
