"""Serves ``sorted(sys.modules)`` as read over stdio (tests/test_startup_imports.py)."""

import sys

import orjson

from resourcekit import App

app = App("modules")


@app.resource("test://modules", mime_type="application/json")
def modules() -> str:
    """Every module the server process has imported by the time it serves its first read."""
    return orjson.dumps(sorted(sys.modules)).decode()
