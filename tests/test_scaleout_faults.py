"""Faults of a scale-out deployment: a worker killed, Redis down, paused, restarted, or never there.

Each test starts its own ``redis-server`` and ``resourcekit run --redis`` workers (their log
in a file), waits on conditions, never on luck, and stops everything it started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis as redis_py

from tests.support.http_server import EventReader, free_port, open_session, post, wait_for, wait_for_port
from tests.support.process import APPS, command, env, stop_process
from tests.support.redis_server import RedisProcess, redis_process
from tests.support.wire import modern, request

FIXTURE = APPS / "scale_app.py"
UPDATED = "notifications/resources/updated"
LEASE = "resourcekit:lease:poll://value"


class Worker:
    """One ``resourcekit run --redis`` process; its stderr goes to a file."""

    def __init__(self, redis: RedisProcess, data: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = data.parent / f"worker-{self.port}.log"
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                command("run", str(FIXTURE), "--transport", "http", "--port", str(self.port), "--redis", redis.url),
                env={**env(), "SCALE_DATA": str(data)}, stdout=subprocess.DEVNULL, stderr=err)
        wait_for_port(self.port, self.proc)
        wait_for(lambda: self.ready() == 200, timeout=30)

    def ready(self) -> int:
        try:
            return httpx.get(self.url.replace("/mcp", "/readyz"), timeout=5).status_code
        except httpx.HTTPError:
            return 0

    @property
    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        stop_process(self.proc)


@contextlib.contextmanager
def cluster(data: Path, workers: int) -> Iterator[tuple[RedisProcess, list[Worker], contextlib.ExitStack]]:
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(redis_process())
        started: list[Worker] = []
        stack.callback(lambda: [w.stop() for w in started])
        for _ in range(workers):
            started.append(Worker(redis, data))
        yield redis, started, stack


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    return folder


def announce(worker: Worker, name: str) -> httpx.Response:
    """``notify_changed(data://name)`` on that worker, by a 2026-07-28 read (no Redis needed)."""
    body, headers = modern("resources/read", {"uri": f"control://touch/{name}"})
    return post(worker.url, body, {**headers, "mcp-name": f"control://touch/{name}"})


def listen(worker: Worker, uri: str) -> EventReader:
    body, headers = modern("subscriptions/listen", {"notifications": {"resourceSubscriptions": [uri]}})
    stream = EventReader("POST", worker.url, headers, body)
    assert stream.next(20)["method"] == "notifications/subscriptions/acknowledged"
    return stream


def test_a_killed_workers_sessions_and_polling_lease_move_on(data: Path) -> None:
    (data / "polled").write_text("one")
    with cluster(data, 1) as (redis, workers, stack):
        a = workers[0]
        headers = open_session(a.url)
        assert post(a.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).status_code == 202
        assert post(a.url, request(1, "resources/subscribe", {"uri": "poll://value"}), headers).status_code == 200
        shared = redis_py.Redis.from_url(redis.url)
        stack.callback(shared.close)
        wait_for(lambda: shared.get(LEASE) is not None)
        holder = shared.get(LEASE)  # a polls it: b, started now, cannot take the lease while a lives
        b = Worker(redis, data)
        workers.append(b)
        stream = EventReader("GET", b.url, headers)
        stack.callback(stream.close)
        assert post(b.url, request(2, "ping"), headers).status_code == 200
        a.kill()
        (data / "polled").write_text("two")
        update = stream.next(20)  # b took the lease over once a's expired, and polled
        assert update["method"] == UPDATED and update["params"] == {"uri": "poll://value"}
        assert shared.get(LEASE) not in (None, holder)
        assert stream.quiet(1.0)
        # the session goes on at b, subscriptions included
        read = post(b.url, request(3, "resources/read", {"uri": "poll://value"}), headers)
        assert read.json()["result"]["contents"][0]["text"] == "two"
        assert post(b.url, request(4, "resources/unsubscribe", {"uri": "poll://value"}), headers).status_code == 200
        assert "Traceback" not in b.output


def test_redis_unreachable_then_restarted(data: Path) -> None:
    (data / "r").write_text("one")
    with cluster(data, 2) as (redis, (a, b), stack):
        headers = open_session(a.url)
        post(b.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
        assert post(b.url, request(1, "resources/subscribe", {"uri": "data://r"}), headers).status_code == 200
        get_stream = EventReader("GET", a.url, headers)
        listen_stream = listen(b, "data://r")
        for stream in (get_stream, listen_stream):
            stack.callback(stream.close)
        with redis_py.Redis.from_url(redis.url) as shared:
            shared.save()  # this restart keeps what Redis held

        redis.stop()
        # Redis unreachable: 2026-07-28 reads go on; what needs shared state is 503 + Retry-After
        wait_for(lambda: a.ready() == 503 and b.ready() == 503)
        body, modern_headers = modern("resources/read", {"uri": "data://r"})
        read = post(a.url, body, {**modern_headers, "mcp-name": "data://r"})
        assert read.status_code == 200 and read.json()["result"]["contents"][0]["text"] == "one"
        init = post(a.url, request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                     "clientInfo": {"name": "rr", "version": "0"}}))
        assert init.status_code == 503 and init.headers.get("retry-after")
        ping = post(b.url, request(2, "ping"), headers)
        assert ping.status_code == 503 and ping.headers.get("retry-after")
        assert "Redis" in a.output and "unreachable" in a.output

        redis.start()  # the workers reconnect by themselves
        wait_for(lambda: a.ready() == 200 and b.ready() == 200, timeout=20)
        wait_for(lambda: post(b.url, request(3, "ping"), headers).status_code == 200, timeout=20)
        (data / "r").write_text("two")
        assert announce(a, "r").status_code == 200
        for stream in (get_stream, listen_stream):  # open streams hear changes again
            update = stream.next(20)
            assert update["method"] == UPDATED and update["params"]["uri"] == "data://r"

        redis.stop()
        (Path(redis.dir) / "dump.rdb").unlink(missing_ok=True)
        redis.start()  # without persistence: it forgot every session
        wait_for(lambda: a.ready() == 200 and b.ready() == 200, timeout=20)
        wait_for(lambda: post(a.url, request(4, "ping"), headers).status_code == 404, timeout=20)
        wait_for(lambda: post(b.url, request(5, "ping"), headers).status_code == 404, timeout=20)
        fresh = open_session(b.url)  # a client starts a new session, served anywhere
        assert post(a.url, request(6, "ping"), fresh).status_code == 200
        (data / "r").write_text("three")
        assert announce(a, "r").status_code == 200
        update = listen_stream.next(20)
        assert update["method"] == UPDATED and update["params"]["uri"] == "data://r"
        for worker in (a, b):
            assert worker.proc.poll() is None
            assert "Traceback" not in worker.output, worker.output


