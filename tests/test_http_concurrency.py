"""Reads over HTTP served side by side: a read whose handler blocks holds up no other read, of its
own session or of another, and concurrent keep-alive clients of a real ``resourcekit run
--transport http`` each get their own answers.  The same engine in process for every session
profile: ``test_reading``; one session flooding the workers: ``test_pipeline_limits``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from resourcekit import App
from tests.support.asgi import Call, session
from tests.support.http_server import ACCEPT, http_server_process, open_session
from tests.support.wire import read_message

pytestmark = pytest.mark.anyio


def gated_app(gate: threading.Event) -> App:
    """``text://a``, ``item://{n}`` and ``slow://a``, a sync handler that blocks until ``gate`` is set."""
    app = App("t")
    app.resource("text://a")(lambda: "hello")
    app.template("item://{n}")(lambda n: f"item {n}")

    @app.resource("slow://a")
    def slow() -> str:
        assert gate.wait(10)
        return "slow"

    return app


def text_of(call: Call) -> str:
    return str(call.json()["result"]["contents"][0]["text"])


@pytest.mark.parametrize("others", [1, 4])  # 1: two reads posted at once, a worker may take the slow one first
async def test_a_blocking_read_holds_up_no_other_read_of_its_session_or_another(served, others: int) -> None:
    """A read whose sync handler blocks, and reads posted in the same loop iteration by its own
    session and by another: every other read is answered while the blocking one still waits."""
    gate = threading.Event()
    asgi = served(gated_app(gate))
    mine, theirs = await session(asgi), await session(asgi)
    try:
        slow = Call(asgi, body=read_message(1, "slow://a"), headers=mine)
        fast = [Call(asgi, body=read_message(rid, "text://a"), headers=mine) for rid in range(2, 2 + others)]
        fast.append(Call(asgi, body=read_message(99, f"item://{others}"), headers=theirs))
        for call in fast:
            await call.done()
        assert [text_of(c) for c in fast] == ["hello"] * others + [f"item {others}"]
        assert [c.json()["id"] for c in fast] == [*range(2, 2 + others), 99]
        assert not slow.complete
        gate.set()
        assert text_of(await slow.done()) == "slow"
    finally:
        gate.set()


APP_SOURCE = """
from resourcekit import App
app = App("keepalive")
app.resource("text://a")(lambda: "hello")
app.template("item://{n}")(lambda n: "item " + n)
"""


@pytest.fixture
def served_process(tmp_path: Path) -> Iterator[str]:
    app_file = tmp_path / "keepalive_app.py"
    app_file.write_text(APP_SOURCE)
    with http_server_process(app_file) as url:
        yield url


def test_concurrent_keep_alive_clients_get_their_own_answers(served_process: str) -> None:
    """Eight clients, each on its own kept-alive connection, posting 40 reads one after another
    into one session at the same time: each response is the answer to that client's own read
    (its id, its URI's text), none is crossed with another connection's."""
    url = served_process
    headers = {"content-type": "application/json", "accept": ACCEPT, **open_session(url, "2025-11-25")}

    def client(k: int) -> list[tuple[int, str]]:
        got = []
        with httpx.Client(timeout=10) as http:
            for i in range(40):
                rid = k * 1000 + i
                uri = f"item://{rid}" if i % 2 else "text://a"
                body = http.post(url, json=read_message(rid, uri), headers=headers).json()
                got.append((body["id"], body["result"]["contents"][0]["text"]))
        return got

    with ThreadPoolExecutor(8) as pool:
        for k, got in enumerate(pool.map(client, range(8))):
            assert got == [(k * 1000 + i, f"item {k * 1000 + i}" if i % 2 else "hello") for i in range(40)]
