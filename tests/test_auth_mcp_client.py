"""The official ``mcp`` client against a real resource server process with OAuth: with a bearer
token it was given, and through its own OAuth support (discovery from the 401, RFC 9728 and
RFC 8414 metadata, a client_credentials grant with RFC 8707 ``resource``, step-up on 403)."""

from __future__ import annotations

import httpx2
import orjson
import pytest
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.shared.exceptions import MCPError as ClientError

from tests.support.auth import resource_server

pytestmark = pytest.mark.anyio


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info



@pytest.fixture(scope="module")
def server(auth_server):
    with resource_server("--auth-issuer", auth_server.issuer, "--auth-audience", "{url}") as rs:
        yield rs


async def test_a_bearer_token_lists_only_what_it_may_read_and_reads_it(auth_server, server):
    token = auth_server.mint(server.url, "notes:read", subject="carol", client_id="cli")
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, streamable_http_client(server.url, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        uris = {str(r.uri) for r in (await session.list_resources()).resources}
        assert uris == {"notes://public", "notes://list", "debug://ran", "whoami://me", "open://a"}
        me = orjson.loads((await session.read_resource("whoami://me")).contents[0].text)
        assert me["subject"] == "carol" and me["client_id"] == "cli" and me["scopes"] == ["notes:read"]
        with pytest.raises(ClientError) as refused:  # the 403's body is the JSON-RPC error
            await session.read_resource("notes://secret")
        assert refused.value.error.code == -32030
        assert refused.value.error.data == {"uri": "notes://secret", "scopes": ["notes:read", "secret"]}


async def test_the_client_discovers_gets_a_token_and_steps_up_on_its_own(auth_server, server):
    secret = auth_server.register("robot", {"notes:read", "secret"})
    storage = MemoryStorage()
    provider = ClientCredentialsOAuthProvider(server.url, storage, "robot", secret, scope="notes:read",
                                              issuer=auth_server.issuer)
    before = auth_server.count("/token")
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http, \
            streamable_http_client(server.url, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()  # 401 -> metadata -> token (with resource=) -> retried
        assert storage.tokens is not None and storage.tokens.scope == "notes:read"
        assert (await session.read_resource("notes://list")).contents[0].text == "groceries, taxes"
        # 403 insufficient_scope names "notes:read secret": the client asks for them and retries
        assert (await session.read_resource("notes://secret")).contents[0].text == "the cake is a lie"
        assert set(storage.tokens.scope.split()) == {"notes:read", "secret"}
        me = orjson.loads((await session.read_resource("whoami://me")).contents[0].text)
        assert me["subject"] == "robot" and me["scopes"] == ["notes:read", "secret"]
    assert auth_server.count("/token") == before + 2
    assert any(r.startswith("GET /.well-known/oauth-authorization-server") for r in auth_server.requests)
