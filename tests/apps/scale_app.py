"""Fixture for the scale-out tests: content every worker reads from one directory.

``$SCALE_DATA/<name>`` holds the text of ``data://<name>``; ``poll://value`` is polled
every 0.2 s; ``control://touch/<name>`` announces a change of ``data://<name>`` from
whichever worker serves it; ``worker://pid`` says which process answered;
``slow://wait`` writes ``$SCALE_DATA/slow-started`` and then takes 60 s (to be cancelled);
``slow://logged`` logs, waits for ``$SCALE_DATA/release``, logs again and answers (an SSE
response to resume elsewhere).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from resourcekit import App, Context

app = App("scale-fixture", page_size=3)  # two pages of resources: a walk crosses workers
DATA = Path(os.environ.get("SCALE_DATA", "."))


def _text(name: str) -> str:
    try:
        return (DATA / name).read_text()
    except FileNotFoundError:
        return ""


@app.template("data://{name}")
def data(name: str) -> str:
    return _text(name)


@app.resource("poll://value", poll=0.2)
def polled() -> str:
    return _text("polled")


@app.template("control://touch/{name}")
def touch(name: str) -> str:
    app.notify_changed(f"data://{name}")
    return "ok"


@app.resource("control://list-changed")
def list_changed() -> str:
    app.notify_list_changed()
    return "ok"


@app.resource("worker://pid")
def pid() -> str:
    return str(os.getpid())


@app.resource("slow://wait")
async def slow() -> str:
    (DATA / "slow-started").write_text("1")
    await asyncio.sleep(60)
    return "late"


@app.resource("slow://logged")
async def slow_logged(ctx: Context) -> str:
    ctx.log("info", "started")
    while not (DATA / "release").exists():
        await asyncio.sleep(0.05)
    ctx.log("info", "finishing")
    return "done"
