"""The limits of ``Limits``, each with its outcome: URI length, subscriptions and listen URIs per
session, requests in flight, remembered instance versions; limits checked when made."""

from __future__ import annotations

import asyncio
import threading

import pytest

from resourcekit import App, Limits, MCPError
from resourcekit.testing import Client
from tests.support.apps import counter_app
from tests.support.asgi import Call, in_flight, session
from tests.support.session import answered_in, connected
from tests.support.wire import read_message

pytestmark = pytest.mark.anyio


# --- limits ------------------------------------------------------------------------------------


async def test_uri_over_the_length_limit_is_refused_before_matching() -> None:
    app, _ = counter_app(limits=Limits(max_uri_length=64))
    async with Client(app) as client:
        with pytest.raises(MCPError) as caught:
            await client.read("item://" + "1" * 100)
        assert caught.value.code == -32602
        assert caught.value.data == {"limit": "max_uri_length", "max": 64}
        assert await client.read_text("item://1") == "1:v1"


async def test_subscriptions_per_session_are_capped() -> None:
    app, _ = counter_app(limits=Limits(max_subscriptions=3))
    async with Client(app) as client:
        for n in range(3):
            await client.subscribe(f"item://{n}")
        await client.subscribe("item://0")  # already held: not a new one
        with pytest.raises(MCPError) as caught:
            await client.subscribe("item://9")
        assert caught.value.code == -32602
        assert caught.value.data == {"limit": "max_subscriptions", "max": 3}
        await client.unsubscribe("item://0")
        await client.subscribe("item://9")


async def test_listen_uris_are_capped_and_checked() -> None:
    app, _ = counter_app(limits=Limits(max_listen_uris=2))
    async with Client(app, protocol_version="2026-07-28") as client:
        params = {"notifications": {"resourceSubscriptions": ["item://1", "item://2", "item://3"]}}
        with pytest.raises(MCPError) as caught:
            await client.request("subscriptions/listen", params)
        assert caught.value.data == {"limit": "max_listen_uris", "max": 2}
        with pytest.raises(MCPError) as caught:
            await client.request("subscriptions/listen", {"notifications": {"resourceSubscriptions": ["nope://x"]}})
        assert caught.value.code == -32602 and caught.value.data == {"uri": "nope://x"}


def test_limits_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="max_uri_length"):
        Limits(max_uri_length=0)
    assert App("t", page_size=5).limits.page_size == 5
    assert App("t", limits=Limits(page_size=9)).page_size == 9


async def test_instance_versions_stay_bounded() -> None:
    from resourcekit import tracking

    app, _ = counter_app()
    async with Client(app) as client:
        for n in range(tracking.MAX_INSTANCE_VERSIONS + 50):
            await client.read(f"item://1?junk={n}")
        assert 0 < len(app.tracker.instance_versions) <= tracking.MAX_INSTANCE_VERSIONS


# --- findings 8 and 13: workers, in-flight requests, cancelled batch members ----------------------


async def test_in_flight_requests_are_capped_but_ping_answers() -> None:
    app = App("t", limits=Limits(max_inflight=2))
    release = threading.Event()
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    server, conn, out = connected(app)
    try:
        for rid in (1, 2, 3):
            conn.receive(read_message(rid, "slow://x"))
        conn.receive({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        got = await answered_in(out, {3, 4}, 1.0)
        assert got[3]["error"]["code"] == -32603
        assert got[3]["error"]["data"] == {"limit": "max_inflight", "max": 2}
        assert got[4]["result"] == {}
        release.set()
        assert set(await answered_in(out, {1, 2})) == {1, 2}
    finally:
        server.close()


# --- L8: a failing re-read does not flood the log -------------------------------------------------


async def test_concurrent_subscribes_stay_under_the_cap() -> None:
    app, _ = counter_app(limits=Limits(max_subscriptions=5))
    server, conn, out = connected(app)
    try:
        for n in range(40):  # pipelined: each awaits its starting read before it is recorded
            conn.receive({"jsonrpc": "2.0", "id": n + 1, "method": "resources/subscribe",
                          "params": {"uri": f"item://{n}"}})
        got = await answered_in(out, set(range(1, 41)))
        accepted = [rid for rid, message in got.items() if "result" in message]
        assert len(accepted) == 5 == len(server.subscriptions.of(conn))
    finally:
        server.close()


async def test_ids_in_flight_and_the_inflight_cap_hold_for_async_reads_over_http(served) -> None:
    """Over HTTP, ``async def`` reads waiting in one session: a second request with an id in
    flight is refused -32600 naming it, a read past ``max_inflight`` -32603 naming the limit, and
    the waiting ones are answered once they can."""
    gate = asyncio.Event()
    app = App("t", limits=Limits(max_inflight=2))

    @app.resource("slow://a")
    async def slow() -> str:
        await gate.wait()
        return "slow"

    app.resource("text://a")(lambda: "hello")
    asgi = served(app)
    headers = await session(asgi)
    first = Call(asgi, body=read_message(1, "slow://a"), headers=headers)
    await in_flight(asgi, headers, 1)
    again = (await Call(asgi, body=read_message(1, "text://a"), headers=headers).done()).json()
    assert again["error"]["code"] == -32600 and "in flight" in again["error"]["message"]
    second = Call(asgi, body=read_message(2, "slow://a"), headers=headers)
    await in_flight(asgi, headers, 2)
    over = (await Call(asgi, body=read_message(3, "slow://a"), headers=headers).done()).json()
    assert over["id"] == 3 and over["error"]["code"] == -32603
    assert over["error"]["data"] == {"limit": "max_inflight", "max": 2}
    gate.set()
    for call in (first, second):
        assert (await call.done()).json()["result"]["contents"][0]["text"] == "slow"
