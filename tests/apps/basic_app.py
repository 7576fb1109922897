"""The app the end-to-end tests serve: one of everything, with small pages."""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
import time
import uuid
from decimal import Decimal
from typing import Literal

from resourcekit import App, Blob, Context, Text

app = App("basic", version="9.9.9", page_size=7, instructions="for tests")


class Color(enum.Enum):
    red = "red"
    green = "green"
    blue = "blue"


for i in range(20):
    app.resource(f"item://{i}", name=f"item-{i}", description=f"Item {i}")(lambda i=i: f"item {i}")


@app.resource("text://hello", title="Hello")
def hello() -> str:
    """Says hello."""
    return "hello, world"


@app.resource("json://config")
def config() -> dict[str, object]:
    return {"theme": "dark", "n": 3}


@app.resource("bin://data.bin")
def data() -> bytes:
    return bytes(range(256))


@app.resource("multi://both")
def both() -> list[Text | Blob]:
    return [Text("first", uri="multi://both/a"), Blob(b"\x00\x01", "application/x-two", uri="multi://both/b")]


@app.resource("noisy://print")
def noisy() -> str:
    print("this must not reach stdout")
    return "quiet"


@app.resource("boom://fail")
def fail() -> str:
    raise RuntimeError("secret internal detail")


@app.resource("slow://sleep")
async def slow() -> str:
    await asyncio.sleep(30)
    return "slept"


@app.resource("slow://sync")
def slow_sync() -> str:
    time.sleep(2)
    return "slept sync"


@app.resource("ctx://me")
def me(ctx: Context) -> dict[str, object]:
    ctx.log("info", "reading me")
    return {"uri": ctx.uri, "version": ctx.protocol_version}


@app.template("user://{user_id}/profile{?verbose}")
def profile(user_id: int, verbose: bool = False) -> dict[str, object]:
    """A user's profile."""
    return {"id": user_id, "verbose": verbose, "type": type(user_id).__name__}


@app.template("color://{color}", complete={})
def color(color: Color) -> str:
    return f"color {color.value}"


@app.template("mode://{mode}")
def mode(mode: Literal["fast", "slow"]) -> str:
    return mode


@app.template("typed://{u}/{d}/{t}/{x}")
def typed(u: uuid.UUID, d: dt.date, t: dt.datetime, x: Decimal) -> dict[str, str]:
    return {"u": str(u), "d": d.isoformat(), "t": t.isoformat(), "x": str(x)}


@app.template("path://{+rest}")
def path(rest: str) -> str:
    return rest


@app.template("city://{country}/{city}", complete={
    "city": lambda value, ctx: [c for c in {"fr": ["paris", "lyon"], "de": ["berlin"]}
                                .get(ctx.get("country", ""), []) if c.startswith(value)],
})
def city(country: str, city: str) -> str:
    return f"{city}, {country}"


@app.template("row://{n}", lister=lambda offset, limit: ({"n": n} for n in range(offset, min(offset + limit, 10))))
def row(n: int) -> str:
    return f"row {n}"
