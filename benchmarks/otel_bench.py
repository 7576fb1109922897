"""What telemetry costs per request, in the protocol core (no transport): µs per resources/read.

    python benchmarks/otel_bench.py [--reads 20000] [--rounds 5]

Each configuration runs in a fresh process, the configurations alternating round by round;
medians are printed. Configurations (issue 16, point 6):

- ``absent``: ``opentelemetry`` cannot be imported (blocked in ``sys.modules``);
- ``api``: the API imported, no provider configured: the request path checks one flag;
- ``sdk-1%``: the SDK, ``ParentBased(TraceIdRatioBased(0.01))``, a batch processor exporting nowhere;
- ``sdk-all``: the same with every request sampled.

This measures the core alone (sync reads through the worker threads, 64 in flight); for W1
and W5 over real stdio and HTTP, run ``benchmarks/run.py`` with ``BENCH_OTEL`` set (see
``benchmarks/README.md``, "Telemetry overhead").
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODES = ("absent", "api", "sdk-1%", "sdk-all")


def configure(mode: str) -> None:
    if mode == "absent":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent / "servers"))
    import _otel  # the benchmark servers' set-up (BENCH_OTEL), shared

    _otel.configure(mode)


async def child(mode: str, reads: int, telemetry: bool = True) -> float:
    configure(mode)
    sys.path.insert(0, str(ROOT))
    from resourcekit import App
    from resourcekit.core import Server

    app = App("bench", telemetry=telemetry)

    @app.resource("bench://small")
    def small() -> str:  # sync, as in W1: it runs in a worker thread
        return "hello"

    server = Server(app, "pipe")
    server.start()
    loop = asyncio.get_running_loop()
    waiting: list[asyncio.Future[None]] = []
    answered = 0
    target = 1

    def send(message: object) -> None:
        nonlocal answered
        answered += 1
        if answered >= target and waiting and not waiting[0].done():
            waiting[0].set_result(None)

    async def until(count: int) -> None:
        nonlocal target
        target = count
        if answered < count:
            waiting[:] = [loop.create_future()]
            await waiting[0]

    conn = server.connect(send)
    conn.receive({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}})
    await until(1)
    messages = [{"jsonrpc": "2.0", "id": i, "method": "resources/read", "params": {"uri": "bench://small"}}
                for i in range(1, reads + 1)]
    start = time.perf_counter()
    for i in range(0, reads, 64):  # batches of 64 in flight
        for message in messages[i:i + 64]:
            conn.receive(message)
        await until(1 + min(i + 64, reads))
    elapsed = time.perf_counter() - start
    server.close()
    return elapsed / reads * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reads", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", choices=MODES)
    args = parser.parse_args()
    if args.child:
        print(asyncio.run(child(args.child, args.reads)))
        return
    results: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            out = subprocess.run([sys.executable, __file__, "--child", mode, "--reads", str(args.reads)],
                                 capture_output=True, text=True, check=True, cwd=ROOT)
            results[mode].append(float(out.stdout))
    base = statistics.median(results["absent"])
    api = statistics.median(results["api"])
    print(f"{'configuration':<10} {'µs/read':>8} {'vs absent':>10} {'throughput vs api':>18}")
    for mode in MODES:
        value = statistics.median(results[mode])
        print(f"{mode:<10} {value:>8.2f} {value / base:>9.3f}x {api / value:>17.2f}x")


if __name__ == "__main__":
    main()
