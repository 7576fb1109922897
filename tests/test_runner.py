"""The runner that runs sync handlers off the loop: a fast job never waits behind slow ones, a
stuck worker is noticed, lanes are served in turn, held lanes wait; see also test_pipeline_limits."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

import orjson
import pytest

from resourcekit import App
from tests.support.http_server import ACCEPT
from tests.support.session import answered_in, connected
from tests.support.wire import initialize, read_message

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


async def test_jobs_that_wait_outside_the_interpreter_get_a_thread_more() -> None:
    # short jobs that wait on something else than the GIL (a database, a file; here a sleep) and
    # keep coming: the one thread started first gets company, up to the cores (no worker is stuck,
    # so the stall rule starts none: with SPARE = 0 it stays alone)
    from resourcekit._runner import ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=8)
    try:
        await asyncio.wait_for(asyncio.gather(*(runner.call(lambda: time.sleep(0.00005)) for _ in range(3000))), 10)
        assert len(runner._threads) >= min(2, os.cpu_count() or 1)
    finally:
        runner.close()


# --- the runner's second review (ported from test_runner_review, deleted with the short paths) ----


async def test_a_callback_that_raises_leaves_no_other_result_waiting(caplog: pytest.LogCaptureFixture) -> None:
    # two results delivered by one wake-up: the first's callback raised, and the second waited until
    # some later job woke the loop (for ever on an idle server)
    from resourcekit._jobs import Call
    from resourcekit._runner import ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=2)
    got: list[Any] = []

    def boom(ok: bool, value: Any) -> None:
        raise RuntimeError("a callback's bug")

    try:
        runner.submit(Call(lambda: 1, boom, runner.shared))
        runner.submit(Call(lambda: 2, lambda ok, value: got.append(value), runner.shared))
        for _ in range(100):
            if got:
                break
            await asyncio.sleep(0.01)
        assert got == [2]
        assert "a callback's bug" in caplog.text
    finally:
        runner.close()


async def test_a_cancelled_completion_queued_behind_a_busy_worker_never_runs_its_completer() -> None:
    # "a cancelled request's job never runs": a completer's job ran anyway
    app = App("t", max_workers=1)
    release = threading.Event()
    calls: list[str] = []
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    app.template("item://{n}", complete={"n": lambda value: calls.append(value) or ["1"]})(lambda n: n)
    server, conn, out = connected(app)
    try:
        conn.receive(read_message(1, "slow://x"))
        conn.receive({"jsonrpc": "2.0", "id": 2, "method": "completion/complete", "params": {
            "ref": {"type": "ref/resource", "uri": "item://{n}"}, "argument": {"name": "n", "value": "x"}}})
        await asyncio.sleep(0.05)  # queued behind the only worker
        conn.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        release.set()
        await answered_in(out, {1})
        await asyncio.sleep(0.1)
        assert calls == [] and all(m.get("id") != 2 for m in out)
    finally:
        release.set()
        server.close()


async def test_an_initialize_whose_body_comes_after_the_shutdown_began_gets_503_and_starts_nothing() -> None:
    # SIGTERM closes the endpoint at once while uvicorn still serves open requests: a POST whose
    # headers came before and body after built a new Server (its reaper, its workers) and answered 200
    from resourcekit.http import ASGIApp

    asgi = ASGIApp(App("t", telemetry=False))
    asgi.start()
    body_ready = asyncio.Event()
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        await body_ready.wait()
        return {"type": "http.request", "body": orjson.dumps(initialize()), "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "root_path": "", "query_string": b"",
             "scheme": "http", "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5555),
             "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                         (b"accept", ACCEPT.encode())]}
    posting = asyncio.ensure_future(asgi(scope, receive, send))
    await asyncio.sleep(0.05)  # admitted, waiting for its body
    asgi.close()
    body_ready.set()
    await asyncio.wait_for(posting, 5)
    try:
        assert sent[0]["status"] == 503 and (b"retry-after", b"5") in sent[0]["headers"]
        assert asgi._server is None and not asgi.sessions
    finally:
        asgi.close()


async def test_workers_take_the_lanes_in_turn() -> None:
    # one worker, one lane with ten slow jobs queued before another's one: the other's job runs
    # after a slow job or two, not after all ten (a worker stuck in a slow job gives back the jobs
    # it took with it, and the lanes take turns)
    from resourcekit._jobs import Lane
    from resourcekit._runner import ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=1)
    ran: list[str] = []
    flooding, other = Lane(), Lane()
    try:
        calls = [runner.call(lambda n=n: time.sleep(0.05) or ran.append(f"flood {n}"), flooding) for n in range(10)]
        calls.append(runner.call(lambda: ran.append("other"), other))
        await asyncio.gather(*calls)
        assert ran.index("other") <= 2, ran
    finally:
        runner.close()


async def test_a_held_lanes_jobs_are_not_taken_until_it_is_released() -> None:
    from resourcekit._jobs import Lane
    from resourcekit._runner import ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=2)
    held, free = Lane(), Lane()
    try:
        runner.hold(held)
        waiting = asyncio.ensure_future(runner.call(lambda: "held", held))
        assert await asyncio.wait_for(runner.call(lambda: "free", free), 2) == "free"
        await asyncio.sleep(0.1)
        assert not waiting.done()
        runner.release(held)
        assert await asyncio.wait_for(waiting, 2) == "held"
    finally:
        runner.close()


async def test_a_worker_that_keeps_serving_one_lane_flushes_it_as_it_goes() -> None:
    # a long pipeline of one session: its replies go out every FLUSH_EVERY jobs, not once at its end
    from resourcekit._jobs import Lane
    from resourcekit._runner import FLUSH_EVERY, ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=1)
    ran: list[int] = []
    flushed_at: list[int] = []
    lane = Lane(lambda: flushed_at.append(len(ran)))
    try:
        total = FLUSH_EVERY * 4
        await asyncio.gather(*[runner.call(lambda n=n: ran.append(n), lane) for n in range(total)])
        assert ran == list(range(total))
        early = [n for n in flushed_at if n < total]
        assert len(early) >= 3 and all(n >= FLUSH_EVERY for n in early), flushed_at
    finally:
        runner.close()


async def test_a_stuck_worker_gives_the_jobs_it_took_of_other_lanes_back_to_their_own() -> None:
    # three sessions' jobs in one tick: one worker takes them together and is stuck in the first;
    # at the next look the others go back each to its own lane (one held meanwhile stays unrun, the
    # other runs in another thread) and the flushes of the lanes a worker left happened in order
    from resourcekit._jobs import Lane
    from resourcekit._runner import ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=4)
    release = threading.Event()
    flushed: list[str] = []
    slow, fast, held = (Lane(lambda name=name: flushed.append(name)) for name in ("slow", "fast", "held"))
    try:
        stuck = asyncio.ensure_future(runner.call(lambda: release.wait(5), slow))
        answered = asyncio.ensure_future(runner.call(lambda: "fast", fast))
        waiting = asyncio.ensure_future(runner.call(lambda: "held", held))
        await asyncio.sleep(0)  # the tick ends: one worker takes the three jobs at once
        deadline = time.monotonic() + 5
        while not any(worker.lane is slow for worker in runner._workers):
            assert time.monotonic() < deadline, "no worker took the slow job"
            await asyncio.sleep(0.001)
        runner.hold(held)
        assert await asyncio.wait_for(answered, 2) == "fast"
        await asyncio.sleep(0.1)
        assert not waiting.done() and not stuck.done() and list(held.jobs)
        runner.release(held)
        assert await asyncio.wait_for(waiting, 2) == "held"
        release.set()
        assert await asyncio.wait_for(stuck, 2) is True
        assert flushed[0] == "slow"  # the look flushed the stuck worker's lane first
    finally:
        release.set()
        runner.close()


async def test_two_give_backs_at_once_keep_a_lanes_jobs_in_order() -> None:
    # the look gives back a stuck worker's jobs while the worker, freed meanwhile, gives back the
    # job it found its lane held for: whichever takes the lock first, the lane's order stays
    from collections import deque

    from resourcekit._jobs import Call, Lane
    from resourcekit._runner import ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop())
    lane = Lane()
    lane.held = True
    jobs = [Call(lambda: None, lambda ok, value: None, lane) for _ in range(3)]
    batch: deque[Any] = deque(jobs)
    look_at_lock, worker_done = threading.Event(), threading.Event()
    lock = threading.Lock()

    class Gate:  # the runner's lock, which the look's thread takes only after the worker's give-back
        def __enter__(self) -> None:
            if threading.current_thread().name == "look":
                look_at_lock.set()
                worker_done.wait(5)
            lock.acquire()

        def __exit__(self, *_: object) -> None:
            lock.release()

    runner._cond = Gate()  # type: ignore[assignment]
    first = batch.popleft()  # the worker took the first job and found its lane held
    look = threading.Thread(target=runner._give_back, args=(batch, lane), name="look")
    look.start()
    assert look_at_lock.wait(5)
    batch.appendleft(first)
    runner._give_back(batch, lane)
    worker_done.set()
    look.join(5)
    assert list(lane.jobs) == jobs
