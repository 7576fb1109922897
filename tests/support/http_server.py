"""Start ``resourcekit run FILE --transport http`` on a free loopback port."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.process import command, env, stop_process


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
    target: str | Path, *extra: str, extra_env: dict[str, str] | None = None, script: bool = False
) -> Iterator[str]:
    """Yield the endpoint URL of a real HTTP server process; stop it afterwards.

    ``script=True`` runs ``python TARGET PORT`` instead of ``resourcekit run TARGET``.
    """
    port = free_port()
    if script:
        argv = [sys.executable, str(target), str(port)]
    else:
        argv = command("run", str(target), "--transport", "http", "--port", str(port), *extra)
    proc = subprocess.Popen(argv, env={**env(), **(extra_env or {})}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)
        if proc.stderr:
            proc.stderr.close()
