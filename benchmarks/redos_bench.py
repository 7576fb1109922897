"""Micro-benchmark (not a test): does matching a hostile URI cost time linear in its length?

For templates where a value may hold what follows it, times a failing match of a
64 KiB and of a 1 MiB URI built so that a backtracking matcher would try every split,
and prints the ratio (16 is linear; the bound the project holds to is 20).

Then, end to end: a real ``resourcekit run`` (stdio) serving those templates gets a
stream of hostile reads (near-miss URIs just under the URI length limit, and 1 MiB URIs
that the limit refuses) while a second task pings it every 20 ms over the same pipe; the
worst and the 99th percentile ping round trip are printed (the bound held to is 50 ms).

    python benchmarks/redos_bench.py
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from resourcekit.templates import UriTemplate

CASES: list[tuple[str, Callable[[int], str]]] = [
    ("x://{a}-{b}", lambda n: "x://" + "a-" * (n // 2) + "/"),
    ("db://{host}:{port}", lambda n: "db://" + "a:" * (n // 2) + "/"),
    ("x://{+dir}/{+file}", lambda n: "x://" + "a/" * (n // 2) + "#"),
    ("x://{a}{b}{c}", lambda n: "x://" + "a" * n + "/"),
]
SIZES = (64 * 1024, 1024 * 1024)


def best_ms(template: UriTemplate, uri: str, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        assert template.match(uri) is None
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    print(f"{'template':22} {'64 KiB ms':>10} {'1 MiB ms':>10} {'ratio':>7}")
    for text, make in CASES:
        template = UriTemplate(text)
        small, big = (best_ms(template, make(size)) for size in SIZES)
        print(f"{text:22} {small:>10.2f} {big:>10.2f} {big / small:>6.1f}x")


HOSTILE = [
    "x://" + "a-" * 4000 + "/",
    "db://" + "a:" * 4000 + "/",
    "files://" + "a/" * 4000 + "#",
    "abc://" + "a" * 8000 + "/",
    "db://" + "a:" * (512 * 1024) + "/",  # 1 MiB: refused by max_uri_length before matching
]


async def pings_under_attack(seconds: float = 5.0) -> tuple[float, float, int, int]:
    app = Path(__file__).resolve().parent / "servers" / "redos_app.py"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "resourcekit", "run", str(app), limit=1 << 24,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    waiting: dict[object, asyncio.Future[float]] = {}
    answered = {"hostile": 0}

    async def pump() -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            message = orjson.loads(line)
            future = waiting.pop(message.get("id"), None)
            if future is not None:
                future.set_result(time.perf_counter())
            else:
                answered["hostile"] += 1

    def send(message: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(orjson.dumps(message) + b"\n")

    reader = asyncio.create_task(pump())
    send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}}})
    waiting["init"] = asyncio.get_running_loop().create_future()
    await waiting["init"]
    stop = time.perf_counter() + seconds
    sent = 0

    async def attack() -> None:
        nonlocal sent
        while time.perf_counter() < stop:
            for uri in HOSTILE:
                sent += 1
                send({"jsonrpc": "2.0", "id": sent, "method": "resources/read", "params": {"uri": uri}})
            assert proc.stdin is not None
            await proc.stdin.drain()
            while sent - answered["hostile"] > 50:  # keep a backlog, not an unbounded one
                await asyncio.sleep(0.001)

    delays: list[float] = []

    async def ping() -> None:
        n = 0
        while time.perf_counter() < stop:
            await asyncio.sleep(0.02)
            n += 1
            rid = f"ping-{n}"
            future = waiting[rid] = asyncio.get_running_loop().create_future()
            start = time.perf_counter()
            send({"jsonrpc": "2.0", "id": rid, "method": "ping"})
            delays.append((await future) - start)

    await asyncio.gather(attack(), ping())
    proc.kill()
    await proc.wait()
    reader.cancel()
    delays.sort()
    p99 = delays[int(len(delays) * 0.99) - 1]
    return max(delays) * 1000, p99 * 1000, len(delays), answered["hostile"]


def end_to_end() -> None:
    worst, p99, pings, hostile = asyncio.run(pings_under_attack())
    print(f"\nping under attack: {pings} pings, worst {worst:.1f} ms, p99 {p99:.1f} ms, "
          f"{hostile} hostile reads answered (bound: 50 ms)")


if __name__ == "__main__":
    main()
    end_to_end()
