"""Subscriptions end to end: the official mcp client, a real ``resourcekit run`` process."""

from __future__ import annotations

import anyio
import pytest

from tests.support.mcp_client import stdio_session
from tests.support.process import APPS, RawServer
from tests.support.wire import modern_meta

pytestmark = pytest.mark.anyio
APP = APPS / "tracking_app.py"


class Collector:
    def __init__(self) -> None:
        self.items: list[tuple[str, str | None]] = []
        self.event = anyio.Event()

    async def __call__(self, message) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if method is None or not method.startswith("notifications/resources/"):
            return
        params = getattr(root, "params", None)
        uri = getattr(params, "uri", None) if params is not None else None
        self.items.append((method, str(uri) if uri is not None else None))
        self.event.set()

    async def wait(self, count: int, timeout: float = 10) -> None:
        with anyio.fail_after(timeout):
            while len(self.items) < count:
                self.event = anyio.Event()
                await self.event.wait()


async def test_subscribe_update_unsubscribe_with_the_official_client():
    seen = Collector()
    async with stdio_session(APP, message_handler=seen) as session:
        await session.subscribe_resource("counter://value")
        await session.subscribe_resource("counter://x/value")
        await session.read_resource("control://touch")  # 1,000 unchanged notify_changed calls
        await anyio.sleep(0.5)
        assert seen.items == []
        await session.read_resource("control://bump")
        await seen.wait(2)
        assert sorted(seen.items) == [
            ("notifications/resources/updated", "counter://value"),
            ("notifications/resources/updated", "counter://x/value"),
        ]
        await session.unsubscribe_resource("counter://value")
        await session.unsubscribe_resource("counter://x/value")
        await session.read_resource("control://bump")
        await anyio.sleep(0.5)
        assert len(seen.items) == 2
        added = (await session.read_resource("control://add")).contents[0].text
        await seen.wait(3)
        assert seen.items[2] == ("notifications/resources/list_changed", None)
        uris = {str(r.uri) for r in (await session.list_resources()).resources}
        assert added in uris


def test_listen_stream_over_stdio_raw():
    with RawServer(APP) as server:
        server.send({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {
            "_meta": modern_meta(),
            "notifications": {"resourceSubscriptions": ["counter://value"], "resourcesListChanged": True}}})
        ack = server.recv()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L"
        import time
        time.sleep(0.3)
        server.send({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                     "params": {"uri": "control://bump", "_meta": modern_meta()}})
        messages = [server.recv(), server.recv()]
        update = next(m for m in messages if m.get("method") == "notifications/resources/updated")
        assert update["params"]["uri"] == "counter://value"
        assert update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L"
        assert any(m.get("id") == 1 for m in messages)
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "L"}})
        assert server.request(2, "resources/read", {"uri": "control://bump", "_meta": modern_meta()})["id"] == 2
        assert server.request(3, "resources/read", {"uri": "static://same", "_meta": modern_meta()})["id"] == 3
