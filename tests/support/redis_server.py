"""A real ``redis-server`` on a free port in a temporary directory, for the scale-out tests."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

from tests.support.http_server import free_port
from tests.support.process import stop_process


def ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisProcess:
    """``redis-server`` without persistence; ``restart()`` stops it and starts it again on the same port."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:  # CI installs it (.ci/run): never skip these tests
            raise RuntimeError("redis-server is not installed: apt-get install redis-server (.ci/run does)")
        self.binary = binary
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="resourcekit-redis-")
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--save", "", "--appendonly", "no", "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while not ping(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None


@contextlib.contextmanager
def redis_process() -> Iterator[RedisProcess]:
    server = RedisProcess()
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)
