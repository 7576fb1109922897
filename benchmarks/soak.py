"""Soak test: mixed, partly hostile load against two real server processes at once.

    python benchmarks/soak.py                 # ten minutes
    python benchmarks/soak.py --quick         # one minute
    python benchmarks/soak.py --seconds 300 --write

Starts `benchmarks/servers/soak_app.py` twice, the way users start an app
(`python -m resourcekit run FILE` over stdio, and the same with `--transport http --port P`),
and drives both from this process (asyncio, uvloop when installed) for the whole run:
reads over many templates and resources (both eras on HTTP), subscribe/notify churn with
lost-notification accounting, 2026-07-28 listen streams that come and go, list walks,
abandoned sessions, slow readers, and the hostile patterns of the 2026-11-23 review.
Each server's RSS is sampled every second and a concurrent `ping` is timed every 100 ms.

Prints a Markdown table (for benchmarks/RESULTS.md); `--write` also writes
benchmarks/soak-results.json.  Exit status 0 when the targets are met: RSS growth after
warm-up under 10 MiB, no lost notification, no server error (-32603 or HTTP 5xx other than
a documented limit's outcome).  See benchmarks/README.md, "Soak".
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import contextlib
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import psutil

ROOT = Path(__file__).resolve().parent.parent
APP = "benchmarks/servers/soak_app.py"
LOG_DIR = ROOT / "benchmarks" / ".logs"
RESULTS = ROOT / "benchmarks" / "soak-results.json"
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
UPDATED = "notifications/resources/updated"
KEYS = [f"k{i}" for i in range(40)]  # soak://counter/{key}: bumped by this process
TICKS = [f"tick{i}" for i in range(4)]  # bumped by a thread in the app
MAX_SUBSCRIPTIONS = 500  # as soak_app.py sets them
REQUEST_TIMEOUT = 30.0
RSS_TARGET_MIB = 10.0


# --- accounting ------------------------------------------------------------------------------


class Stats:
    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.samples: dict[str, list[str]] = collections.defaultdict(list)
        self.ping: dict[str, list[float]] = collections.defaultdict(list)
        self.rss: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
        self.hostile: dict[str, list[float]] = collections.defaultdict(list)
        self.lost = 0
        self.lost_detail: list[str] = []
        self.checked = 0

    def count(self, key: str, sample: str | None = None) -> None:
        self.counts[key] += 1
        if sample is not None and len(self.samples[key]) < 5:
            self.samples[key].append(sample[:300])

    def response(self, server: str, msg: dict[str, Any] | None, what: str) -> dict[str, Any] | None:
        """Count a JSON-RPC answer by kind; the result, or None for an error."""
        if msg is None:
            self.count(f"{server}: timeout", what)
            return None
        if "result" in msg:
            self.counts[f"{server}: ok"] += 1
            return msg["result"]  # type: ignore[no-any-return]
        error = msg.get("error") or {}
        code = error.get("code")
        data = error.get("data") if isinstance(error.get("data"), dict) else {}
        if code == -32603:
            if data.get("limit"):
                self.count(f"{server}: -32603 limit {data['limit']}", what)
            else:
                self.count(f"{server}: -32603 SERVER ERROR", f"{what}: {str(error)[:200]}")
        elif data.get("limit"):
            self.count(f"{server}: {code} limit {data['limit']}")
        else:
            self.count(f"{server}: {code}")
        return None

    def http_status(self, server: str, status: int, body: bytes, what: str) -> None:
        if status < 500:
            if status not in (200, 202, 204):
                self.count(f"{server}: HTTP {status}")
            return
        documented = status == 503 and (b'"limit"' in body or b"Too many" in body)
        if documented:
            self.count(f"{server}: HTTP 503 limit")
        else:
            self.count(f"{server}: HTTP {status} SERVER ERROR", f"{what}: {body[:200]!r}")

    def server_errors(self) -> int:
        return sum(v for k, v in self.counts.items() if "SERVER ERROR" in k)

    def timeouts(self) -> int:
        return sum(v for k, v in self.counts.items() if k.endswith(": timeout"))


STATS = Stats()


class Clock:
    """Run phases: `changing` is clear while the changers pause for a lost-notification check."""

    def __init__(self, seconds: float) -> None:
        self.t0 = time.monotonic()
        self.end = self.t0 + seconds
        self.changing = asyncio.Event()
        self.changing.set()
        self.stopped = False

    def left(self) -> float:
        return self.end - time.monotonic()

    def running(self) -> bool:
        return not self.stopped and time.monotonic() < self.end


# --- stdio client ----------------------------------------------------------------------------


class Stdio:
    """One `resourcekit run` subprocess over pipes; requests multiplexed by id."""

    name = "stdio"

    def __init__(self) -> None:
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.on_notification: Callable[[dict[str, Any]], None] = lambda m: None

    async def start(self, env: dict[str, str]) -> None:
        LOG_DIR.mkdir(exist_ok=True)
        self.log = open(LOG_DIR / "soak-stdio.stderr", "wb")  # noqa: SIM115
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "resourcekit", "run", APP, cwd=ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, limit=16 * 1024 * 1024)
        self.pid = self.proc.pid
        self.reader = asyncio.ensure_future(self._read())
        msg = await self.request("initialize", {"protocolVersion": HANDSHAKE, "capabilities": {},
                                                "clientInfo": {"name": "soak", "version": "0"}}, timeout=30)
        if msg is None or "result" not in msg:
            raise RuntimeError(f"stdio initialize failed: {msg}")
        self.notify("notifications/initialized")

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                break
            try:
                msg = orjson.loads(line)
            except orjson.JSONDecodeError:
                STATS.count("stdio: unparseable line", repr(line[:200]))
                continue
            if isinstance(msg, dict) and "id" in msg and "method" not in msg:
                fut = self.waiting.pop(msg["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
                elif fut is None:
                    STATS.count("stdio: unexpected response (cancelled request answered)")
            elif isinstance(msg, dict) and "method" in msg:
                if "id" in msg:  # a server request (none expected): answer it empty
                    self._write({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
                else:
                    self.on_notification(msg)
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(ConnectionError("stdio server closed its stdout"))

    def _write(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(msg) + b"\n")

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._write(msg)

    def send(self, method: str, params: dict[str, Any] | None = None) -> tuple[int, asyncio.Future[dict[str, Any]]]:
        self.next_id += 1
        rid = self.next_id
        fut = self.waiting[rid] = asyncio.get_running_loop().create_future()
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self._write(msg)
        return rid, fut

    async def request(self, method: str, params: dict[str, Any] | None = None,
                      timeout: float = REQUEST_TIMEOUT) -> dict[str, Any] | None:
        rid, fut = self.send(method, params)
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            self.waiting.pop(rid, None)
            return None

    async def call(self, method: str, params: dict[str, Any] | None = None, what: str = "",
                   timeout: float = REQUEST_TIMEOUT) -> dict[str, Any] | None:
        return STATS.response("stdio", await self.request(method, params, timeout), what or method)

    def cancel(self, rid: int) -> None:
        self.waiting.pop(rid, None)
        self.notify("notifications/cancelled", {"requestId": rid, "reason": "soak"})

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self.reader.cancel()
        self.log.close()


# --- HTTP/1.1 client -------------------------------------------------------------------------


def _messages_of_sse(text: bytes) -> list[dict[str, Any]]:
    out = []
    for event in text.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:"))
        if data[:1] == b"{":
            out.append(orjson.loads(data))
    return out


class H1:
    """One keep-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.lock = asyncio.Lock()

    async def connect(self, rcvbuf: int | None = None) -> None:
        if rcvbuf is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=8 * 1024 * 1024)
        else:  # a small receive buffer: the slow reader's backlog stays in the server
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.port))
            self.reader, self.writer = await asyncio.open_connection(sock=sock, limit=65536)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None

    def head(self, method: str, body: bytes, headers: dict[str, str]) -> bytes:
        lines = [f"{method} /mcp HTTP/1.1", f"host: 127.0.0.1:{self.port}",
                 "accept: application/json, text/event-stream"]
        if method == "POST":
            lines += ["content-type: application/json", f"content-length: {len(body)}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def read_head(self) -> tuple[int, dict[str, str]]:
        assert self.reader is not None
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0][9:12])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        return status, headers

    async def chunks(self) -> Any:
        assert self.reader is not None
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
            data = await self.reader.readexactly(size + 2)
            if size == 0:
                return
            yield data[:-2]

    async def exchange(self, method: str, body: bytes, headers: dict[str, str],
                       timeout: float = REQUEST_TIMEOUT) -> tuple[int, dict[str, str], bytes]:
        async with self.lock:
            for attempt in (0, 1):
                reused = self.writer is not None
                try:
                    return await asyncio.wait_for(self._exchange(method, body, headers), timeout)
                except (asyncio.IncompleteReadError, ConnectionResetError) as exc:
                    self.close()
                    if reused and attempt == 0 and not getattr(exc, "partial", b""):
                        continue  # an idle keep-alive connection the server had just closed: once more
                    raise
                except BaseException:
                    self.close()  # the connection is in an unknown state
                    raise
            raise AssertionError("unreachable")

    async def _exchange(self, method: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if self.writer is None or self.reader is None or self.reader.at_eof():
            self.close()  # uvicorn closes keep-alive connections idle for 5 s
            await self.connect()
        assert self.writer is not None and self.reader is not None
        self.writer.write(self.head(method, body, headers))
        status, rh = await self.read_head()
        if "content-length" in rh:
            data = await self.reader.readexactly(int(rh["content-length"]))
        elif rh.get("transfer-encoding") == "chunked":
            data = b"".join([c async for c in self.chunks()])
        else:
            data = b""
        if rh.get("connection") == "close":
            self.close()
        return status, rh, data


def jsonrpc_of(status: int, headers: dict[str, str], body: bytes) -> dict[str, Any] | None:
    if not body:
        return None
    if headers.get("content-type", "").startswith("text/event-stream"):
        for msg in _messages_of_sse(body):
            if "id" in msg and "method" not in msg:
                return msg
        return None
    try:
        msg = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return msg if isinstance(msg, dict) else None


def mcp_name(uri: str) -> str:
    if uri.isascii() and uri.isprintable():
        return uri
    return "=?base64?" + base64.b64encode(uri.encode()).decode() + "?="


class HttpServer:
    name = "http"

    async def start(self, env: dict[str, str]) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        LOG_DIR.mkdir(exist_ok=True)
        self.log = open(LOG_DIR / "soak-http.stderr", "wb")  # noqa: SIM115
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "resourcekit", "run", APP, "--transport", "http", "--port", str(self.port),
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        self.pid = self.proc.pid
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.returncode is not None:
                raise RuntimeError("the HTTP server exited at start; see benchmarks/.logs/soak-http.stderr")
            try:
                _, w = await asyncio.open_connection("127.0.0.1", self.port)
                w.close()
                return
            except OSError:
                await asyncio.sleep(0.05)
        raise RuntimeError("the HTTP server is not listening after 30 s")

    async def stateless(self, conn: H1, method: str, params: dict[str, Any], what: str = "",
                        timeout: float = REQUEST_TIMEOUT) -> dict[str, Any] | None:
        """A 2026-07-28 request with its mirrored headers."""
        params = dict(params, _meta={META_VERSION: MODERN, META_CAPS: {}})
        body = orjson.dumps({"jsonrpc": "2.0", "id": random.randrange(1 << 30), "method": method, "params": params})
        headers = {"mcp-protocol-version": MODERN, "mcp-method": method}
        if method == "resources/read":
            headers["mcp-name"] = mcp_name(params["uri"])
        return await _post(conn, body, headers, what or method, timeout)

    async def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self.log.close()


async def _post(conn: H1, body: bytes, headers: dict[str, str], what: str,
                timeout: float = REQUEST_TIMEOUT) -> dict[str, Any] | None:
    try:
        status, rh, data = await conn.exchange("POST", body, headers, timeout)
    except (asyncio.TimeoutError, TimeoutError):
        STATS.count("http: timeout", what)
        return None
    except (ConnectionError, asyncio.IncompleteReadError, OSError) as exc:
        STATS.count("http: connection closed", f"{what}: {exc!r}")
        return None
    STATS.http_status("http", status, data, what)
    if status == 404 and b"session" in data.lower():
        raise SessionGone()
    msg = jsonrpc_of(status, rh, data)
    if msg is None:
        if what == "cancelled read":
            STATS.count("http: cancelled POST ended without a response")
        elif status < 500 and status not in (202, 204):
            STATS.count(f"http: HTTP {status} without JSON-RPC")
        return None
    return STATS.response("http", msg, what)


class SessionGone(Exception):
    """404: the session expired or was evicted."""


class Session:
    """A handshake-era (2025-11-25) HTTP session; requests on its own connection(s)."""

    def __init__(self, srv: HttpServer, label: str) -> None:
        self.srv = srv
        self.label = label
        self.conn = H1(srv.port)
        self.sid: str | None = None
        self.next_id = 0

    async def open(self) -> bool:
        body = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": f"soak-{self.label}", "version": "0"}}})
        try:
            status, rh, data = await self.conn.exchange("POST", body, {})
        except Exception as exc:
            STATS.count("http: initialize failed", repr(exc))
            return False
        STATS.http_status("http", status, data, "initialize")
        if status != 200:
            return False
        self.sid = rh.get("mcp-session-id")
        await self.conn.exchange("POST", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', self.headers())
        STATS.counts["http: sessions opened"] += 1
        return True

    def headers(self) -> dict[str, str]:
        return {"mcp-protocol-version": HANDSHAKE, "mcp-session-id": self.sid or ""}

    async def call(self, method: str, params: dict[str, Any] | None = None, what: str = "",
                   conn: H1 | None = None, timeout: float = REQUEST_TIMEOUT) -> dict[str, Any] | None:
        self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        return await _post(conn or self.conn, orjson.dumps(msg), self.headers(), what or method, timeout)

    async def notify(self, method: str, params: dict[str, Any], conn: H1 | None = None) -> None:
        with contextlib.suppress(Exception):
            await (conn or self.conn).exchange(
                "POST", orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params}), self.headers())

    async def delete(self) -> None:
        with contextlib.suppress(Exception):
            await self.conn.exchange("DELETE", b"", self.headers())
        self.conn.close()


