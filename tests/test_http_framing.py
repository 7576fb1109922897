"""HTTP framing against hostile clients: header values with non-ASCII digits (finding 15 of the
2026-11-23 review), header sections bounded in size and time, request bodies in time, pipelined and
kept-alive requests (uvicorn's, in a real ``resourcekit run --transport http`` process); each
response's Content-Length."""

from __future__ import annotations

import logging
import re
import socket
import textwrap
import time

import httpx
import orjson
import pytest

from tests.support.asgi import INIT, Call, get_stream, make_app, session, sid_of
from tests.support.http_server import http_server_process
from tests.support.wire import modern_meta, read_message, request

pytestmark = pytest.mark.anyio


LIMITED_APP = textwrap.dedent("""
    from resourcekit import App, Limits
    app = App("limited", limits=Limits(max_header_bytes=16 * 1024, header_timeout=1.0))

    @app.resource("hello://x")
    def hello() -> str:
        return "hi"
""")


def _closed(sock: socket.socket, timeout: float) -> bytes | None:
    """What the server sent before closing, or None if it kept the connection open."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except ConnectionResetError:
        return data
    except TimeoutError:
        return None
    return data


def _request_bytes(port: int, rid: int) -> bytes:
    body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "server/discover",
                         "params": {"_meta": modern_meta()}})
    return (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\ncontent-type: application/json\r\n"
            b"accept: application/json\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: server/discover\r\n"
            b"content-length: %d\r\n\r\n%s" % (port, len(body), body))


def _responses(sock: socket.socket, count: int, timeout: float = 5) -> list[bytes]:
    """The status lines of ``count`` responses read from ``sock`` (fewer if it closes)."""
    sock.settimeout(timeout)
    data = b""
    while data.count(b"HTTP/1.1 ") < count or not data.rstrip().endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return re.findall(rb"HTTP/1\.1 \d+ [^\r]*", data)


# --- finding 15: digits ------------------------------------------------------------------------


@pytest.mark.parametrize("header", [b"last-event-id", b"content-length"])
async def test_non_ascii_digits_are_400_not_500(served, caplog, header: bytes) -> None:
    asgi = served(make_app())
    headers = await session(asgi)
    with caplog.at_level(logging.ERROR, logger="resourcekit"):
        if header == b"last-event-id":
            key = asgi.sessions[sid_of(headers)].standalone.key
            call = await get_stream(asgi, headers, raw=[(header, key + b".\xb2")]).done()
        else:
            call = await Call(asgi, body=request(1, "ping"), headers=headers, raw=[(header, b"\xb2")]).done()
    assert call.status == 400
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# --- response bodies ---------------------------------------------------------------------------


async def test_content_length_fits_each_body(served) -> None:
    """Replies of every size, ids of every width, a short text again from what was remembered:
    each JSON response's Content-Length is its own body's length."""
    app = make_app()
    app.template("item://{n}")(lambda n: f"item {n}")
    asgi = served(app)
    headers = await session(asgi)
    for rid, uri in [(1, "counter://value"), (22, "item://1"), (333, "item://22"), (4444, "big://ten-k"),
                     (5, "counter://value")]:
        got = await Call(asgi, body=read_message(rid, uri), headers=headers).done()
        assert got.status == 200 and got.header(b"content-type") == b"application/json"
        assert int(got.header(b"content-length") or b"-1") == len(got.body_bytes)
        assert got.json()["id"] == rid and "result" in got.json()


# --- real processes: header sections (uvicorn's) and the CLI flags ------------------------------


def test_header_section_bounded_in_size_and_time(tmp_path) -> None:
    target = tmp_path / "limited.py"
    target.write_text(LIMITED_APP)
    with http_server_process(target) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        # megabytes of one header value, never ended by CRLF: 431 (or a reset) long before the end
        big = socket.create_connection(("127.0.0.1", port))
        big.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX: ")
        sent = 0
        try:
            while sent < 8 * 1024 * 1024:
                big.sendall(b"a" * 65536)
                sent += 65536
        except OSError:
            pass
        answer = _closed(big, 5)
        assert answer is not None and (answer == b"" or answer.startswith(b"HTTP/1.1 431 "))
        assert sent < 8 * 1024 * 1024 or answer.startswith(b"HTTP/1.1 431 ")
        # slowloris: one header byte every 0.3 s is cut off after header_timeout (1 s)
        slow = socket.create_connection(("127.0.0.1", port))
        started = time.monotonic()
        cut = False
        try:
            for byte in b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 40:
                slow.sendall(bytes([byte]))
                slow.settimeout(0.3)
                try:
                    if slow.recv(100) == b"":
                        cut = True
                        break
                except TimeoutError:
                    pass
        except OSError:
            cut = True
        assert cut and time.monotonic() - started < 4
        # a connection that sends nothing at all is closed too
        assert _closed(socket.create_connection(("127.0.0.1", port)), 4) == b""
        # well-behaved clients are served meanwhile
        ping = httpx.post(url, content=orjson.dumps(INIT), timeout=10,
                          headers={"content-type": "application/json", "accept": "application/json"})
        assert ping.status_code == 200


def test_request_body_bounded_in_time(tmp_path) -> None:
    # --body-timeout 1: a body must be whole 1 s after its header section, else 408 and closed
    target = tmp_path / "limited.py"
    target.write_text(LIMITED_APP)
    with http_server_process(target, "--body-timeout", "1") as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                b"accept: application/json\r\ncontent-length: %d\r\n\r\n")
        body = orjson.dumps(INIT)
        # a body trickled a byte every 0.2 s (it would take 40 s), and one never sent at all
        trickle = socket.create_connection(("127.0.0.1", port))
        silent = socket.create_connection(("127.0.0.1", port))
        started = time.monotonic()
        trickle.sendall(head % len(body))
        silent.sendall(head % len(body))
        answer = b""
        trickle.settimeout(0.2)
        for byte in body:
            try:
                trickle.sendall(bytes([byte]))
                chunk = trickle.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            answer += chunk
            if not chunk:
                break
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n") and b"connection: close" in answer
        assert 1 <= time.monotonic() - started < 4
        assert (_closed(silent, 4) or b"").startswith(b"HTTP/1.1 408 ")
        # a body sent at once, and one in pieces quicker than the limit, are served meanwhile
        whole = httpx.post(url, content=body, timeout=10,
                           headers={"content-type": "application/json", "accept": "application/json"})
        assert whole.status_code == 200
        with socket.create_connection(("127.0.0.1", port)) as pieces:
            pieces.sendall(head % len(body))
            for start in range(0, len(body), len(body) // 3 + 1):
                time.sleep(0.2)
                pieces.sendall(body[start:start + len(body) // 3 + 1])
            pieces.settimeout(5)
            assert pieces.recv(4096).startswith(b"HTTP/1.1 200 OK")


def test_header_sections_split_pipelined_and_after_keep_alive(tmp_path) -> None:
    # the header-section bound follows each request on a connection: split over several
    # writes, pipelined two at a time, or a too-large one after requests that were served
    target = tmp_path / "limited.py"
    target.write_text(LIMITED_APP)
    with http_server_process(target) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            whole = _request_bytes(port, 1)
            for piece in (whole[:20], whole[20:60], whole[60:]):
                sock.sendall(piece)
                time.sleep(0.2)
            assert _responses(sock, 1) == [b"HTTP/1.1 200 OK"]
            sock.sendall(_request_bytes(port, 2) + _request_bytes(port, 3))
            assert _responses(sock, 2) == [b"HTTP/1.1 200 OK"] * 2
            time.sleep(1.5)  # idle between requests is keep-alive's business, not the header bound's
            sock.sendall(_request_bytes(port, 4))
            assert _responses(sock, 1) == [b"HTTP/1.1 200 OK"]
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"a" * (20 * 1024))
            answer = _closed(sock, 5)
            assert answer is not None and (answer == b"" or answer.startswith(b"HTTP/1.1 431 "))
