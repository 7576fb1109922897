"""The fast path of a session's reads (resourcekit/_fastread.py): the same answers as the general
path, batches that keep every guarantee (a slow read holds up nobody, cancelled reads say nothing),
and over a real stdio process with pipelined reads and cancellations."""

from __future__ import annotations

import asyncio
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from resourcekit import App, Blob, Limits, ResourceNotFound
from resourcekit.protocol import Connection, Server
from tests.helpers import command, env

pytestmark = pytest.mark.anyio


def session(app: App) -> tuple[Server, Connection, list[Any]]:
    """A session whose replies arrive as lines, as over stdio: reads take the fast path (the apps
    here have telemetry=False: a provider another test configured in this process would send
    their reads the general way)."""
    server = Server(app, "pipe")
    server.start()
    out: list[Any] = []
    conn = server.connect(out.append)
    conn.send_bytes = lambda data: out.extend(orjson.loads(line) for line in data.splitlines())
    conn.feed(orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
        "clientInfo": {"name": "t", "version": "0"}}}))
    out.clear()
    return server, conn, out


def read(rid: int | str, uri: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri}})


async def answered(out: list[Any], ids: set[Any], timeout: float = 3.0) -> dict[Any, Any]:
    got: dict[Any, Any] = {}
    for _ in range(int(timeout / 0.01)):
        got = {m["id"]: m for m in out if m.get("id") in ids}
        if set(got) == ids:
            break
        await asyncio.sleep(0.01)
    return got


def demo_app() -> App:
    app = App("t", telemetry=False)
    app.resource("text://a")(lambda: "hello")
    app.resource("md://a", mime_type="text/markdown")(lambda: "# hi")
    app.resource("json://a")(lambda: {"k": [1, 2]})
    app.resource("blob://a")(lambda: Blob(b"\x00\x01", "application/x-thing"))
    app.template("item://{n}")(lambda n: f"item {n}")

    @app.resource("gone://a")
    def gone() -> str:
        raise ResourceNotFound("gone://a")

    @app.resource("broken://a")
    def broken() -> str:
        raise RuntimeError("boom")

    return app


async def test_fast_reads_answer_exactly_as_the_general_path() -> None:
    uris = ["text://a", "md://a", "json://a", "blob://a", "item://7", "gone://a", "broken://a", "nothing://x"]
    server, conn, fast = session(demo_app())
    other, general_conn, general = session(demo_app())
    general_conn.send_bytes = None  # no line transport: the general path
    try:
        for rid, uri in enumerate(uris, 1):
            conn.feed(read(rid, uri))
            general_conn.feed(read(rid, uri))
        ids = set(range(1, len(uris) + 1))
        assert await answered(fast, ids) == await answered(general, ids)
        assert conn.inflight == {}
    finally:
        server.close()
        other.close()


async def test_a_read_batched_with_a_slow_one_is_answered() -> None:
    app = App("t", telemetry=False)
    release = threading.Event()
    app.resource("slow://x")(lambda: "done" if release.wait(5) else "late")
    app.resource("fast://x")(lambda: "fast")
    server, conn, out = session(app)
    try:
        for rid, uri in ((1, "fast://x"), (2, "slow://x"), (3, "fast://x"), (4, "fast://x")):
            conn.feed(read(rid, uri))  # one loop iteration: one batch
        assert type(conn.inflight[2]).__name__ == "FastRead"  # the fast path took it
        assert set(await answered(out, {1, 3, 4}, 2.0)) == {1, 3, 4}
        release.set()
        assert (await answered(out, {2}))[2]["result"]["contents"][0]["text"] == "done"
    finally:
        release.set()
        server.close()