INIT = request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "rr", "version": "0"}})


def test_paused_redis_is_answered_503_at_once(data: Path) -> None:
    # SIGSTOP: connections to Redis open and then hang (not refused, as when it is down)
    (data / "r").write_text("one")
    with cluster(data, 1) as (redis, (a,), stack):
        headers = open_session(a.url)
        assert redis.proc is not None
        pid = redis.proc.pid
        os.kill(pid, signal.SIGSTOP)
        stack.callback(os.kill, pid, signal.SIGCONT)  # (resumed before it is stopped, whatever happens)
        started = time.monotonic()
        init = post(a.url, INIT)
        first = time.monotonic() - started
        assert init.status_code == 503 and init.headers.get("retry-after")
        assert first < 2.0, first  # Redis had 1 s to answer, not redis-py's socket timeout (10 s)
        started = time.monotonic()
        again = post(a.url, INIT)
        assert again.status_code == 503 and again.headers.get("retry-after")
        assert time.monotonic() - started < 0.5  # known unreachable now: at once
        assert "Traceback" not in again.text
        # what needs no Redis goes on: a 2026-07-28 read, a ping in a session this worker knows
        body, modern_headers = modern("resources/read", {"uri": "data://r"})
        read = post(a.url, body, {**modern_headers, "mcp-name": "data://r"})
        assert read.status_code == 200 and read.json()["result"]["contents"][0]["text"] == "one"
        wait_for(lambda: a.ready() == 503, timeout=5)

        os.kill(pid, signal.SIGCONT)
        wait_for(lambda: a.ready() == 200, timeout=10)
        assert post(a.url, INIT).status_code == 200
        assert post(a.url, request(1, "ping"), headers).status_code == 200
        assert a.proc.poll() is None
        assert "Traceback" not in a.output, a.output
        assert a.output.count("no answer within") <= 2, a.output  # not a line per request


@pytest.mark.parametrize("wait", [None, "1"])
def test_unreachable_redis_at_start_up_is_an_error_at_once(tmp_path: Path, wait: str | None) -> None:
    # a mistyped URL (nothing listens on port 1): one line and exit 1, not a server answering 503
    extra = [] if wait is None else ["--redis-wait", wait]
    for workers in ("1", "2"):
        started = time.monotonic()
        done = subprocess.run(command("run", str(FIXTURE), "--transport", "http", "--port", str(free_port()),
                                      "--workers", workers, "--redis", "redis://localhost:1", *extra),
                              env={**env(), "SCALE_DATA": str(tmp_path)}, capture_output=True, text=True,
                              timeout=30, stdin=subprocess.DEVNULL)
        took = time.monotonic() - started
        assert done.returncode == 1, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("resourcekit: error: Redis at redis://localhost:1 is unreachable ("), done.stderr
        assert "Traceback" not in done.stderr
        if wait is None:
            assert "--redis-wait SECONDS" in last and took < 10
        else:
            assert "waiting up to 1 s" in done.stderr and last.endswith("after waiting 1 s") and took >= 1


def test_redis_wait_waits_for_a_redis_started_later(data: Path) -> None:
    redis = RedisProcess()  # its port chosen, not started yet
    port = free_port()
    with contextlib.ExitStack() as stack:
        with (data.parent / "late.log").open("wb") as err:
            proc = subprocess.Popen(command("run", str(FIXTURE), "--transport", "http", "--port", str(port),
                                            "--redis", redis.url, "--redis-wait", "30"),
                                    env={**env(), "SCALE_DATA": str(data)}, stdout=subprocess.DEVNULL, stderr=err)
        stack.callback(stop_process, proc)
        time.sleep(1)  # it waits: nothing listens yet
        assert proc.poll() is None
        redis.start()
        stack.callback(redis.stop)
        wait_for_port(port, proc)
        assert post(f"http://127.0.0.1:{port}/mcp", INIT).status_code == 200
