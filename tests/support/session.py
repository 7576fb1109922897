"""An in-process session of an app, served as each session profile serves it (``Session``), the
messages its client end receives (``Wire``), the in-process client's refusals (``error_of``), and a
connection of the core as HTTP makes them (``connected``, ``answered_in``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from resourcekit import App, MCPError
from resourcekit.core import Connection, Server
from resourcekit.testing import Client

#: the session profiles a protocol test runs under: plain, the access log on, OpenTelemetry spans,
#: and a caller whose scopes are checked
PROFILES = ("plain", "logged", "traced", "scoped")


class Wire:
    """What the client end of an in-process session received, each message decoded, in order."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.writes = 0

    def write(self, data: bytes) -> None:  # from any thread, as a transport's write
        self.writes += 1
        self.messages.extend(orjson.loads(line) for line in data.splitlines())

    def by_id(self) -> dict[Any, Any]:
        items = [i for m in list(self.messages) for i in (m if type(m) is list else [m])]  # a batch's too
        return {m["id"]: m for m in items if type(m) is dict and "id" in m}

    async def answered(self, ids: set[Any], timeout: float = 3.0) -> dict[Any, Any]:
        """The answers to ``ids`` that came within ``timeout`` seconds (all of them, or fewer)."""
        import asyncio

        got: dict[Any, Any] = {}
        for _ in range(int(timeout / 0.01)):
            got = {rid: m for rid, m in self.by_id().items() if rid in ids}
            if set(got) == ids:
                break
            await asyncio.sleep(0.01)
        return got

    def errors(self) -> list[dict[str, Any]]:
        return [m["error"] for m in list(self.messages) if type(m) is dict and "error" in m]


class Session:
    """A session of ``app`` in this process, served as ``profile`` serves it, its replies on a
    ``Wire`` through the same outbox as stdio's (``async with Session(app) as (conn, wire)``)."""

    def __init__(self, app: Any, profile: str = "plain", *, version: str = "2025-11-25",
                 capabilities: dict[str, Any] | None = None) -> None:
        self.app, self.profile, self.version, self.capabilities = app, profile, version, capabilities or {}

    async def __aenter__(self) -> tuple[Any, Wire]:
        import asyncio
        import logging

        from resourcekit import Principal
        from resourcekit._runner import ThreadRunner
        from resourcekit.core import Server
        from resourcekit.telemetry import spans as telemetry

        logger = logging.getLogger("resourcekit")
        self._level = logger.level
        if self.profile == "logged":
            logger.setLevel(logging.INFO)
        elif self.profile == "traced":
            from tests.support.telemetry import otel

            otel()
            assert telemetry.probe()
        self.server = server = Server(self.app, "pipe")
        limits = self.app.limits
        server.start(ThreadRunner(asyncio.get_running_loop(), limits.max_workers, limits.max_queued_jobs))
        wire = Wire()
        self.conn = conn = server.stream(wire.write)
        if self.profile == "scoped":
            conn.principal = Principal("tester", scopes=["notes:read"])
        if self.version != "2026-07-28":
            conn.feed(orjson.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": self.version, "capabilities": self.capabilities,
                "clientInfo": {"name": "t", "version": "0"}}}))
            assert "init" in await wire.answered({"init"})
            wire.messages.clear()
        return conn, wire

    async def __aexit__(self, *exc: object) -> None:
        import logging

        self.conn.close()
        self.server.close()
        logging.getLogger("resourcekit").setLevel(self._level)


async def error_of(client: Client, method: str, params: dict[str, Any]) -> MCPError:
    """The MCPError ``client`` gets for ``method`` (failing the test if it gets a result)."""
    with pytest.raises(MCPError) as info:
        await client.request(method, params)
    return info.value


# --- a connection of the core: what HTTP and stateless requests are served through -----------------


def decoded(out: list) -> Callable[[Any], None]:
    """A connection's ``send`` that keeps each message decoded (a response comes encoded)."""
    return lambda m: out.append(orjson.loads(m) if type(m) is bytes else m)


def connected(app: App, version: str = "2025-11-25") -> tuple[Server, Connection, list]:
    """A started server and one initialized connection of ``app``, its messages decoded into a list."""
    server = Server(app)
    server.start()
    out: list = []
    conn = server.connect(decoded(out))
    conn.receive({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    out.clear()
    return server, conn, out


async def answered_in(out: list, ids: set, timeout: float = 3.0) -> dict:
    """The answers to ``ids`` in ``out`` (a batch's too) that came within ``timeout`` seconds."""
    got: dict = {}
    for _ in range(int(timeout / 0.01)):
        for message in out:
            for item in message if isinstance(message, list) else [message]:
                if item.get("id") in ids:
                    got[item["id"]] = item
        if set(got) == ids:
            return got
        await asyncio.sleep(0.01)
    return got
