"""``resourcekit run FILE --transport http`` on a free loopback port, and a client's requests to it:
JSON POSTs, SSE streams (read in line or on a thread), a session opened."""

from __future__ import annotations

import contextlib
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.support.process import command, env, stop_process

ACCEPT = "application/json, text/event-stream"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Return once ``proc`` accepts connections on ``port``; RuntimeError if it dies or times out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                output = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"server did not start: {output}") from None
            time.sleep(0.05)


@contextlib.contextmanager
def http_server_process(
    target: str | Path, *extra: str, extra_env: dict[str, str] | None = None, script: bool = False,
    log: Path | None = None,
) -> Iterator[str]:
    """Yield the endpoint URL of a real HTTP server process; stop it afterwards.

    ``script=True`` runs ``python TARGET PORT`` instead of ``resourcekit run TARGET``; ``log``: a file
    that gets the server's stderr.
    """
    with http_server(target, *extra, extra_env=extra_env, script=script, log=log) as (url, _proc):
        yield url


@contextlib.contextmanager
def http_server(
    target: str | Path, *extra: str, extra_env: dict[str, str] | None = None, script: bool = False,
    log: Path | None = None,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``http_server_process``, yielding the process too (its pid: its memory)."""
    port = free_port()
    if script:
        argv = [sys.executable, str(target), str(port)]
    else:
        argv = command("run", str(target), "--transport", "http", "--port", str(port), *extra)
    errors = log.open("wb") if log is not None else None
    proc = subprocess.Popen(argv, env={**env(), **(extra_env or {})}, stdout=subprocess.DEVNULL,
                            stderr=errors or subprocess.PIPE)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        stop_process(proc)
        if proc.stderr:
            proc.stderr.close()
        if errors is not None:
            errors.close()


def post(url: str, body: Any, headers: dict[str, str] | None = None, timeout: float = 15) -> httpx.Response:
    """POST ``body`` (bytes, or a message to encode) as a client would, accepting JSON and SSE."""
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return httpx.post(url, content=data, timeout=timeout,
                      headers={"content-type": "application/json", "accept": ACCEPT, **(headers or {})})


def stream_post(url: str, body: Any, headers: dict[str, str], timeout: float = 10) -> Any:
    return httpx.stream("POST", url, content=orjson.dumps(body), timeout=timeout,
                        headers={"content-type": "application/json", "accept": ACCEPT, **headers})


def open_session(url: str, version: str = "2025-06-18", timeout: float = 10) -> dict[str, str]:
    """Initialize a handshake-era session; the headers its requests carry.  A 503 with
    ``Retry-After`` (a worker still connecting to Redis, say) is tried again, as a client would."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    deadline = time.monotonic() + timeout
    response = post(url, init)
    while response.status_code == 503 and "retry-after" in response.headers and time.monotonic() < deadline:
        time.sleep(0.1)
        response = post(url, init)
    assert response.status_code == 200, response.text
    return {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": version}


def wait_for(check: Callable[[], bool], timeout: float = 20) -> None:
    """Return once ``check()`` holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def sse_events(response: httpx.Response | Iterator[str], count: int,
               comments: list[str] | None = None) -> list[dict[str, str]]:
    """Read ``count`` SSE events (``id``, ``data``...) from a streaming response (or its lines)."""
    events: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in response.iter_lines() if isinstance(response, httpx.Response) else response:
        if line.startswith(":"):
            if comments is not None:
                comments.append(line)
            continue
        if not line:
            if current:
                events.append(current)
                current = {}
                if len(events) >= count:
                    return events
            continue
        field, _, value = line.partition(":")
        current[field] = value[1:] if value.startswith(" ") else value
    return events


class EventReader:
    """An SSE response read on a thread: events (dicts of fields) arrive on a queue."""

    def __init__(self, method: str, url: str, headers: dict[str, str], body: Any = None) -> None:
        self.events: queue.Queue[dict[str, str]] = queue.Queue()
        self.status = 0
        self._stop = threading.Event()
        self._args = (method, url, headers, body)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        method, url, headers, body = self._args
        content = orjson.dumps(body) if body is not None else None
        all_headers = {"accept": ACCEPT if body is not None else "text/event-stream", **headers}
        if body is not None:
            all_headers["content-type"] = "application/json"
        with contextlib.suppress(httpx.HTTPError), \
                httpx.stream(method, url, content=content, headers=all_headers, timeout=60) as response:
            self.status = response.status_code
            event: dict[str, str] = {}
            for line in response.iter_lines():
                if self._stop.is_set():
                    return
                if not line:
                    if event.get("data"):
                        self.events.put(event)
                    event = {}
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    event[name] = value.strip()

    def next(self, timeout: float = 15) -> dict[str, Any]:
        event = self.events.get(timeout=timeout)
        return {"id": event.get("id"), **orjson.loads(event["data"])}

    def quiet(self, seconds: float = 1.0) -> bool:
        """Nothing more arrives within ``seconds``."""
        try:
            extra = self.events.get(timeout=seconds)
        except queue.Empty:
            return True
        raise AssertionError(f"unexpected event {extra}")

    def close(self) -> None:
        self._stop.set()
