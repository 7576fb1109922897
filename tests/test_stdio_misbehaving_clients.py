"""stdio under a client that misbehaves: never reads, sends no input at all, or dribbles one long line."""

from __future__ import annotations

import asyncio
import subprocess
import time

import orjson
import pytest

from resourcekit.transports.stdio import _Reader
from tests.support.process import APPS, command, env

INIT = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}) + b"\n"


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) / 1024


def test_a_client_that_never_reads_cannot_grow_the_server() -> None:
    proc = subprocess.Popen(command("run", str(APPS / "big_app.py")), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env())
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(INIT)
        proc.stdin.flush()
        proc.stdout.readline()
        before = rss_mib(proc.pid)
        reads = b"".join(orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "resources/read",
                                       "params": {"uri": "big://one"}}) + b"\n" for i in range(1, 1001))
        proc.stdin.write(reads)  # 1000 x 100 KB of answers, and stdout is never read
        proc.stdin.flush()
        time.sleep(2.0)
        grown = rss_mib(proc.pid) - before
        # bounded, it grows 25 to 42 MiB (answers read before the pause, threads); unbounded: 100+ MiB
        assert grown < 30, f"server grew by {grown:.0f} MiB"  # 32 answers in flight; unbounded: 100+ MiB
    finally:
        proc.kill()
        proc.wait()


def test_every_request_is_answered_once_the_client_reads_again() -> None:
    proc = subprocess.Popen(command("run", str(APPS / "big_app.py")), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env())
    try:
        assert proc.stdin is not None and proc.stdout is not None
        reads = b"".join(orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "resources/read",
                                       "params": {"uri": "big://one"}}) + b"\n" for i in range(1, 301))
        proc.stdin.write(INIT + reads)
        proc.stdin.flush()
        time.sleep(1.0)  # the server pauses its input meanwhile
        ids = set()
        for _ in range(301):
            ids.add(orjson.loads(proc.stdout.readline())["id"])
        assert ids == set(range(301))
    finally:
        proc.kill()
        proc.wait()


def test_stdin_from_dev_null_exits_cleanly() -> None:
    with open("/dev/null", "rb") as devnull:
        done = subprocess.run(command("run", str(APPS / "big_app.py")), stdin=devnull,
                              capture_output=True, timeout=20, env=env())
    assert done.returncode == 0
    assert b"Traceback" not in done.stderr


@pytest.mark.anyio
async def test_a_long_line_in_small_reads_costs_linear_time() -> None:
    lines: list[bytes] = []

    class Conn:
        def feed(self, line: bytes) -> None:
            lines.append(line)

        def feed_lines(self, block: list[bytes]) -> None:
            lines.extend(line for line in block if line.strip())

        def send(self, message: object) -> None:
            raise AssertionError(message)

        def end_of_input(self) -> None:
            pass

    reader = _Reader(Conn(), 8 * 1024 * 1024, asyncio.get_running_loop().create_future())  # type: ignore[arg-type]
    chunk = b"x" * 256
    started = time.perf_counter()
    for _ in range(4 * 1024 * 1024 // 256):  # quadratic: ~16,000 copies of up to 4 MiB, minutes
        reader.data_received(chunk)
    reader.data_received(b"\n")
    assert time.perf_counter() - started < 2.0
    assert lines == [b"x" * (4 * 1024 * 1024)]


def test_a_client_that_closes_our_output_unread_and_then_its_input_lets_the_server_exit() -> None:
    """Output paused (the client read nothing), then the client closes both pipes: the server
    sees its output gone, stops waiting for answers nobody can read, and exits."""
    proc = subprocess.Popen(command("run", str(APPS / "big_app.py")), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(INIT)
        proc.stdin.flush()
        proc.stdout.readline()
        reads = b"".join(orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "resources/read",
                                       "params": {"uri": "big://one"}}) + b"\n" for i in range(1, 201))
        proc.stdin.write(reads)
        proc.stdin.flush()
        time.sleep(1.0)  # its output fills and pauses its input
        proc.stdout.close()
        time.sleep(0.2)
        started = time.monotonic()
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 3.0  # not the shutdown grace waiting for lost answers
        assert b"Traceback" not in (proc.stderr.read() if proc.stderr else b"")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_server_started_by_hand_names_a_command_that_runs_in_this_shell() -> None:
    """Started on a terminal with the venv not activated (its bin not on PATH), the hint names the
    venv's interpreter (``python -m resourcekit dev``), not a ``resourcekit`` the shell cannot find."""
    import os
    import pty
    import sys

    main, other = pty.openpty()
    environment = {**env(), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(command("run", str(APPS / "pipeline_app.py")), stdin=other, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=environment)
    try:
        os.close(other)
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        assert f"To try it by hand: {sys.executable} -m resourcekit dev" in line, line
    finally:
        proc.kill()
        proc.wait()
        os.close(main)
