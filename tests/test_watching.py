"""Watchers (issue 32, item 2): ``@app.watch`` checked at decoration; its task runs exactly while a
URI has subscribers (one for all sessions, started by the first subscribe, ended after the grace by
the last unsubscribe or the end of the last session); a raising one is logged with its URI and
started again; ``notify_changed`` from it reaches every subscriber; on Redis one worker runs it, and
another takes over when that worker is killed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from resourcekit import (
    App,
    Context,
    DefinitionError,
    MissingParameterError,
    QueryDefaultError,
    TemplateSyntaxError,
    UnknownParameterError,
    WatcherDefinitionError,
)
from resourcekit.testing import Client
from tests.support.http_server import EventReader, http_server_process, open_session, post, wait_for
from tests.support.process import APPS
from tests.support.redis_server import RedisProcess, redis_process
from tests.support.wire import INITIALIZED, request

pytestmark = pytest.mark.anyio

APP = APPS / "watch_app.py"
UPDATED = "notifications/resources/updated"


def notes(log: Path) -> list[tuple[str, str, int]]:
    """The watchers' ``(event, uri, pid)`` notes, in order."""
    if not log.exists():
        return []
    return [(event, uri, int(pid)) for event, uri, pid in (line.split() for line in log.read_text().splitlines())]


# --- declaring -------------------------------------------------------------------------------------


def test_a_watcher_is_checked_at_decoration_against_its_pattern() -> None:
    app = App("t")

    async def missing() -> None: ...

    async def extra(name: str, other: str) -> None: ...

    async def no_default(name: str, rev: str) -> None: ...

    def blocking(name: str) -> None: ...

    with pytest.raises(MissingParameterError, match="variable 'name'") as raised:
        app.watch("notes://{name}")(missing)
    assert raised.value.template == "notes://{name}" and raised.value.variable == "name"
    with pytest.raises(UnknownParameterError, match="parameter 'other'"):
        app.watch("notes://{name}")(extra)
    with pytest.raises(QueryDefaultError, match="'rev'"):
        app.watch("notes://{name}{?rev}")(no_default)
    with pytest.raises(WatcherDefinitionError, match="not an async function") as refused:
        app.watch("notes://{name}")(blocking)
    assert refused.value.pattern == "notes://{name}" and refused.value.function == "blocking"
    with pytest.raises(UnknownParameterError, match="'name'"):  # a plain URI has no variables to fill
        app.watch("notes://today")(extra)
    with pytest.raises(TemplateSyntaxError):
        app.watch("notes://{name")(missing)
    with pytest.raises(WatcherDefinitionError, match="grace"):
        app.watch("notes://{name}", grace=-1)(no_default)
    with pytest.raises(DefinitionError, match=r"@app.watch\(\"notes://"):  # written without its URI
        app.watch(missing)  # type: ignore[arg-type]


def test_a_watcher_is_returned_as_it_was_and_a_pattern_is_watched_once() -> None:
    app = App("t")

    async def first(name: str, ctx: Context) -> None: ...

    async def second(title: str) -> None: ...

    async def today(ctx: Context | None = None) -> None: ...

    assert app.watch("notes://{name}")(first) is first
    assert app.watch("notes://today")(today) is today
    with pytest.raises(WatcherDefinitionError, match=r"repeats first\(\)'s pattern"):
        app.watch("notes://{title}")(second)  # the same template, another variable name
    assert app.tracker.watchers.find("notes://today")[0].fn is today  # type: ignore[index]
    assert app.tracker.watchers.find("notes://x")[0].fn is first  # type: ignore[index]
    assert app.tracker.watchers.find("other://x") is None


# --- in process --------------------------------------------------------------------------------------


def watched_app(grace: float = 0.2) -> tuple[App, dict[str, str], list[str]]:
    """``page://{name}`` serving ``pages``; its watcher notes ``start NAME`` / ``stop NAME`` in ``events``
    and reports every change ``pages["*changed"]`` names."""
    app = App("t")
    pages = {"a": "one"}
    events: list[str] = []

    @app.lifespan
    async def lifespan() -> AsyncIterator[dict[str, str]]:
        yield {"greeting": "hi"}

    @app.template("page://{name}")
    def page(name: str) -> str:
        return pages.get(name, "")

    @app.watch("page://{name}", grace=grace)
    async def watch(name: str, ctx: Context) -> None:
        events.append(f"start {name} {ctx.state['greeting']}")
        try:
            while True:
                await asyncio.sleep(0.01)
                if pages.pop("*changed", None) == name:
                    app.notify_changed(ctx.uri)
        finally:
            events.append(f"stop {name}")

    return app, pages, events


