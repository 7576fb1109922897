"""The floor for streaming a file over HTTP (benchmarks/stream_bench.py): a bare ASGI callable on
uvicorn with httptools and uvloop that answers every POST with the file ``BENCH_FILE`` read in
64 KiB chunks on the loop (no thread, no protocol, no ranges): ``python stream_floor.py PORT``."""

from __future__ import annotations

import os
import sys
from typing import Any

import uvicorn

PATH = os.environ["BENCH_FILE"]
CHUNK = 64 * 1024


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    size = os.path.getsize(PATH)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/octet-stream"), (b"content-length", b"%d" % size)]})
    with open(PATH, "rb") as f:
        while chunk := f.read(CHUNK):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), http="httptools", loop="uvloop",
                access_log=False, server_header=False, date_header=False, log_level="warning")
