"""Review findings of 2026-11-23 and the limits: each test fails on the code before the fix."""

from __future__ import annotations

import asyncio
import enum
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from resourcekit import App, Context, Limits, MCPError
from resourcekit.core import Connection, Server
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


class Habitat(enum.Enum):
    forest = "forest"
    sea = "sea"


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
        assert 0 < len(app.tracker.instance_versions) <= tracking.MAX_INSTANCE_VERSIONS


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


# --- findings 8 and 13: workers, in-flight requests, cancelled batch members ----------------------


def decoded(out: list) -> Callable[[Any], None]:
    """A connection's ``send`` that keeps each message decoded (a response comes encoded)."""
    return lambda m: out.append(orjson.loads(m) if type(m) is bytes else m)


def core(app: App, version: str = "2025-11-25") -> tuple[Server, Connection, list]:
    server = Server(app)
    server.start()
    out: list = []
    conn = server.connect(decoded(out))
    conn.receive({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    out.clear()
    return server, conn, out


def read(rid: int, uri: str) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri}}


async def answered(out: list, ids: set, timeout: float = 3.0) -> dict:
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


async def test_a_fast_sync_read_never_waits_behind_a_slow_one() -> None:
    app = App("t")
    release = threading.Event()
    app.resource("slow://x")(lambda: "done" if release.wait(5) else "late")
    app.resource("fast://x")(lambda: "fast")
    server, conn, out = core(app)
    try:
        conn.receive(read(1, "slow://x"))
        await asyncio.sleep(0.05)  # the slow job holds the only thread started so far
        conn.receive(read(2, "fast://x"))
        assert set(await answered(out, {2}, 2.0)) == {2}
    finally:
        release.set()
        server.close()


async def test_a_cancelled_queued_job_never_runs() -> None:
    app = App("t", max_workers=1)
    release = threading.Event()
    calls: list[str] = []
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    app.resource("counted://x")(lambda: calls.append("ran") or "x")
    server, conn, out = core(app)
    try:
        conn.receive(read(1, "slow://x"))
        conn.receive(read(2, "counted://x"))  # queued behind the only worker
        conn.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        release.set()
        await answered(out, {1})
        await asyncio.sleep(0.1)
        assert calls == [] and all(m.get("id") != 2 for m in out)
    finally:
        server.close()