async def sse_stream(conn: H1, method: str, body: bytes, headers: dict[str, str],
                     on_message: Callable[[dict[str, Any]], None], what: str,
                     on_event_id: Callable[[str], None] | None = None, read_delay: float = 0.0) -> str:
    """Open an SSE response (GET stream or listen POST) and feed its messages until it ends."""
    await conn.connect(rcvbuf=4096 if read_delay else None)
    assert conn.writer is not None and conn.reader is not None
    conn.writer.write(conn.head(method, body, headers))
    status, rh = await conn.read_head()
    if status != 200:
        data = await conn.reader.read(65536)
        STATS.http_status("http", status, data, what)
        return f"HTTP {status}"
    if not rh.get("content-type", "").startswith("text/event-stream"):
        return "not SSE"
    pending = b""
    async for chunk in conn.chunks():
        if read_delay:
            await asyncio.sleep(read_delay)
        pending += chunk
        *events, pending = pending.replace(b"\r\n", b"\n").split(b"\n\n")
        for event in events:
            for line in event.split(b"\n"):
                if line.startswith(b"id:") and on_event_id is not None:
                    on_event_id(line[3:].strip().decode())
            for msg in _messages_of_sse(event + b"\n\n"):
                on_message(msg)
    return "ended"


# --- lost-notification accounting --------------------------------------------------------------


