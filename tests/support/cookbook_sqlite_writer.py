"""cookbook/sqlite.py plus a test-only door to its write helpers.

A client cannot call a Python function inside the server process, so reading
``test://update/...`` or ``test://insert/...`` calls ``update_row`` or
``insert_row`` there: the test then checks what subscribers hear.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "cookbook_sqlite", Path(__file__).resolve().parents[2] / "cookbook" / "sqlite.py")
assert _spec is not None and _spec.loader is not None
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)
app = example.app


@app.template("test://update/{table}/{rowid}{?name}")
def update(table: str, rowid: int, name: str = "") -> str:
    example.update_row(table, rowid, name=name)
    return "updated"


@app.template("test://insert/{table}{?name}")
def insert(table: str, name: str = "") -> str:
    return f"db://{table}/{example.insert_row(table, name=name)}"
