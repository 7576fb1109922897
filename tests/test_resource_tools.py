"""Resources as tools (``App(resource_tools=True)``, ``run --resource-tools``): the official client, real servers."""

from __future__ import annotations

import base64
import json

import httpx
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError as ClientError

from tests.support.http_server import http_server_process
from tests.support.mcp_client import all_tools, http_session, stdio_session
from tests.support.process import APPS
from tests.support.wire import modern_meta

pytestmark = pytest.mark.anyio
APP = APPS / "tools_app.py"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(32))


async def walk(session: ClientSession) -> tuple[list[str], list[str], int]:
    """Every resource URI and template of the list_resources tool, following nextCursor; and the pages."""
    uris: list[str] = []
    templates: list[str] = []
    cursor = None
    pages = 0
    while True:
        result = await session.call_tool("list_resources", {"cursor": cursor} if cursor else {})
        assert not result.is_error, result.content
        page = json.loads(result.content[0].text)
        assert page == result.structured_content
        uris += [r["uri"] for r in page["resources"]]
        templates += [t["uriTemplate"] for t in page["resourceTemplates"]]
        pages += 1
        cursor = page.get("nextCursor")
        if cursor is None:
            return uris, templates, pages
        assert pages < 100


async def check_tools(session: ClientSession) -> None:
    tools = {tool.name: tool for tool in await all_tools(session)}  # paged: page_size=3
    # the two built-in tools, and one per template (tests/test_template_tools.py)
    assert sorted(tools) == ["list_resources", "read_resource", "row", "t0", "t1", "t2", "t3", "upper"]
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
    assert tools["read_resource"].input_schema["required"] == ["uri"]

    uris, templates, pages = await walk(session)
    notes = [f"note://{n}" for n in range(5)]
    assert uris == [*notes, "img://dot.png", "bin://raw", "multi://pair", "err://quota", "err://bug",
                    *[f"row://{n}" for n in range(4)]]
    assert templates == ["upper://{word}", "row://{n}", *[f"t{n}://{{x}}" for n in range(4)]]
    assert pages == 5  # 14 resources and 6 templates, 3 of each a page

    text = await session.call_tool("read_resource", {"uri": "note://3"})
    assert not text.is_error and [(c.type, c.text) for c in text.content] == [("text", "note 3")]
    image = (await session.call_tool("read_resource", {"uri": "img://dot.png"})).content
    assert len(image) == 1 and isinstance(image[0], types.ImageContent)
    assert image[0].mime_type == "image/png" and base64.b64decode(image[0].data) == PNG
    binary = (await session.call_tool("read_resource", {"uri": "bin://raw"})).content
    assert isinstance(binary[0], types.EmbeddedResource)
    assert isinstance(binary[0].resource, types.BlobResourceContents)
    assert str(binary[0].resource.uri) == "bin://raw" and base64.b64decode(binary[0].resource.blob) == b"\x00\x01\x02"
    pair = (await session.call_tool("read_resource", {"uri": "multi://pair"})).content
    assert pair[0].type == "text" and pair[0].text == "first"
    assert isinstance(pair[1], types.EmbeddedResource) and str(pair[1].resource.uri) == "multi://pair/second"
    upper = await session.call_tool("read_resource", {"uri": "upper://shout"})  # an async handler
    assert upper.content[0].text == "SHOUT"
    assert (await session.call_tool("read_resource", {"uri": "row://2"})).content[0].text == "row 2"

    # what goes wrong reading is the tool's error, with the message resources/read gives
    missing = await session.call_tool("read_resource", {"uri": "nope://x"})
    assert missing.is_error and missing.content[0].text == "Resource not found: nope://x"
    quota = await session.call_tool("read_resource", {"uri": "err://quota"})
    assert quota.is_error and quota.content[0].text == "Quota exceeded"
    with pytest.raises(ClientError) as info:  # a bug in the handler: as resources/read, logged, never leaked
        await session.call_tool("read_resource", {"uri": "err://bug"})
    assert info.value.error.code == -32603 and "secret" not in info.value.error.message
    too_long = await session.call_tool("read_resource", {"uri": "note://" + "x" * 9000})
    assert too_long.is_error and "longer than" in too_long.content[0].text
    no_uri = await session.call_tool("read_resource", {})
    assert no_uri.is_error and "uri" in no_uri.content[0].text
    forged = await session.call_tool("list_resources", {"cursor": "forged~cursor"})
    assert forged.is_error and "Invalid cursor" in forged.content[0].text
    with pytest.raises(ClientError) as info:
        await session.call_tool("write_resource", {"uri": "note://1"})
    assert info.value.error.code == -32602


async def test_tools_over_stdio_in_the_handshake_era():
    async with stdio_session(APP, initialize=False) as session:
        info = await session.initialize()
        assert info.capabilities.tools is not None and info.capabilities.resources is not None
        await check_tools(session)
        # resources/read is unchanged beside them
        assert (await session.read_resource("note://1")).contents[0].text == "note 1"


async def test_tools_over_stdio_in_2026():
    async with stdio_session(APP, initialize=False) as session:
        discovered = await session.discover()
        assert discovered.capabilities.tools is not None
        await check_tools(session)


async def test_tools_over_http_in_both_eras():
    with http_server_process(APP) as url:
        async with http_session(url) as session:
            await check_tools(session)
        async with http_session(url, initialize=False) as session:
            await session.discover()
            await check_tools(session)
        # 2026-07-28 over HTTP: a tools/call's Mcp-Name header must name the tool of the body
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "read_resource", "arguments": {"uri": "note://1"}, "_meta": modern_meta()}}
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                   "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
        async with httpx.AsyncClient() as http:
            good = await http.post(url, json=body, headers={**headers, "mcp-name": "read_resource"})
            assert good.status_code == 200 and good.json()["result"]["content"][0]["text"] == "note 1"
            for name in ("list_resources", None):
                extra = {"mcp-name": name} if name else {}
                bad = await http.post(url, json=body, headers={**headers, **extra})
                assert bad.status_code == 400 and bad.json()["error"]["code"] == -32020


async def test_the_run_flag_turns_them_on_and_they_are_off_by_default():
    basic = APPS / "basic_app.py"
    async with stdio_session(basic) as session:
        with pytest.raises(ClientError) as info:
            await session.list_tools()
        assert info.value.error.code == -32601
        with pytest.raises(ClientError) as info:
            await session.call_tool("read_resource", {"uri": "text://hello"})
        assert info.value.error.code == -32601
    async with stdio_session(basic, initialize=False, extra_args=["--resource-tools"]) as session:
        info = await session.initialize()
        assert info.capabilities.tools is not None
        hello = await session.call_tool("read_resource", {"uri": "text://hello"})
        assert hello.content[0].text == "hello, world"