class Watcher:
    """A subscriber (a handshake session, or one listen stream) and what it has read."""

    def __init__(self, label: str, read: Callable[[str], Any]) -> None:
        self.label = label
        self.read_uri = read
        self.subscribed: set[str] = set()  # keys confirmed subscribed
        self.seen: dict[str, int] = {}  # key -> highest value read
        self.dirty: set[str] = set()
        self.wake = asyncio.Event()
        self.active = True

    async def read(self, key: str) -> None:
        result = await self.read_uri(f"soak://counter/{key}")
        if result is not None:
            try:
                value = int(result["contents"][0]["text"])
            except (KeyError, IndexError, ValueError, TypeError):
                STATS.count("bad counter read", str(result)[:200])
                return
            if value > self.seen.get(key, -1):
                self.seen[key] = value

    def notified(self, msg: dict[str, Any]) -> None:
        if msg.get("method") == UPDATED:
            uri = msg.get("params", {}).get("uri", "")
            STATS.counts["notifications received"] += 1
            if uri.startswith("soak://counter/"):
                self.dirty.add(uri[len("soak://counter/"):])
                self.wake.set()

    async def refresher(self) -> None:
        while self.active:
            await self.wake.wait()
            self.wake.clear()
            keys, self.dirty = self.dirty, set()
            await asyncio.gather(*(self.read(k) for k in keys if k in KEYS))


class Changes:
    """What the changer made: the highest value of each counter, per server."""

    def __init__(self) -> None:
        self.final: dict[str, int] = {}
        self.idle = asyncio.Event()
        self.idle.set()


