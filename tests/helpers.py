"""Drive real ``resourcekit run`` subprocesses with raw JSON-RPC lines."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
APPS = Path(__file__).resolve().parent / "apps"
COOKBOOK = ROOT / "cookbook"


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "resourcekit", *args]


def env() -> dict[str, str]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = str(ROOT) + os.pathsep + environment.get("PYTHONPATH", "")
    return environment


class RawServer:
    """A ``resourcekit run FILE`` process with line-oriented send/recv."""

    def __init__(self, target: str | Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            command("run", str(target), *extra),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(),
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stderr_lines: list[bytes] = []
        self._reading = threading.Event()  # cleared: stdout is not read (a client that stops reading)
        self._reading.set()
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        while True:
            self._reading.wait()
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.put(line)
        self.lines.put(b"")

    @property
    def pump_paused(self) -> bool:
        return not self._reading.is_set()

    @pump_paused.setter
    def pump_paused(self, paused: bool) -> None:
        """Stop reading the server's output (after the line being read), or read it again."""
        if paused:
            self._reading.clear()
        else:
            self._reading.set()

    def resume_pump(self) -> None:
        self.pump_paused = False

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_lines).decode(errors="replace")

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(orjson.dumps(message) + b"\n")

    def recv(self, timeout: float = 10.0) -> Any:
        line = self.lines.get(timeout=timeout)
        if not line:
            raise EOFError("server closed stdout")
        return orjson.loads(line)

    def request(self, rid: Any, method: str, params: Any = None, timeout: float = 10.0) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.recv(timeout)

    def initialize(self, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None) -> Any:
        response = self.request(0, "initialize", {
            "protocolVersion": version, "capabilities": capabilities or {},
            "clientInfo": {"name": "raw", "version": "0"},
        })
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return response

    def close(self, timeout: float = 10.0) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.close()


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10) -> None:
    """Terminate a child process, killing it if it does not go within ``timeout`` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def modern_meta(**extra: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    meta.update(extra)
    return meta


# --- an in-process session, as each session profile serves it -----------------------------------

#: the session profiles a protocol test runs under: plain, the access log on, OpenTelemetry spans,
#: and a caller whose scopes are checked
PROFILES = ("plain", "logged", "traced", "scoped")


def read(rid: Any, uri: str, **params: Any) -> bytes:
    """A ``resources/read`` request line (without its newline)."""
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri, **params}})


def cancelled(rid: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})


class Wire:
    """What the client end of an in-process session received, each message decoded, in order."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.writes = 0

    def write(self, data: bytes) -> None:  # from any thread, as a transport's write
        self.writes += 1
        self.messages.extend(orjson.loads(line) for line in data.splitlines())

    def by_id(self) -> dict[Any, Any]:
        return {m["id"]: m for m in list(self.messages) if type(m) is dict and "id" in m}

    async def answered(self, ids: set[Any], timeout: float = 3.0) -> dict[Any, Any]:
        """The answers to ``ids`` that came within ``timeout`` seconds (all of them, or fewer)."""
        import asyncio

        got: dict[Any, Any] = {}
        for _ in range(int(timeout / 0.01)):
            got = {rid: m for rid, m in self.by_id().items() if rid in ids}
            if set(got) == ids:
                break
            await asyncio.sleep(0.01)
        return got

    def errors(self) -> list[dict[str, Any]]:
        return [m["error"] for m in list(self.messages) if type(m) is dict and "error" in m]


class Session:
    """A session of ``app`` in this process, served as ``profile`` serves it, its replies on a
    ``Wire`` through the same outbox as stdio's (``async with Session(app) as (conn, wire)``)."""

    def __init__(self, app: Any, profile: str = "plain", *, version: str = "2025-11-25",
                 capabilities: dict[str, Any] | None = None) -> None:
        self.app, self.profile, self.version, self.capabilities = app, profile, version, capabilities or {}

    async def __aenter__(self) -> tuple[Any, Wire]:
        import asyncio
        import logging

        from resourcekit import Principal
        from resourcekit._runner import ThreadRunner
        from resourcekit.core import Server
        from resourcekit.telemetry import spans as telemetry

        logger = logging.getLogger("resourcekit")
        self._level = logger.level
        if self.profile == "logged":
            logger.setLevel(logging.INFO)
        elif self.profile == "traced":
            from tests.telemetry_support import otel

            otel()
            assert telemetry.probe()
        self.server = server = Server(self.app, "pipe")
        limits = self.app.limits
        server.start(ThreadRunner(asyncio.get_running_loop(), limits.max_workers, limits.max_queued_jobs))
        wire = Wire()
        self.conn = conn = server.stream(wire.write)
        if self.profile == "scoped":
            conn.principal = Principal("tester", scopes=["notes:read"])
        if self.version != "2026-07-28":
            conn.feed(orjson.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": self.version, "capabilities": self.capabilities,
                "clientInfo": {"name": "t", "version": "0"}}}))
            assert "init" in await wire.answered({"init"})
            wire.messages.clear()
        return conn, wire

    async def __aexit__(self, *exc: object) -> None:
        import logging

        self.conn.close()
        self.server.close()
        logging.getLogger("resourcekit").setLevel(self._level)
