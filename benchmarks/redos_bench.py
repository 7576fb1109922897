"""Micro-benchmark (not a test): does matching a hostile URI cost time linear in its length?

For templates where a value may hold what follows it, times a failing match of a
64 KiB and of a 1 MiB URI built so that a backtracking matcher would try every split,
and prints the ratio (16 is linear; the bound the project holds to is 20).

    python benchmarks/redos_bench.py
"""

from __future__ import annotations

import time
from collections.abc import Callable

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


if __name__ == "__main__":
    main()
