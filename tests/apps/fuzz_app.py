"""The app the fuzz suite serves: quick, never-failing handlers and a small message limit.

Every handler answers at once and never raises, so any internal error (-32603 without
``data.limit``) a fuzzed request provokes is a bug of the server, not of the app.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from resourcekit import App, Context

app = App("fuzz", version="1.0.0", page_size=3, max_message_size=64 * 1024, instructions="fuzz target")


@app.resource("text://hello", title="Hello")
def hello() -> str:
    return "hello"


@app.resource("json://config")
def config() -> dict[str, object]:
    return {"n": 3, "nested": {"ok": True}}


@app.resource("bin://bytes")
def data() -> bytes:
    return bytes(range(16))


@app.resource("async://quick")
async def quick() -> str:
    await asyncio.sleep(0)
    return "quick"


@app.resource("log://chatty")
def chatty(ctx: Context) -> str:
    ctx.log("info", "answering")
    return "chatty"


for i in range(8):
    app.resource(f"item://{i}", name=f"item-{i}")(lambda i=i: f"item {i}")


@app.template("user://{user_id}/profile{?verbose}")
def profile(user_id: int, verbose: bool = False) -> dict[str, object]:
    return {"id": user_id, "verbose": verbose}


@app.template("mode://{mode}", complete={})
def mode(mode: Literal["fast", "slow"]) -> str:
    return mode


@app.template("path://{+rest}")
def path(rest: str) -> str:
    return rest


@app.template("row://{n}", lister=lambda offset, limit: ({"n": n} for n in range(offset, min(offset + limit, 6))))
def row(n: int) -> str:
    return f"row {n}"
