"""Paths, ``resourcekit`` subprocesses (``command``, ``env``, ``cli``, ``stop_process``) and the stdio
harness ``RawServer``: a real ``resourcekit run`` process driven with raw JSON-RPC lines."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent.parent
APPS = ROOT / "tests" / "apps"
COOKBOOK = ROOT / "cookbook"


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "resourcekit", *args]


def cli(*args: str, cwd: Path | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run ``resourcekit ARGS`` to its end (60 s at most), its output captured as text."""
    return subprocess.run(command(*args), capture_output=True, text=True, env=env(), timeout=60, cwd=cwd, **kwargs)


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
