"""SEP-2093 and the seed-000 variant: methods for everyone, extra fields only for clients that opt in."""

from __future__ import annotations

import asyncio

import pytest

from resourcekit import MCPError
from resourcekit.testing import Client
from tests.apps.ext_app import app
from tests.helpers import APPS, RawServer

pytestmark = pytest.mark.anyio
SEP = {"experimental": {"io.resourcekit/sep-2093": {}}}
SEED = {"experimental": {"io.resourcekit/resources-get": {}}}


@pytest.fixture(params=["2025-11-25", "2026-07-28"])
def version(request) -> str:
    return request.param


async def test_standard_clients_see_standard_objects(version):
    async with Client(app, protocol_version=version) as client:
        for resource in await client.list_resources():
            assert not {"capabilities", "kind", "version", "metadata"} & set(resource)
        for template in await client.list_templates():
            assert "capabilities" not in template and "kind" not in template
        content = (await client.read("db://users"))[0]
        assert set(content) == {"uri", "mimeType", "text", "_meta"}


async def test_capabilities_in_listings_and_reads_for_opted_in_clients(version):
    async with Client(app, protocol_version=version, capabilities=SEP) as client:
        listed = {r["uri"]: r for r in await client.list_resources()}
        assert listed["tree://"]["capabilities"] == {"list": True, "subscribe": True}
        assert listed["db://users"]["capabilities"] == {"list": False, "subscribe": True}
        template = (await client.list_templates())[0]
        assert template["capabilities"] == {"list": True, "subscribe": True}
        content = (await client.read("db://users"))[0]
        assert content["name"] == "users" and content["capabilities"] == {"list": False, "subscribe": True}
        assert content["size"] == len(content["text"])


async def test_resources_metadata(version):
    async with Client(app, protocol_version=version) as client:
        resource = (await client.request("resources/metadata", {"uri": "tree://a/x.txt"}))["resource"]
        assert resource["uri"] == "tree://a/x.txt" and resource["capabilities"]["list"] is True
        assert "text" not in resource
        await client.read("db://users")
        users = (await client.request("resources/metadata", {"uri": "db://users"}))["resource"]
        assert len(users["_meta"]["io.resourcekit/version"]) == 32
        with pytest.raises(MCPError) as info:
            await client.request("resources/metadata", {"uri": "nope://x"})
        assert info.value.code == (-32602 if version == "2026-07-28" else -32002)
        assert info.value.data == {"uri": "nope://x"}
        with pytest.raises(MCPError) as info:
            await client.request("resources/metadata", {})
        assert info.value.code == -32602


async def test_children_paged_without_duplicates(version):
    async with Client(app, protocol_version=version, capabilities=SEP) as client:
        children = await client.list_resources(uri="tree://a")
        assert [c["uri"] for c in children] == ["tree://a/x.txt", "tree://a/y.txt", "tree://a/z.txt",
                                                "tree://a/w.txt"]
        assert all(c["capabilities"] == {"list": False, "subscribe": True} for c in children)
        first = await client.request("resources/list", {"uri": "tree://a"})
        assert len(first["resources"]) == 3 and first["nextCursor"]
        top = await client.list_resources(uri="tree://")
        assert [(c["uri"], c["capabilities"]["list"]) for c in top] == [("tree://a", True), ("tree://b", True)]
        assert await client.list_resources(uri="tree://b") == []


async def test_children_errors(version):
    async with Client(app, protocol_version=version) as client:
        with pytest.raises(MCPError) as info:
            await client.request("resources/list", {"uri": "tree://a/x.txt"})
        assert info.value.code == -32602 and "not listable" in info.value.message
        with pytest.raises(MCPError) as info:
            await client.request("resources/list", {"uri": "db://users"})
        assert info.value.code == -32602 and info.value.data == {"uri": "db://users"}
        with pytest.raises(MCPError) as info:
            await client.request("resources/list", {"uri": "nope://x"})
        assert info.value.data == {"uri": "nope://x"}
        with pytest.raises(MCPError) as info:
            await client.request("resources/list", {"uri": "tree://a", "cursor": "bogus"})
        assert info.value.code == -32602