async def until(check: object, timeout: float = 10.0) -> None:
    """Wait until ``check()`` holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def next_update(client: Client) -> dict[str, object]:
    while True:
        message = await client.next_notification(timeout=10)
        if message["method"] == UPDATED:
            return message


async def test_one_watcher_for_two_sessions_from_the_first_subscribe_to_the_last_unsubscribe() -> None:
    app, pages, events = watched_app()
    async with Client(app) as one, Client(app) as two:
        assert await one.read_text("page://a") == "one"
        assert events == []  # a read starts nothing
        await one.subscribe("page://a")
        await until(lambda: events == ["start a hi"])  # the lifespan's state, through Context
        await two.subscribe("page://a")
        pages["a"] = "two"
        pages["*changed"] = "a"
        assert (await next_update(one))["params"] == {"uri": "page://a"}
        assert (await next_update(two))["params"] == {"uri": "page://a"}
        assert app.tracker.watchers.starts == 1
        await one.unsubscribe("page://a")
        await two.unsubscribe("page://a")
        await two.subscribe("page://a")  # back within the grace: the same task runs on
        await two.unsubscribe("page://a")
        await until(lambda: events[-1:] == ["stop a"])
        assert events == ["start a hi", "stop a"] and app.tracker.watchers.starts == 1


async def test_a_session_that_ends_subscribed_counts_as_leaving() -> None:
    app, _, events = watched_app(grace=0)
    async with Client(app) as stays:
        async with Client(app) as leaves:
            await leaves.subscribe("page://a")
            await until(lambda: events == ["start a hi"])
        await until(lambda: events == ["start a hi", "stop a"])
        listen = stays.listen(["page://b"])  # a listen stream cancelled leaves too
        await until(lambda: events[-1:] == ["start b hi"])
        stays.cancel(listen)
        await until(lambda: events[-1:] == ["stop b"])


async def test_a_raising_watcher_is_logged_with_its_uri_and_started_again(caplog: pytest.LogCaptureFixture) -> None:
    app = App("t")
    runs: list[str] = []

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no words")

    app.template("feed://{n}")(lambda n: f"feed {n}")

    @app.watch("feed://{n}")
    async def watch(n: int) -> None:
        runs.append(f"run {n + 1}")
        if len(runs) == 1:
            raise Unprintable()
        await asyncio.sleep(3600)

    with caplog.at_level(logging.ERROR, logger="resourcekit"):
        async with Client(app) as client:
            await client.subscribe("feed://41")
            await until(lambda: len(runs) == 2)
    assert runs == ["run 42", "run 42"]  # the variable typed as declared
    failure = next(r for r in caplog.records if "watcher" in r.getMessage())
    assert "feed://41" in failure.getMessage() and "watch()" in failure.getMessage()
    assert failure.exc_info is not None and failure.exc_info[0] is Unprintable


# --- a real HTTP server ---------------------------------------------------------------------------------


@pytest.fixture
def data(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a").write_text("one")
    return tmp_path / "data"


def test_http_sessions_share_one_watcher_that_stops_when_the_last_session_ends(data: Path, tmp_path: Path) -> None:
    log = tmp_path / "watch.log"
    with http_server_process(APP, extra_env={"WATCH_DATA": str(data), "WATCH_LOG": str(log)}) as url:
        sessions = [open_session(url) for _ in range(2)]
        for headers in sessions:
            post(url, INITIALIZED, headers)
            assert post(url, request(1, "resources/read", {"uri": "watch://a"}), headers).status_code == 200
        assert notes(log) == []  # served, read, and nobody subscribed: no watcher
        streams = []
        for headers in sessions:
            assert post(url, request(2, "resources/subscribe", {"uri": "watch://a"}), headers).json()["result"] == {}
            streams.append(EventReader("GET", url, headers))
        wait_for(lambda: len(notes(log)) == 1)
        (event, uri, pid), = notes(log)
        assert (event, uri) == ("start", "watch://a")
        time.sleep(0.3)  # the GET streams open
        (data / "a").write_text("two")  # the watcher notices; the hash says it changed
        for stream in streams:
            assert stream.next()["params"] == {"uri": "watch://a"}
        assert post(url, request(3, "resources/unsubscribe", {"uri": "watch://a"}), sessions[0]).status_code == 200
        assert streams[1].quiet(1.0)  # the other session still subscribes: it runs on
        assert [n[0] for n in notes(log)] == ["start"]
        # the last subscriber ends its session without unsubscribing
        assert httpx.delete(url, headers=sessions[1], timeout=10).status_code == 204
        wait_for(lambda: [n[0] for n in notes(log)] == ["start", "stop"])
        for stream in streams:
            stream.close()


# --- several workers through Redis ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisProcess]:
    with redis_process() as server:
        yield server


def test_two_workers_run_one_watcher_and_the_other_takes_over_after_sigkill(redis: RedisProcess, data: Path,
                                                                              tmp_path: Path) -> None:
    log = tmp_path / "watch.log"
    config = {"WATCH_DATA": str(data), "WATCH_LOG": str(log), "WATCH_GRACE": "0.5"}
    with http_server_process(APP, "--workers", "2", "--redis", redis.url, extra_env=config) as url:
        wait_for(lambda: httpx.get(url.replace("/mcp", "/readyz"), timeout=5).status_code == 200)
        sessions = [open_session(url) for _ in range(4)]  # spread over both workers by the kernel
        for i, headers in enumerate(sessions):
            post(url, INITIALIZED, headers)
            assert post(url, request(i, "resources/subscribe", {"uri": "watch://a"}), headers).status_code == 200
        wait_for(lambda: len(notes(log)) == 1)
        time.sleep(2.0)  # leases renewed a few times: still the one watcher
        (_, _, first), = notes(log)
        assert notes(log) == [("start", "watch://a", first)]
        os.kill(first, signal.SIGKILL)
        killed = time.monotonic()
        wait_for(lambda: len(notes(log)) == 2, timeout=10)
        took = time.monotonic() - killed
        (event, uri, second) = notes(log)[1]
        assert (event, uri) == ("start", "watch://a") and second != first
        assert took < 5.0, f"taken over after {took:.1f} s"
        stream = EventReader("GET", url, sessions[0])
        time.sleep(0.5)
        (data / "a").write_text("after the takeover")
        assert stream.next()["params"] == {"uri": "watch://a"}
        stream.close()
        time.sleep(1.0)
        assert len([n for n in notes(log) if n[0] == "start"]) == 2  # no second watcher meanwhile
        for headers in sessions:
            with contextlib.suppress(httpx.HTTPError):
                httpx.delete(url, headers=headers, timeout=10)
        wait_for(lambda: notes(log)[-1][0] == "stop", timeout=10)


def test_a_session_that_expires_on_redis_releases_its_watch(redis: RedisProcess, data: Path, tmp_path: Path) -> None:
    """A client that subscribes and goes away without a word (no DELETE, no GET stream): once its
    session expired in Redis, its subscription no longer keeps the URI watched on any worker."""
    log = tmp_path / "watch.log"
    config = {"WATCH_DATA": str(data), "WATCH_LOG": str(log), "WATCH_GRACE": "0.2", "WATCH_IDLE": "1"}
    with http_server_process(APP, "--workers", "2", "--redis", redis.url, extra_env=config) as url:
        wait_for(lambda: httpx.get(url.replace("/mcp", "/readyz"), timeout=5).status_code == 200)
        headers = open_session(url)
        post(url, INITIALIZED, headers)
        assert post(url, request(1, "resources/subscribe", {"uri": "watch://a"}), headers).status_code == 200
        wait_for(lambda: [n[0] for n in notes(log)] == ["start"])
        wait_for(lambda: [n[0] for n in notes(log)] == ["start", "stop"], timeout=30)
