"""Capabilities that tell the truth: ``App(subscribe=False, list_changed=False)`` declares neither,
refuses subscriptions, sends no list_changed, and ends a listen stream that can never carry anything.
The official client over stdio, raw HTTP for the 2026-07-28 stream, the default app unchanged."""

from __future__ import annotations

import time
from typing import Any

import anyio
import orjson
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError as ClientError

from resourcekit import App
from resourcekit.testing import Client
from tests.support.http_server import http_server_process, sse_events, stream_post
from tests.support.mcp_client import all_resources, http_session, stdio_session
from tests.support.process import APPS
from tests.support.wire import modern_headers, modern_meta, request

pytestmark = pytest.mark.anyio
STATIC = APPS / "static_app.py"


async def check_static(session: ClientSession, capabilities: Any, received: list[Any]) -> None:
    assert capabilities.resources is not None
    assert capabilities.resources.subscribe is None and capabilities.resources.list_changed is None
    with pytest.raises(ClientError) as info:
        await session.subscribe_resource("config://app")
    assert info.value.error.code == -32601
    with pytest.raises(ClientError) as info:
        await session.unsubscribe_resource("config://app")
    assert info.value.error.code == -32601
    before = {r.uri for r in await all_resources(session)}
    assert (await session.read_resource("control://add")).contents[0].text == "added"
    after = {r.uri for r in await all_resources(session)}
    assert after - before == {"config://added"}  # the listing changes ...
    await anyio.sleep(0.5)
    assert not [m for m in received if "list_changed" in repr(m)]  # ... and no list_changed is sent


async def test_static_app_over_stdio_in_both_eras() -> None:
    received: list[Any] = []

    async def handler(message: Any) -> None:
        received.append(message)

    async with stdio_session(STATIC, initialize=False, message_handler=handler) as session:
        info = await session.initialize()
        await check_static(session, info.capabilities, received)
    async with stdio_session(STATIC, initialize=False, message_handler=handler) as session:
        await check_static(session, (await session.discover()).capabilities, received)


def listen(url: str, notifications: dict[str, Any], events: int) -> tuple[list[dict[str, Any]], float]:
    """The first ``events`` events of a listen stream, and how long the stream took to end after them."""
    body = request("L", "subscriptions/listen", {"_meta": modern_meta(), "notifications": notifications})
    with stream_post(url, body, modern_headers("subscriptions/listen"), timeout=30) as response:
        lines = response.iter_lines()
        got = [orjson.loads(e["data"]) for e in sse_events(lines, events)]
        started = time.monotonic()
        rest = list(lines)  # the body ends: nothing more can come
        return got, time.monotonic() - started if not [line for line in rest if line.startswith("data")] else -1


async def test_a_listen_stream_for_what_is_switched_off_ends_at_once_over_http() -> None:
    with http_server_process(STATIC) as url:
        async with http_session(url, initialize=False) as session:
            caps = (await session.discover()).capabilities
            assert caps.resources is not None and caps.resources.subscribe is None
        for asked in ({"resourceSubscriptions": ["config://app"], "resourcesListChanged": True}, {}):
            (ack, done), took = await anyio.to_thread.run_sync(listen, url, asked, 2)
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["notifications"] == {}  # nothing it asked for is honoured
            assert done["id"] == "L" and done["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L"
            assert 0 <= took < 1


async def test_with_one_of_the_two_on_a_stream_stays_open_for_it() -> None:
    app = App("half", list_changed=False)
    app.resource("config://app")(lambda: "v")
    async with Client(app, protocol_version="2026-07-28") as client:
        caps = (await client.request("server/discover"))["capabilities"]
        assert caps["resources"] == {"subscribe": True}
        ended = client.listen(list_changed=True)  # asks only for what is off: ends
        ack = await client.next_notification()
        assert ack["params"]["notifications"] == {}
        done = await client.next_notification()  # its result: the stream ended
        assert done["id"] == ended and "result" in done
        held = client.listen(["config://app"], list_changed=True)
        ack = await client.next_notification()
        assert ack["params"]["notifications"] == {"resourceSubscriptions": ["config://app"]}
        app.resource("config://more")(lambda: "m")  # no list_changed for it
        with pytest.raises(TimeoutError):
            await client.next_notification(timeout=0.5)
        client.cancel(held)


async def test_the_default_declares_both_as_before() -> None:
    async with Client(App("default")) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
    async with Client(App("default"), protocol_version="2026-07-28") as client:
        caps = (await client.request("server/discover"))["capabilities"]
        assert caps["resources"] == {"subscribe": True, "listChanged": True}


async def test_sep_2093_capabilities_say_what_the_app_allows() -> None:
    """A SEP-2093 client sees ``subscribe: false`` on resources, templates and read contents of an
    app that refuses subscriptions, and ``true`` by default."""
    for subscribe in (False, True):
        app = App("caps", subscribe=subscribe)
        app.resource("config://app")(lambda: "on")

        @app.template("rows://{id}", name="row")
        def row(id: int) -> str:
            return f"row {id}"

        async with Client(app, capabilities={"experimental": {"io.resourcekit/sep-2093": {}}}) as client:
            (listed,) = await client.list_resources()
            (template,) = await client.list_templates()
            (content,) = (await client.request("resources/read", {"uri": "rows://2"}))["contents"]
        for shown in (listed, template, content):
            assert shown["capabilities"]["subscribe"] is subscribe, shown