async def test_seed_000_fields_filter_and_get(version):
    async with Client(app, protocol_version=version, capabilities=SEED) as client:
        await client.read("db://users")
        listed = {r["uri"]: r for r in await client.list_resources()}
        assert listed["db://users"]["kind"] == "database_table"
        assert listed["db://users"]["metadata"] == {"rows": 2}
        assert len(listed["db://users"]["version"]) == 32
        tables = await client.list_resources(filter={"kind": "database_table"})
        assert [r["uri"] for r in tables] == ["db://users"]
        assert [r["uri"] for r in await client.list_resources(filter={"uriPrefix": "counter:"})] == ["counter://value"]
        assert [r["uri"] for r in await client.list_resources(filter={"mimeType": "inode/directory"})] == ["tree://"]
        with pytest.raises(MCPError) as info:
            await client.request("resources/list", {"filter": {"colour": "red"}})
        assert info.value.code == -32602 and info.value.data["filter"] == "colour"
        got = await client.request("resources/get", {"uri": "db://users"})
        assert got["resource"]["kind"] == "database_table"
        assert got["contents"] == {"uri": "db://users", "contentType": "application/json",
                                   "content": '[{"id":1},{"id":2}]'}
        with pytest.raises(MCPError) as info:
            await client.request("resources/get", {"uri": "db://users", "version": got["resource"]["version"]})
        assert info.value.code == -32003 and info.value.data["version"] == got["resource"]["version"]
        fresh = await client.request("resources/get", {"uri": "db://users", "version": "stale"})
        assert fresh["resource"]["version"] == got["resource"]["version"]
        with pytest.raises(MCPError) as info:
            await client.request("resources/get", {"uri": "nope://x"})
        assert info.value.data == {"uri": "nope://x"}


async def test_content_changed_only_for_opted_in_sessions():
    async with Client(app, capabilities=SEED) as opted, Client(app) as plain:
        await opted.request("resources/subscribe", {"uris": ["counter://value"]})
        await plain.subscribe("counter://value")
        await asyncio.sleep(0.1)
        await plain.read("control://bump")
        methods = sorted([(await opted.next_notification())["method"], (await opted.next_notification())["method"]])
        assert methods == ["notifications/resources/content_changed", "notifications/resources/updated"]
        assert (await plain.next_notification())["method"] == "notifications/resources/updated"
        await asyncio.sleep(0.1)
        assert plain.notifications.empty()


def test_extensions_over_stdio():
    with RawServer(APPS / "ext_app.py") as server:
        server.initialize(capabilities=SEP)
        page = server.request(1, "resources/list", {"uri": "tree://a"})["result"]
        assert len(page["resources"]) == 3 and page["resources"][0]["capabilities"]["list"] is False
        rest = server.request(2, "resources/list", {"uri": "tree://a", "cursor": page["nextCursor"]})["result"]
        assert [r["uri"] for r in rest["resources"]] == ["tree://a/w.txt"] and "nextCursor" not in rest
        meta = server.request(3, "resources/metadata", {"uri": "tree://"})["result"]["resource"]
        assert meta["mimeType"] == "inode/directory"
        assert server.request(4, "resources/get", {"uri": "nope://"})["error"]["code"] == -32002


async def test_paged_children_are_asked_one_page_at_a_time():
    from tests.apps.ext_app import CALLS

    CALLS.clear()
    async with Client(app) as client:
        first = await client.request("resources/list", {"uri": "many://"})
        assert [r["uri"] for r in first["resources"]] == ["many://0", "many://1", "many://2"]
        second = await client.request("resources/list", {"uri": "many://", "cursor": first["nextCursor"]})
        assert second["resources"][0]["uri"] == "many://3"
    assert CALLS == [(0, 4), (3, 4)]
