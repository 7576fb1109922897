"""Micro-benchmark (not a test): does template matching cost grow with the number of templates?

Builds a resourcekit App with 10 and with 10,000 templates (``t{i}://item/{id}``, each with
its own scheme) and times

  - ``app.router.match(uri)`` with its URI cache cleared each time (ns per cold match)
  - a read through the in-memory ``resourcekit.testing.Client``  (µs per read)

for a URI of the last template registered (the worst case for a linear scan).

    python benchmarks/match_bench.py
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from resourcekit import App

SIZES = (10, 10_000)


def build(n: int) -> App:
    app = App(f"match-{n}")

    def make(i: int) -> Callable[[str], str]:
        def item(id: str) -> str:
            return f"item {id} of template {i}"

        return item

    for i in range(n):
        app.template(f"t{i}://item/{{id}}")(make(i))
    return app


def per_call_ns(fn: Callable[[], Any], min_seconds: float = 0.5) -> float:
    """Best of 5 batches, each about min_seconds/5 long."""
    number = 1
    while True:  # calibrate
        t = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t
        if dt > min_seconds / 5:
            break
        number *= 2
    best = dt / number
    for _ in range(4):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best * 1e9


def bench_router(app: App, uri: str) -> float | None:
    """Cold matching: the router's cache of recent URIs is cleared before every match."""
    router = getattr(app, "router", None)
    match = getattr(router, "match", None)
    if match is None:
        return None
    m = match(uri)
    assert m is not None, f"router did not match {uri}"
    cache = getattr(router, "_cache", {})

    def cold() -> Any:
        cache.clear()
        return match(uri)

    return per_call_ns(cold)


def bench_client(app: App, uri: str, reads: int = 2000) -> float | None:
    try:
        from resourcekit.testing import Client
    except ImportError:
        return None

    async def go() -> float:
        async with Client(app) as client:
            text = await client.read_text(uri)
            assert text.startswith("item 42 of template"), text
            best = float("inf")
            for _ in range(3):
                t = time.perf_counter()
                for _ in range(reads):
                    await client.read_text(uri)
                best = min(best, (time.perf_counter() - t) / reads)
            return best * 1e6

    return asyncio.run(go())


def main() -> None:
    rows: dict[int, tuple[float | None, float | None, float]] = {}
    for n in SIZES:
        t = time.perf_counter()
        app = build(n)
        build_s = time.perf_counter() - t
        uri = f"t{n - 1}://item/42"
        rows[n] = (bench_router(app, uri), bench_client(app, uri), build_s)
    print(f"{'templates':>10} {'build s':>9} {'router.match ns':>16} {'Client read µs':>15}")
    for n, (ns, us, build_s) in rows.items():
        print(
            f"{n:>10,} {build_s:>9.3f} {ns if ns is None else f'{ns:,.0f}':>16} "
            f"{us if us is None else f'{us:,.1f}':>15}"
        )
    small, big = rows[SIZES[0]], rows[SIZES[-1]]
    if small[0] and big[0]:
        print(f"router.match ratio {SIZES[-1]:,}/{SIZES[0]}: {big[0] / small[0]:.2f}x")
    if small[1] and big[1]:
        print(f"Client read ratio {SIZES[-1]:,}/{SIZES[0]}: {big[1] / small[1]:.2f}x")


if __name__ == "__main__":
    main()
