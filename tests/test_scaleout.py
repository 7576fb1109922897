"""Several ``resourcekit run --redis`` workers sharing one real ``redis-server``.

Requests alternate between workers like a round-robin balancer without sticky routing:
sessions, subscriptions, GET streams, ``Last-Event-ID``, listen streams, polling and
``resourcekit notify`` must all behave as if one process served them.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.http_server import EventReader, http_server_process, open_session, post, wait_for
from tests.support.process import APPS, command, env
from tests.support.redis_server import RedisProcess, redis_process
from tests.support.wire import modern, request

FIXTURE = APPS / "scale_app.py"
UPDATED = "notifications/resources/updated"


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisProcess]:
    with redis_process() as server:
        yield server


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scale-data")


@pytest.fixture(scope="module")
def workers(redis: RedisProcess, data: Path) -> Iterator[list[str]]:
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(http_server_process(FIXTURE, "--redis", redis.url,
                                                        extra_env={"SCALE_DATA": str(data)}))
                for _ in range(3)]
        for url in urls:
            wait_for(lambda url=url: httpx.get(url.replace("/mcp", "/readyz"), timeout=5).status_code == 200)
        yield urls


def test_handshake_session_round_robin(workers: list[str], data: Path) -> None:
    (data / "a").write_text("one")
    w = workers
    headers = open_session(w[0])
    assert post(w[1], {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).status_code == 202
    read = post(w[2], request(1, "resources/read", {"uri": "data://a"}), headers)
    assert read.json()["result"]["contents"][0]["text"] == "one"
    assert post(w[0], request(2, "resources/subscribe", {"uri": "data://a"}), headers).json()["result"] == {}
    stream = EventReader("GET", w[1], headers)
    time.sleep(0.5)
    (data / "a").write_text("two")
    # two workers announce the same change: the session hears of it once
    post(w[2], request(3, "resources/read", {"uri": "control://touch/a"}), headers)
    post(w[0], request(4, "resources/read", {"uri": "control://touch/a"}), headers)
    first = stream.next()
    assert first["method"] == UPDATED and first["params"] == {"uri": "data://a"}
    assert first["id"].startswith("r.")
    assert stream.quiet()
    post(w[2], request(5, "resources/read", {"uri": "control://list-changed"}), headers)
    assert stream.next()["method"] == "notifications/resources/list_changed"
    stream.close()
    last_id = first["id"]
    # resumed on another worker: what came after first (the list_changed), nothing before
    (data / "a").write_text("three")
    post(w[1], request(6, "resources/read", {"uri": "control://touch/a"}), headers)
    time.sleep(0.5)
    resumed = EventReader("GET", w[2], {**headers, "last-event-id": last_id})
    assert resumed.next()["method"] == "notifications/resources/list_changed"
    again = resumed.next()
    assert again["method"] == UPDATED and again["params"] == {"uri": "data://a"}
    assert resumed.quiet()
    resumed.close()
    assert httpx.delete(w[0], headers=headers, timeout=10).status_code == 204
    wait_for(lambda: post(w[1], request(7, "ping"), headers).status_code == 404, timeout=10)
    assert post(w[2], request(8, "ping"), headers).status_code == 404


def test_listen_streams_on_every_worker_hear_resourcekit_notify(workers: list[str], data: Path,
                                                                  redis: RedisProcess) -> None:
    (data / "b").write_text("one")
    body, headers = modern("subscriptions/listen", {"notifications": {"resourceSubscriptions": ["data://b"]}})
    streams = [EventReader("POST", url, headers, body) for url in workers[:2]]
    for stream in streams:
        assert stream.next()["method"] == "notifications/subscriptions/acknowledged"
    time.sleep(0.3)
    (data / "b").write_text("two")
    done = subprocess.run(command("notify", "data://b", "--redis", redis.url), env=env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for stream in streams:
        update = stream.next()
        assert update["method"] == UPDATED and update["params"]["uri"] == "data://b"
    for stream in streams:
        assert stream.quiet()
        stream.close()
    # a 2026-07-28 read on any worker needs no shared state
    body, headers = modern("resources/read", {"uri": "data://b"})
    assert post(workers[2], body, {**headers, "mcp-name": "data://b"}).json()["result"]["contents"][0]["text"] == "two"


def test_a_polled_resource_is_announced_once(workers: list[str], data: Path) -> None:
    (data / "polled").write_text("one")
    headers = open_session(workers[1])
    post(workers[2], {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    assert post(workers[0], request(1, "resources/subscribe", {"uri": "poll://value"}), headers).status_code == 200
    stream = EventReader("GET", workers[2], headers)
    time.sleep(1.0)  # every worker hears of the subscription and competes for the lease
    # a whole new content at once: written in place, a poll between the truncation and the write
    # would see an empty file, a real change of its own, and a second announcement would be right
    (data / "polled.new").write_text("two")
    (data / "polled.new").replace(data / "polled")
    update = stream.next()
    assert update["params"] == {"uri": "poll://value"}
    assert stream.quiet(1.5)
    stream.close()


def test_cancelled_on_another_worker_ends_the_request(workers: list[str], data: Path) -> None:
    headers = open_session(workers[0])
    post(workers[0], {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    answered: list[httpx.Response] = []
    slow = threading.Thread(target=lambda: answered.append(
        post(workers[1], request("slow", "resources/read", {"uri": "slow://wait"}), headers)), daemon=True)
    slow.start()
    wait_for(lambda: (data / "slow-started").exists())
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}}
    assert post(workers[2], cancel, headers).status_code == 202
    slow.join(20)
    assert answered and answered[0].status_code == 200 and "late" not in answered[0].text
    assert post(workers[1], request(2, "ping"), headers).status_code == 200


def test_a_post_response_stream_resumes_on_another_worker(workers: list[str], data: Path) -> None:
    headers = open_session(workers[0])
    post(workers[1], {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    assert post(workers[2], request(1, "logging/setLevel", {"level": "info"}), headers).status_code == 200
    cut = EventReader("POST", workers[1], headers, request(2, "resources/read", {"uri": "slow://logged"}))
    started = cut.next()
    assert started["method"] == "notifications/message" and started["params"]["data"] == "started"
    cut.close()  # the connection is lost: the client resumes at another worker
    resumed = EventReader("GET", workers[2], {**headers, "last-event-id": started["id"]})
    (data / "release").write_text("1")
    finishing = resumed.next()
    assert finishing["method"] == "notifications/message" and finishing["params"]["data"] == "finishing"
    assert resumed.next()["result"]["contents"][0]["text"] == "done"
    assert resumed.quiet(0.5)
    resumed.close()
    foreign = httpx.get(workers[0], headers={**headers, "accept": "text/event-stream",
                                               "last-event-id": "nosuch-0.1"}, timeout=10)
    assert foreign.status_code == 400


def test_content_changed_for_a_shared_session_that_opted_in(workers: list[str], data: Path) -> None:
    (data / "cc").write_text("one")
    init = request(0, "initialize", {"protocolVersion": "2025-06-18", "clientInfo": {"name": "cc", "version": "0"},
                                     "capabilities": {"experimental": {"io.resourcekit/resources-get": {}}}})
    answer = post(workers[0], init)
    headers = {"mcp-session-id": answer.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    post(workers[1], {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    assert post(workers[1], request(1, "resources/subscribe", {"uri": "data://cc"}), headers).status_code == 200
    stream = EventReader("GET", workers[2], headers)
    (data / "cc").write_text("two")
    post(workers[0], request(2, "resources/read", {"uri": "control://touch/cc"}), headers)
    assert stream.next()["method"] == UPDATED
    changed = stream.next()
    assert changed["method"] == "notifications/resources/content_changed"
    assert changed["params"]["resource"]["uri"] == "data://cc" and changed["params"]["resource"]["version"]
    stream.close()


def test_notify_without_redis_fails_and_workers_need_redis(tmp_path: Path) -> None:
    unreachable = f"redis://127.0.0.1:{_closed_port()}/0"
    done = subprocess.run(command("notify", "data://x", "--redis", unreachable), env=env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0 and "Redis" in done.stderr
    refused = subprocess.run(command("run", str(FIXTURE), "--transport", "http", "--workers", "2"),
                             env={k: v for k, v in env().items() if k != "RESOURCEKIT_REDIS_URL"},
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "--redis" in refused.stderr
    stdio = subprocess.run(command("run", str(FIXTURE), "--redis", unreachable), env=env(), capture_output=True,
                           text=True, timeout=60)
    assert stdio.returncode != 0 and "--redis only applies to --transport http" in stdio.stderr


def _closed_port() -> int:
    from tests.support.http_server import free_port

    return free_port()


def test_a_list_walk_continues_on_another_worker(workers: list[str], data: Path) -> None:
    body, headers = modern("resources/list", {})
    first = post(workers[0], body, headers).json()["result"]
    assert len(first["resources"]) == 3 and "nextCursor" in first
    body, headers = modern("resources/list", {"cursor": first["nextCursor"]})
    second = post(workers[1], body, headers).json()  # cursors are signed with a key the workers share
    assert [r["uri"] for r in second["result"]["resources"]] == ["slow://wait", "slow://logged"], second
