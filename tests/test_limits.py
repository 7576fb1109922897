"""The limits of ``Limits``, each with its outcome: URI length, subscriptions and listen URIs per
session, requests in flight, remembered instance versions, each for every session profile; limits
checked when made; over HTTP, ids in flight and the in-flight cap for async reads."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import orjson
import pytest

from resourcekit import App, Limits
from tests.support.apps import counter_app
from tests.support.asgi import Call, in_flight, session
from tests.support.session import Session
from tests.support.wire import modern_meta, read, read_message, request

pytestmark = pytest.mark.anyio


def line(rid: object, method: str, params: dict[str, object]) -> bytes:
    return orjson.dumps(request(rid, method, params))


# --- limits ------------------------------------------------------------------------------------


async def test_uri_over_the_length_limit_is_refused_before_matching(profile: str) -> None:
    app, _ = counter_app(limits=Limits(max_uri_length=64))
    async with Session(app, profile) as (conn, wire):
        conn.feed_lines([read(1, "item://" + "1" * 100), read(2, "item://1")])
        got = await wire.answered({1, 2})
        assert got[1]["error"]["code"] == -32602
        assert got[1]["error"]["data"] == {"limit": "max_uri_length", "max": 64}
        assert got[2]["result"]["contents"][0]["text"] == "1:v1"


async def test_subscriptions_per_session_are_capped(profile: str) -> None:
    app, _ = counter_app(limits=Limits(max_subscriptions=3))
    async with Session(app, profile) as (conn, wire):
        uris = ["item://0", "item://1", "item://2", "item://0"]  # the last already held: not a new one
        for rid, uri in enumerate(uris):
            conn.feed(line(rid, "resources/subscribe", {"uri": uri}))
            assert (await wire.answered({rid}))[rid]["result"] == {}
        conn.feed(line("over", "resources/subscribe", {"uri": "item://9"}))
        refused = (await wire.answered({"over"}))["over"]["error"]
        assert refused["code"] == -32602 and refused["data"] == {"limit": "max_subscriptions", "max": 3}
        conn.feed(line("un", "resources/unsubscribe", {"uri": "item://0"}))
        conn.feed(line("again", "resources/subscribe", {"uri": "item://9"}))
        got = await wire.answered({"un", "again"})
        assert got["un"]["result"] == {} and got["again"]["result"] == {}


async def test_listen_uris_are_capped_and_checked(profile: str) -> None:
    app, _ = counter_app(limits=Limits(max_listen_uris=2))
    async with Session(app, profile, version="2026-07-28") as (conn, wire):
        conn.feed(line(1, "subscriptions/listen", {"_meta": modern_meta(), "notifications": {
            "resourceSubscriptions": ["item://1", "item://2", "item://3"]}}))
        assert (await wire.answered({1}))[1]["error"]["data"] == {"limit": "max_listen_uris", "max": 2}
        conn.feed(line(2, "subscriptions/listen", {"_meta": modern_meta(), "notifications": {
            "resourceSubscriptions": ["nope://x"]}}))
        unknown = (await wire.answered({2}))[2]["error"]
        assert unknown["code"] == -32602 and unknown["data"] == {"uri": "nope://x"}


async def test_reads_over_the_read_size_limit_are_refused_naming_it(profile: str, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as f:  # a sparse file far over the limit: measured, never read
        f.truncate(1 << 30)
    app = App("sizes", limits=Limits(max_read_size=1000))
    app.resource("file://big", mime_type="application/octet-stream")(lambda: big)
    app.resource("bytes://big")(lambda: b"x" * 1001)
    app.resource("text://wide")(lambda: "\u00e9" * 600)  # 600 characters, 1,200 bytes
    app.resource("text://fits")(lambda: "x" * 1000)
    async with Session(app, profile) as (conn, wire):
        conn.feed_lines([read(i, uri) for i, uri in enumerate(
            ["file://big", "bytes://big", "text://wide", "text://fits"], 1)])
        got = await wire.answered({1, 2, 3, 4})
    for rid in (1, 2, 3):
        assert got[rid]["error"]["code"] == -32603
        assert got[rid]["error"]["data"] == {"limit": "max_read_size", "max": 1000}
        assert "resources/stream" in got[rid]["error"]["message"]
    assert len(got[4]["result"]["contents"][0]["text"]) == 1000


def test_limits_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="max_uri_length"):
        Limits(max_uri_length=0)
    assert App("t", page_size=5).limits.page_size == 5
    assert App("t", limits=Limits(page_size=9)).page_size == 9


async def test_instance_versions_stay_bounded(profile: str) -> None:
    from resourcekit import tracking

    app, _ = counter_app()
    count = tracking.MAX_INSTANCE_VERSIONS + 50
    async with Session(app, profile) as (conn, wire):
        for start in range(0, count, 256):  # under max_inflight at a time
            ids = set(range(start, min(start + 256, count)))
            conn.feed_lines([read(n, f"item://1?junk={n}") for n in sorted(ids)])
            assert len(await wire.answered(ids)) == len(ids)
            wire.messages.clear()
        assert 0 < len(app.tracker.instance_versions) <= tracking.MAX_INSTANCE_VERSIONS


# --- findings 8 and 13: workers, in-flight requests, cancelled batch members ----------------------


async def test_in_flight_requests_are_capped_but_ping_answers(profile: str) -> None:
    app = App("t", limits=Limits(max_inflight=2))
    release = threading.Event()
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    async with Session(app, profile) as (conn, wire):
        try:
            conn.feed_lines([read(1, "slow://x"), read(2, "slow://x"), read(3, "slow://x"),
                             line(4, "ping", {})])
            got = await wire.answered({3, 4}, 1.0)
            assert got[3]["error"]["code"] == -32603
            assert got[3]["error"]["data"] == {"limit": "max_inflight", "max": 2}
            assert got[4]["result"] == {}
            release.set()
            assert set(await wire.answered({1, 2})) == {1, 2}
        finally:
            release.set()


async def test_concurrent_subscribes_stay_under_the_cap(profile: str) -> None:
    app, _ = counter_app(limits=Limits(max_subscriptions=5))
    served = Session(app, profile)
    async with served as (conn, wire):
        # pipelined: each awaits its starting read before it is recorded
        conn.feed_lines([line(n + 1, "resources/subscribe", {"uri": f"item://{n}"}) for n in range(40)])
        got = await wire.answered(set(range(1, 41)))
        accepted = [rid for rid, message in got.items() if "result" in message]
        assert len(accepted) == 5 == len(served.server.subscriptions.of(conn))


# --- over HTTP ---------------------------------------------------------------------------------


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
