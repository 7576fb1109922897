"""The official ``mcp`` client against two ``--redis`` workers behind a round-robin proxy.

Every request of the client (and its GET stream) goes to the next worker, as behind a
load balancer without sticky routing; a change is then announced on each worker in turn,
so whichever holds the client's stream, one announcement comes from the other worker.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.http_server import http_server_process
from tests.support.process import APPS
from tests.support.redis_server import redis_process
from tests.support.rr_proxy import RoundRobinProxy, round_robin
from tests.support.wire import modern_meta

pytestmark = pytest.mark.anyio

FIXTURE = APPS / "scale_app.py"
UPDATED = "notifications/resources/updated"


class Cluster:
    def __init__(self, workers: list[str], proxy_url: str, proxy: RoundRobinProxy, data: Path) -> None:
        self.workers = workers
        self.url = proxy_url
        self.proxy = proxy
        self.data = data

    async def announce(self, worker: str, name: str) -> None:
        """``notify_changed(data://name)`` on that worker (a 2026-07-28 read of control://touch/name)."""
        uri = f"control://touch/{name}"
        body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri, "_meta": modern_meta()}}
        async with httpx.AsyncClient(timeout=15) as client:
            answer = await client.post(worker, content=orjson.dumps(body), headers={
                "content-type": "application/json", "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2026-07-28", "mcp-method": "resources/read", "mcp-name": uri})
        assert answer.status_code == 200, answer.text


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    data = tmp_path_factory.mktemp("rr-data")
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(redis_process())
        workers = [stack.enter_context(http_server_process(FIXTURE, "--redis", redis.url,
                                                           extra_env={"SCALE_DATA": str(data)}))
                   for _ in range(2)]
        for url in workers:
            _wait_ready(url)
        proxy_url, proxy = stack.enter_context(round_robin(workers))
        yield Cluster(workers, proxy_url, proxy, data)


def _wait_ready(url: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url.replace("/mcp", "/readyz"), timeout=5).status_code == 200:
                return
        assert time.monotonic() < deadline, f"{url} never became ready"
        time.sleep(0.05)


async def test_handshake_era_through_a_round_robin_balancer(cluster: Cluster) -> None:
    (cluster.data / "hs").write_text("one")
    updates: list[str] = []
    arrived = anyio.Event()

    async def handler(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == UPDATED:
            updates.append(str(root.params.uri))
            arrived.set()

    start = len(cluster.proxy.routed)
    async with streamable_http_client(cluster.url) as (read, write), \
            ClientSession(read, write, message_handler=handler) as session:
        info = await session.initialize()
        assert info.server_info.name == "scale-fixture"
        listed = await session.list_resources()
        assert "poll://value" in [str(r.uri) for r in listed.resources]
        templates = (await session.list_resource_templates()).resource_templates
        assert any(t.uri_template == "data://{name}" for t in templates)
        assert (await session.read_resource("data://hs")).contents[0].text == "one"
        await session.subscribe_resource("data://hs")
        assert (await session.read_resource("data://hs")).contents[0].text == "one"
        assert {0, 1} <= set(cluster.proxy.routed[start:])  # both workers served this session
        for round_, worker in enumerate(cluster.workers):  # announced on one worker, then the other
            arrived = anyio.Event()
            (cluster.data / "hs").write_text(f"changed {round_}")
            await cluster.announce(worker, "hs")
            with anyio.fail_after(20):
                await arrived.wait()
            assert updates == ["data://hs"] * (round_ + 1)
        await session.unsubscribe_resource("data://hs")
        assert (await session.read_resource("data://hs")).contents[0].text == "changed 1"


async def test_2026_era_through_a_round_robin_balancer(cluster: Cluster) -> None:
    (cluster.data / "modern").write_text("one")
    async with Client(cluster.url, mode="2026-07-28", cache=None) as client:
        listed = await client.list_resources()
        assert "worker://pid" in [str(r.uri) for r in listed.resources]
        pids = {(await client.read_resource("worker://pid")).contents[0].text for _ in range(4)}
        assert len(pids) == 2  # round robin: both workers answered
        assert (await client.read_resource("data://modern")).contents[0].text == "one"
        async with client.listen(resource_subscriptions=["data://modern"]) as subscription:
            assert subscription.honored.resource_subscriptions == ["data://modern"]
            for round_, worker in enumerate(cluster.workers):
                (cluster.data / "modern").write_text(f"changed {round_}")
                await cluster.announce(worker, "modern")
                with anyio.fail_after(20):
                    event = await subscription.__anext__()
                assert getattr(event, "uri", None) == "data://modern"
        assert (await client.read_resource("data://modern")).contents[0].text == "changed 1"