def check_watchers(server: str, changes: Changes, watchers: list[Watcher]) -> None:
    for w in watchers:
        if not w.active:
            continue
        for key in sorted(w.subscribed):
            final = changes.final.get(key)
            if final is None:
                continue
            STATS.checked += 1
            if w.seen.get(key, -1) < final:
                STATS.lost += 1
                if len(STATS.lost_detail) < 20:
                    STATS.lost_detail.append(f"{server} {w.label} {key}: read {w.seen.get(key)} < changed to {final}")


# --- load --------------------------------------------------------------------------------------


def read_uri() -> str:
    r = random.random()
    if r < 0.25:
        return f"soak://static/{random.randrange(200)}"
    if r < 0.6:
        return f"soak://f{random.randrange(100)}/{random.randrange(10_000)}"
    if r < 0.75:
        return f"soak://row/{random.randrange(20_000)}"
    if r < 0.85:  # junk query parameters: distinct URIs that must not be remembered
        return f"soak://item/{random.randrange(1000)}?junk{random.randrange(10**9)}={os.urandom(8).hex()}"
    if r < 0.9:
        return random.choice(["db://h:5432", "x://abc", "log://2026-01-01-info", "files://a/b/c.txt"])
    return f"soak://item/{random.randrange(1000)}?x={random.randrange(100)}"


Caller = Callable[..., Any]  # (method, params, what) -> result or None


async def reader_loop(clock: Clock, call: Caller, rate: float) -> None:
    while clock.running():
        uri = read_uri()
        result = await call("resources/read", {"uri": uri}, "read")
        if result is not None and not result.get("contents"):
            STATS.count("read without contents", uri)
        await asyncio.sleep(random.expovariate(rate))


async def changer_loop(clock: Clock, call: Caller, changes: Changes, rate: float) -> None:
    while clock.running():
        if not clock.changing.is_set():
            changes.idle.set()
            await clock.changing.wait()
            continue
        changes.idle.clear()
        key = random.choice(KEYS)
        result = await call("resources/read", {"uri": f"soak://admin/bump/{key}"}, "bump")
        if result is not None:
            value = int(result["contents"][0]["text"])
            STATS.counts["changes made"] += 1
            if value > changes.final.get(key, -1):
                changes.final[key] = value
        changes.idle.set()
        await asyncio.sleep(random.expovariate(rate))


async def churn(clock: Clock, w: Watcher, call: Caller, keys: list[str], n: int) -> None:
    """Subscribe to n of keys (read first, as a client does), then unsubscribe and resubscribe."""

    async def subscribe(key: str) -> None:
        await w.read(key)
        if await call("resources/subscribe", {"uri": f"soak://counter/{key}"}, "subscribe") is not None:
            w.subscribed.add(key)

    for key in random.sample(keys, n):
        await subscribe(key)
    while clock.running():
        await asyncio.sleep(random.uniform(0.5, 2.0))
        if not w.subscribed:
            continue
        key = random.choice(sorted(w.subscribed))
        w.subscribed.discard(key)
        await call("resources/unsubscribe", {"uri": f"soak://counter/{key}"}, "unsubscribe")
        STATS.counts["unsubscribes"] += 1
        await asyncio.sleep(random.uniform(0.0, 0.5))
        new = random.choice([k for k in keys if k not in w.subscribed])
        await subscribe(new)


async def list_walk_loop(clock: Clock, call: Caller, label: str, max_pages: int = 50) -> None:
    while clock.running():
        cursor = None
        t0 = time.monotonic()
        for _ in range(max_pages):
            params = {"cursor": cursor} if cursor else {}
            result = await call("resources/list", params, "list")
            if result is None:
                break
            STATS.counts[f"{label}: list pages"] += 1
            cursor = result.get("nextCursor")
            if not cursor or not clock.running():
                break
        STATS.hostile[f"{label}: list walk of {max_pages} pages (s)"].append(time.monotonic() - t0)
        await call("resources/templates/list", {}, "templates/list")
        await asyncio.sleep(random.uniform(0.5, 2.0))


async def timed(label: str, coro: Any) -> Any:
    t0 = time.monotonic()
    result = await coro
    STATS.hostile[label].append(time.monotonic() - t0)
    return result


async def hostile_loop(clock: Clock, call: Caller, label: str, lists: bool = True) -> None:
    """Long URIs, forged cursors, filters over an endless lister, huge uris lists."""
    real_cursor = None
    while clock.running():
        kind = random.choice(["uri16k", "uri1m", "forged", "tampered", "filter", "uris", "junk"])
        if kind == "uri16k":
            uri = random.choice(["db://" + "h" * 16384 + ":x", "x://" + "a" * 16384 + "/"])
            await timed(f"{label}: 16 KiB URI (s)", call("resources/read", {"uri": uri}, "uri16k"))
        elif kind == "uri1m":
            uri = random.choice(["db://" + "h" * (1 << 20) + ":x", "x://" + "a" * (1 << 20) + "/"])
            await timed(f"{label}: 1 MiB URI (s)", call("resources/read", {"uri": uri}, "uri1m"))
        elif kind == "forged":
            forged = base64.urlsafe_b64encode(b"l:1:" + str(10 ** random.randrange(3, 150)).encode()).decode()
            await timed(f"{label}: forged cursor (s)", call("resources/list", {"cursor": forged}, "forged"))
        elif kind == "tampered":
            if real_cursor is None:
                page = await call("resources/list", {}, "list")
                real_cursor = page.get("nextCursor") if page else None
            if real_cursor:
                i = random.randrange(len(real_cursor))
                bad = real_cursor[:i] + ("A" if real_cursor[i] != "A" else "B") + real_cursor[i + 1:]
                await timed(f"{label}: tampered cursor (s)", call("resources/list", {"cursor": bad}, "tampered"))
        elif kind == "filter" and lists:
            cursor = None
            for _ in range(3):  # a filter that rejects everything, over an endless lister
                params: dict[str, Any] = {"filter": {"uriPrefix": "soak://nothing/"}}
                if cursor:
                    params["cursor"] = cursor
                result = await timed(f"{label}: filter page over endless lister (s)",
                                     call("resources/list", params, "filter"))
                cursor = result.get("nextCursor") if result else None
                if not cursor:
                    break
        elif kind == "uris":
            uris = [f"soak://item/{i}" for i in range(5000)]
            await timed(f"{label}: subscribe with 5000 uris (s)",
                        call("resources/subscribe", {"uris": uris}, "uris"))
        elif kind == "junk":
            uri = "soak://item/1?" + "&".join(f"j{random.randrange(10**9)}={os.urandom(16).hex()}" for _ in range(50))
            await timed(f"{label}: junk query parameters (s)", call("resources/read", {"uri": uri}, "junk"))
        await asyncio.sleep(random.uniform(0.3, 1.0))


