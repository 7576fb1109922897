"""``resourcekit run FILE --transport http --reload``: an edit to the app is served without a restart."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import orjson

from tests.helpers import modern_meta
from tests.http_server import http_server_process

APP = '''
from resourcekit import App

app = App("reloading")


@app.resource("note://x")
def x() -> str:
    return "VALUE"
'''


def read_note(url: str) -> str | None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read",
            "params": {"uri": "note://x", "_meta": modern_meta()}}
    try:
        response = httpx.post(url, content=orjson.dumps(body), timeout=5, headers={
            "content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28", "mcp-method": "resources/read", "mcp-name": "note://x"})
        return str(response.json()["result"]["contents"][0]["text"])
    except (httpx.HTTPError, KeyError, ValueError):
        return None  # between two server processes


def wait_for_note(url: str, expected: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while (found := read_note(url)) != expected:
        assert time.monotonic() < deadline, f"still {found!r}"
        time.sleep(0.1)


def test_reload_serves_the_edited_app(tmp_path: Path):
    source = tmp_path / "notes_app.py"
    source.write_text(APP.replace("VALUE", "first"))
    with http_server_process(source, "--reload") as url:
        wait_for_note(url, "first")
        time.sleep(0.3)  # a different modification time for the stat-based watcher
        source.write_text(APP.replace("VALUE", "second"))
        wait_for_note(url, "second")
