"""Review findings of 2026-11-23 and the limits: each test fails on the code before the fix."""

from __future__ import annotations

import asyncio

import pytest

from resourcekit import App, Limits, MCPError
from resourcekit.testing import Client

pytestmark = pytest.mark.anyio


def counter_app(**options: object) -> tuple[App, dict[str, str]]:
    app = App("t", **options)  # type: ignore[arg-type]
    state = {"value": "v1"}
    app.resource("cfg://x")(lambda: state["value"])
    app.template("item://{n}{?rev}")(lambda n, rev="": f"{n}:{state['value']}")
    return app, state


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
        assert len(app.tracker.instance_versions) == tracking.MAX_INSTANCE_VERSIONS


# --- finding 14: notify_list_changed does not walk an endless lister ------------------------------


async def test_notify_list_changed_with_an_endless_lister_answers() -> None:
    import itertools

    app = App("t", limits=Limits(page_scan_budget=50))
    app.template("r://{n}", lister=lambda: ({"n": n} for n in itertools.count()))(lambda n: str(n))
    async with Client(app) as client:
        for _ in range(2):  # no version to compare: each call is reported
            app.notify_list_changed()
            note = await client.next_notification(timeout=2)
            assert note["method"] == "notifications/resources/list_changed"