async def test_cancelled_reads_of_a_batch_say_nothing_and_the_others_answer() -> None:
    app = App("t", max_workers=1, telemetry=False)
    release = threading.Event()
    calls: list[str] = []
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    app.resource("counted://x")(lambda: calls.append("ran") or "x")
    server, conn, out = session(app)
    try:
        conn.feed(read(1, "slow://x"))
        await asyncio.sleep(0.05)  # the only worker is busy with it
        for rid in (2, 3, 4):
            conn.feed(read(rid, "counted://x"))
        await asyncio.sleep(0)  # the batch of 2, 3, 4 is queued behind the slow read
        conn.feed(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}))
        release.set()
        got = await answered(out, {1, 2, 4})
        assert set(got) == {1, 2, 4}
        await asyncio.sleep(0.1)
        assert calls == ["ran", "ran"] and all(m.get("id") != 3 for m in out)
        assert conn.inflight == {}
    finally:
        release.set()
        server.close()


async def test_an_id_in_flight_and_the_inflight_cap_still_hold() -> None:
    app = App("t", limits=Limits(max_inflight=2), telemetry=False)
    release = threading.Event()
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    server, conn, out = session(app)
    try:
        for rid in (1, 1, 2, 3):
            conn.feed(read(rid, "slow://x"))
        await asyncio.sleep(0.1)
        errors = [m for m in out if "error" in m]
        assert [e["error"]["code"] for e in errors] == [-32600, -32603]
        assert errors[1]["error"]["data"] == {"limit": "max_inflight", "max": 2}
        release.set()
        assert set(await answered(out, {1, 2})) == {1, 2}
    finally:
        release.set()
        server.close()


async def test_a_handler_with_big_replies_gets_a_job_per_read() -> None:
    app = App("t", telemetry=False)
    big = "x" * 100_000
    app.resource("big://x")(lambda: big)
    server, conn, out = session(app)
    try:
        conn.feed(read(1, "big://x"))
        await answered(out, {1})
        assert app.router.exact["big://x"].remembered("big_reads")
        for rid in (2, 3, 4):
            conn.feed(read(rid, "big://x"))
        got = await answered(out, {2, 3, 4})
        versions = {m["result"]["contents"][0]["_meta"]["io.resourcekit/version"] for m in got.values()}
        assert len(versions) == 1 and {m["result"]["contents"][0]["text"] for m in got.values()} == {big}
    finally:
        server.close()


async def test_a_sync_read_json_cannot_carry_is_answered_as_the_general_path_answers_it_on_the_wire(
        caplog: pytest.LogCaptureFixture) -> None:
    """The sync short path (a worker's batch) answers a short or long text with a lone surrogate
    as the general path and the async short path do: -32603, "could not be encoded", logged."""
    app = App("t", telemetry=False)
    app.resource("lone://a")(lambda: "a\ud800b")
    app.resource("lone-long://a")(lambda: "a\ud800b" * 200)
    server, conn, out = session(app)
    try:
        conn.feed(read(1, "lone://a"))
        conn.feed(read(2, "lone-long://a"))
        assert type(conn.inflight[1]).__name__ == "FastRead"  # the short path took them
        got = await answered(out, {1, 2})
        for rid in (1, 2):
            assert got[rid]["error"] == {"code": -32603,
                                         "message": "Internal error: the result could not be encoded as JSON"}
        assert caplog.text.count("the result of resources/read could not be encoded") == 2
        assert "handler for resources/read failed" not in caplog.text
    finally:
        server.close()


STDIO_APP = """
from resourcekit import App
app = App("fast")
app.resource("text://a")(lambda: "hello")
app.template("item://{n}")(lambda n: f"item {n}")
"""
ASYNC_STDIO_APP = """
import anyio
from resourcekit import App
app = App("fast")

@app.resource("text://a")
async def text() -> str:
    return "hello"

@app.template("item://{n}")
async def item(n: str) -> str:
    if int(n) % 3 == 0:
        await anyio.sleep(0.001)  # some suspend (anyio's sleep: each read's task is a task like any)
    return f"item {n}"
"""


