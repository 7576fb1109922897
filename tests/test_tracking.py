"""Change tracking: versions, subscriptions, bursts, polling, threads, list_changed, listen streams."""

from __future__ import annotations

import asyncio
import threading

import pytest

from resourcekit import App
from resourcekit.testing import Client

pytestmark = pytest.mark.anyio
VERSION = "io.resourcekit/version"


def make_app() -> tuple[App, dict[str, int]]:
    app = App("t")
    state = {"n": 0}
    app.resource("c://value")(lambda: f"n={state['n']}")
    app.resource("c://same")(lambda: "same")
    app.template("c://{name}/value")(lambda name: f"{name}={state['n']}")
    return app, state


async def quiet(client: Client, seconds: float = 0.3) -> list[dict]:
    await asyncio.sleep(seconds)
    out = []
    while not client.notifications.empty():
        out.append(client.notifications.get_nowait())
    return out


async def settle(app: App) -> None:
    """Let the baseline read of a new subscription happen."""
    for _ in range(100):
        await asyncio.sleep(0.01)
        if not app.tracker._dirty and not app.tracker._check_scheduled:
            return


async def test_versions_are_content_hashes_in_read_and_list():
    app, state = make_app()
    async with Client(app) as client:
        first = (await client.read("c://value"))[0]["_meta"][VERSION]
        assert (await client.read("c://value"))[0]["_meta"][VERSION] == first
        listed = {r["uri"]: r for r in await client.list_resources()}
        assert listed["c://value"]["_meta"][VERSION] == first
        state["n"] += 1
        assert (await client.read("c://value"))[0]["_meta"][VERSION] != first


async def test_subscribe_change_unsubscribe_silence():
    app, state = make_app()
    async with Client(app) as client:
        await client.subscribe("c://value")
        await settle(app)
        state["n"] += 1
        app.notify_changed("c://value")
        note = await client.next_notification()
        assert note == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                        "params": {"uri": "c://value"}}
        assert await quiet(client) == []
        await client.unsubscribe("c://value")
        state["n"] += 1
        app.notify_changed("c://value")
        assert await quiet(client) == []


async def test_noop_burst_sends_nothing_and_rereads_little():
    app, _ = make_app()
    async with Client(app) as client:
        await client.subscribe("c://same")
        await settle(app)
        before = app.tracker.checks
        for _ in range(1000):
            app.notify_changed("c://same")
        assert await quiet(client) == []
        assert app.tracker.checks - before <= 2  # coalesced: not a thousand re-reads


async def test_changing_burst_notifies_and_read_is_newest():
    app, state = make_app()
    async with Client(app) as client:
        await client.subscribe("c://value")
        await settle(app)
        for _ in range(1000):
            state["n"] += 1
            app.notify_changed("c://value")
        notes = await quiet(client, 0.5)
        assert 1 <= len(notes) <= 5
        assert all(n["params"]["uri"] == "c://value" for n in notes)
        assert (await client.read_text("c://value")) == "n=1000"


async def test_unsubscribed_uris_are_not_reread():
    app, state = make_app()
    async with Client(app):
        before = app.tracker.checks
        for _ in range(100):
            app.notify_changed("c://value")
        await asyncio.sleep(0.2)
        assert app.tracker.checks == before


async def test_template_instance_subscription():
    app, state = make_app()
    async with Client(app) as client:
        await client.subscribe("c://alpha/value")
        await settle(app)
        state["n"] += 1
        app.notify_changed("c://beta/value")  # not subscribed: nothing
        app.notify_changed("c://alpha/value")
        notes = await quiet(client)
        assert [n["params"]["uri"] for n in notes] == ["c://alpha/value"]


async def test_polling_detects_changes_without_notify():
    app = App("t")
    state = {"n": 0}
    app.resource("p://value", poll=0.05)(lambda: str(state["n"]))
    async with Client(app) as client:
        await client.subscribe("p://value")
        await asyncio.sleep(0.2)
        assert await quiet(client, 0.1) == []  # polling an unchanged resource is silent
        state["n"] = 1
        note = await client.next_notification(2)
        assert note["params"]["uri"] == "p://value"


async def test_notify_changed_from_many_threads():
    app, state = make_app()
    async with Client(app) as client:
        await client.subscribe("c://value")
        await settle(app)
        lock = threading.Lock()

        def hammer():
            for _ in range(200):
                with lock:
                    state["n"] += 1
                app.notify_changed("c://value")

        threads = [threading.Thread(target=hammer) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            await asyncio.to_thread(t.join)
        notes = await quiet(client, 0.5)
        assert notes and all(n["params"]["uri"] == "c://value" for n in notes)
        assert await client.read_text("c://value") == "n=1600"


async def test_list_changed_on_add_and_remove_at_run_time():
    app, _ = make_app()
    async with Client(app) as client:
        app.resource("c://new")(lambda: "new")
        note = await client.next_notification()
        assert note == {"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}
        assert "c://new" in {r["uri"] for r in await client.list_resources()}
        app.remove("c://new")
        assert (await client.next_notification())["method"] == "notifications/resources/list_changed"
        assert "c://new" not in {r["uri"] for r in await client.list_resources()}


async def test_notify_list_changed_only_when_the_list_moved():
    app = App("t")
    rows = [1, 2]
    app.template("r://{n}", lister=lambda: ({"n": n} for n in rows))(lambda n: str(n))
    async with Client(app) as client:
        app.notify_list_changed()  # first call establishes the list's version
        await quiet(client)
        app.notify_list_changed()
        assert await quiet(client) == []
        rows.append(3)
        app.notify_list_changed()
        assert (await client.next_notification())["method"] == "notifications/resources/list_changed"


async def test_listen_stream_2026():
    app, state = make_app()
    async with Client(app, protocol_version="2026-07-28") as client:
        sid = client.listen(["c://value"], list_changed=True)
        ack = await client.next_notification()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == sid
        assert ack["params"]["notifications"] == {"resourcesListChanged": True,
                                                  "resourceSubscriptions": ["c://value"]}
        await settle(app)
        state["n"] += 1
        app.notify_changed("c://value")
        note = await client.next_notification()
        assert note["method"] == "notifications/resources/updated"
        assert note["params"]["uri"] == "c://value"
        assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == sid
        app.resource("c://later")(lambda: "x")
        note = await client.next_notification()
        assert note["method"] == "notifications/resources/list_changed"
        assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == sid
        client.cancel(sid)
        await asyncio.sleep(0.05)
        state["n"] += 1
        app.notify_changed("c://value")
        assert await quiet(client) == []


async def test_listen_only_sends_what_was_asked():
    app, state = make_app()
    async with Client(app, protocol_version="2026-07-28") as client:
        client.listen(["c://value"], list_changed=False)
        await client.next_notification()  # ack
        app.resource("c://other")(lambda: "x")
        assert await quiet(client) == []


async def test_a_deleted_resource_is_announced_once_without_a_traceback(caplog):
    from resourcekit import ResourceNotFound

    app = App("t")
    present = {"yes": True}

    def maybe() -> str:
        if not present["yes"]:
            raise ResourceNotFound("m://x")
        return "here"

    app.resource("m://x")(maybe)
    async with Client(app) as client:
        await client.subscribe("m://x")
        await settle(app)
        present["yes"] = False
        app.notify_changed("m://x")
        assert (await client.next_notification())["params"]["uri"] == "m://x"
        app.notify_changed("m://x")
        assert await quiet(client) == []
    assert "Traceback" not in caplog.text and "failed" not in caplog.text
