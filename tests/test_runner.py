"""The runner that runs sync handlers off the loop: a fast job never waits behind slow ones, a
stuck worker is noticed, lanes are served in turn, held lanes wait; see also test_pipeline_limits."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from resourcekit import App
from tests.support.session import answered_in, connected
from tests.support.wire import read_message

pytestmark = pytest.mark.anyio


# --- findings 8 and 13: workers, in-flight requests, cancelled batch members ----------------------


async def test_a_fast_sync_read_never_waits_behind_a_slow_one() -> None:
    app = App("t")
    release = threading.Event()
    app.resource("slow://x")(lambda: "done" if release.wait(5) else "late")
    app.resource("fast://x")(lambda: "fast")
    server, conn, out = connected(app)
    try:
        conn.receive(read_message(1, "slow://x"))
        await asyncio.sleep(0.05)  # the slow job holds the only thread started so far
        conn.receive(read_message(2, "fast://x"))
        assert set(await answered_in(out, {2}, 2.0)) == {2}
    finally:
        release.set()
        server.close()


# --- L8: a failing re-read does not flood the log -------------------------------------------------


async def test_a_job_stuck_behind_a_busy_worker_gets_a_thread_at_the_next_look() -> None:
    from resourcekit._runner import STALL, ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=4)
    release = threading.Event()
    try:
        slow = asyncio.ensure_future(runner.call(lambda: release.wait(5)))  # the only thread, stuck
        await asyncio.sleep(STALL * 3)
        started = time.monotonic()
        assert await asyncio.wait_for(runner.call(lambda: "late"), 2) == "late"
        assert time.monotonic() - started < 1.0  # not after the slow one: a thread of its own
        assert not slow.done()
    finally:
        release.set()
        runner.close()


async def test_a_fast_job_queued_behind_slow_ones_gets_a_thread() -> None:
    # two idle workers; slow, fast, slow, fast: the second fast job must not wait for a slow one
    from resourcekit._runner import ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=8)
    release = threading.Event()
    try:
        await asyncio.gather(runner.call(lambda: time.sleep(0.05)), runner.call(lambda: time.sleep(0.05)))
        await asyncio.sleep(0.05)
        calls = [runner.call(job) for job in (lambda: release.wait(5), lambda: "fast",
                                             lambda: release.wait(5), lambda: "last")]
        futures = [asyncio.ensure_future(c) for c in calls]
        done, _ = await asyncio.wait([futures[3]], timeout=2.0)
        assert done and futures[3].result() == "last"
    finally:
        release.set()
        await asyncio.gather(*futures)
        runner.close()