@pytest.mark.parametrize("source", [STDIO_APP, ASYNC_STDIO_APP], ids=["sync", "async"])
def test_pipelined_reads_with_cancellations_over_stdio(tmp_path: Path, source: str) -> None:
    """A real ``resourcekit run`` process: 200 pipelined reads, every seventh cancelled; every
    other one answered once with its text, one version for one content."""
    (tmp_path / "fast_app.py").write_text(source)
    proc = subprocess.Popen(command("run", str(tmp_path / "fast_app.py")), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env())
    try:
        assert proc.stdin is not None and proc.stdout is not None
        lines = [orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})]
        for rid in range(1, 201):
            lines.append(read(rid, "text://a" if rid % 2 else f"item://{rid}"))
            if rid % 7 == 0:  # cancels a read that may be answered already: either is fine
                lines.append(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                           "params": {"requestId": rid}}))
        proc.stdin.write(b"\n".join(lines) + b"\n")
        proc.stdin.flush()
        messages: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=lambda: [messages.put(orjson.loads(line)) for line in proc.stdout],
                         daemon=True).start()
        expected = set(range(1, 201)) - set(range(7, 201, 7))
        ids: list[Any] = []
        answers: dict[str, set[str]] = {}
        while not expected <= set(ids) or "last" not in ids:
            if expected <= set(ids) and "ping" not in ids:  # then a ping: answered at once
                ids.append("ping")
                proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": "last", "method": "ping"}) + b"\n")
                proc.stdin.flush()
            message = messages.get(timeout=10)
            assert "error" not in message, message
            ids.append(message["id"])
            for content in message["result"].get("contents", []):
                answers.setdefault(content["uri"], set()).add(content["_meta"]["io.resourcekit/version"])
                assert content["text"] == ("hello" if message["id"] % 2 else f"item {message['id']}")
        ids = [i for i in ids if i not in (0, "ping", "last")]
        assert len(ids) == len(set(ids))
        assert len(answers["text://a"]) == 1  # one version for one content
    finally:
        proc.kill()
        proc.wait()


def test_a_remembered_text_version_is_the_hash_of_the_text_and_its_mime_type() -> None:
    from resourcekit.contents import text_version, version_of

    for text in ("hello", "é\ud800", "x" * 300, "é\ud800x" * 30_000):  # the last one hashed in pieces
        for mime in ("text/plain", "text/markdown", "text/plain"):
            expected = version_of(text.encode("utf-8", "surrogatepass"), mime)
            assert text_version(text, mime) == expected == text_version(text, mime)
    assert text_version("hello", "text/plain") != text_version("hello", "text/markdown")


def test_a_long_text_served_again_keeps_its_version_and_any_change_gives_a_new_one() -> None:
    from resourcekit import contents
    from resourcekit.contents import text_version, version_of

    base = "The quick brown fox jumps over the lazy dog.\n" * 30_000  # 1.3 MB: the long path
    first = text_version(base, "text/plain")
    assert first == version_of(base.encode(), "text/plain")
    again = base.encode().decode()  # equal, a new object (as a file read again makes it)
    assert again is not base
    assert text_version(again, "text/plain") == first
    for changed in (base[:-1] + "?", "?" + base[1:], base[:600_000] + "?" + base[600_001:]):
        assert len(changed) == len(base)  # the remembered text of that length is compared, not trusted
        assert text_version(changed, "text/plain") == version_of(changed.encode(), "text/plain") != first
    assert text_version(base, "text/markdown") == version_of(base.encode(), "text/markdown") != first
    for extra in range(20):  # the table stays bounded however many lengths are served
        text_version("y" * (70_000 + extra), "text/plain")
    assert len(contents._LONG_VERSIONS) <= contents._LONG_MEMO_SIZE
    huge = "z" * contents._LONG_MEMO_BYTES  # too big to keep: hashed each time
    assert text_version(huge, "text/plain") == version_of(huge.encode(), "text/plain")
    assert len(huge) not in contents._LONG_VERSIONS
    wide = "\U0001f600" * (contents._LONG_MEMO_BYTES // 4)  # 4 bytes a character: as big, in a quarter of the length
    assert text_version(wide, "text/plain") == version_of(wide.encode(), "text/plain")
    assert len(wide) not in contents._LONG_VERSIONS