async def ping_loop(clock: Clock, call: Caller, label: str) -> None:
    while clock.running():
        t0 = time.monotonic()
        await call("ping", {}, "ping")
        STATS.ping[label].append(time.monotonic() - t0)
        await asyncio.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))


async def rss_loop(clock: Clock, procs: dict[str, int]) -> None:
    ps = {name: psutil.Process(pid) for name, pid in procs.items()}
    while clock.running():
        now = time.monotonic() - clock.t0
        for name, p in ps.items():
            with contextlib.suppress(psutil.Error):
                STATS.rss[name].append((now, p.memory_info().rss / 2**20))
        await asyncio.sleep(1.0)


async def check_loop(clock: Clock, every: float, grace: float,
                     groups: list[tuple[str, Changes, list[Watcher]]]) -> None:
    """Pause the changers, wait `grace`, check every watcher; repeat. The last check ends the run."""
    while True:
        await asyncio.sleep(max(0.0, min(every, clock.left() - grace)))
        last = clock.left() <= grace + 0.5
        clock.changing.clear()
        for _, changes, _ in groups:
            await changes.idle.wait()
        await asyncio.sleep(grace)
        for name, changes, watchers in groups:
            check_watchers(name, changes, watchers)
        STATS.counts["lost-notification checks"] += 1
        if last:
            clock.stopped = True
            return
        clock.changing.set()


# --- stdio workload ---------------------------------------------------------------------------


async def stdio_load(clock: Clock, srv: Stdio, changes: Changes, watchers: list[Watcher]) -> list[asyncio.Task[Any]]:
    call = srv.call
    w = Watcher("stdio-session", lambda uri: call("resources/read", {"uri": uri}, "counter read"))
    srv.on_notification = w.notified
    watchers.append(w)

    async def cancel_storms() -> None:
        while clock.running():
            rids = []
            for _ in range(50):
                rid, _fut = srv.send("resources/read", {"uri": random.choice(["soak://slow", "soak://slow-async"])})
                srv.cancel(rid)
                rids.append(rid)
            STATS.counts["stdio: requests sent and cancelled"] += len(rids)
            await timed("stdio: ping right after a cancel storm (s)", call("ping", {}, "ping"))
            await asyncio.sleep(random.uniform(1.0, 3.0))

    async def pipelined_subscribes() -> None:  # 10,000 subscribes on one session (stdio), once
        await asyncio.sleep(5)
        futs = [srv.send("resources/subscribe", {"uri": f"soak://item/{i}"})[1] for i in range(10_000)]
        got = await asyncio.gather(*(asyncio.wait_for(f, 60) for f in futs), return_exceptions=True)
        ok = sum(1 for m in got if isinstance(m, dict) and "result" in m)
        for m in got:
            STATS.response("stdio", m if isinstance(m, dict) else None, "10k subscribes")
        STATS.hostile["stdio: 10,000 subscribes accepted"].append(ok)
        for start in range(0, 10_000, 100):  # give them back: the session's own watcher shares the cap
            await asyncio.gather(*(srv.request("resources/unsubscribe", {"uri": f"soak://item/{i}"})
                                   for i in range(start, start + 100)))

    tasks = [
        w.refresher(),
        churn(clock, w, call, KEYS, 20),
        changer_loop(clock, call, changes, 15),
        reader_loop(clock, call, 40),
        reader_loop(clock, call, 40),
        list_walk_loop(clock, call, "stdio"),
        hostile_loop(clock, call, "stdio"),
        ping_loop(clock, call, "stdio (shared pipe)"),
        cancel_storms(),
        pipelined_subscribes(),
    ]
    return [asyncio.ensure_future(t) for t in tasks]


# --- HTTP workload ----------------------------------------------------------------------------


async def session_caller(srv: HttpServer, label: str) -> tuple[Session, Caller]:
    """A session whose caller re-opens it when it expires or is evicted."""
    s = Session(srv, label)
    await s.open()

    async def call(method: str, params: dict[str, Any] | None = None, what: str = "") -> dict[str, Any] | None:
        try:
            return await s.call(method, params, what)
        except SessionGone:
            STATS.counts[f"http: live session gone ({label})"] += 1
            await s.open()
            return None

    return s, call


