"""Subscriptions and change notifications: no update is lost between a read and a subscribe, one
update per version, a failing re-read logs once, each for every session profile; an HTTP listen
stream ends with its result."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from resourcekit import App, Limits
from resourcekit.core import Server
from tests.support.apps import counter_app
from tests.support.session import Session, Wire, answered_in, decoded
from tests.support.wire import modern_meta, request

pytestmark = pytest.mark.anyio


async def updates(wire: Wire, seconds: float = 0.3) -> list[str]:
    """The URIs of the update notifications the session received (after ``seconds`` more), taken."""
    await asyncio.sleep(seconds)
    taken = [m for m in list(wire.messages) if m.get("method") == "notifications/resources/updated"]
    for message in taken:
        wire.messages.remove(message)
    return [m["params"]["uri"] for m in taken]


async def call(conn: Any, wire: Wire, rid: Any, method: str, params: dict[str, Any]) -> Any:
    """Send a request and return its reply."""
    conn.feed(orjson.dumps(request(rid, method, params)))
    return (await wire.answered({rid}))[rid]


async def read_text(conn: Any, wire: Wire, rid: Any, uri: str) -> str:
    return str((await call(conn, wire, rid, "resources/read", {"uri": uri}))["result"]["contents"][0]["text"])


# --- finding 12: no lost update -------------------------------------------------------------


async def test_read_subscribe_change_is_announced(profile: str) -> None:
    app, state = counter_app()
    async with Session(app, profile) as (conn, wire):
        assert await read_text(conn, wire, 1, "cfg://x") == "v1"
        assert (await call(conn, wire, 2, "resources/subscribe", {"uri": "cfg://x"}))["result"] == {}
        state["value"] = "v2"
        app.notify_changed("cfg://x")
        assert await updates(wire) == ["cfg://x"]


async def test_change_between_read_and_subscribe_is_announced(profile: str) -> None:
    app, state = counter_app()
    async with Session(app, profile) as (conn, wire):
        assert await read_text(conn, wire, 1, "item://1") == "1:v1"
        state["value"] = "v2"  # nobody subscribed yet: nothing is told, nothing may be lost
        app.notify_changed("item://1")
        assert (await call(conn, wire, 2, "resources/subscribe", {"uri": "item://1"}))["result"] == {}
        assert await updates(wire) == ["item://1"]
        assert await read_text(conn, wire, 3, "item://1") == "1:v2"


async def test_change_right_after_listen_acknowledgement_is_announced(profile: str) -> None:
    app, state = counter_app()
    async with Session(app, profile, version="2026-07-28") as (conn, wire):
        conn.feed(orjson.dumps(request("L", "subscriptions/listen", {
            "_meta": modern_meta(), "notifications": {"resourceSubscriptions": ["cfg://x"]}})))
        for _ in range(300):
            if wire.messages:
                break
            await asyncio.sleep(0.01)
        assert wire.messages[0]["method"] == "notifications/subscriptions/acknowledged"
        state["value"] = "v2"
        app.notify_changed("cfg://x")
        assert await updates(wire) == ["cfg://x"]


async def test_one_update_per_version_for_every_subscriber(profile: str) -> None:
    app, state = counter_app()
    async with Session(app, profile) as (first, first_wire), Session(app, profile) as (second, second_wire):
        await read_text(first, first_wire, 1, "cfg://x")
        await call(first, first_wire, 2, "resources/subscribe", {"uri": "cfg://x"})
        await call(second, second_wire, 2, "resources/subscribe", {"uri": "cfg://x"})
        state["value"] = "v2"
        for _ in range(50):
            app.notify_changed("cfg://x")
        assert await updates(first_wire) == ["cfg://x"]
        assert await updates(second_wire, 0) == ["cfg://x"]
        app.notify_changed("cfg://x")  # same version again: nobody hears twice
        assert await updates(first_wire) == [] and await updates(second_wire, 0) == []


# --- L8: a failing re-read does not flood the log -------------------------------------------------


async def test_a_failing_poll_logs_once_not_every_interval(profile: str, caplog: pytest.LogCaptureFixture) -> None:
    app = App("t")
    state = {"fail": False}

    def flaky() -> str:
        if state["fail"]:
            raise RuntimeError("database down")
        return "ok"

    app.resource("poll://x", poll=0.02)(flaky)
    async with Session(app, profile) as (conn, wire):
        assert (await call(conn, wire, 1, "resources/subscribe", {"uri": "poll://x"}))["result"] == {}
        state["fail"] = True
        await asyncio.sleep(0.5)  # about 25 failing re-reads
    failures = [r for r in caplog.records if "re-reading poll://x" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info is not None


async def test_an_http_listen_stream_ends_with_its_result_after_its_lifetime() -> None:
    app = App("t", limits=Limits(max_stream_lifetime=0.2))
    app.resource("cfg://x")(lambda: "x")
    server = Server(app)
    server.start()
    out: list = []
    conn = server.connect(decoded(out), stateless=True)  # one HTTP request's connection
    try:
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        conn.receive({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {
            "notifications": {"resourceSubscriptions": ["cfg://x"]}, "_meta": meta}})
        got = await answered_in(out, {7}, 2.0)
        assert got[7]["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7
        assert out[0]["method"] == "notifications/subscriptions/acknowledged"
        assert app.tracker.subscribers("cfg://x") == 0
    finally:
        server.close()
