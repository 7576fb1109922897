"""Change-tracking costs (not a test): how fast notify_changed reaches subscribers.

    python benchmarks/notify_bench.py

1. 1,000 template instances subscribed on one session; their content changes; time from
   calling ``notify_changed`` for each of them until all 1,000 notifications arrived.
2. The cost of a no-op check: ``notify_changed`` on a subscribed, unchanged resource, one
   call at a time (each call re-reads and hashes it and sends nothing).
3. A no-op burst: 10,000 calls in a row coalesce into a handful of re-reads.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from resourcekit import App
from resourcekit.testing import Client

N = 1000


async def fan_out() -> float:
    app = App("bench")
    state = {"n": 0}
    app.template("item://{i}")(lambda i: f"{i}:{state['n']}")
    async with Client(app) as client:
        for i in range(N):
            await client.subscribe(f"item://{i}")
        while app.tracker._dirty or app.tracker._check_scheduled:
            await asyncio.sleep(0.01)
        state["n"] += 1
        started = time.perf_counter()
        for i in range(N):
            app.notify_changed(f"item://{i}")
        for _ in range(N):
            await client.next_notification(10)
        return time.perf_counter() - started


async def noop_check() -> tuple[float, float, int]:
    app = App("bench")
    app.resource("same://x")(lambda: "unchanged content " * 10)
    async with Client(app) as client:
        await client.subscribe("same://x")
        await asyncio.sleep(0.05)
        samples = []
        for _ in range(200):
            before = app.tracker.checks
            started = time.perf_counter()
            app.notify_changed("same://x")
            while app.tracker.checks == before:
                await asyncio.sleep(0)
            samples.append(time.perf_counter() - started)
        before = app.tracker.checks
        started = time.perf_counter()
        for _ in range(10_000):
            app.notify_changed("same://x")
        while app.tracker._dirty or app.tracker._check_scheduled:
            await asyncio.sleep(0)
        burst = time.perf_counter() - started
        assert client.notifications.empty()
        return statistics.median(samples), burst, app.tracker.checks - before


def main() -> None:
    fan = statistics.median(asyncio.run(fan_out()) for _ in range(3))
    check, burst, rereads = asyncio.run(noop_check())
    print(f"notify_changed -> {N} subscribed resources notified (one session): {fan * 1000:.1f} ms "
          f"({fan / N * 1e6:.1f} µs per resource)")
    print(f"no-op check (re-read + hash, nothing sent): {check * 1e6:.0f} µs median")
    print(f"10,000 no-op notify_changed calls in a burst: {burst * 1000:.1f} ms, {rereads} re-read(s)")


if __name__ == "__main__":
    main()
