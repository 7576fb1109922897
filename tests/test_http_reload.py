"""``resourcekit run FILE --transport http --reload``: an edit to the app is served without a restart."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.support.http_server import free_port, http_server_process
from tests.support.process import command, env, stop_process
from tests.support.wire import modern_meta

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


def wait_for_status(url: str, status: int, timeout: float) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        try:
            response = httpx.post(url, content=b"{}", timeout=timeout)
            if response.status_code == status:
                return response
        except httpx.HTTPError:
            pass  # between two server processes
        assert time.monotonic() < deadline, f"no {status} within {timeout} s"
        time.sleep(0.1)


def test_reload_answers_503_with_one_error_while_the_file_does_not_load(tmp_path: Path):
    source = tmp_path / "notes_app.py"
    broken = APP.replace("VALUE", "first") + "\ndef broken(:\n"
    source.write_text(broken)  # broken from the start: served 503 as well, not a dead process
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    proc = subprocess.Popen(command("run", str(source), "--transport", "http", "--port", str(port), "--reload"),
                            env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        response = wait_for_status(url, 503, timeout=30)  # start-up included
        assert response.text == (f"resourcekit: the app does not load: importing {source} failed at {source}:11: "
                                 "SyntaxError: invalid syntax\n")
        time.sleep(0.3)  # a different modification time for the stat-based watcher
        source.write_text(APP.replace("VALUE", "second"))
        wait_for_note(url, "second")
        time.sleep(0.3)
        source.write_text(broken)
        started = time.monotonic()
        wait_for_status(url, 503, timeout=10)  # within a few seconds of the save, not hanging
        assert time.monotonic() - started < 10
    finally:
        stop_process(proc)
        errors = proc.communicate(timeout=10)[1]  # what the processes said, once the last has gone
    # said as `resourcekit run` says it at start-up (the app's lines only), once per failed load
    said = (f"resourcekit: error: importing {source} failed at {source}:11: SyntaxError: invalid syntax\n"
            f'  File "{source}", line 11\n    def broken(:\n               ^\nSyntaxError: invalid syntax\n'
            "resourcekit: answering 503 until the app loads again (saving a change reloads it)\n")
    assert errors.count(said) == 2, errors
    assert "Traceback" not in errors and "multiprocessing" not in errors


def test_dev_reload_answers_503_too_while_the_file_does_not_load(tmp_path: Path, monkeypatch):
    # `resourcekit dev --reload` builds the explorer around the reloaded app: not around a broken one
    from resourcekit.explorer.serve import reload_factory

    source = tmp_path / "notes_app.py"
    source.write_text("from resourcekit import App\napp = App('t')\ndef broken(:\n")
    monkeypatch.setenv("RESOURCEKIT_TARGET", str(source))
    served = reload_factory()
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    asyncio.run(served({"type": "http", "method": "GET", "path": "/", "headers": []}, receive, send))
    assert sent[0]["status"] == 503
    assert sent[1]["body"] == (f"resourcekit: the app does not load: importing {source} failed at {source}:3: "
                               "SyntaxError: invalid syntax\n").encode()
