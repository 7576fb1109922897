"""The HTTP transport under hostile, broken and slow clients: one test per review finding
(5, 7, 9, 15, L3 of the 2026-11-23 review) and per limit's outcome.

Most drive ``ASGIApp`` in-process; what is uvicorn's (header sections) and the CLI flags
run a real ``resourcekit run --transport http`` process.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import subprocess
import textwrap
import time
from collections.abc import Iterable
from typing import Any

import httpx
import orjson
import pytest

from resourcekit import App, Context, Limits
from resourcekit.http import ASGIApp, HTTPError
from tests.helpers import APPS, command, env, modern_meta
from tests.http_server import http_server_process

pytestmark = pytest.mark.anyio

ACCEPT = ("accept", "application/json, text/event-stream")
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}


class Call:
    """One HTTP request to an in-process ASGIApp; ``stall_after`` writes, ``send`` blocks
    (a socket whose buffer is full: uvicorn's send waits for it to drain)."""

    def __init__(self, asgi: ASGIApp, method: str = "POST", body: Any = None,
                 headers: Iterable[tuple[str, str]] = (), raw: Iterable[tuple[bytes, bytes]] = (),
                 stall_after: int | None = None) -> None:
        hdrs = [(b"host", b"127.0.0.1:8000")] + [(k.encode(), v.encode()) for k, v in headers] + list(raw)
        if body is not None:
            hdrs.append((b"content-type", b"application/json"))
        self.scope = {"type": "http", "method": method, "path": "/mcp", "headers": hdrs,
                      "server": ("127.0.0.1", 8000)}
        self.body = b"" if body is None else orjson.dumps(body)
        self.sent: list[dict[str, Any]] = []
        self.gone = asyncio.Event()  # set: the client disconnects
        self.stalled = asyncio.Event()
        self.stall_after = stall_after
        self.delivered = asyncio.Event()  # set on every write
        self._read = False
        self.task = asyncio.ensure_future(asgi(self.scope, self.receive, self.send))

    async def receive(self) -> dict[str, Any]:
        if not self._read:
            self._read = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        self.delivered.set()
        if self.stall_after is not None and len(self.sent) > self.stall_after:
            self.stalled.set()
            await asyncio.Event().wait()

    async def done(self, timeout: float = 5) -> Call:
        await asyncio.wait_for(asyncio.shield(self.task), timeout)
        return self

    async def wait_for_body(self, needle: bytes, timeout: float = 5) -> None:
        async def seen() -> None:
            while needle not in self.body_bytes:
                self.delivered.clear()
                await self.delivered.wait()
        await asyncio.wait_for(seen(), timeout)

    @property
    def status(self) -> int:
        return int(next(m["status"] for m in self.sent if m["type"] == "http.response.start"))

    def header(self, name: bytes) -> bytes | None:
        start = next(m for m in self.sent if m["type"] == "http.response.start")
        return dict(start["headers"]).get(name)

    @property
    def body_bytes(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body")

    @property
    def complete(self) -> bool:
        return any(m["type"] == "http.response.body" and not m.get("more_body") for m in self.sent)

    def events(self) -> list[dict[str, str]]:
        out = []
        for block in self.body_bytes.decode().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if "data" in fields:
                out.append(fields)
        return out


def make_app(**limits: Any) -> App:
    app = App("hardening", limits=Limits(**limits))
    state = {"n": 0}

    @app.resource("counter://value")
    def counter() -> str:
        return str(state["n"])

    @app.resource("big://ten-k")
    def big() -> str:
        return "x" * 10_000

    @app.resource("slow://logged")
    async def slow(ctx: Context) -> str:
        ctx.log("info", "started")
        await app_gate(app).wait()
        return "finished"

    return app


def app_gate(app: App) -> asyncio.Event:
    gate: asyncio.Event | None = getattr(app, "_test_gate", None)
    if gate is None:
        gate = asyncio.Event()
        app._test_gate = gate  # type: ignore[attr-defined]
    return gate


async def session(asgi: ASGIApp, accept: tuple[str, str] = ACCEPT) -> list[tuple[str, str]]:
    init = await Call(asgi, body=INIT, headers=[accept]).done()
    assert init.status == 200
    sid = init.header(b"mcp-session-id")
    assert sid is not None
    return [accept, ("mcp-session-id", sid.decode())]


def request(rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})}


