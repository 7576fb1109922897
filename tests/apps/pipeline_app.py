"""An app for the request pipeline's tests: a big text, a middling one (under the size a worker
writes at once), a slow template, a waiting async one, a fast resource and a template whose
instances change on every poll."""

import asyncio
import time

from resourcekit import App

app = App("pipeline")
BIG = "x" * (1 << 20)


@app.resource("big://text")
def big() -> str:
    return BIG


@app.resource("mid://text")
def mid() -> str:
    return MID


MID = "m" * (200 << 10)


@app.template("slow://{n}")
def slow(n: int) -> str:
    time.sleep(0.3)
    return f"slow {n}"


@app.template("wait://{n}")
async def wait(n: int) -> str:
    await asyncio.sleep(2)
    return f"waited {n}"


@app.template("tick://{name}", poll=0.05)
def tick(name: str) -> str:
    return str(time.monotonic_ns())


@app.resource("fast://x")
def fast() -> str:
    return "fast"
