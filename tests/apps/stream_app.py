"""An app with ``streamable=True`` resources (SEP-2532 ``resources/stream``), for tests/test_stream.py.

The streamed file is ``$STREAM_DIR/big.bin`` (the test makes it, sparse); ``STREAM_LIMIT`` sets
``Limits.max_byte_streams``, ``STREAM_STALL`` ``Limits.stream_stall_timeout``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterable, Iterable
from pathlib import Path

from resourcekit import App, Limits, ResourceNotFound

DIR = Path(os.environ.get("STREAM_DIR", "."))
app = App("stream", limits=Limits(max_byte_streams=int(os.environ.get("STREAM_LIMIT", "64")),
                                  stream_stall_timeout=float(os.environ.get("STREAM_STALL", "30"))))


@app.resource("file:///big.bin", streamable=True, mime_type="application/octet-stream")
def big() -> Path:
    return DIR / "big.bin"


@app.template("file:///files/{name}", streamable=True)
def files(name: str) -> Path:
    path = DIR / name
    if "/" in name or not path.is_file():
        raise ResourceNotFound(f"file:///files/{name}")
    return path


@app.resource("mem://hello", streamable=True, mime_type="text/plain")
def hello() -> str:
    return "hello, stream\n"


@app.resource("mem://blob", streamable=True, mime_type="image/png")
async def blob() -> bytes:
    return bytes(range(256)) * 40


@app.resource("gen://counting", streamable=True, mime_type="text/csv")
def counting() -> Iterable[bytes]:
    for i in range(100_000):
        yield b"%d,%d\n" % (i, i * i)


@app.resource("gen://async", streamable=True, mime_type="text/plain")
async def ticking() -> AsyncIterable[bytes]:
    for i in range(5):
        await asyncio.sleep(0.01)
        yield f"tick {i}\n".encode()


@app.resource("gen://slow", streamable=True)
async def slow() -> AsyncIterable[bytes]:
    yield b"x" * 1024
    await asyncio.sleep(30)
    yield b"never"


@app.resource("gen://failing-first", streamable=True)
def failing_first() -> Iterable[bytes]:
    raise RuntimeError("secret detail of the first chunk")
    yield b""  # a generator


@app.resource("gen://failing-later", streamable=True)
def failing_later() -> Iterable[bytes]:
    yield b"a" * 100_000
    raise RuntimeError("secret detail of a later chunk")


@app.resource("mem://plain")
def plain() -> str:
    return "not streamable"
