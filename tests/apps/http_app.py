"""Fixture for the HTTP tests: changing content, slow reads, log messages, a subscriber count.

Run as a script (``python http_app.py PORT``) it serves with tiny limits, so the tests
can reach session expiry, the caps and keep-alive lines quickly.
"""

from __future__ import annotations

import asyncio
import os
import sys

from resourcekit import App, Context

app = App("http-fixture", max_message_size=64 * 1024)
state = {"n": 0, "held": 0}


@app.resource("counter://value")
def counter() -> str:
    return f"n={state['n']}"


@app.resource("control://bump")
def bump() -> str:
    state["n"] += 1
    app.notify_changed("counter://value")
    return str(state["n"])


@app.resource("debug://subscribers")
def subscribers() -> str:
    """How many sessions or listen streams watch counter://value (to see subscriptions end)."""
    return str(app.tracker.subscribers("counter://value"))


@app.resource("slow://cancellable")
async def slow() -> str:
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        marker = os.environ.get("RESOURCEKIT_CANCEL_MARKER")
        if marker:
            with open(marker, "w") as f:
                f.write("cancelled")
        raise
    return "finished"


@app.resource("slow://logged")
async def slow_logged(ctx: Context) -> str:
    """A log message at once, the answer a second later: an SSE stream to resume."""
    ctx.log("info", "started")
    await asyncio.sleep(1.0)
    return "done"


@app.resource("slow://held")
async def slow_held() -> str:
    """In flight until cancelled or its session ends: keeps a session busy for a test."""
    state["held"] += 1
    await asyncio.Event().wait()
    return "never"


@app.resource("debug://held")
def held() -> str:
    """How many slow://held reads have started."""
    return str(state["held"])


@app.resource("log://chatty")
def chatty(ctx: Context) -> str:
    ctx.log("info", "about to answer")
    return "answered"


@app.template("item://{n}")
def item(n: int) -> str:
    return f"item {n}"


if __name__ == "__main__":
    idle = float(os.environ.get("HTTP_APP_IDLE_TIMEOUT", "0.5"))
    app.run("http", port=int(sys.argv[1]), session_idle_timeout=idle, max_sessions=2, max_streams=1,
            keepalive=0.2)
