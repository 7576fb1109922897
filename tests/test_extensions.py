"""SEP-2093 and the seed-000 variant: methods for everyone, extra fields only for clients that opt in."""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from typing import Any

import orjson
import pytest

from resourcekit import extensions as optin
from resourcekit.testing import Client
from tests.apps import ext_app
from tests.apps.ext_app import app
from tests.support.process import APPS, RawServer
from tests.support.session import error_of

pytestmark = pytest.mark.anyio
SEP = {"experimental": {"io.resourcekit/sep-2093": {}}}
SEED = {"experimental": {"io.resourcekit/resources-get": {}}}
BOTH = {"experimental": {"io.resourcekit/sep-2093": {}, "io.resourcekit/resources-get": {}}}
MODERN = "2026-07-28"
RESOURCE_KEYS = {"uri", "name", "title", "description", "mimeType", "size", "annotations", "icons", "_meta"}
TEMPLATE_KEYS = {"uriTemplate", "name", "title", "description", "mimeType", "annotations", "icons", "_meta"}
CONTENT_KEYS = {"uri", "mimeType", "text", "blob", "_meta"}
EXTRA_KEYS = {"capabilities", "kind", "version", "metadata"}
VERSION_KEY = "io.resourcekit/version"


@pytest.fixture(params=["2025-11-25", MODERN])
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def not_found(version: str) -> int:
    return -32602 if version == MODERN else -32002


