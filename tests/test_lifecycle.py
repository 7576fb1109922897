"""A session's lifecycle: initialize, once."""

from __future__ import annotations

import pytest

from resourcekit import App
from tests.support.session import connected

pytestmark = pytest.mark.anyio


# --- findings 8 and 13: workers, in-flight requests, cancelled batch members ----------------------


async def test_initialize_twice_on_one_session_is_refused() -> None:
    app = App("t")
    server, conn, out = connected(app, "2025-11-25")
    try:
        conn.receive({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        assert out[0]["error"]["code"] == -32600
        assert conn.protocol_version == "2025-11-25"
    finally:
        server.close()


async def test_an_id_no_request_may_have_is_refused_naming_what_an_id_may_be() -> None:
    """JSON-RPC ids are strings or integers; an integer beyond 64 bits arrives as a float."""
    app = App("t")
    server, conn, out = connected(app, "2025-11-25")
    try:
        for line in (b'{"jsonrpc":"2.0","id":1000000000000000000000000000000,"method":"ping"}',
                     b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', b'{"jsonrpc":"2.0","id":true,"method":"ping"}'):
            conn.feed(line)
        assert [(m["id"], m["error"]["code"]) for m in out] == [(None, -32600)] * 3
        assert all("integer of at most 64 bits" in m["error"]["message"] for m in out)
    finally:
        server.close()