def sid_of(headers: list[tuple[str, str]]) -> str:
    return dict(headers)["mcp-session-id"]


def get_stream(asgi: ASGIApp, headers: list[tuple[str, str]], **options: Any) -> Call:
    return Call(asgi, "GET", headers=[("accept", "text/event-stream"), *headers[1:]], **options)


@pytest.fixture
async def served() -> Any:
    made: list[ASGIApp] = []

    def serve(app: App, **options: Any) -> ASGIApp:
        asgi = ASGIApp(app, **options)
        asgi.start()
        made.append(asgi)
        return asgi

    yield serve
    for asgi in made:
        asgi.close()


# --- one home for limits ------------------------------------------------------------------


def test_asgi_app_takes_its_limits_from_the_app() -> None:
    app = make_app(max_sessions=7, session_idle_timeout=42.0)
    asgi = ASGIApp(app)
    assert (asgi.max_sessions, asgi.session_idle_timeout) == (7, 42.0)
    assert ASGIApp(App("defaults")).session_idle_timeout == Limits().session_idle_timeout == 600.0
    assert ASGIApp(app, max_sessions=3).max_sessions == 3  # the keyword still overrides


# --- finding 9: sessions --------------------------------------------------------------------


async def test_full_table_evicts_the_least_recently_used_idle_session(served) -> None:
    asgi = served(make_app(max_sessions=2))
    first, second = await session(asgi), await session(asgi)
    assert (await Call(asgi, body=request(1, "ping"), headers=first).done()).status == 200  # first used last
    third = await session(asgi)
    assert (await Call(asgi, body=request(2, "ping"), headers=second).done()).status == 404
    for alive in (first, third):
        assert (await Call(asgi, body=request(3, "ping"), headers=alive).done()).status == 200


async def test_full_table_of_busy_sessions_answers_503(served) -> None:
    asgi = served(make_app(max_sessions=2))
    streams = [get_stream(asgi, await session(asgi)) for _ in range(2)]
    for stream in streams:
        await stream.wait_for_body(b"id: ")  # open: the priming event
    refused = await Call(asgi, body=INIT, headers=[ACCEPT]).done()
    assert refused.status == 503 and refused.header(b"retry-after") == b"5"
    streams[0].gone.set()  # a client goes away: its session is idle, and makes room
    await streams[0].done()
    assert (await Call(asgi, body=INIT, headers=[ACCEPT]).done()).status == 200


async def test_a_session_belongs_to_the_principal_that_created_it(served) -> None:
    def auth(headers: dict[str, str]) -> str:
        token = headers.get("authorization", "")
        if not token.startswith("Bearer "):
            raise HTTPError(401, "who are you?")
        return token[7:]

    asgi = served(make_app(), auth=auth)
    init = await Call(asgi, body=INIT, headers=[ACCEPT, ("authorization", "Bearer alice")]).done()
    sid = init.header(b"mcp-session-id")
    assert init.status == 200 and sid is not None
    as_alice = [ACCEPT, ("mcp-session-id", sid.decode()), ("authorization", "Bearer alice")]
    as_bob = [ACCEPT, ("mcp-session-id", sid.decode()), ("authorization", "Bearer bob")]
    for method in ("POST", "GET", "DELETE"):
        body = request(1, "ping") if method == "POST" else None
        assert (await Call(asgi, method, body=body, headers=as_bob).done()).status == 404
    assert (await Call(asgi, body=request(2, "ping"), headers=as_alice).done()).status == 200


