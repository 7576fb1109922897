"""resourcekit serving ``BENCH_FILE`` as one streamable resource (benchmarks/stream_bench.py)."""

from __future__ import annotations

import os
from pathlib import Path

from resourcekit import App, Limits

app = App("stream-bench", limits=Limits(max_message_size=256 * 1024 * 1024))


@app.resource("file:///bench.bin", streamable=True, mime_type="application/octet-stream")
def bench() -> Path:
    return Path(os.environ["BENCH_FILE"])
