"""``ASGIApp`` driven in-process as a server would drive it: ``Call`` is one HTTP request (its
client can stall or go away), ``session`` opens a session, ``make_app`` an app with a counter, a
big resource and a slow one held by ``app_gate``; the ``served`` fixture (conftest) starts them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import orjson

from resourcekit import App, Context, Limits
from resourcekit.http import ASGIApp

ACCEPT = ("accept", "application/json, text/event-stream")
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}


class Call:
    """One HTTP request to an in-process ASGIApp; ``stall_after`` writes, ``send`` blocks
    (a socket whose buffer is full: uvicorn's send waits for it to drain).  A ``host`` or
    ``content-type`` in ``headers`` replaces the one a client would send by default."""

    def __init__(self, asgi: ASGIApp, method: str = "POST", body: Any = None,
                 headers: Iterable[tuple[str, str]] = (), raw: Iterable[tuple[bytes, bytes]] = (),
                 stall_after: int | None = None) -> None:
        hdrs = [(k.encode(), v.encode()) for k, v in headers] + list(raw)
        names = {name.lower() for name, _ in hdrs}
        if b"host" not in names:
            hdrs.insert(0, (b"host", b"127.0.0.1:8000"))
        if body is not None and b"content-type" not in names:
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

    def json(self) -> Any:
        return orjson.loads(self.body_bytes)

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


def sid_of(headers: list[tuple[str, str]]) -> str:
    return dict(headers)["mcp-session-id"]


def get_stream(asgi: ASGIApp, headers: list[tuple[str, str]], **options: Any) -> Call:
    return Call(asgi, "GET", headers=[("accept", "text/event-stream"), *headers[1:]], **options)


async def in_flight(asgi: ASGIApp, headers: list[tuple[str, str]], rid: Any, timeout: float = 5) -> None:
    """Return once the request ``rid`` is in flight in the session of ``headers``."""
    conn = asgi.sessions[sid_of(headers)].conn
    for _ in range(int(timeout / 0.01)):
        if rid in conn.inflight:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"request {rid} never went in flight")
