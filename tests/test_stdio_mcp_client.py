"""The official ``mcp`` client against ``resourcekit run`` over stdio."""

from __future__ import annotations

import base64

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError as ClientError

from tests.support.mcp_client import all_resources, stdio_session
from tests.support.process import APPS

pytestmark = pytest.mark.anyio
APP = APPS / "basic_app.py"


async def test_handshake_and_paged_listing_without_gaps():
    async with stdio_session(APP) as session:
        resources = await all_resources(session)
        uris = [str(r.uri) for r in resources]
        assert len(uris) == len(set(uris)), "a page repeated a resource"
        # 20 items + 9 other resources + 10 lister instances, pages of 7
        assert uris[:20] == [f"item://{i}" for i in range(20)]
        assert uris[-10:] == [f"row://{n}" for n in range(10)]
        assert len(uris) == 20 + 9 + 10
        hello = next(r for r in resources if str(r.uri) == "text://hello")
        assert hello.title == "Hello" and hello.description == "Says hello."
        assert hello.mime_type == "text/plain"
        first = await session.list_resources()
        assert len(first.resources) == 7 and first.next_cursor


async def test_read_text_blob_json_and_multi():
    async with stdio_session(APP) as session:
        text = (await session.read_resource("text://hello")).contents[0]
        assert isinstance(text, types.TextResourceContents) and text.text == "hello, world"
        assert text.meta and len(text.meta["io.resourcekit/version"]) == 32
        blob = (await session.read_resource("bin://data.bin")).contents[0]
        assert isinstance(blob, types.BlobResourceContents)
        assert base64.b64decode(blob.blob) == bytes(range(256))
        assert blob.mime_type == "application/octet-stream"
        data = (await session.read_resource("json://config")).contents[0]
        assert data.mime_type == "application/json" and data.text == '{"theme":"dark","n":3}'
        multi = (await session.read_resource("multi://both")).contents
        assert [str(c.uri) for c in multi] == ["multi://both/a", "multi://both/b"]
        assert multi[1].mime_type == "application/x-two"


async def test_templates_typed_and_query_variables():
    async with stdio_session(APP) as session:
        templates = (await session.list_resource_templates()).resource_templates
        assert "user://{user_id}/profile{?verbose}" in [t.uri_template for t in templates]
        profile = await session.read_resource("user://42/profile")
        assert profile.contents[0].text == '{"id":42,"verbose":false,"type":"int"}'
        verbose = await session.read_resource("user://42/profile?verbose=true&ignored=1")
        assert verbose.contents[0].text == '{"id":42,"verbose":true,"type":"int"}'
        typed = await session.read_resource(
            "typed://12345678-1234-5678-1234-567812345678/2026-01-02/2026-01-02T03:04:05/1.50")
        assert '"x":"1.50"' in typed.contents[0].text
        assert (await session.read_resource("path://a/b/c.txt")).contents[0].text == "a/b/c.txt"
        assert (await session.read_resource("color://green")).contents[0].text == "color green"
        with pytest.raises(ClientError) as info:
            await session.read_resource("user://not-a-number/profile")
        assert info.value.error.code == -32002
        with pytest.raises(ClientError):
            await session.read_resource("color://purple")


async def test_completion():
    async with stdio_session(APP) as session:
        ref = types.ResourceTemplateReference(type="ref/resource", uri="color://{color}")
        result = await session.complete(ref, {"name": "color", "value": "g"})
        assert result.completion.values == ["green"]
        ref = types.ResourceTemplateReference(type="ref/resource", uri="mode://{mode}")
        assert (await session.complete(ref, {"name": "mode", "value": ""})).completion.values == ["fast", "slow"]
        ref = types.ResourceTemplateReference(type="ref/resource", uri="city://{country}/{city}")
        result = await session.complete(ref, {"name": "city", "value": ""}, {"country": "fr"})
        assert result.completion.values == ["paris", "lyon"]
        unknown = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
        assert (await session.complete(unknown, {"name": "arg1", "value": "x"})).completion.values == []


async def test_errors_reach_the_client_precisely():
    async with stdio_session(APP) as session:
        with pytest.raises(ClientError) as info:
            await session.read_resource("nothing://here")
        assert info.value.error.code == -32002
        with pytest.raises(ClientError) as info:
            await session.read_resource("boom://fail")
        assert info.value.error.code == -32603 and "secret" not in info.value.error.message
        assert (await session.read_resource("text://hello")).contents[0].text == "hello, world"


async def test_stateless_2026_with_the_official_client():
    async with stdio_session(APP, initialize=False) as session:
        discovered = await session.discover()
        assert "2026-07-28" in discovered.supported_versions
        result = await session.read_resource("text://hello")
        assert result.contents[0].text == "hello, world"
        assert result.ttl_ms is not None and result.cache_scope in ("public", "private")
        with pytest.raises(ClientError) as info:
            await session.read_resource("nothing://here")
        assert info.value.error.code == -32602
