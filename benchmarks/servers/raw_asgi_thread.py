"""The floor of a framework on uvicorn that keeps sync handlers off the event loop.

``raw_asgi.py`` with one change (its ``BODY``): the reply (``_raw_reply.reply``, where a framework would call
the user's sync handler) is made in a worker thread, as the rule "a blocking handler never
stalls other requests" asks.  Done as cheaply as that can be: the reads of one loop iteration
go to one worker as one job (a ``SimpleQueue`` put, so one wake-up at most), the worker makes
their replies and hands them back with one ``call_soon_threadsafe`` while the loop has not
taken the last ones yet, and the loop only wakes each request's future.  No stall watch, no
limits, no cancellation: what remains is what crossing to a thread and back costs on this
machine, which no framework that honours the rule avoids.

Run: BENCH_PORT=8000 python benchmarks/servers/raw_asgi_thread.py   (BENCH_WORKLOAD=small)
"""

import asyncio
import threading
from collections import deque
from queue import SimpleQueue

import orjson
import raw_asgi
from _raw_reply import reply

_jobs = SimpleQueue()  # lists of (msg, future), one per loop iteration
_done = deque()  # (future, body) made by the worker, not yet handed to the loop
_state = {"batch": None, "waking": False, "loop": None}


def _flush():
    _state["waking"] = False
    while _done:
        future, data = _done.popleft()
        if not future.done():
            future.set_result(data)


def _work():
    loop = None
    while True:
        batch = _jobs.get()
        loop = loop or _state["loop"]
        for msg, future in batch:
            _done.append((future, orjson.dumps(reply(msg))))
        if not _state["waking"]:
            _state["waking"] = True
            loop.call_soon_threadsafe(_flush)


def _submit():
    batch, _state["batch"] = _state["batch"], None
    _jobs.put(batch)


def _in_worker(msg):
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    batch = _state["batch"]
    if batch is None:
        batch = _state["batch"] = []
        if _state["loop"] is None:
            _state["loop"] = loop
            threading.Thread(target=_work, daemon=True).start()
        loop.call_soon(_submit)
    batch.append((msg, future))
    return future


async def body(msg):
    """A read's body made in the worker; any other reply as raw_asgi.py makes it."""
    return await _in_worker(msg) if msg.get("method") == "resources/read" else orjson.dumps(reply(msg))


raw_asgi.BODY = body

if __name__ == "__main__":
    raw_asgi.serve()
