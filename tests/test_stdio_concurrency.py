"""Reads served side by side over stdio, against real ``resourcekit run`` processes: pipelined reads
with cancellations among them each answered once (or not at all when cancelled), a big read's id
free again once answered while every worker is busy, and a reply made as the session ends still
written.  The same engine in process for every session profile: ``test_reading``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.process import RawServer
from tests.support.wire import cancelled, read

SYNC_APP = """
from resourcekit import App
app = App("pipelined")
app.resource("text://a")(lambda: "hello")
app.template("item://{n}")(lambda n: f"item {n}")
"""
ASYNC_APP = """
import anyio
from resourcekit import App
app = App("pipelined")

@app.resource("text://a")
async def text() -> str:
    return "hello"

@app.template("item://{n}")
async def item(n: str) -> str:
    if int(n) % 3 == 0:
        await anyio.sleep(0.001)  # some suspend (anyio's sleep: each read's task is a task like any)
    return f"item {n}"
"""


def served(tmp_path: Path, source: str) -> RawServer:
    """``source`` as an app file run by ``resourcekit run`` over stdio, past its handshake."""
    app_file = tmp_path / "stdio_app.py"
    app_file.write_text(source)
    server = RawServer(app_file)
    assert server.initialize()["id"] == 0
    return server


@pytest.mark.parametrize("source", [SYNC_APP, ASYNC_APP], ids=["sync", "async"])
def test_pipelined_reads_with_cancellations_each_answered_once(tmp_path: Path, source: str) -> None:
    """200 reads written at once, every seventh cancelled right after it (it may be answered
    already: either is fine): every other read is answered exactly once with its own text, no
    answer comes twice, nothing is an error, and one content has one version."""
    lines = []
    for rid in range(1, 201):
        lines.append(read(rid, "text://a" if rid % 2 else f"item://{rid}"))
        if rid % 7 == 0:
            lines.append(cancelled(rid))
    with served(tmp_path, source) as server:
        server.send_raw(b"".join(line + b"\n" for line in lines))
        expected = set(range(1, 201)) - set(range(7, 201, 7))
        ids: list[Any] = []
        versions: dict[str, set[str]] = {}
        while "last" not in ids:
            if expected <= set(ids) and "ping" not in ids:  # then a ping: what came late comes before it
                ids.append("ping")
                server.send({"jsonrpc": "2.0", "id": "last", "method": "ping"})
            message = server.recv()
            assert "error" not in message, message
            ids.append(message["id"])
            for content in message["result"].get("contents", []):
                versions.setdefault(content["uri"], set()).add(content["_meta"]["io.resourcekit/version"])
                assert content["text"] == ("hello" if message["id"] % 2 else f"item {message['id']}")
        answered = [i for i in ids if i not in ("ping", "last")]
        assert len(answered) == len(set(answered)) and expected <= set(answered)
        assert len(versions["text://a"]) == 1


BIG_APP = """
import time
from resourcekit import App
app = App("big")
BIG = "y" * 200_000
app.resource("big://a")(lambda: BIG)

@app.resource("slow://a")
def slow() -> str:
    time.sleep(0.3)
    return "slow"
"""


def test_a_big_reads_id_is_free_again_once_answered_while_the_workers_are_busy(tmp_path: Path) -> None:
    """With one, two, then three slow reads holding workers, a read of a 200 kB text is answered,
    and the same id sent again once its answer came is served, not refused as in flight."""
    with served(tmp_path, BIG_APP) as server:
        assert len(server.request(1, "resources/read", {"uri": "big://a"})["result"]["contents"][0]["text"]) == 200_000
        for trial in range(3):
            slow = [f"s{trial}-{k}" for k in range(trial + 1)]
            server.send_raw(b"".join(read(rid, "slow://a") + b"\n" for rid in slow))  # workers busy
            time.sleep(0.05)
            for _ in range(2):  # the same id again, once answered
                got = server.request("b", "resources/read", {"uri": "big://a"})
                assert got["id"] == "b" and "result" in got, got
            assert sorted(server.recv()["id"] for _ in slow) == slow


EOF_APP = """
import asyncio
import time
from resourcekit import App
app = App("eof")

@app.resource("block://a")
async def block() -> str:
    time.sleep(0.2)  # holds the loop while the client sends the next read and closes stdin
    return "blocked"

@app.resource("yield://a")
async def yielding() -> str:
    for _ in range(2):  # ends in the iteration in which the server wakes for the end of input
        await asyncio.sleep(0)
    return "hello"
"""


def test_a_reply_made_as_the_session_ends_is_still_written(tmp_path: Path) -> None:
    """A read of an ``async def`` handler sent just before stdin closes, while the loop is held by
    another: both are answered before the server exits, the one that ends in the loop iteration
    in which the input ends too (its reply once waited for a write after the writer closed)."""
    for _ in range(3):
        with served(tmp_path, EOF_APP) as server:
            server.send_raw(read(1, "block://a") + b"\n")
            time.sleep(0.05)  # the server's loop is inside block()
            server.send_raw(read(2, "yield://a") + b"\n")
            assert server.proc.stdin is not None
            server.proc.stdin.close()
            got = {}
            while True:
                try:
                    message = server.recv()
                except EOFError:
                    break
                got[message["id"]] = message["result"]["contents"][0]["text"]
            assert got == {1: "blocked", 2: "hello"}
            assert server.close() == 0


def test_slow_handler_does_not_delay_ping_or_reads(server):
    server.initialize()
    server.send({"jsonrpc": "2.0", "id": "slow", "method": "resources/read", "params": {"uri": "slow://sleep"}})
    server.send({"jsonrpc": "2.0", "id": "slow-sync", "method": "resources/read", "params": {"uri": "slow://sync"}})
    started = time.monotonic()
    assert server.request("p", "ping")["result"] == {}
    read = server.request("r", "resources/read", {"uri": "text://hello"})
    assert read["result"]["contents"][0]["text"] == "hello, world"
    assert time.monotonic() - started < 1.5


def test_cancellation_sends_no_response(server):
    server.initialize()
    server.send({"jsonrpc": "2.0", "id": "slow", "method": "resources/read", "params": {"uri": "slow://sleep"}})
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}})
    assert server.request("after", "ping") == {"jsonrpc": "2.0", "id": "after", "result": {}}
    server.close()
    with pytest.raises(EOFError):
        server.recv(timeout=5)  # nothing was ever sent for "slow"
