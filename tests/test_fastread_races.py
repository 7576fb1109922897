"""Review of the stdio short read path (resourcekit/_fastread.py, _fastbatch.py): interleavings
of a batch's worker with the loop, and how long a blocking read may hold up its batch."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import orjson
import pytest

from resourcekit import App, _fastbatch
from resourcekit._fastbatch import BatchWatch
from tests.test_fastread import answered, read
from tests.test_fastread_lines import block_session

pytestmark = pytest.mark.anyio


async def test_a_read_batched_behind_a_blocking_one_is_queued_again_on_the_second_tick(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the worker takes the blocking read at once: the read behind it must go to another worker
    # on the watch's second tick (STALL to 2 * STALL after), not on its third
    monkeypatch.setattr(_fastbatch, "STALL", 0.1)  # ticks far apart: which one answered is clear
    ticks: list[None] = []
    tick = BatchWatch.tick

    def counted(self: BatchWatch) -> None:
        ticks.append(None)
        tick(self)

    monkeypatch.setattr(BatchWatch, "tick", counted)
    app = App("t", telemetry=False)
    release = threading.Event()
    app.resource("slow://x")(lambda: "done" if release.wait(5) else "late")
    app.resource("fast://x")(lambda: "fast")
    server, conn, out = block_session(app)
    at_answer: dict[Any, int] = {}

    def send_bytes(data: bytes) -> None:
        for line in data.splitlines():
            message = orjson.loads(line)
            at_answer[message["id"]] = len(ticks)
            out.append(message)

    conn.send_bytes = send_bytes
    try:
        conn.feed_lines([read(1, "slow://x"), read(2, "fast://x")])
        conn.end_of_input()
        got = await answered(out, {2})
        assert got[2]["result"]["contents"][0]["text"] == "fast"
        assert at_answer[2] == 2, f"answered after tick {at_answer[2]}"
        release.set()
        await answered(out, {1, 2})
    finally:
        release.set()
        server.close()


@pytest.mark.parametrize("reused", [False, True], ids=["cancelled", "cancelled-and-reused"])
async def test_a_read_cancelled_while_its_worker_frees_its_id(reused: bool) -> None:
    # the worker looks up the read's id, and the loop cancels the read (dropping the id) before the
    # worker's pop: the other replies of the batch still go out, their ids freed; and when a new
    # request took the id meanwhile too, it stays in flight (counted, its id not free for a third)
    app = App("t", telemetry=False)
    app.resource("text://a")(lambda: "hello")
    server, conn, out = block_session(app)
    newcomer = object()  # the new request with id 2, as the loop would register it

    class Meanwhile(dict[Any, Any]):
        def get(self, key: Any, default: Any = None) -> Any:
            found = super().get(key, default)
            if key == 2 and found is not None and found is not newcomer \
                    and threading.current_thread() is not threading.main_thread():
                conn.cancel(2)  # what the loop thread may do between the worker's two steps
                if reused:
                    self[2] = newcomer
            return found

    conn.inflight = Meanwhile()
    try:
        conn.feed_lines([read(1, "text://a"), read(2, "text://a"), read(3, "text://a")])
        conn.end_of_input()
        assert set(await answered(out, {1, 3})) == {1, 3}
        left = {2: newcomer} if reused else {}
        for _ in range(100):
            if dict(conn.inflight) == left:
                break
            await asyncio.sleep(0.01)
        assert dict(conn.inflight) == left
    finally:
        conn.inflight.clear()
        server.close()


async def test_a_subscribe_while_a_worker_starts_the_seen_table_over_is_confirmed() -> None:
    # reads in workers start a session's table of versions read over when it is full: a
    # subscribe on the loop that looks a URI up in it must not find it, then miss it
    app = App("t", telemetry=False)
    app.resource("text://a")(lambda: "hello")
    server, conn, out = block_session(app)

    class ClearedMeanwhile(dict[str, str]):
        def __contains__(self, key: object) -> bool:
            found = super().__contains__(key)
            self.clear()  # what a worker's read of yet another URI may do right now
            return found

    try:
        conn.feed_lines([read(1, "text://a")])
        conn.end_of_input()
        await answered(out, {1})
        conn.seen = ClearedMeanwhile(conn.seen)
        conn.feed_lines([orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                                       "params": {"uri": "text://a"}})])
        conn.end_of_input()
        got = await answered(out, {2})
        assert got[2].get("result") == {}, got[2]
    finally:
        server.close()


async def test_a_batch_stuck_behind_busy_workers_is_queued_once_not_at_every_tick() -> None:
    # every worker held by a blocking read: the reads left of its batch wait in one queued job, as
    # the general path's reads would, so that later requests are not refused for max_queued_jobs
    # (the batch used to be queued again at every tick, 100 jobs a second)
    app = App("t", telemetry=False, max_workers=1)
    app.limits = app.limits.replace(max_queued_jobs=20)
    release = threading.Event()
    app.resource("slow://x")(lambda: "done" if release.wait(5) else "late")
    app.resource("fast://x")(lambda: "fast")
    server, conn, out = block_session(app)
    try:
        conn.feed_lines([read(1, "slow://x"), read(2, "fast://x")])  # one batch: 2 behind 1
        conn.end_of_input()
        await asyncio.sleep(0.5)  # about 50 ticks
        conn.feed_lines([read(3, "fast://x")])  # a batch of its own, queued behind the first
        conn.end_of_input()
        await asyncio.sleep(0.05)
        release.set()
        got = await answered(out, {1, 2, 3})
        for rid in (1, 2, 3):
            assert "result" in got[rid], got[rid]
    finally:
        release.set()
        server.close()
