"""Handlers that raise what is not an Exception: a cancellation nobody asked for (as a handler
awaiting a shared task another client's cancel cancelled would), SystemExit and KeyboardInterrupt;
sync and async (issue 29, point 1)."""

import asyncio

from resourcekit import App

app = App("raising")
RAISED = {"cancelled": asyncio.CancelledError, "exit": SystemExit, "interrupt": KeyboardInterrupt}


@app.template("sync://{what}")
def raise_sync(what: str) -> str:
    raise RAISED[what]()


@app.template("async://{what}")
async def raise_async(what: str) -> str:
    await asyncio.sleep(0)
    raise RAISED[what]()


@app.resource("fine://x")
def fine() -> str:
    return "fine"
