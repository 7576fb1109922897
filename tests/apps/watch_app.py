"""Watchers for tests/test_watching.py.  ``watch://{name}`` serves the file $WATCH_DATA/name; its
watcher checks the file's mtime and size and says ``notify_changed`` when they move.  Each watcher
notes ``start URI PID`` and ``stop URI PID`` in $WATCH_LOG.  Contents past 64 bytes are never
embedded in a notification (``Limits.max_embedded_bytes``); ``WATCH_IDLE`` sets
``Limits.session_idle_timeout``."""

import asyncio
import os
from pathlib import Path

from resourcekit import App, Context, Limits, ResourceNotFound

app = App("watch-demo", limits=Limits(max_embedded_bytes=64,
                                      session_idle_timeout=float(os.environ.get("WATCH_IDLE", "600"))))


def note(event: str, uri: str) -> None:
    path = os.environ.get("WATCH_LOG")
    if path:
        with open(path, "a") as log:
            log.write(f"{event} {uri} {os.getpid()}\n")


def stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


@app.lifespan
async def data():
    yield {"data": Path(os.environ.get("WATCH_DATA", "."))}


@app.template("watch://{name}")
def page(name: str, ctx: Context) -> str:
    path = ctx.state["data"] / name
    if not path.is_file():
        raise ResourceNotFound(ctx.uri)
    return path.read_text()


@app.watch("watch://{name}", grace=float(os.environ.get("WATCH_GRACE", "0.5")))
async def watch_page(name: str, ctx: Context) -> None:
    note("start", ctx.uri)
    path = ctx.state["data"] / name
    seen = stat(path)
    try:
        while True:
            await asyncio.sleep(0.05)
            now = stat(path)
            if now != seen:
                seen = now
                app.notify_changed(ctx.uri)
    finally:
        note("stop", ctx.uri)