async def http_load(clock: Clock, srv: HttpServer, changes: Changes, watchers: list[Watcher]) -> list[asyncio.Task[Any]]:
    tasks: list[Any] = []

    def stateless_caller() -> Caller:
        conn = H1(srv.port)

        async def call(method: str, params: dict[str, Any] | None = None, what: str = "") -> dict[str, Any] | None:
            return await srv.stateless(conn, method, params or {}, what)
        return call

    # readers: two handshake sessions, two stateless clients
    for i in range(2):
        _, call = await session_caller(srv, f"reader{i}")
        tasks.append(reader_loop(clock, call, 30))
        tasks.append(reader_loop(clock, stateless_caller(), 30))

    # changer (its own session) and ping (its own session and connection)
    _, call = await session_caller(srv, "changer")
    tasks.append(changer_loop(clock, call, changes, 15))
    _, call = await session_caller(srv, "ping")
    tasks.append(ping_loop(clock, call, "http (own session)"))

    # list walks, both eras; hostile patterns, both eras (long URIs as 2025-11-25 only: the
    # 2026-07-28 Mcp-Name header would carry them too)
    _, call = await session_caller(srv, "lister")
    tasks.append(list_walk_loop(clock, call, "http 2025-11-25"))
    tasks.append(list_walk_loop(clock, stateless_caller(), "http 2026-07-28"))
    _, call = await session_caller(srv, "hostile")
    tasks.append(hostile_loop(clock, call, "http"))

    # subscriber sessions: a GET stream each, subscribe/unsubscribe churn
    async def subscriber(i: int) -> None:
        s, call = await session_caller(srv, f"sub{i}")
        w = Watcher(f"http-session{i}", lambda uri: call("resources/read", {"uri": uri}, "counter read"))
        watchers.append(w)
        last_id: list[str] = []

        async def stream() -> None:
            while clock.running():
                conn = H1(srv.port)
                headers = s.headers()
                if last_id:
                    headers["last-event-id"] = last_id[-1]
                try:
                    how = await sse_stream(conn, "GET", b"", headers, w.notified, "GET stream",
                                           lambda e: (last_id.clear(), last_id.append(e)))
                except (ConnectionError, asyncio.IncompleteReadError, OSError) as exc:
                    how = repr(exc)
                finally:
                    conn.close()
                if clock.running():
                    STATS.count("http: subscriber GET stream ended", how)
                    await asyncio.sleep(0.2)

        await asyncio.gather(stream(), w.refresher(), churn(clock, w, call, KEYS, 10))

    for i in range(3):
        tasks.append(subscriber(i))

    # 2026-07-28 listen streams that come and go
    async def listener(i: int) -> None:
        read_conn = H1(srv.port)
        n = 0
        while clock.running():
            n += 1
            keys = random.sample(KEYS, 6)
            w = Watcher(f"listen{i}.{n}", lambda uri: srv.stateless(read_conn, "resources/read", {"uri": uri}, "counter read"))
            acked = asyncio.Event()

            def on_message(msg: dict[str, Any], w: Watcher = w, acked: asyncio.Event = acked) -> None:
                if msg.get("method") == "notifications/subscriptions/acknowledged":
                    acked.set()
                elif "id" in msg and "method" not in msg:
                    STATS.response("http", msg, "listen final")
                else:
                    w.notified(msg)

            uris = [f"soak://counter/{k}" for k in keys] + [f"soak://counter/{t}" for t in TICKS[:2]]
            body = orjson.dumps({"jsonrpc": "2.0", "id": n, "method": "subscriptions/listen", "params": {
                "notifications": {"resourceSubscriptions": uris},
                "_meta": {META_VERSION: MODERN, META_CAPS: {}}}})
            conn = H1(srv.port)
            stream = asyncio.ensure_future(sse_stream(
                conn, "POST", body, {"mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"},
                on_message, "listen"))
            refresher = asyncio.ensure_future(w.refresher())
            try:
                await asyncio.wait_for(acked.wait(), 10)
            except asyncio.TimeoutError:
                STATS.count("http: listen not acknowledged in 10 s")
            else:
                STATS.counts["http: listen streams"] += 1
                for k in keys:  # the starting versions: a read after the acknowledgement
                    await w.read(k)
                    w.subscribed.add(k)
                watchers.append(w)
                life = time.monotonic() + random.uniform(3, 12)
                while clock.running() and time.monotonic() < life and not stream.done():
                    await asyncio.sleep(0.2)
                if stream.done() and clock.running():
                    STATS.count("http: listen stream ended by the server", str(stream.result()
                                                                            if not stream.exception() else stream.exception()))
            if not clock.running() and not clock.stopped:
                break
            w.active = False
            w.subscribed.clear()
            stream.cancel()
            refresher.cancel()
            conn.close()  # the client goes away: the server must cancel the listen

    for i in range(3):
        tasks.append(listener(i))

    # sessions opened and abandoned (never DELETEd): they must expire or be evicted;
    # every 20 s a burst that goes past max_sessions (evicting the least recently used idle ones)
    abandoned: collections.deque[tuple[float, str]] = collections.deque()

    async def expiry_probe() -> None:  # an abandoned session must be gone after its idle timeout
        conn = H1(srv.port)
        while clock.running():
            await asyncio.sleep(5)
            while abandoned and abandoned[0][0] < time.monotonic() - 30:  # idle timeout 20 s + margin
                _, sid = abandoned.popleft()
                if random.random() > 0.1:
                    continue
                s = Session(srv, "probe")
                s.sid, s.conn = sid, conn
                try:
                    if await s.call("ping", {}, "expiry probe") is not None:
                        STATS.count("http: ABANDONED SESSION STILL ALIVE after idle timeout", sid)
                except SessionGone:
                    STATS.counts["http: abandoned sessions found expired or evicted"] += 1

    tasks.append(expiry_probe())

    async def abandoner() -> None:
        next_burst = time.monotonic() + 10
        while clock.running():
            burst = 150 if time.monotonic() >= next_burst else 1
            if burst > 1:
                next_burst = time.monotonic() + 20
            for _ in range(burst):
                s = Session(srv, "abandoned")
                if await s.open():
                    with contextlib.suppress(SessionGone):
                        await s.call("resources/read", {"uri": read_uri()}, "abandoned read")
                    STATS.counts["http: sessions abandoned"] += 1
                    abandoned.append((time.monotonic(), s.sid or ""))
                s.conn.close()
            await asyncio.sleep(0.25)

    tasks.append(abandoner())

    # one session: 10,000 subscribes (over 4 connections), every 30 s; a limit error past the cap
    async def many_subscribes() -> None:
        while clock.running():
            s = Session(srv, "10k")
            if not await s.open():
                await asyncio.sleep(5)
                continue
            conns = [H1(srv.port) for _ in range(4)]
            ok = 0

            async def worker(c: H1, ids: range) -> None:
                nonlocal ok
                for i in ids:
                    if not clock.running():
                        return
                    with contextlib.suppress(SessionGone):
                        got = await s.call("resources/subscribe", {"uri": f"soak://item/{i}"}, "10k subscribes", conn=c)
                        if got is not None:
                            ok += 1

            t0 = time.monotonic()
            await asyncio.gather(*(worker(c, range(j, 10_000, 4)) for j, c in enumerate(conns)))
            STATS.hostile["http: 10,000 subscribes accepted"].append(ok)
            STATS.hostile["http: 10,000 subscribes (s)"].append(time.monotonic() - t0)
            for c in conns:
                c.close()
            s.conn.close()  # abandoned with its subscriptions: it must expire
            await asyncio.sleep(30)

    tasks.append(many_subscribes())

    # send-and-cancel storm on one session: 20 slow reads, each cancelled at once
    async def cancel_storms() -> None:
        s, _ = await session_caller(srv, "storm")
        conns = [H1(srv.port) for _ in range(20)]
        while clock.running():
            async def one(c: H1, rid: int) -> None:
                body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "resources/read",
                                     "params": {"uri": "soak://slow"}})
                post = asyncio.ensure_future(_post(c, body, s.headers(), "cancelled read", timeout=10))
                await asyncio.sleep(0.005)
                await s.notify("notifications/cancelled", {"requestId": rid}, conn=H1(srv.port))
                with contextlib.suppress(SessionGone):
                    await post
            base = random.randrange(1 << 30)
            try:
                await asyncio.gather(*(one(c, base + j) for j, c in enumerate(conns)))
            except SessionGone:
                await s.open()
            STATS.counts["http: requests sent and cancelled"] += len(conns)
            await asyncio.sleep(random.uniform(1.0, 3.0))

    tasks.append(cancel_storms())

    # slow readers: a GET stream reading a few bytes a second (small receive buffer) on a
    # session subscribed to the ticking counters; a 2026-07-28 listen stream never read;
    # a POST for a 256 KiB resource read slowly.  Each replaced every 20 s.
    async def slow_readers() -> None:
        while clock.running():
            s, call = await session_caller(srv, "slow")
            for t in TICKS:
                await call("resources/subscribe", {"uri": f"soak://counter/{t}"}, "slow subscribe")
            get = H1(srv.port)
            get_task = asyncio.ensure_future(sse_stream(get, "GET", b"", s.headers(), lambda m: None,
                                                        "slow GET", read_delay=1.0))
            listen = H1(srv.port)
            await listen.connect(rcvbuf=4096)
            body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
                "notifications": {"resourceSubscriptions": [f"soak://counter/{t}" for t in TICKS]},
                "_meta": {META_VERSION: MODERN, META_CAPS: {}}}})
            assert listen.writer is not None
            listen.writer.write(listen.head("POST", body, {"mcp-protocol-version": MODERN,
                                                          "mcp-method": "subscriptions/listen"}))
            big = H1(srv.port)
            await big.connect(rcvbuf=4096)
            assert big.writer is not None and big.reader is not None
            big.writer.write(big.head("POST", orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                                                            "params": {"uri": "soak://big"}}), s.headers()))
            end = time.monotonic() + 20
            while clock.running() and time.monotonic() < end:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(big.reader.read(1024), 1.0)
                await asyncio.sleep(1.0)
            get_task.cancel()
            for c in (get, listen, big):
                c.close()
            await s.delete()
            STATS.counts["http: slow-reader rounds"] += 1

    tasks.append(slow_readers())

    # huge uris lists against listen (max_listen_uris)
    async def huge_listen() -> None:
        conn = H1(srv.port)
        while clock.running():
            uris = [f"soak://item/{i}" for i in range(5000)]
            await timed("http: listen with 5000 URIs (s)", srv.stateless(conn, "subscriptions/listen", {
                "notifications": {"resourceSubscriptions": uris}}, "huge listen", timeout=30))
            await asyncio.sleep(random.uniform(3, 6))

    tasks.append(huge_listen())
    return [asyncio.ensure_future(t) for t in tasks]