async def pages(client: Client, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every raw page of a resources/list walk."""
    out, cursor = [], None
    while True:
        page = await client.request("resources/list", {**params, **({"cursor": cursor} if cursor else {})})
        out.append(page)
        cursor = page.get("nextCursor")
        if cursor is None:
            return out


async def wire_of_lists(client: Client) -> bytes:
    resources = [await pages(client, {})]
    templates = await client.request("resources/templates/list")
    return orjson.dumps([resources, templates], option=orjson.OPT_SORT_KEYS)


# --- a client that did not opt in -----------------------------------------------------------


async def test_standard_clients_see_standard_objects(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async with Client(app, protocol_version=version) as client:
        for method in ("resources/metadata", "resources/get"):  # used by somebody else: nothing may stick
            await client.request(method, {"uri": "counter://value"})
            await client.request(method, {"uri": "tree://a"})
        resources = await client.list_resources()
        assert all(set(r) <= RESOURCE_KEYS for r in resources), resources
        assert all(set(t) <= TEMPLATE_KEYS for t in await client.list_templates())
        for uri in ("db://users", "formats://report", "bundle://", "folder://", "tree://a"):
            assert all(set(c) <= CONTENT_KEYS for c in await client.read(uri))
        assert [c["uri"] for c in await client.read("bundle://")] == ["bundle://", "bundle://extra"]
        served = await wire_of_lists(client)
        monkeypatch.setattr(optin.OptIn, "of", classmethod(lambda cls, caps: optin.NONE))  # as if no extensions
        assert await wire_of_lists(client) == served


async def test_opting_in_to_one_extension_shows_only_its_fields(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=SEP) as client:
        await client.read("counter://value")
        counter = next(r for r in await client.list_resources() if r["uri"] == "counter://value")
        assert set(counter) & EXTRA_KEYS == {"capabilities"}
    async with Client(app, protocol_version=version, capabilities=SEED) as client:
        counter = next(r for r in await client.list_resources() if r["uri"] == "counter://value")
        assert set(counter) & EXTRA_KEYS == {"kind", "version", "metadata"}
        assert set((await client.read("counter://value"))[0]) <= CONTENT_KEYS


async def test_opt_in_through_capabilities_extensions_in_2026() -> None:
    caps = {"extensions": {"io.resourcekit/sep-2093": {}}}
    async with Client(app, protocol_version=MODERN, capabilities=caps) as client:
        assert (await client.list_templates())[0]["capabilities"] == {"list": True, "subscribe": True}


# --- SEP-2093: capabilities ---------------------------------------------------------------------


async def test_capabilities_in_listings(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=SEP) as client:
        listed = {r["uri"]: r["capabilities"] for r in await client.list_resources()}
        assert listed["tree://"] == {"list": True, "subscribe": True}
        assert listed["tree://a"] == listed["tree://a/sub"] == listed["tree://b"] == {"list": True, "subscribe": True}
        assert listed["tree://a/f0.txt"] == {"list": False, "subscribe": True}  # children() says None
        assert listed["tree://a/sub/deep.md"]["list"] is False
        assert listed["db://users"] == listed["db://empty"] == {"list": True, "subscribe": True}
        assert listed["counter://value"] == listed["formats://report"] == {"list": False, "subscribe": True}
        templates = {t["uriTemplate"]: t["capabilities"] for t in await client.list_templates()}
        assert templates["tree://{+path}"] == {"list": True, "subscribe": True}  # an upper bound
        assert templates["db://{table}/{row}"] == {"list": False, "subscribe": True}


async def test_resources_metadata(version: str) -> None:
    async with Client(app, protocol_version=version) as client:
        resource = (await client.request("resources/metadata", {"uri": "tree://a/f1.txt"}))["resource"]
        # an instance is named and titled by its variables' values (the template is named node)
        assert resource == {"uri": "tree://a/f1.txt", "name": "node:a/f1.txt", "title": "node a/f1.txt",
                            "mimeType": "text/plain",
                            "description": "A file or a directory of the tree.",
                            "capabilities": {"list": False, "subscribe": True}}
        folder = (await client.request("resources/metadata", {"uri": "tree://a"}))["resource"]
        assert folder["capabilities"] == {"list": True, "subscribe": True}
        uri = f"db://fresh{version[:4]}"
        ext_app.TABLES[uri[5:]] = [1]
        fresh = (await client.request("resources/metadata", {"uri": uri}))["resource"]
        assert "_meta" not in fresh and fresh["capabilities"]["list"] is True  # not read yet: no version
        await client.read(uri)
        fresh = (await client.request("resources/metadata", {"uri": uri}))["resource"]
        assert len(fresh["_meta"][VERSION_KEY]) == 32
        assert not {"kind", "version", "metadata", "text"} & set(fresh)
        del ext_app.TABLES[uri[5:]]
        report = (await client.request("resources/metadata", {"uri": "formats://report"}))["resource"]
        assert report["title"] == "Quarterly report" and report["capabilities"]["list"] is False


async def test_resources_metadata_with_seed_fields(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=SEED) as client:
        await client.read("db://users")
        users = (await client.request("resources/metadata", {"uri": "db://users"}))["resource"]
        assert users["kind"] == "database_table" and users["metadata"] == {"engine": "memory"}
        assert users["version"] == users["_meta"][VERSION_KEY]


async def test_resources_metadata_errors(version: str) -> None:
    async with Client(app, protocol_version=version) as client:
        for uri in ("nope://x", "tree://no/such/dir", "db://missing"):
            error = await error_of(client, "resources/metadata", {"uri": uri})
            assert (error.code, error.data) == (not_found(version), {"uri": uri})
        for params in ({}, {"uri": ""}, {"uri": 7}):
            assert (await error_of(client, "resources/metadata", params)).code == -32602


# --- SEP-2093: children -------------------------------------------------------------------------


async def test_children_paged_without_duplicates(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=SEP) as client:
        walked = await pages(client, {"uri": "tree://a"})
        assert [len(p["resources"]) for p in walked] == [3, 3, 2]
        uris = [r["uri"] for p in walked for r in p["resources"]]
        assert uris == ["tree://a/sub", *(f"tree://a/f{n}.txt" for n in range(7))]
        cursors = [p["nextCursor"] for p in walked[:-1]]
        assert len(set(cursors)) == 2 and not any("tree" in c or ":" in c for c in cursors)  # opaque
        first = walked[0]["resources"]
        assert first[0] == {"uri": "tree://a/sub", "name": "sub", "mimeType": "inode/directory", "size": 0,
                            "capabilities": {"list": True, "subscribe": True}}
        assert first[1]["capabilities"] == {"list": False, "subscribe": True}
        top = await client.list_resources(uri="tree://")
        assert [(c["uri"], c["capabilities"]["list"]) for c in top] == [("tree://a", True), ("tree://b", True)]
        assert await client.list_resources(uri="tree://b") == []


async def test_children_for_a_client_without_opt_in(version: str) -> None:
    async with Client(app, protocol_version=version) as client:
        children = await client.list_resources(uri="tree://a/sub")
        assert children == [{"uri": "tree://a/sub/deep.md", "name": "deep.md", "mimeType": "text/plain",
                             "size": len("a/sub/deep.md")}]


async def test_children_of_a_database(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=BOTH) as client:
        rows = await client.list_resources(uri="db://users")  # an async children function
        assert [r["uri"] for r in rows] == [f"db://users/{n}" for n in (1, 2, 3, 4)]
        assert rows[0]["capabilities"] == {"list": False, "subscribe": True}
        assert rows[0]["kind"] == "database_row" and rows[0]["name"] == "1"
        assert await client.list_resources(uri="db://empty") == []
        tables = await client.list_resources(filter={"kind": "database_table"})
        assert [t["uri"] for t in tables] == ["db://users", "db://empty"]


async def test_children_in_other_shapes(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=SEP) as client:
        assert [r["uri"] for r in await client.list_resources(uri="stream://")] == [f"stream://{n}" for n in range(5)]
        folder = await client.list_resources(uri="folder://")
        assert [(r["uri"], r["capabilities"]) for r in folder] == [
            ("folder://one", {"list": False, "subscribe": True}), ("folder://two", {"list": False, "subscribe": True})]


async def test_paged_children_are_asked_one_page_at_a_time() -> None:
    ext_app.CALLS.clear()
    async with Client(app) as client:
        first = await client.request("resources/list", {"uri": "many://"})
        assert [r["uri"] for r in first["resources"]] == ["many://0", "many://1", "many://2"]
        second = await client.request("resources/list", {"uri": "many://", "cursor": first["nextCursor"]})
        assert [r["uri"] for r in second["resources"]] == ["many://3", "many://4", "many://5"]
    assert ext_app.CALLS == [(0, 4), (3, 4)]


async def test_children_errors(version: str) -> None:
    async with Client(app, protocol_version=version) as client:
        for uri in ("tree://a/f0.txt", "db://users/1", "counter://value"):
            error = await error_of(client, "resources/list", {"uri": uri})
            assert error.code == -32602 and error.data == {"uri": uri}
            assert error.message == f"Invalid params: {uri} is not listable"
        for uri in ("nope://x", "tree://missing", "db://missing"):
            error = await error_of(client, "resources/list", {"uri": uri})
            assert (error.code, error.data) == (not_found(version), {"uri": uri})
        page = await client.request("resources/list", {"uri": "tree://a"})
        top = await client.request("resources/list", {})
        for params in ({"uri": "tree://a", "cursor": "bogus"},
                       {"uri": "tree://a", "cursor": 3},
                       {"uri": "tree://", "cursor": page["nextCursor"]},  # another resource's cursor
                       {"uri": "tree://a", "cursor": top["nextCursor"]},  # the top-level list's cursor
                       {"cursor": page["nextCursor"]},
                       {"uri": ""}):
            error = await error_of(client, "resources/list", params)
            assert error.code == -32602, params


# --- SEP-2093: reads ---------------------------------------------------------------------------


async def test_read_contents_extend_resource(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=SEP) as client:
        (users,) = await client.read("db://users")
        assert users["name"] == "table:users" and users["description"] == "One table (list it for its rows)."
        assert users["capabilities"] == {"list": True, "subscribe": True}
        assert users["size"] == len(users["text"].encode())
        (leaf,) = await client.read("tree://a/f2.txt")
        assert leaf["capabilities"] == {"list": False, "subscribe": True}  # the template's bound would say True


async def test_read_format_alternatives(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=SEP) as client:
        pdf, text = await client.read("formats://report")
        for content in (pdf, text):
            assert content["uri"] == "formats://report"
            assert (content["name"], content["title"]) == ("report", "Quarterly report")
            assert content["capabilities"] == {"list": False, "subscribe": True}
        assert (pdf["mimeType"], pdf["size"]) == ("application/pdf", len(ext_app.PDF))
        assert base64.b64decode(pdf["blob"]) == ext_app.PDF
        assert (text["mimeType"], text["size"]) == ("text/plain", len("Extracted text"))


async def test_read_of_a_listable_resource_may_return_children(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=SEP) as client:
        one, two = await client.read("folder://")
        assert one["uri"] == "folder://one" and one["name"] == "folder_item:one"  # named by its own resource
        assert one["description"] == "An item of the folder" and "capabilities" not in one


async def test_non_listable_read_with_other_uris_drops_capabilities(
    version: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "resourcekit"):
        async with Client(app, protocol_version=version, capabilities=SEP) as client:
            contents = await client.read("bundle://")
            await client.read("bundle://")
    assert [c["uri"] for c in contents] == ["bundle://", "bundle://extra"]
    assert not any("capabilities" in c for c in contents)  # SEP-2093 §5: the backwards-compatible form
    assert contents[1]["name"] == "extra"
    assert sum("not listable" in r.getMessage() for r in caplog.records) <= 1


# --- seed 000 ------------------------------------------------------------------------------------


async def test_seed_000_fields_in_listings(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=SEED) as client:
        await client.read("db://users")
        listed = {r["uri"]: r for r in await client.list_resources()}
        users = listed["db://users"]
        assert (users["kind"], users["metadata"]) == ("database_table", {"engine": "memory"})
        assert users["version"] == users["_meta"][VERSION_KEY]
        assert all("version" not in r for r in listed.values() if VERSION_KEY not in r.get("_meta", {}))
        assert listed["tree://"]["kind"] == "directory" and listed["tree://a/f0.txt"]["kind"] == "file"
        assert "capabilities" not in users
        templates = {t["uriTemplate"]: t for t in await client.list_templates()}
        assert templates["db://{table}"]["kind"] == "database_table"
        assert templates["db://{table}"]["metadata"] == {"engine": "memory"}


async def test_filter(version: str) -> None:
    async with Client(app, protocol_version=version) as client:
        async def uris(**spec: str) -> list[str]:
            return [r["uri"] for r in await client.list_resources(filter=spec)]

        assert await uris(kind="database_table") == ["db://users", "db://empty"]
        assert await uris(uriPrefix="counter:") == ["counter://value"]
        assert await uris(mimeType="inode/directory") == ["tree://", "tree://a", "tree://a/sub", "tree://b"]
        assert await uris(kind="file", mimeType="inode/directory") == ["tree://a", "tree://a/sub", "tree://b"]
        assert await uris(kind="file", uriPrefix="tree://a/f") == [f"tree://a/f{n}.txt" for n in range(7)]
        assert await uris(kind="nothing") == []
        # filtered pages are still full pages
        walked = await pages(client, {"filter": {"kind": "file"}})
        assert [len(p["resources"]) for p in walked] == [3, 3, 3, 2]
        # with ``uri``: the children that match
        assert [r["uri"] for r in await client.list_resources(uri="tree://a", filter={"mimeType": "inode/directory"})
                ] == ["tree://a/sub"]
        rows = await client.list_resources(uri="db://users", filter={"uriPrefix": "db://users/3"})
        assert [r["uri"] for r in rows] == ["db://users/3"]
        walked = await pages(client, {"uri": "tree://a", "filter": {"mimeType": "text/plain"}})
        assert [r["uri"] for p in walked for r in p["resources"]] == [f"tree://a/f{n}.txt" for n in range(7)]


async def test_filter_errors(version: str) -> None:
    async with Client(app, protocol_version=version) as client:
        error = await error_of(client, "resources/list", {"filter": {"kind": "file", "colour": "red"}})
        assert error.code == -32602 and "'colour'" in error.message
        assert error.data == {"filter": "colour", "supported": ["kind", "mimeType", "uriPrefix"]}
        error = await error_of(client, "resources/list", {"uri": "tree://a", "filter": {"size": "1"}})
        assert error.code == -32602 and error.data["filter"] == "size"
        assert (await error_of(client, "resources/list", {"filter": {"kind": 3}})).code == -32602
        assert (await error_of(client, "resources/list", {"filter": ["kind"]})).code == -32602


async def test_resources_get(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=SEED) as client:
        got = await client.request("resources/get", {"uri": "db://users"})
        assert got["contents"] == {"uri": "db://users", "contentType": "application/json",
                                   "content": '{"table":"users","rows":4}'}
        resource = got["resource"]
        assert (resource["uri"], resource["kind"], resource["metadata"]) == (
            "db://users", "database_table", {"engine": "memory"})
        assert len(resource["version"]) == 32 and "capabilities" not in resource
        error = await error_of(client, "resources/get", {"uri": "db://users", "version": resource["version"]})
        assert (error.code, error.message) == (-32003, "Not modified")
        assert error.data == {"uri": "db://users", "version": resource["version"]}
        fresh = await client.request("resources/get", {"uri": "db://users", "version": "stale"})
        assert fresh["resource"]["version"] == resource["version"]
        both = await client.request("resources/get", {"uri": "formats://report"})
        assert [c["contentType"] for c in both["contents"]] == ["application/pdf", "text/plain"]
        assert base64.b64decode(both["contents"][0]["blob"]) == ext_app.PDF
        assert both["contents"][1]["content"] == "Extracted text"


async def test_resources_get_without_opt_in_and_with_sep(version: str) -> None:
    async with Client(app, protocol_version=version) as client:  # the method is there for everyone
        got = await client.request("resources/get", {"uri": "tree://a/f3.txt"})
        assert got["contents"]["content"] == "contents of a/f3.txt" and got["resource"]["kind"] == "file"
    async with Client(app, protocol_version=version, capabilities=SEP) as client:
        got = await client.request("resources/get", {"uri": "tree://a"})
        assert got["resource"]["capabilities"] == {"list": True, "subscribe": True}
        got = await client.request("resources/get", {"uri": "tree://a/f3.txt"})
        assert got["resource"]["capabilities"] == {"list": False, "subscribe": True}


async def test_resources_get_errors(version: str) -> None:
    async with Client(app, protocol_version=version, capabilities=SEED) as client:
        for uri in ("nope://x", "tree://missing"):
            error = await error_of(client, "resources/get", {"uri": uri})
            assert (error.code, error.data) == (not_found(version), {"uri": uri})
        for params in ({}, {"uri": "db://users", "version": 5}):
            assert (await error_of(client, "resources/get", params)).code == -32602


# --- seed 000: content_changed --------------------------------------------------------------------


async def test_content_changed_only_for_opted_in_sessions() -> None:
    async with Client(app, capabilities=SEED) as opted, Client(app) as plain:
        await opted.request("resources/subscribe", {"uris": ["counter://value"]})
        await plain.subscribe("counter://value")
        await asyncio.sleep(0.1)
        await plain.read("control://bump")
        first, second = await opted.next_notification(), await opted.next_notification()
        assert first == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                         "params": {"uri": "counter://value"}}
        assert second["method"] == "notifications/resources/content_changed"
        resource = second["params"]["resource"]
        assert (resource["uri"], resource["kind"], resource["metadata"]) == (
            "counter://value", "counter", {"unit": "clicks"})
        assert resource["version"] == (await opted.request("resources/get", {"uri": "counter://value"})
                                       )["resource"]["version"]
        assert (await plain.next_notification())["method"] == "notifications/resources/updated"
        await asyncio.sleep(0.1)
        assert plain.notifications.empty() and opted.notifications.empty()


async def test_content_changed_on_listen_streams() -> None:
    async with Client(app, protocol_version=MODERN, capabilities=SEED) as opted, \
            Client(app, protocol_version=MODERN) as plain:
        opted_id = opted.listen(["counter://value"])
        plain.listen(["counter://value"])
        for client in (opted, plain):
            assert (await client.next_notification())["method"] == "notifications/subscriptions/acknowledged"
        await asyncio.sleep(0.1)
        await plain.read("control://bump")
        updated, changed = await opted.next_notification(), await opted.next_notification()
        assert updated["method"] == "notifications/resources/updated"
        assert changed["method"] == "notifications/resources/content_changed"
        assert changed["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": opted_id}
        assert changed["params"]["resource"]["uri"] == "counter://value"
        assert (await plain.next_notification())["method"] == "notifications/resources/updated"
        await asyncio.sleep(0.1)
        assert plain.notifications.empty() and opted.notifications.empty()


async def test_no_content_changed_without_a_change() -> None:
    async with Client(app, capabilities=SEED) as opted:
        await opted.subscribe("counter://value")
        await asyncio.sleep(0.1)
        app.notify_changed("counter://value")  # same content: neither notification
        await asyncio.sleep(0.2)
        assert opted.notifications.empty()


async def test_a_deleted_resource_shows_no_version() -> None:
    ext_app.TABLES["doomed"] = [1]
    try:
        async with Client(app, capabilities=BOTH) as client:
            await client.subscribe("db://doomed")
            await client.read("db://doomed")
            await asyncio.sleep(0.1)
            del ext_app.TABLES["doomed"]
            app.notify_changed("db://doomed")
            assert (await client.next_notification())["method"] == "notifications/resources/updated"
            changed = await client.next_notification()
            assert changed["method"] == "notifications/resources/content_changed"
            assert "version" not in changed["params"]["resource"]
            error = await error_of(client, "resources/metadata", {"uri": "db://doomed"})
            assert error.data == {"uri": "db://doomed"}
            listed = await client.request("resources/metadata", {"uri": "db://users"})
            assert "<gone>" not in orjson.dumps(listed).decode()
    finally:
        ext_app.TABLES.pop("doomed", None)


# --- end to end --------------------------------------------------------------------------------


def test_extensions_over_stdio() -> None:
    with RawServer(APPS / "ext_app.py") as server:
        server.initialize(capabilities=BOTH)
        page = server.request(1, "resources/list", {"uri": "tree://a"})["result"]
        assert [r["uri"] for r in page["resources"]] == ["tree://a/sub", "tree://a/f0.txt", "tree://a/f1.txt"]
        assert [r["capabilities"]["list"] for r in page["resources"]] == [True, False, False]
        seen = [r["uri"] for r in page["resources"]]
        while "nextCursor" in page:
            page = server.request(2, "resources/list", {"uri": "tree://a", "cursor": page["nextCursor"]})["result"]
            seen += [r["uri"] for r in page["resources"]]
        assert len(seen) == len(set(seen)) == 8
        meta = server.request(3, "resources/metadata", {"uri": "tree://"})["result"]["resource"]
        assert meta["mimeType"] == "inode/directory" and meta["capabilities"] == {"list": True, "subscribe": True}
        got = server.request(4, "resources/get", {"uri": "counter://value"})["result"]
        assert got["resource"]["kind"] == "counter"
        error = server.request(5, "resources/get", {"uri": "counter://value",
                                                    "version": got["resource"]["version"]})["error"]
        assert error["code"] == -32003 and error["data"]["uri"] == "counter://value"
        assert server.request(6, "resources/list", {"filter": {"size": "1"}})["error"]["code"] == -32602
        error = server.request(7, "resources/list", {"uri": "tree://a/f0.txt"})["error"]
        assert (error["code"], error["data"]) == (-32602, {"uri": "tree://a/f0.txt"})
        assert server.request(8, "resources/get", {"uri": "nope://"})["error"]["code"] == -32002
        assert server.request(9, "resources/subscribe", {"uris": ["counter://value"]})["result"] == {}
        time.sleep(0.3)  # the tracker takes its baseline version first
        server.send({"jsonrpc": "2.0", "id": 10, "method": "resources/read", "params": {"uri": "control://bump"}})
        messages = [server.recv() for _ in range(3)]
        assert sorted(m.get("method", "") for m in messages) == [
            "", "notifications/resources/content_changed", "notifications/resources/updated"]
