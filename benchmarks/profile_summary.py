"""Summarise py-spy collapsed stacks (``--format raw``) written by ``BENCH_PYSPY_DIR=dir run.py``.

    python benchmarks/profile_summary.py /tmp/prof/resourcekit-w1-0.txt [--top 25]

Prints where the samples fall: self time by function, inclusive time by function and by
source file (idle samples, the event loop waiting in select/epoll, are shown separately).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
IDLE = ("select (selectors.py", "poll (selectors.py", "epoll", "_worker (concurrent/futures/thread.py",
        "wait (threading.py", "get (queue.py")


def parse(path: Path) -> list[tuple[list[str], int]]:
    stacks = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        if frames and frames[0].startswith("thread ("):
            frames = frames[1:]
        stacks.append((frames, int(count)))
    return stacks


ROOT = str(Path(__file__).resolve().parent.parent) + "/"  # this checkout, wherever it lives


def short(frame: str) -> str:
    m = FRAME.match(frame)
    if not m:
        return frame
    file = m.group("file")
    for marker in ("site-packages/", "lib/python3.", ROOT):
        if marker in file:
            file = file.split(marker, 1)[1]
            if marker == "lib/python3.":
                file = "stdlib/" + file.split("/", 1)[-1]
    return f"{m.group('func')} ({file})"


def file_of(frame: str) -> str:
    m = FRAME.match(short(frame))
    return m.group("file") if m else "?"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("path", type=Path)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    stacks = parse(args.path)
    total = sum(c for _, c in stacks)
    idle = sum(c for f, c in stacks if f and any(k in f[-1] for k in IDLE))
    busy = [(f, c) for f, c in stacks if not (f and any(k in f[-1] for k in IDLE))]
    nbusy = sum(c for _, c in busy)
    print(f"{total} samples, {idle} idle ({idle / max(total, 1):.0%}), {nbusy} busy; percentages of busy")
    self_t: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    files: Counter[str] = Counter()
    for frames, c in busy:
        if not frames:
            continue
        self_t[short(frames[-1])] += c
        for f in {short(x) for x in frames}:
            incl[f] += c
        for f in {file_of(x) for x in frames}:
            files[f] += c
    for title, counter in (("self", self_t), ("inclusive", incl), ("inclusive by file", files)):
        print(f"\n-- {title}")
        for name, c in counter.most_common(args.top):
            print(f"{100 * c / max(nbusy, 1):5.1f}%  {name}")


if __name__ == "__main__":
    main()
