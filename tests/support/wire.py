"""JSON-RPC messages and request lines as a client writes them."""

from __future__ import annotations

from typing import Any

import orjson


def request(rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A request message (without ``params`` when ``params`` is None)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


def read_message(rid: Any, uri: str, modern: bool = False) -> dict[str, Any]:
    """A ``resources/read`` message; ``modern``: a 2026-07-28 one, its era in ``_meta``."""
    params: dict[str, Any] = {"uri": uri}
    if modern:
        params["_meta"] = modern_meta()
    return request(rid, "resources/read", params)


def initialize(version: str = "2025-11-25", rid: Any = 0, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return request(rid, "initialize", {"protocolVersion": version, "capabilities": capabilities or {},
                                       "clientInfo": {"name": "t", "version": "0"}})


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def modern_meta(**extra: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    meta.update(extra)
    return meta


def modern(method: str, params: dict[str, Any], rid: Any = 1) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 request and the HTTP headers that go with it."""
    return (request(rid, method, {**params, "_meta": modern_meta()}),
            {"mcp-protocol-version": "2026-07-28", "mcp-method": method})


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return headers


def read(rid: Any, uri: str, **params: Any) -> bytes:
    """A ``resources/read`` request line (without its newline)."""
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri, **params}})


def cancelled(rid: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
