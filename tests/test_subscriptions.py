"""Subscriptions and change notifications: no update is lost between a read and a subscribe, one
update per version, a failing re-read logs once, a listen stream ends with its result."""

from __future__ import annotations

import asyncio

import pytest

from resourcekit import App, Limits
from resourcekit.core import Server
from resourcekit.testing import Client
from tests.support.apps import counter_app
from tests.support.session import answered_in, decoded

pytestmark = pytest.mark.anyio


async def updates(client: Client, seconds: float = 0.3) -> list[str]:
    await asyncio.sleep(seconds)
    out = []
    while not client.notifications.empty():
        note = client.notifications.get_nowait()
        if note["method"] == "notifications/resources/updated":
            out.append(note["params"]["uri"])
    return out


# --- finding 12: no lost update -------------------------------------------------------------


async def test_read_subscribe_change_is_announced() -> None:
    app, state = counter_app()
    async with Client(app) as client:
        assert await client.read_text("cfg://x") == "v1"
        await client.subscribe("cfg://x")
        state["value"] = "v2"
        app.notify_changed("cfg://x")
        assert await updates(client) == ["cfg://x"]


async def test_change_between_read_and_subscribe_is_announced() -> None:
    app, state = counter_app()
    async with Client(app) as client:
        assert await client.read_text("item://1") == "1:v1"
        state["value"] = "v2"  # nobody subscribed yet: nothing is told, nothing may be lost
        app.notify_changed("item://1")
        await client.subscribe("item://1")
        assert await updates(client) == ["item://1"]
        assert await client.read_text("item://1") == "1:v2"


async def test_change_right_after_listen_acknowledgement_is_announced() -> None:
    app, state = counter_app()
    async with Client(app, protocol_version="2026-07-28") as client:
        client.listen(["cfg://x"])
        ack = await client.next_notification()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        state["value"] = "v2"
        app.notify_changed("cfg://x")
        assert await updates(client) == ["cfg://x"]


async def test_one_update_per_version_for_every_subscriber() -> None:
    app, state = counter_app()
    async with Client(app) as first, Client(app) as second:
        await first.read("cfg://x")
        await first.subscribe("cfg://x")
        await second.subscribe("cfg://x")
        state["value"] = "v2"
        for _ in range(50):
            app.notify_changed("cfg://x")
        assert await updates(first) == ["cfg://x"]
        assert await updates(second, 0) == ["cfg://x"]
        app.notify_changed("cfg://x")  # same version again: nobody hears twice
        assert await updates(first) == [] and await updates(second, 0) == []


# --- L8: a failing re-read does not flood the log -------------------------------------------------


async def test_a_failing_poll_logs_once_not_every_interval(caplog: pytest.LogCaptureFixture) -> None:
    app = App("t")
    state = {"fail": False}

    def flaky() -> str:
        if state["fail"]:
            raise RuntimeError("database down")
        return "ok"

    app.resource("poll://x", poll=0.02)(flaky)
    async with Client(app) as client:
        await client.subscribe("poll://x")
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