# --- report -----------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def rss_growth(samples: list[tuple[float, float]], warmup: float, window: float) -> dict[str, float]:
    first = [m for t, m in samples if warmup <= t < warmup + window]
    end = samples[-1][0] if samples else 0.0
    last = [m for t, m in samples if t >= end - window]
    if not first or not last:
        return {"first": float("nan"), "last": float("nan"), "growth": float("nan"), "peak": float("nan")}
    a, b = statistics.median(first), statistics.median(last)
    return {"first": a, "last": b, "growth": b - a, "peak": max(m for _, m in samples)}


def report(seconds: float, warmup: float, window: float) -> tuple[str, dict[str, Any], bool]:
    doc: dict[str, Any] = {"seconds": seconds, "warmup_s": warmup, "window_s": window, "servers": {}}
    ok = True
    rows = []
    for name in ("stdio", "http"):
        g = rss_growth(STATS.rss[name], warmup, window)
        pings = STATS.ping.get("stdio (shared pipe)" if name == "stdio" else "http (own session)", [])
        doc["servers"][name] = {"rss_mib": g, "ping_max_ms": 1000 * max(pings, default=float("nan")),
                                "ping_p99_ms": 1000 * pct(pings, 0.99), "pings": len(pings),
                                "rss_series": [(round(t, 1), round(m, 2)) for t, m in STATS.rss[name]]}
        good = g["growth"] == g["growth"] and g["growth"] < RSS_TARGET_MIB
        ok &= good
        rows.append((name, g, pings, good))
    server_errors = STATS.server_errors()
    ok &= STATS.lost == 0 and server_errors == 0 and all(STATS.ping.values())
    doc.update(lost_notifications=STATS.lost, lost_detail=STATS.lost_detail, checked_pairs=STATS.checked,
               server_errors=server_errors, timeouts=STATS.timeouts(), counts=dict(STATS.counts),
               samples=dict(STATS.samples),
               hostile={k: {"n": len(v), "max": max(v), "p50": pct(v, 0.5)} for k, v in STATS.hostile.items()},
               passed=ok)
    out = [f"### Soak: {seconds:.0f} s, stdio and HTTP servers at once "
           f"(RSS growth = median of the last {window:.0f} s minus median of [{warmup:.0f} s, {warmup + window:.0f} s))",
           "",
           "| server | RSS after warm-up (MiB) | RSS at end (MiB) | growth (MiB) | peak (MiB) | ping p99 (ms) | ping max (ms) | pings |",
           "|---|---|---|---|---|---|---|---|"]
    for name, g, pings, good in rows:
        growth = f"{g['growth']:+.1f}" + ("" if good else " **(target < 10)**")
        out.append(f"| {name} | {g['first']:.1f} | {g['last']:.1f} | {growth} | {g['peak']:.1f} | "
                   f"{1000 * pct(pings, 0.99):.1f} | {1000 * max(pings, default=float('nan')):.1f} | {len(pings)} |")
    growths = ", ".join(f"{n} {g['growth']:+.1f}" for n, g, _, _ in rows)
    out += ["", "| target | value | met |", "|---|---|---|",
            f"| lost notifications (subscriber × URI checks: {STATS.checked}) | {STATS.lost} | {'yes' if STATS.lost == 0 else '**no**'} |",
            f"| server errors (-32603 / HTTP 5xx, not a documented limit) | {server_errors} | {'yes' if server_errors == 0 else '**no**'} |",
            f"| RSS growth after warm-up < {RSS_TARGET_MIB:.0f} MiB | {growths} | "
            f"{'yes' if all(r[3] for r in rows) else '**no**'} |",
            f"| timeouts ({REQUEST_TIMEOUT:.0f} s) | {STATS.timeouts()} | (reported) |",
            "", "| hostile / load pattern | n | p50 | max |", "|---|---|---|---|"]
    for k, v in sorted(STATS.hostile.items()):
        out.append(f"| {k} | {len(v)} | {pct(v, 0.5):.3g} | {max(v):.3g} |")
    out += ["", "| count | n |", "|---|---|"]
    for k, v in sorted(STATS.counts.items()):
        out.append(f"| {k} | {v} |")
    if STATS.lost_detail:
        out += ["", "Lost notifications (first 20):", *[f"- {d}" for d in STATS.lost_detail]]
    if STATS.samples:
        out += ["", "Examples:"]
        for k, v in sorted(STATS.samples.items()):
            out += [f"- {k}: {s}" for s in v[:3]]
    out += ["", f"**{'PASS' if ok else 'FAIL'}**"]
    return "\n".join(out), doc, ok


