"""Scopes without a network: declarations, the in-memory client as a principal, skills and
SEP-2093 children left out, OAuthResourceServer's settings; and stdio, which the spec leaves alone."""

from __future__ import annotations

import asyncio

import pytest

from resourcekit import App, Context, DefinitionError, InsufficientScope, Principal
from resourcekit.auth import OAuthResourceServer
from resourcekit.testing import Client
from tests.support.auth import AUTH_APP
from tests.support.mcp_client import stdio_session
from tests.support.process import COOKBOOK

pytestmark = pytest.mark.anyio


def test_bad_scopes_fail_at_declaration_naming_the_culprit():
    app = App("t")
    with pytest.raises(DefinitionError, match="'notes://a'.*list of strings"):
        app.resource("notes://a", scopes="read")(lambda: "a")
    with pytest.raises(DefinitionError, match="'has space' is not a scope token"):
        app.template("notes://{x}", scopes=["has space"])(lambda x: x)
    with pytest.raises(DefinitionError, match="App 'u'"):
        App("u", scopes="admin")


def test_principals_are_equal_when_they_are_the_same_caller_whatever_the_scopes():
    a = Principal("alice", client_id="c", scopes=["x"], issuer="https://as")
    assert a == Principal("alice", client_id="c", scopes=["x", "y"], issuer="https://as")
    assert a != Principal("bob", client_id="c", scopes=["x"], issuer="https://as")
    assert "x" not in repr(a)  # what binds a session across workers: no scopes


async def test_the_in_memory_client_can_be_a_principal():
    app = App("t", scopes=["base"])
    seen = []

    @app.resource("notes://open", scopes=[])
    def open_note(ctx: Context) -> str:
        seen.append(ctx.principal)
        return "open"

    @app.resource("notes://both", scopes=["a", "b"])
    def both() -> str:
        return "both"

    @app.template("notes://t/{name}", lister=lambda: [{"name": "x"}])
    def tpl(name: str) -> str:
        return name

    reader = Principal("bob", scopes=["a"])
    async with Client(app, principal=reader) as client:
        assert [r["uri"] for r in await client.list_resources()] == ["notes://open"]
        assert await client.list_templates() == []
        with pytest.raises(Exception) as refused:
            await client.read("notes://both")
        assert refused.value.code == InsufficientScope.code and refused.value.data["scopes"] == ["a", "b"]
        assert await client.read_text("notes://open") == "open"
    assert seen == [reader]
    async with Client(app, principal=Principal("al", scopes=["a", "b", "base"]), protocol_version="2026-07-28") \
            as client:
        assert {r["uri"] for r in await client.list_resources()} == {"notes://open", "notes://both", "notes://t/x"}
        assert await client.read_text("notes://t/x") == "x"
    async with Client(app) as client:  # no principal (stdio, no auth): nothing is checked
        assert await client.read_text("notes://both") == "both"


async def test_skills_and_children_show_only_what_the_principal_may_read():
    app = App("skills", scopes=["skills"])
    app.add_skills(COOKBOOK / "skills", poll=None)

    @app.resource("dir://top", scopes=[], children=lambda: ["dir://top/a", "dir://top/b"])
    def root() -> str:
        return "root"

    @app.resource("dir://top/a", scopes=[])
    def a() -> str:
        return "a"

    @app.resource("dir://top/b", scopes=["b"])
    def b() -> str:
        return "b"

    async with Client(app, principal=Principal("nobody")) as client:
        assert (await client.request("skills/list"))["skills"] == []
        page = await client.request("resources/directory/read", {"uri": "dir://top"})
        assert [r["uri"] for r in page["resources"]] == ["dir://top/a"]
    async with Client(app, principal=Principal("reader", scopes=["skills", "b"])) as client:
        skills = (await client.request("skills/list"))["skills"]
        assert skills
        page = await client.request("resources/directory/read", {"uri": "dir://top"})
        assert [r["uri"] for r in page["resources"]] == ["dir://top/a", "dir://top/b"]


def test_the_resource_server_checks_its_settings_and_names_its_metadata():
    with pytest.raises(ValueError, match="audience must be an absolute http"):
        OAuthResourceServer(issuer="https://as.example", audience="mcp.example.com")
    with pytest.raises(ValueError, match="issuer"):
        OAuthResourceServer(issuer="https://as.example#x", audience="https://mcp.example")
    rs = OAuthResourceServer(issuer="https://as.example", audience="https://mcp.example")
    assert rs.metadata_url == "https://mcp.example/.well-known/oauth-protected-resource"
    deep = OAuthResourceServer(issuer="https://as.example", audience="https://mcp.example/tenant/mcp",
                               scopes=["mcp"])
    assert deep.metadata_url == "https://mcp.example/.well-known/oauth-protected-resource/tenant/mcp"
    assert OAuthResourceServer(**deep.options()).options() == deep.options()
    assert deep.challenge("insufficient_scope", ["b", "a"]) == (
        'Bearer error="insufficient_scope", scope="a b", '
        'resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/tenant/mcp"')


async def test_stdio_is_unaffected_every_resource_reads():
    async with stdio_session(AUTH_APP) as session:
        assert (await session.read_resource("notes://secret")).contents[0].text == "the cake is a lie"
        assert len((await session.list_resources()).resources) == 8


async def test_requests_that_arrive_during_the_first_key_fetch_wait_for_it_and_it_happens_once():
    from tests.support.oauth_server import AuthorizationServer

    with AuthorizationServer() as auth_server:
        rs = OAuthResourceServer(issuer=auth_server.issuer, audience="http://127.0.0.1:1/mcp")
        keys = await asyncio.gather(*(rs.keys.key("key-1", "RS256") for _ in range(16)))
        assert all(k is not None for k in keys)
        assert rs.keys.fetches == 1 and auth_server.count("/jwks") == 1
        assert auth_server.count("/.well-known/oauth-authorization-server") == 1
        # a made-up kid right after: no fetch (the interval has not passed)
        assert await rs.keys.key("made-up", "RS256") is None and auth_server.count("/jwks") == 1