async def test_in_flight_requests_are_capped_but_ping_answers() -> None:
    app = App("t", limits=Limits(max_inflight=2))
    release = threading.Event()
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    server, conn, out = core(app)
    try:
        for rid in (1, 2, 3):
            conn.receive(read(rid, "slow://x"))
        conn.receive({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        got = await answered(out, {3, 4}, 1.0)
        assert got[3]["error"]["code"] == -32603
        assert got[3]["error"]["data"] == {"limit": "max_inflight", "max": 2}
        assert got[4]["result"] == {}
        release.set()
        assert set(await answered(out, {1, 2})) == {1, 2}
    finally:
        server.close()


async def test_a_batch_with_a_cancelled_member_is_answered() -> None:
    app = App("t")
    release = threading.Event()
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    server, conn, out = core(app, "2025-03-26")
    try:
        conn.receive([read(1, "slow://x"), {"jsonrpc": "2.0", "id": 2, "method": "ping"}])
        conn.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        got = await answered(out, {2}, 1.0)
        assert got[2]["result"] == {}
        assert [m for m in out if isinstance(m, list)] == [[got[2]]]
        release.set()
    finally:
        server.close()


async def test_initialize_twice_on_one_session_is_refused() -> None:
    app = App("t")
    server, conn, out = core(app, "2025-11-25")
    try:
        conn.receive({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        assert out[0]["error"]["code"] == -32600
        assert conn.protocol_version == "2025-11-25"
    finally:
        server.close()


# --- finding 10: Context.log messages precede their response ---------------------------------------


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_log_messages_precede_the_response(kind: str) -> None:
    app = App("t")

    async def async_handler(ctx: Context) -> str:
        ctx.log("info", "reading")
        return "x"

    def sync_handler(ctx: Context) -> str:
        ctx.log("info", "reading")
        return "x"

    app.resource("a://x")(async_handler if kind == "async" else sync_handler)
    server, conn, out = core(app)
    try:
        conn.receive({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}})
        out.clear()
        for rid in range(2, 12):
            conn.receive(read(rid, "a://x"))
        await answered(out, set(range(2, 12)))
        order = ["log" if m.get("method") == "notifications/message" else "answer" for m in out]
        assert order.count("log") == order.count("answer") == 10
        for position, item in enumerate(order):  # each answer is preceded by its own log message
            if item == "answer":
                assert order[:position].count("log") > order[:position].count("answer"), order
    finally:
        server.close()


# --- finding 4: listers and children cannot be turned into work ---------------------------------


async def test_forged_cursors_are_refused() -> None:
    import base64

    app = App("t", page_size=2)
    app.template("item://{n}", lister=lambda: ({"n": i} for i in range(10)))(lambda n: str(n))
    async with Client(app) as client:
        first = await client.request("resources/list")
        assert len(first["resources"]) == 2 and "nextCursor" in first
        second = await client.request("resources/list", {"cursor": first["nextCursor"]})
        assert [r["uri"] for r in second["resources"]] == ["item://2", "item://3"]
        forged = base64.urlsafe_b64encode(b"l:1:1000000000000").decode()
        with pytest.raises(MCPError) as caught:
            await client.request("resources/list", {"cursor": forged})
        assert caught.value.code == -32602


async def test_a_plain_lister_is_not_walked_from_its_start_for_every_page() -> None:
    pulled = []

    def numbers():
        for i in range(1000):
            pulled.append(i)
            yield {"n": i}

    app = App("t", page_size=100)
    app.template("item://{n}", lister=numbers)(lambda n: str(n))
    async with Client(app) as client:
        assert len(await client.list_resources()) == 1000  # every page, following nextCursor
    assert len(pulled) == 1000  # walked once, not 100 + 200 + ... + 1000 times


async def test_a_filter_over_an_endless_lister_answers_a_short_page() -> None:
    import itertools

    app = App("t", limits=Limits(page_scan_budget=500))
    app.template("item://{n}", lister=lambda: ({"n": i} for i in itertools.count()))(lambda n: str(n))
    async with Client(app) as client:
        page = await asyncio.wait_for(client.request("resources/list", {"filter": {"kind": "none"}}), 5)
        assert page["resources"] == [] and "nextCursor" in page
        page = await asyncio.wait_for(client.request("resources/list", {"cursor": page["nextCursor"],
                                                                         "filter": {"kind": "none"}}), 5)
        assert page["resources"] == [] and "nextCursor" in page


async def test_children_with_a_filter_over_an_endless_generator_answer() -> None:
    import itertools

    app = App("t", limits=Limits(page_scan_budget=300))
    app.resource("tree://", children=lambda: (f"tree://{i}" for i in itertools.count()))(lambda: "root")
    async with Client(app) as client:
        page = await asyncio.wait_for(client.request("resources/list", {"uri": "tree://",
                                                                         "filter": {"uriPrefix": "nope"}}), 5)
        assert page["resources"] == [] and "nextCursor" in page


async def test_a_lister_item_with_an_enum_value_lists_and_a_bad_one_is_left_out() -> None:
    app = App("t")
    items = [{"habitat": "forest"}, {"habitat": Habitat.sea}, {"habitat": "moon"}]
    def animal(habitat: Habitat) -> str:
        return habitat.value

    app.template("animal://{habitat}", lister=lambda: items)(animal)
    app.resource("plain://x")(lambda: "x")
    async with Client(app) as client:
        listed = [r["uri"] for r in await client.list_resources()]
    assert listed == ["plain://x", "animal://forest", "animal://sea"]


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
        got = await answered(out, {7}, 2.0)
        assert got[7]["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7
        assert out[0]["method"] == "notifications/subscriptions/acknowledged"
        assert app.tracker.subscribers("cfg://x") == 0
    finally:
        server.close()


async def test_concurrent_subscribes_stay_under_the_cap() -> None:
    app, _ = counter_app(limits=Limits(max_subscriptions=5))
    server, conn, out = core(app)
    try:
        for n in range(40):  # pipelined: each awaits its starting read before it is recorded
            conn.receive({"jsonrpc": "2.0", "id": n + 1, "method": "resources/subscribe",
                          "params": {"uri": f"item://{n}"}})
        got = await answered(out, set(range(1, 41)))
        accepted = [rid for rid, message in got.items() if "result" in message]
        assert len(accepted) == 5 == len(server.subscriptions.of(conn))
    finally:
        server.close()


async def test_a_job_stuck_behind_a_busy_worker_gets_a_thread_at_the_next_look() -> None:
    from resourcekit._runner import STALL, ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=4)
    release = threading.Event()
    try:
        slow = asyncio.ensure_future(runner.call(lambda: release.wait(5)))  # the only thread, stuck
        await asyncio.sleep(STALL * 3)
        started = time.monotonic()
        assert await asyncio.wait_for(runner.call(lambda: "late"), 2) == "late"
        assert time.monotonic() - started < 1.0  # not after the slow one: a thread of its own
        assert not slow.done()
    finally:
        release.set()
        runner.close()


async def test_a_fast_job_queued_behind_slow_ones_gets_a_thread() -> None:
    # two idle workers; slow, fast, slow, fast: the second fast job must not wait for a slow one
    from resourcekit._runner import ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=8)
    release = threading.Event()
    try:
        await asyncio.gather(runner.call(lambda: time.sleep(0.05)), runner.call(lambda: time.sleep(0.05)))
        await asyncio.sleep(0.05)
        calls = [runner.call(job) for job in (lambda: release.wait(5), lambda: "fast",
                                             lambda: release.wait(5), lambda: "last")]
        futures = [asyncio.ensure_future(c) for c in calls]
        done, _ = await asyncio.wait([futures[3]], timeout=2.0)
        assert done and futures[3].result() == "last"
    finally:
        release.set()
        await asyncio.gather(*futures)
        runner.close()
