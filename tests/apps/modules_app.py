"""Serves ``sorted(sys.modules)`` as read over stdio, and the cyclic GC's state (tests/test_startup_imports.py)."""

import gc
import sys

import orjson

from resourcekit import App

app = App("modules")


@app.resource("test://modules", mime_type="application/json")
def modules() -> str:
    """Every module the server process has imported by the time it serves its first read."""
    return orjson.dumps(sorted(sys.modules)).decode()


@app.resource("test://gc", mime_type="application/json")
def collector() -> str:
    """Whether the cyclic GC runs, and how many objects start-up froze (never scanned)."""
    return orjson.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}).decode()
