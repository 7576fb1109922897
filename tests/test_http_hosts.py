"""The Host header rules of RFC 9112 §3.2 against a real ``resourcekit run --transport http``
process, over raw sockets (an HTTP client library would not send these requests): an HTTP/1.1
request without ``Host``, with two, or with one that is not ``host[:port]`` gets 400, whatever
verdict earlier requests with the same last ``Host`` got; the server keeps serving."""

from __future__ import annotations

import socket

import orjson
import pytest

from tests.support.http_server import http_server_process
from tests.support.process import APPS

INIT = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}})


@pytest.fixture(scope="module")
def port() -> int:
    with http_server_process(APPS / "basic_app.py") as url:
        yield int(url.rsplit(":", 1)[1].split("/")[0])


def exchange(port: int, head: bytes, method: bytes = b"POST", version: bytes = b"HTTP/1.1") -> tuple[bytes, bytes]:
    """One request on a fresh connection: (status line, body). ``head``: its Host lines."""
    body = INIT if method == b"POST" else b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"%s /mcp %s\r\n%scontent-type: application/json\r\naccept: application/json\r\n"
                     b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (method, version, head, len(body), body))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status, _, rest = data.partition(b"\r\n")
    return status, rest.partition(b"\r\n\r\n")[2]


def test_one_host_is_served(port: int) -> None:
    assert exchange(port, b"Host: 127.0.0.1\r\n")[0] == b"HTTP/1.1 200 OK"
    # HTTP/1.0 may leave Host out (the bind is loopback: nothing to rebind)
    assert exchange(port, b"", version=b"HTTP/1.0")[0].endswith(b" 200 OK")


@pytest.mark.parametrize(("head", "why"), [
    (b"", b"Host header is required"),
    (b"Host: evil.example\r\nHost: 127.0.0.1\r\n", b"more than one Host header"),
    (b"Host: 127.0.0.1\r\nHost: 127.0.0.1\r\n", b"more than one Host header"),
    (b"Host: 127.0.0.1\r\nHost: evil.example\r\n", b"more than one Host header"),
    (b"Host: 127.0.0.1/mcp\r\n", b"not host[:port]"),
    (b"Host: 127.0.0.1 evil.example\r\n", b"not host[:port]"),
    (b"Host: user@127.0.0.1\r\n", b"not host[:port]"),
])
@pytest.mark.parametrize("method", [b"POST", b"GET", b"DELETE"])
def test_missing_repeated_or_malformed_host_is_400(port: int, head: bytes, why: bytes, method: bytes) -> None:
    for _ in range(2):  # after a request with the same last Host was served, too (verdicts are cached)
        assert exchange(port, b"Host: 127.0.0.1\r\n", method)[0] != b"HTTP/1.1 400 Bad Request"
        status, body = exchange(port, head, method)
        assert status == b"HTTP/1.1 400 Bad Request"
        error = orjson.loads(body)["error"]
        assert error["code"] == -32600 and why in error["message"].encode()
        assert b"Traceback" not in body
    assert exchange(port, b"Host: localhost:1234\r\n")[0] == b"HTTP/1.1 200 OK"  # and keeps serving
