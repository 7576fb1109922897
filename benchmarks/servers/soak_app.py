"""The app `benchmarks/soak.py` serves, over stdio and HTTP at once (one process each).

Started the way users start an app::

    python -m resourcekit run benchmarks/servers/soak_app.py
    python -m resourcekit run benchmarks/servers/soak_app.py --transport http --port P

Limits are smaller than the defaults so that eviction, expiry and the caps are reached
within a short run.  Everything here uses the public API only.
"""

from __future__ import annotations

import itertools
import os
import threading
import time

from resourcekit import App, Limits

LIMITS = Limits(
    max_sessions=int(os.environ.get("SOAK_MAX_SESSIONS", "200")),
    session_idle_timeout=float(os.environ.get("SOAK_IDLE_TIMEOUT", "20")),
    max_subscriptions=500,
    max_listen_uris=500,
    page_size=500,
    page_scan_budget=5000,
    max_uri_length=8 * 1024,
)

app = App("soak", "1.0.0", limits=LIMITS)

# --- concrete resources and many templates ---------------------------------------------------

N_STATIC = 200
N_TEMPLATES = 100



def _static_of(i: int):  # type: ignore[no-untyped-def]
    def static() -> str:
        return f"static resource {i}"
    return static


def _family_of(t: int):  # type: ignore[no-untyped-def]
    def family(id: int) -> dict[str, int]:
        return {"family": t, "id": id}
    return family


for _i in range(N_STATIC):
    app.add_resource(_static_of(_i), f"soak://static/{_i}")
for _t in range(N_TEMPLATES):
    app.add_template(_family_of(_t), f"soak://f{_t}/{{id}}")


@app.template("soak://item/{id}{?x}")
def item(id: int, x: str = "") -> dict[str, object]:
    return {"id": id, "x": len(x)}


# the review's backtracking shapes: long URIs must be refused quickly
@app.template("db://{host}:{port}")
def db(host: str, port: int) -> str:
    return f"{host}:{port}"


@app.template("x://{a}{b}{c}")
def abc(a: str, b: str, c: str) -> str:
    return a + b + c


@app.template("log://{date}-{level}")
def log(date: str, level: str) -> str:
    return f"{date} {level}"


@app.template("files://{+dir}/{+file}")
def files(dir: str, file: str) -> str:
    return f"{dir} / {file}"


# --- listers -------------------------------------------------------------------------------

N_LISTED = 20_000


def _rows(offset: int, limit: int) -> list[dict[str, int]]:
    return [{"n": n} for n in range(offset, min(offset + limit, N_LISTED))]


@app.template("soak://row/{n}", lister=_rows)
def row(n: int) -> str:
    return f"row {n}"


def _endless() -> itertools.count[int]:
    return ({"k": k} for k in itertools.count())  # type: ignore[return-value]


@app.template("soak://endless/{k}", lister=_endless, mime_type="text/plain")
def endless(k: int) -> str:
    return f"endless {k}"


# --- change tracking -----------------------------------------------------------------------
# soak://counter/{key} serves a counter; reading soak://admin/bump/{key} increments it and
# calls notify_changed, and answers the new value, so the load generator knows every version
# it made.  A thread also bumps the tick:* counters at a steady rate (changes from another thread).

_counters: dict[str, int] = {}
_lock = threading.Lock()


@app.template("soak://counter/{key}")
def counter(key: str) -> str:
    return str(_counters.get(key, 0))


@app.template("soak://admin/bump/{key}")
def bump(key: str) -> str:
    with _lock:
        value = _counters[key] = _counters.get(key, 0) + 1
    app.notify_changed(f"soak://counter/{key}")
    return str(value)


def _ticker() -> None:
    while True:
        time.sleep(0.2)
        for k in range(4):
            key = f"tick{k}"
            with _lock:
                _counters[key] = _counters.get(key, 0) + 1
            app.notify_changed(f"soak://counter/{key}")


threading.Thread(target=_ticker, name="soak-ticker", daemon=True).start()

# --- slow and big --------------------------------------------------------------------------

BIG = "b" * (256 * 1024)


@app.resource("soak://big")
def big() -> str:
    return BIG


@app.resource("soak://slow")
def slow() -> str:
    time.sleep(0.05)
    return "slow"


@app.resource("soak://slow-async")
async def slow_async() -> str:
    import asyncio

    await asyncio.sleep(0.05)
    return "slow"
