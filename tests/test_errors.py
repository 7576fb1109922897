"""MCPError: raised by a handler, it reaches the client as written and cannot lose its message
(issue 12, "the first ten minutes")."""

from __future__ import annotations

import pytest

from resourcekit import App, MCPError
from resourcekit.testing import Client

# --- MCPError (issue 12, the first ten minutes) ---------------------------------------------------


def test_mcp_error_cannot_lose_its_message():
    jsonrpc_order = MCPError(-32602, "Invalid date")
    assert (jsonrpc_order.code, jsonrpc_order.message, jsonrpc_order.data) == (-32602, "Invalid date", None)
    with_data = MCPError(-32001, "Quota exceeded", {"retryAfter": 30})
    assert with_data.to_error() == {"code": -32001, "message": "Quota exceeded", "data": {"retryAfter": 30}}
    keyword = MCPError("Quota exceeded", {"retryAfter": 30}, code=-32001)
    assert keyword.to_error() == with_data.to_error()
    assert MCPError("plain").to_error() == {"code": -32603, "message": "plain"}
    for mistake in (lambda: MCPError("msg", -32602), lambda: MCPError(-32602), lambda: MCPError(None),
                    lambda: MCPError(-32602, "msg", code=-32001), lambda: MCPError("m", code="x")):
        with pytest.raises(TypeError):
            mistake()


@pytest.mark.anyio
async def test_mcp_error_reaches_the_client_as_written():
    app = App("errors")

    @app.resource("err://quota")
    def quota() -> str:
        raise MCPError(-32001, "Quota exceeded", {"retryAfter": 30})

    async with Client(app) as client:
        with pytest.raises(MCPError) as info:
            await client.read("err://quota")
    assert info.value.to_error() == {"code": -32001, "message": "Quota exceeded", "data": {"retryAfter": 30}}