async def main(args: argparse.Namespace) -> int:
    seconds = 60.0 if args.quick and args.seconds is None else float(args.seconds or 600)
    warmup = min(60.0, seconds / 4)
    window = min(30.0, seconds / 8)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    stdio, http = Stdio(), HttpServer()
    await asyncio.gather(stdio.start(env), http.start(env))
    print(f"servers up: stdio pid {stdio.pid}, http pid {http.pid} port {http.port}; running {seconds:.0f} s",
          file=sys.stderr)
    clock = Clock(seconds)
    changes_s, changes_h = Changes(), Changes()
    watchers_s: list[Watcher] = []
    watchers_h: list[Watcher] = []
    tasks = await stdio_load(clock, stdio, changes_s, watchers_s)
    tasks += await http_load(clock, http, changes_h, watchers_h)
    tasks.append(asyncio.ensure_future(rss_loop(clock, {"stdio": stdio.pid, "http": http.pid})))
    every = 60.0 if seconds >= 300 else max(10.0, seconds / 4)
    checker = asyncio.ensure_future(check_loop(clock, every, 5.0,
                                               [("stdio", changes_s, watchers_s), ("http", changes_h, watchers_h)]))

    async def progress() -> None:
        while clock.running():
            await asyncio.sleep(10)
            rss = {n: (v[-1][1] if v else 0) for n, v in STATS.rss.items()}
            print(f"  t={time.monotonic() - clock.t0:5.0f}s rss stdio {rss.get('stdio', 0):.1f} http {rss.get('http', 0):.1f} MiB, "
                  f"ok {STATS.counts['stdio: ok'] + STATS.counts['http: ok']}, lost {STATS.lost}, "
                  f"server errors {STATS.server_errors()}", file=sys.stderr)

    tasks.append(asyncio.ensure_future(progress()))
    await checker
    for t in tasks:
        t.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
            STATS.count("load task crashed (a bug in soak.py)", repr(r))
    alive = {n: s.proc.returncode is None for n, s in (("stdio", stdio), ("http", http))}
    await asyncio.gather(stdio.close(), http.close())
    text, doc, ok = report(seconds, warmup, window)
    for name, up in alive.items():
        if not up:
            ok = False
            text += f"\n\n**The {name} server exited during the run.**"
    doc["passed"] = ok
    print(text)
    if args.write:
        RESULTS.write_text(json.dumps(doc, indent=1, default=str) + "\n")
        print(f"\nwrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0 if ok else 1


def cli() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, help="length of the run (default 600)")
    parser.add_argument("--quick", action="store_true", help="60 s")
    parser.add_argument("--write", action="store_true", help="write benchmarks/soak-results.json")
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    return asyncio.run(main(args))


if __name__ == "__main__":
    sys.exit(cli())