async def test_get_stream_ends_after_its_lifetime(served) -> None:
    asgi = served(make_app(max_stream_lifetime=0.2))
    stream = get_stream(asgi, await session(asgi))
    await stream.done()
    assert stream.status == 200 and stream.complete  # ended cleanly: the client reconnects
    assert asgi.open_streams == 0


# --- finding 5 and L3: replay ----------------------------------------------------------------


async def test_replay_is_bounded_in_bytes_per_session(served) -> None:
    asgi = served(make_app(max_replay_bytes=64 * 1024))
    headers = await session(asgi, ("accept", "text/event-stream"))
    calls = [await Call(asgi, body=request(i, "resources/read", {"uri": "big://ten-k"}), headers=headers).done()
             for i in range(1, 41)]
    kept = asgi.sessions[sid_of(headers)].replay
    assert 0 < kept.size <= 64 * 1024
    assert kept.size == sum(len(e[2]) for s in kept.streams.values() for e in s.events)
    last = calls[-1].events()[0]["id"]  # the newest response is still resumable
    first = calls[0].events()[0]["id"]  # the oldest was dropped
    key, _, n = last.rpartition(".")
    resumed = await get_stream(asgi, headers, raw=[(b"last-event-id", f"{key}.{int(n) - 1}".encode())]).done()
    assert b'"id":40,' in resumed.body_bytes
    key, _, n = first.rpartition(".")
    early = await get_stream(asgi, headers, raw=[(b"last-event-id", f"{key}.{int(n) - 1}".encode())]).done()
    assert b'"id":1,' not in early.body_bytes  # dropped to stay within the budget


async def test_finished_stream_kept_only_for_a_grace_period(served) -> None:
    asgi = served(make_app())
    headers = await session(asgi, ("accept", "text/event-stream"))
    call = await Call(asgi, body=request(1, "resources/read", {"uri": "counter://value"}), headers=headers).done()
    event_id = call.events()[0]["id"]
    key, _, _ = event_id.rpartition(".")
    again = await get_stream(asgi, headers, raw=[(b"last-event-id", f"{key}.0".encode())]).done()
    assert again.status == 200 and b'"id":1' in again.body_bytes  # within the grace period
    asgi.sessions[sid_of(headers)].replay.grace = 0.0
    late = await get_stream(asgi, headers, raw=[(b"last-event-id", f"{key}.0".encode())]).done()
    assert late.status == 400


async def test_resumed_post_stream_sends_each_message_on_one_stream_only(served) -> None:
    app = make_app()
    asgi = served(app)
    headers = await session(asgi)
    await Call(asgi, body=request(1, "logging/setLevel", {"level": "info"}), headers=headers).done()
    post = Call(asgi, body=request(2, "resources/read", {"uri": "slow://logged"}), headers=headers)
    await post.wait_for_body(b"started")
    log_id = next(e for e in post.events() if "started" in e["data"])["id"]
    resumer = get_stream(asgi, headers, raw=[(b"last-event-id", log_id.encode())])
    await resumer.delivered.wait()  # the resumer's response started: it has taken the stream over
    app_gate(app).set()
    await resumer.done()
    await post.done()
    assert b"finished" in resumer.body_bytes
    assert b"finished" not in post.body_bytes and post.complete  # the cut stream ended, without it


# --- finding 7: backpressure ------------------------------------------------------------------


