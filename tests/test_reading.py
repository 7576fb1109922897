"""``resources/read`` through the one request pipeline, proved for every session profile (plain,
access log on, traced, scoped): slow reads hold up nobody, cancelled ones say nothing, ids and the
in-flight cap hold, failures are answered and logged with what failed, and what a read records
follows the content.  Each test runs the engine in this process, its replies written through the
same outbox as stdio's; ``test_stdio_concurrency`` and ``test_http_concurrency`` run the processes."""

from __future__ import annotations

import asyncio
import threading
import time

import orjson
import pytest

from resourcekit import App, Limits, ResourceNotFound
from resourcekit.methods.reading import TAILS
from tests.support.session import Session
from tests.support.wire import cancelled, read, read_message

pytestmark = pytest.mark.anyio


async def test_a_slow_read_holds_up_no_read_that_came_with_it(profile: str) -> None:
    app = App("t")
    release = threading.Event()
    app.resource("slow://x")(lambda: "done" if release.wait(5) else "late")
    app.resource("fast://x")(lambda: "fast")
    async with Session(app, profile) as (conn, wire):
        try:
            conn.feed_lines([read(1, "fast://x"), read(2, "slow://x"), read(3, "fast://x"), read(4, "fast://x")])
            assert set(await wire.answered({1, 3, 4}, 2.0)) == {1, 3, 4}
            release.set()
            assert (await wire.answered({2}))[2]["result"]["contents"][0]["text"] == "done"
        finally:
            release.set()


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_an_id_in_flight_and_the_inflight_cap_hold(profile: str, kind: str) -> None:
    app = App("t", limits=Limits(max_inflight=2))
    release = threading.Event()
    if kind == "sync":
        app.resource("slow://x")(lambda: release.wait(5) and "done")
    else:
        @app.resource("slow://x")
        async def slow() -> str:
            while not release.is_set():
                await asyncio.sleep(0.01)
            return "done"
    async with Session(app, profile) as (conn, wire):
        try:
            conn.feed_lines([read(1, "slow://x"), read(1, "slow://x"), read(2, "slow://x"), read(3, "slow://x")])
            await asyncio.sleep(0.1)
            assert [e["code"] for e in wire.errors()] == [-32600, -32603]
            assert wire.errors()[1]["data"] == {"limit": "max_inflight", "max": 2}
            release.set()
            assert set(await wire.answered({1, 2})) == {1, 2}
        finally:
            release.set()


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_result_json_cannot_carry_is_answered_and_logged(profile: str, kind: str,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    app = App("t")
    if kind == "sync":
        app.resource("lone://a")(lambda: "a\ud800b")
        app.resource("lone-long://a")(lambda: "a\ud800b" * 200)
    else:
        @app.resource("lone://a")
        async def lone() -> str:
            return "a\ud800b"

        @app.resource("lone-long://a")
        async def lone_long() -> str:
            return "a\ud800b" * 200
    async with Session(app, profile) as (conn, wire):
        conn.feed_lines([read(1, "lone://a"), read(2, "lone-long://a")])
        got = await wire.answered({1, 2})
        for rid in (1, 2):
            assert got[rid]["error"] == {"code": -32603,
                                         "message": "Internal error: the result could not be encoded as JSON"}
    assert caplog.text.count("the result of resources/read lone") == 2
    assert "failed" not in caplog.text


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_failing_handler_is_answered_and_logged_with_method_uri_and_handler(
        profile: str, kind: str, caplog: pytest.LogCaptureFixture) -> None:
    app = App("t")
    if kind == "sync":
        @app.template("broken://{n}")
        def broken(n: str) -> str:
            raise RuntimeError(f"boom {n}")
    else:
        @app.template("broken://{n}")
        async def broken(n: str) -> str:
            raise RuntimeError(f"boom {n}")
    async with Session(app, profile) as (conn, wire):
        conn.feed(read(1, "broken://7"))
        assert (await wire.answered({1}))[1]["error"] == {"code": -32603, "message": "Internal error"}
    record = next(r for r in caplog.records if r.levelname == "ERROR")
    assert record.getMessage() == (f"resources/read broken://7 (handler {__name__}:"
                                   f"test_a_failing_handler_is_answered_and_logged_with_method_uri_and_handler."
                                   f"<locals>.broken) failed")
    assert record.exc_info is not None
    tb = record.exc_info[2]
    assert tb is not None and tb.tb_frame.f_code.co_name == "broken"  # the traceback starts at the user's frame
    assert "boom 7" not in str(wire.messages)


@pytest.mark.parametrize("raised", [asyncio.CancelledError, KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_handler_raising_a_base_exception_is_answered_and_frees_its_slot(
        profile: str, kind: str, raised: type[BaseException], caplog: pytest.LogCaptureFixture) -> None:
    """A cancellation nobody asked for (a handler awaiting a task another client cancelled), or
    SystemExit/KeyboardInterrupt from a handler: -32603, logged, the in-flight slot free again."""
    app = App("t", limits=Limits(max_inflight=2))
    if kind == "sync":
        @app.resource("raises://x")
        def raises() -> str:
            raise raised()
    else:
        @app.resource("raises://x")
        async def raises() -> str:
            raise raised()
    app.resource("fine://x")(lambda: "fine")
    async with Session(app, profile) as (conn, wire):
        conn.feed_lines([read(rid, "raises://x") for rid in range(1, 6)])
        got = await wire.answered(set(range(1, 6)))
        assert {m["error"]["code"] for m in got.values()} == {-32603}
        assert conn.inflight == {}
        conn.feed(read(9, "fine://x"))
        assert (await wire.answered({9}))[9]["result"]["contents"][0]["text"] == "fine"
    assert f"resources/read raises://x (handler {__name__}:" in caplog.text


async def test_a_waiting_async_read_holds_up_nobody_and_cancelling_it_cancels_its_handler(profile: str) -> None:
    app = App("t")
    cancelled_handlers: list[str] = []

    @app.resource("wait://x")
    async def wait() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled_handlers.append("wait")
            raise
        return "late"

    @app.resource("now://x")
    async def now() -> str:
        return "now"

    async with Session(app, profile) as (conn, wire):
        conn.feed_lines([read(1, "wait://x"), read(2, "now://x")])
        assert (await wire.answered({2}))[2]["result"]["contents"][0]["text"] == "now"
        conn.feed(cancelled(1))
        for _ in range(100):
            if cancelled_handlers:
                break
            await asyncio.sleep(0.01)
        assert cancelled_handlers == ["wait"] and conn.inflight == {}
        await asyncio.sleep(0.05)
        assert 1 not in wire.by_id()


async def test_a_handler_that_swallows_its_cancellation_is_not_answered(profile: str) -> None:
    app = App("t")

    @app.resource("stubborn://x")
    async def stubborn() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "answered anyway"
        return "late"

    async with Session(app, profile) as (conn, wire):
        conn.feed(read(1, "stubborn://x"))
        await asyncio.sleep(0.05)
        conn.feed(cancelled(1))
        await asyncio.sleep(0.1)
        assert wire.messages == [] and conn.inflight == {}


async def test_the_end_of_a_session_cancels_its_async_reads(profile: str) -> None:
    app = App("t")
    ended: list[str] = []

    @app.resource("wait://x")
    async def wait() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise
        return "late"

    session = Session(app, profile)
    conn, wire = await session.__aenter__()
    conn.feed(read(1, "wait://x"))
    await asyncio.sleep(0.05)
    await session.__aexit__()
    await asyncio.sleep(0.05)
    assert ended == ["cancelled"] and wire.messages == []


async def test_the_replies_of_one_loop_iteration_go_out_in_one_write(profile: str) -> None:
    app = App("t")

    @app.template("item://{n}")
    async def item(n: str) -> str:
        return f"item {n}"

    async with Session(app, profile) as (conn, wire):
        writes = wire.writes
        conn.feed_lines([read(rid, f"item://{rid}") for rid in range(1, 33)])
        assert len(await wire.answered(set(range(1, 33)))) == 32
        assert wire.writes - writes <= 2  # one write (two if the loop's iteration split them)


async def test_a_not_found_instance_leaves_no_match_cached(profile: str) -> None:
    app = App("t")

    @app.template("maybe://{n}")
    def maybe(n: int) -> str:
        if n % 2:
            raise ResourceNotFound(f"maybe://{n}")
        return f"even {n}"

    async with Session(app, profile) as (conn, wire):
        conn.feed_lines([read(1, "maybe://1"), read(2, "maybe://2")])
        got = await wire.answered({1, 2})
        assert got[1]["error"]["code"] == -32002 and got[2]["result"]["contents"][0]["text"] == "even 2"
        assert "maybe://1" not in app.router.shared and "maybe://2" in app.router.shared


async def test_initialize_and_reads_in_one_block(profile: str) -> None:
    app = App("t")
    app.resource("text://a")(lambda: "hello")
    async with Session(app, profile, version="2026-07-28") as (conn, wire):
        init = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        conn.feed_lines([init, read(1, "text://a"), read(2, "text://a")])
        got = await wire.answered({0, 1, 2})
        assert got[0]["result"]["protocolVersion"] == "2025-11-25"
        assert got[1]["result"] == got[2]["result"] and got[1]["result"]["contents"][0]["text"] == "hello"


async def test_a_handler_that_changes_its_list_argument_never_changes_the_next_reads(profile: str) -> None:
    app = App("t")

    @app.template("tags://{tags*}")
    def tags(tags: list[str]) -> str:
        shown = ",".join(tags)
        tags.append("extra")
        return shown

    async with Session(app, profile) as (conn, wire):
        for rid in range(1, 4):
            conn.feed(read(rid, "tags://a,b"))
            assert (await wire.answered({rid}))[rid]["result"]["contents"][0]["text"] == "a,b"


async def test_what_reads_record_follows_the_content(profile: str) -> None:
    app = App("t")
    state = {"text": "one"}
    app.resource("text://a")(lambda: state["text"])
    app.template("item://{n}")(lambda n: f"{state['text']} {n}")
    async with Session(app, profile) as (conn, wire):
        versions = []
        for rid, text in ((1, "one"), (2, "one"), (3, "two"), (4, "one")):
            state["text"] = text
            conn.feed_lines([read(rid, "text://a"), read(rid + 100, "item://7")])
            got = await wire.answered({rid, rid + 100})
            version = got[rid]["result"]["contents"][0]["_meta"]["io.resourcekit/version"]
            versions.append(version)
            assert app.tracker.version("text://a") == version == conn.seen["text://a"]
            instance = got[rid + 100]["result"]["contents"][0]["_meta"]["io.resourcekit/version"]
            assert app.tracker.version("item://7") == instance == conn.seen["item://7"]
        assert versions[0] == versions[1] == versions[3] != versions[2]


@pytest.mark.parametrize("reused", [False, True])
async def test_a_read_cancelled_while_its_worker_answers_frees_its_id(profile: str, reused: bool) -> None:
    app = App("t")
    gate = threading.Event()
    started = threading.Event()

    def held() -> str:
        started.set()
        gate.wait(5)
        return "held"

    app.resource("held://x")(held)
    app.resource("other://x")(lambda: "other")
    async with Session(app, profile) as (conn, wire):
        conn.feed(read(1, "held://x"))
        assert await asyncio.to_thread(started.wait, 5)
        conn.feed(cancelled(1))
        if reused:  # the id, free again, names another read before the worker answers the first
            conn.feed(read(1, "other://x"))
        gate.set()
        await asyncio.sleep(0.2)
        answers = [m for m in wire.messages if m.get("id") == 1]
        if reused:
            assert [a["result"]["contents"][0]["text"] for a in answers] == ["other"]
        else:
            assert answers == []
        assert conn.inflight == {}


async def test_a_subscribe_while_reads_start_the_seen_table_over_is_confirmed(profile: str) -> None:
    app = App("t", limits=Limits(max_subscriptions=8))
    app.template("item://{n}")(lambda n: f"item {n}")
    async with Session(app, profile) as (conn, wire):
        lines = [read(rid, f"item://{rid}") for rid in range(1, 60)]
        lines.append(orjson.dumps({"jsonrpc": "2.0", "id": "sub", "method": "resources/subscribe",
                                   "params": {"uri": "item://3"}}))
        conn.feed_lines(lines)
        got = await wire.answered({"sub", *range(1, 60)})
        assert got["sub"]["result"] == {}
        assert app.tracker.subscribers("item://3") == 1


def test_a_remembered_text_version_is_the_hash_of_the_text_and_its_mime_type() -> None:
    from resourcekit.contents import text_version, version_of
    from resourcekit.methods.reading import text_tail

    app = App("t")
    app.resource("tail://a")(lambda: "hello")
    _, version = text_tail("tail://a", app.router.exact["tail://a"], "hello")
    assert version == text_version("hello", "text/plain") == version_of(b"hello", "text/plain")
    assert TAILS["tail://a"][3] == version


async def test_a_short_texts_reply_is_the_bytes_of_its_result(profile: str) -> None:
    app = App("t")
    app.resource("text://a")(lambda: "hello")
    app.resource("md://a", mime_type="text/markdown")(lambda: "# hi")
    async with Session(app, profile) as (conn, wire):
        for rid in (1, 2):  # the second from the remembered tail
            conn.feed_lines([read(rid, "text://a"), read(rid + 10, "md://a")])
            got = await wire.answered({rid, rid + 10})
            assert got[rid]["result"] == {"contents": [{
                "uri": "text://a", "mimeType": "text/plain", "text": "hello",
                "_meta": {"io.resourcekit/version": app.tracker.version("text://a")}}]}
            assert got[rid + 10]["result"]["contents"][0]["mimeType"] == "text/markdown"


async def test_a_sessions_read_waits_for_no_other_sessions_slow_reads() -> None:
    """Two sessions share the runner: one's slow reads keep the other's waiting no longer than a
    worker takes to free up (round robin over the sessions' lanes)."""
    app = App("t", limits=Limits(max_workers=2))
    app.template("slow://{n}")(lambda n: time.sleep(0.2) or f"slow {n}")
    app.resource("fast://x")(lambda: "fast")
    async with Session(app) as (flooding, flood_wire), Session(app) as (other, wire):
        flooding.feed_lines([read(rid, f"slow://{rid}") for rid in range(1, 41)])  # 4 s of work for 2 workers
        await asyncio.sleep(0.3)
        started = time.monotonic()
        other.feed(read("fast", "fast://x"))
        got = await wire.answered({"fast"})
        assert got["fast"]["result"]["contents"][0]["text"] == "fast"
        assert time.monotonic() - started < 0.6  # a slow read's time at most, not the flood's
        assert len(flood_wire.by_id()) < 40


async def test_a_2026_07_28_reads_remembered_reply_is_the_bytes_of_its_result(profile: str) -> None:
    app = App("t", ttl_ms=5000, cache_scope="public")
    state = {"text": "hello"}
    app.resource("text://a")(lambda: state["text"])
    async with Session(app, profile) as (conn, wire):
        results = []
        for rid, text in ((1, "hello"), (2, "hello"), (3, "bye")):  # the second from the remembered tail
            state["text"] = text
            conn.feed(orjson.dumps(read_message(rid, "text://a", modern=True)))
            results.append((await wire.answered({rid}))[rid]["result"])
        assert results[0] == results[1]
        assert results[0]["ttlMs"] == 5000 and results[0]["resultType"] == "complete"
        assert results[0]["cacheScope"] == ("private" if profile == "scoped" else app.cache_scope)
        assert results[2]["contents"][0]["text"] == "bye"
        assert results[2]["contents"][0]["_meta"] != results[0]["contents"][0]["_meta"]
