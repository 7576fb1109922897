"""Cancellation (``notifications/cancelled``): a cancelled request says nothing and never runs,
the rest of its batch is answered."""

from __future__ import annotations

import asyncio
import threading

import pytest

from resourcekit import App
from tests.support.session import answered_in, connected
from tests.support.wire import read_message

pytestmark = pytest.mark.anyio


# --- findings 8 and 13: workers, in-flight requests, cancelled batch members ----------------------


async def test_a_cancelled_queued_job_never_runs() -> None:
    app = App("t", max_workers=1)
    release = threading.Event()
    calls: list[str] = []
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    app.resource("counted://x")(lambda: calls.append("ran") or "x")
    server, conn, out = connected(app)
    try:
        conn.receive(read_message(1, "slow://x"))
        conn.receive(read_message(2, "counted://x"))  # queued behind the only worker
        conn.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        release.set()
        await answered_in(out, {1})
        await asyncio.sleep(0.1)
        assert calls == [] and all(m.get("id") != 2 for m in out)
    finally:
        server.close()


async def test_a_batch_with_a_cancelled_member_is_answered() -> None:
    app = App("t")
    release = threading.Event()
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    server, conn, out = connected(app, "2025-03-26")
    try:
        conn.receive([read_message(1, "slow://x"), {"jsonrpc": "2.0", "id": 2, "method": "ping"}])
        conn.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        got = await answered_in(out, {2}, 1.0)
        assert got[2]["result"] == {}
        assert [m for m in out if isinstance(m, list)] == [[got[2]]]
        release.set()
    finally:
        server.close()