async def test_stalled_get_stream_queues_one_update_per_uri(served) -> None:
    app = make_app()
    asgi = served(app)
    headers = await session(asgi)
    await Call(asgi, body=request(1, "resources/subscribe", {"uri": "counter://value"}), headers=headers).done()
    stream = get_stream(asgi, headers, stall_after=1)  # stuck on the priming event
    await stream.stalled.wait()
    session_ = asgi.sessions[sid_of(headers)]
    assert session_.listener is not None
    for _ in range(500):
        session_.deliver({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                          "params": {"uri": "counter://value"}})
        session_.deliver({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
    assert len(session_.listener.items) == 2
    stream.task.cancel()


async def test_stream_that_cannot_keep_up_is_closed_with_a_warning(served, caplog) -> None:
    asgi = served(make_app(max_pending_notifications=10))
    headers = await session(asgi)
    stream = get_stream(asgi, headers, stall_after=1)  # stuck on the priming event
    await stream.stalled.wait()
    session_ = asgi.sessions[sid_of(headers)]
    with caplog.at_level(logging.WARNING, logger="resourcekit"):
        for i in range(11):
            session_.deliver({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": i}})
        await stream.done()
    assert not stream.complete  # the server drops the connection
    assert session_.listener is None and asgi.open_streams == 0
    assert any("GET stream closed" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    for i in range(100):  # with no stream open, the session's buffer is bounded too
        session_.deliver({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": i}})
    assert len(session_.outbox.items) <= 10


async def test_stalled_listen_stream_coalesces_then_closes(served, caplog) -> None:
    asgi = served(make_app(max_pending_notifications=5))
    listen = Call(asgi, body=request("L", "subscriptions/listen", {
        "_meta": modern_meta(), "notifications": {"resourcesListChanged": True}}),
        headers=[ACCEPT, ("mcp-protocol-version", "2026-07-28"), ("mcp-method", "subscriptions/listen")],
        stall_after=1)
    await listen.stalled.wait()  # the acknowledgement is stuck in a full socket
    subscriptions = asgi.server.subscriptions
    for _ in range(200):
        subscriptions.list_changed()
    await asyncio.sleep(0)
    assert not listen.task.done()  # 200 list_changed are one pending message
    (listen_request,) = list(subscriptions._listens)
    with caplog.at_level(logging.WARNING, logger="resourcekit"):
        for i in range(6):
            listen_request.notify({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": i}})
        await listen.done()
    assert not subscriptions._listens and asgi.open_streams == 0  # the listen ended with its stream
    assert any("listen stream was closed" in r.getMessage() for r in caplog.records)


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


# --- real processes: header sections (uvicorn's) and the CLI flags ------------------------------

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
    while data.count(b"HTTP/1.1 ") < count or not data.endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return re.findall(rb"HTTP/1\.1 \d+ [^\r]*", data)


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


def test_cli_limit_flags_reach_the_http_server() -> None:
    flags = ("--max-sessions", "1", "--max-uri-length", "64", "--max-message-size", "4096")
    with http_server_process(APPS / "basic_app.py", *flags) as url:
        plain = {"content-type": "application/json", "accept": "application/json"}
        first = httpx.post(url, content=orjson.dumps(INIT), headers=plain, timeout=10)
        second = httpx.post(url, content=orjson.dumps(INIT), headers=plain, timeout=10)
        assert first.status_code == second.status_code == 200
        evicted = httpx.post(url, content=orjson.dumps(request(1, "ping")), timeout=10,
                             headers={**plain, "mcp-session-id": first.headers["mcp-session-id"]})
        assert evicted.status_code == 404  # max_sessions=1: the idle first session made room
        long_uri = "x://" + "a" * 100
        read = httpx.post(url, content=orjson.dumps(request(2, "resources/read", {"uri": long_uri})), timeout=10,
                          headers={**plain, "mcp-session-id": second.headers["mcp-session-id"]})
        assert read.json()["error"]["data"]["limit"] == "max_uri_length"
        too_big = httpx.post(url, content=b" " * 5000 + orjson.dumps(request(3, "ping")), timeout=10,
                             headers={**plain, "mcp-session-id": second.headers["mcp-session-id"]})
        assert too_big.status_code == 413


@pytest.mark.parametrize("flag", [["--max-sessions", "3"], ["--session-idle-timeout", "5"], ["--port", "9"],
                                  ["--max-replay-bytes", "10"], ["--body-timeout", "5"],
                                  ["--redis-wait", "5"]])
def test_http_only_flags_refused_over_stdio(flag: list[str]) -> None:
    done = subprocess.run(command("run", str(APPS / "basic_app.py"), *flag), env=env(), capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"resourcekit: error: {flag[0]} only applies to --transport http"]
