"""Second review of the worker threads (``_runner``) and the short read paths: each test fails on
the code before its fix."""

from __future__ import annotations

import asyncio
import threading

import pytest

from resourcekit.errors import LimitExceeded

pytestmark = pytest.mark.anyio


async def test_a_worker_storing_its_take_late_does_not_leave_a_job_counted_as_waiting() -> None:
    # worker A takes job 1 and is held between numbering its take and storing it; worker B takes
    # job 2 meanwhile and stores 2; A then stores 1. The queue is empty, but 2 - 1 jobs looked
    # waiting for ever: with max_queued_jobs 1 every later job was refused "Server busy"
    from resourcekit._runner import ThreadRunner

    loop = asyncio.get_running_loop()
    runner = ThreadRunner(loop, max_workers=2, max_queued=2)
    b_stored = threading.Event()

    class Takes:
        def __init__(self) -> None:
            self.n = 0
            self.lock = threading.Lock()

        def __next__(self) -> int:
            with self.lock:
                self.n += 1
                n = self.n
            if n == 1:
                b_stored.wait(5)  # A's number is stored after B's
            return n

    runner._takes = Takes()  # type: ignore[assignment]
    try:
        first = asyncio.ensure_future(runner.call(lambda: "a"))
        for _ in range(200):  # A holds job 1: no worker waits, so job 2 gets a thread of its own
            if runner._threads and not runner._waiting and runner._jobs.empty():
                break
            await asyncio.sleep(0.005)
        try:
            assert await runner.call(b_stored.set) is None
            assert await first == "a"
            assert runner._jobs.empty()
            runner._max_queued = 1
            assert await runner.call(lambda: "c") == "c"  # nothing waits: room for one
        except LimitExceeded as exc:
            pytest.fail(f"refused with an empty queue: {exc}")
    finally:
        b_stored.set()
        runner.close()
