"""The official ``mcp`` client over Streamable HTTP, in both eras, against real server processes."""

from __future__ import annotations

import warnings

import anyio
import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.exceptions import MCPError as ClientError

from tests.support.http_server import http_server_process
from tests.support.process import APPS

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def url():
    with http_server_process(APPS / "http_app.py") as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def basic_url():
    with http_server_process(APPS / "basic_app.py") as endpoint:
        yield endpoint


async def test_handshake_era_list_read_templates_complete(basic_url):
    async with streamable_http_client(basic_url) as (read, write), ClientSession(read, write) as session:
        info = await session.initialize()
        assert info.protocol_version == "2025-11-25" and info.server_info.name == "basic"
        uris: list[str] = []
        cursor = None
        while True:
            page = await session.list_resources(
                params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            uris += [str(r.uri) for r in page.resources]
            cursor = page.next_cursor
            if not cursor:
                break
        assert len(uris) == len(set(uris)) == 39
        text = (await session.read_resource("user://5/profile?verbose=yes")).contents[0]
        assert text.text == '{"id":5,"verbose":true,"type":"int"}'
        blob = (await session.read_resource("bin://data.bin")).contents[0]
        assert isinstance(blob, types.BlobResourceContents) and blob.mime_type == "application/octet-stream"
        templates = (await session.list_resource_templates()).resource_templates
        assert any(t.uri_template == "color://{color}" for t in templates)
        ref = types.ResourceTemplateReference(type="ref/resource", uri="color://{color}")
        assert (await session.complete(ref, {"name": "color", "value": "b"})).completion.values == ["blue"]
        city = types.ResourceTemplateReference(type="ref/resource", uri="city://{country}/{city}")
        completed = await session.complete(city, {"name": "city", "value": ""}, context_arguments={"country": "fr"})
        assert completed.completion.values == ["paris", "lyon"]
        with pytest.raises(ClientError) as info_error:
            await session.read_resource("nope://x")
        assert info_error.value.error.code == -32002


async def test_log_messages_reach_the_client_over_an_sse_response(basic_url):
    logged: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params)

    async with streamable_http_client(basic_url) as (read, write), \
            ClientSession(read, write, logging_callback=on_log) as session:
        await session.initialize()
        with warnings.catch_warnings():  # logging/setLevel is deprecated in 2026-07-28, not in this era
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await session.set_logging_level("info")
        result = await session.read_resource("ctx://me")
        assert result.contents[0].text == '{"uri":"ctx://me","version":"2025-11-25"}'
        with anyio.fail_after(10):
            while not logged:
                await anyio.sleep(0.01)
        assert logged[0].level == "info" and logged[0].data == "reading me"


async def test_subscribe_and_receive_an_update_over_http(url):
    updates: list[str] = []
    got = anyio.Event()

    async def handler(message) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            updates.append(str(root.params.uri))
            got.set()

    async with streamable_http_client(url) as (read, write), \
            ClientSession(read, write, message_handler=handler) as session:
        await session.initialize()
        await session.subscribe_resource("counter://value")
        await anyio.sleep(0.3)  # the GET stream opens and the tracker takes its baseline
        await session.read_resource("control://bump")
        with anyio.fail_after(10):
            await got.wait()
        assert updates == ["counter://value"]
        await session.unsubscribe_resource("counter://value")


async def test_stateless_era_over_http(basic_url):
    async with streamable_http_client(basic_url) as (read, write), ClientSession(read, write) as session:
        discovered = await session.discover()
        assert discovered.supported_versions == ["2026-07-28"]
        result = await session.read_resource("json://config")
        assert result.contents[0].text == '{"theme":"dark","n":3}'
        assert result.ttl_ms is not None and result.cache_scope == "private"
        listed = await session.list_resources()
        assert len(listed.resources) == 7 and listed.next_cursor
        templates = (await session.list_resource_templates()).resource_templates
        assert any(t.uri_template == "mode://{mode}" for t in templates)
        ref = types.ResourceTemplateReference(type="ref/resource", uri="mode://{mode}")
        assert (await session.complete(ref, {"name": "mode", "value": "f"})).completion.values == ["fast"]
        with pytest.raises(ClientError) as info:
            await session.read_resource("nope://x")
        assert info.value.error.code == -32602


async def test_listen_over_http_with_the_high_level_client(url):
    async with Client(url, mode="2026-07-28") as client:
        async with client.listen(resource_subscriptions=["counter://value"]) as subscription:
            assert subscription.honored.resource_subscriptions == ["counter://value"]
            await anyio.sleep(0.3)  # the tracker takes its baseline version
            async with Client(url, mode="2026-07-28") as other:
                await other.read_resource("control://bump")
            with anyio.fail_after(10):
                event = await subscription.__anext__()
        assert getattr(event, "uri", None) == "counter://value"
