"""A block of input through the fast path (``Connection.feed_lines``, resourcekit/_fastread.py):
every kind of line answered as the general path answers it, a short text's reply encoded once
per URI and still the bytes of the general result, cached template values never shared with a
handler that changes them, one timer per connection that stops when the batches are answered,
and over a real stdio process, lines cut anywhere between blocks."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from resourcekit import App
from resourcekit.contents import text_version
from resourcekit.methods.reading import TAILS, text_reply
from resourcekit.protocol import Connection, Server
from resourcekit.versions import META_VERSION
from tests.helpers import command, env
from tests.test_fastread import STDIO_APP, answered, demo_app, read, session

pytestmark = pytest.mark.anyio


def block_session(app: App) -> tuple[Server, Connection, list[Any]]:
    """``session``, with input in blocks as over stdio (the test submits each block's batch)."""
    server, conn, out = session(app)
    conn.input_ends_batches = True
    return server, conn, out


def general_result(uri: str, mime: str, text: str) -> dict[str, Any]:
    version = text_version(text, mime)
    return {"contents": [{"uri": uri, "mimeType": mime, "text": text, "_meta": {META_VERSION: version}}]}


async def test_a_short_texts_reply_is_the_bytes_of_the_general_result_and_records_what_it_served() -> None:
    app = App("t", telemetry=False)
    server, conn, _ = session(app)
    try:
        cases = [("a://1", "text/plain", "hello"), ("a://1", "text/plain", "changed"),
                 ("a://1", "text/markdown", "changed"), ("c://x", "text/plain", ""),
                 ("b://\u00e9\"q\"", "text/plain", "caf\u00e9 \"quoted\" \\ \n\u2028 \U0001f600")]
        for rid in (7, "seven", 2**62):
            for uri, mime, text in cases:
                expected = orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": general_result(uri, mime, text)},
                                        option=orjson.OPT_APPEND_NEWLINE)
                assert text_reply(conn, rid, uri, mime, text) == expected  # encoded, or remembered
                assert text_reply(conn, rid, uri, mime, text) == expected  # remembered
                assert TAILS[uri][0] == text
                version = text_version(text, mime)
                assert app.tracker.version(uri) == version and conn.seen[uri] == version
        with pytest.raises(orjson.JSONEncodeError):  # as the general encoding: no id beyond 64 bits
            text_reply(conn, 2**70, "a://1", "text/plain", "hello")
    finally:
        server.close()


LINES = [
    b"",
    b"   ",
    b"{not json",
    b'{"jsonrpc": "2.0", "id": "p", "method": "ping"}',
    b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}',
    read(1, "text://a"),
    read(2, "item://9"),
    b'{"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "text://a", "_meta": {"k": 1}}}',
    b'[{"jsonrpc": "2.0", "id": 4, "method": "ping"}]',
    read(5, "nothing://x"),
    read(6, "broken://a"),
    read(7, "json://a"),
    read(8, "md://a"),
    b'{"jsonrpc": "1.0", "id": 9, "method": "resources/read", "params": {"uri": "text://a"}}',
    b'{"jsonrpc": "2.0", "id": 10, "method": "resources/read", "params": {"uri": 5}}',
    b'{"jsonrpc": "2.0", "id": 11, "method": "resources/read", "params": []}',
    b'{"jsonrpc": "2.0", "id": true, "method": "resources/read", "params": {"uri": "text://a"}}',
    b'{"jsonrpc": "2.0", "id": 12, "method": "resources/read", "params": {"uri": ""}}',
    read(13, "text://a"),
    read(13, "text://a"),  # in flight already
    b"5",
]


def canonical(messages: list[Any]) -> list[bytes]:
    return sorted(orjson.dumps(m, option=orjson.OPT_SORT_KEYS) for m in messages)


async def test_every_kind_of_line_in_a_block_is_answered_as_the_general_path_answers_it() -> None:
    server, conn, fast = block_session(demo_app())
    other, general_conn, general = session(demo_app())
    general_conn.send_bytes = None  # no line transport: the general path
    try:
        conn.feed_lines(LINES)
        assert type(conn.inflight[1]).__name__ == "FastRead" and type(conn.inflight[2]).__name__ == "FastRead"
        conn.end_of_input()
        for line in LINES:
            if line.strip():
                general_conn.feed(line)
        for _ in range(300):
            await asyncio.sleep(0.01)
            if not conn.inflight and not general_conn.inflight and len(fast) == len(general):
                break
        assert canonical(fast) == canonical(general)
        assert len(fast) == 18 and not conn.inflight
    finally:
        server.close()
        other.close()


async def test_initialize_and_reads_in_one_block() -> None:
    server = Server(demo_app(), "pipe")
    server.start()
    out: list[Any] = []
    conn = server.connect(out.append)
    conn.send_bytes = lambda data: out.extend(orjson.loads(line) for line in data.splitlines())
    conn.input_ends_batches = True
    try:
        initialize = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        conn.feed_lines([read(1, "text://a"), initialize,
            b'{"jsonrpc": "2.0", "method": "notifications/initialized"}', read(2, "text://a"), read(3, "item://1")])
        conn.end_of_input()
        got = await answered(out, {0, 1, 2, 3})
        assert got[1]["error"]["code"] == -32600  # before initialize
        assert got[2]["result"]["contents"][0]["text"] == "hello"
        assert got[3]["result"]["contents"][0]["text"] == "item 1"
    finally:
        server.close()


async def test_a_handler_that_changes_its_list_argument_never_changes_the_next_reads() -> None:
    app = App("t", telemetry=False)

    @app.template("tags://{t}{/tags*}")
    def tags(t: str, tags: list[str]) -> str:
        shown = ",".join(tags)
        tags.append("mutated")
        return shown

    @app.template("one://{n}")
    def one(n: int) -> str:
        return f"n={n}"

    server, conn, out = block_session(app)
    try:
        for rid in range(1, 5):
            conn.feed_lines([read(rid, "tags://t/a/b"), read(100 + rid, "one://4")])  # hits of the router's cache
            conn.end_of_input()
            got = await answered(out, {rid, 100 + rid})
            assert got[rid]["result"]["contents"][0]["text"] == "a,b"
            assert got[100 + rid]["result"]["contents"][0]["text"] == "n=4"
    finally:
        server.close()


async def test_one_timer_per_connection_looks_at_the_batches_and_stops_when_they_are_answered() -> None:
    server, conn, out = block_session(demo_app())
    try:
        for block in range(5):
            conn.feed_lines([read(block * 10 + i, "text://a") for i in range(3)])
            conn.end_of_input()
        watch = conn.fast_watch
        assert watch is not None and watch.ticking
        assert len(await answered(out, {block * 10 + i for block in range(5) for i in range(3)})) == 15
        for _ in range(100):
            if not watch.ticking:
                break
            await asyncio.sleep(0.01)
        assert not watch.ticking and watch.batches == [] and conn.fast_watch is watch
    finally:
        server.close()


class StdioServer:
    """A real ``resourcekit run`` of ``source`` over stdio, past its handshake."""

    def __init__(self, tmp_path: Path, source: str) -> None:
        (tmp_path / "stdio_app.py").write_text(source)
        self.proc = subprocess.Popen(command("run", str(tmp_path / "stdio_app.py")), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
        self.send(orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
            b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        assert self.answer()["id"] == 0

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, *messages: bytes) -> None:
        self.write(b"".join(m + b"\n" for m in messages))

    def answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        return orjson.loads(self.proc.stdout.readline())  # type: ignore[no-any-return]

    def __enter__(self) -> StdioServer:
        return self

    def __exit__(self, *exc: object) -> None:
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


def test_lines_cut_anywhere_between_blocks_over_stdio(tmp_path: Path) -> None:
    with StdioServer(tmp_path, STDIO_APP) as server:
        data = b"".join(read(i, "text://a" if i % 2 else f"item://{i}") + b"\n\n" for i in range(1, 201))
        cuts = [0, 5, 6, 90, 91, 400, 1000, 1001, 3000, len(data)]
        for start, end in itertools.pairwise(cuts):
            server.write(data[start:end])
            time.sleep(0.02)  # a block of its own
        got = {}
        for _ in range(200):
            message = server.answer()
            got[message["id"]] = message["result"]["contents"][0]["text"]
        assert got == {i: "hello" if i % 2 else f"item {i}" for i in range(1, 201)}


async def test_what_fast_reads_record_follows_the_content() -> None:
    app = App("t", telemetry=False)
    current = ["one"]
    app.resource("doc://a")(lambda: current[0])
    app.template("doc://items/{n}")(lambda n: f"{current[0]} {n}")
    server, conn, out = block_session(app)
    try:
        rid = 0
        for text in ("one", "one", "two", "two", "one"):
            current[0] = text
            for uri, served in (("doc://a", text), ("doc://items/3", f"{text} 3")):
                rid += 1
                conn.feed_lines([read(rid, uri)])
                conn.end_of_input()
                got = (await answered(out, {rid}))[rid]["result"]["contents"][0]
                version = text_version(served, "text/plain")
                assert got["text"] == served and got["_meta"][META_VERSION] == version
                assert app.tracker.version(uri) == version and conn.seen[uri] == version
        assert app.tracker.versions["doc://a"] == text_version("one", "text/plain")
        assert app.tracker.instance_versions["doc://items/3"] == text_version("one 3", "text/plain")
    finally:
        server.close()


BIG_APP = """
import time
from resourcekit import App
app = App("fast")
BIG = "y" * 200_000
app.resource("big://a")(lambda: BIG)

@app.resource("slow://a")
def slow() -> str:
    time.sleep(0.3)
    return "slow"
"""


def test_a_big_reads_id_is_free_again_once_answered_while_the_workers_are_busy(tmp_path: Path) -> None:
    # a big read is a job of its own: when every worker is busy its job starts a new one, which
    # may answer before the loop goes on; the id must then be free for the client's next request
    with StdioServer(tmp_path, BIG_APP) as server:
        server.send(read(1, "big://a"))  # its reply is big: from now on, a job per read
        assert len(server.answer()["result"]["contents"][0]["text"]) == 200_000
        for trial in range(3):
            slow = [read(f"s{trial}-{k}", "slow://a") for k in range(trial + 1)]
            server.send(*slow)  # every worker busy
            time.sleep(0.05)
            for _ in range(2):  # the same id again, once answered
                server.send(read("b", "big://a"))
                got = server.answer()
                assert got["id"] == "b" and "result" in got, got
            assert sorted(server.answer()["id"] for _ in slow) == sorted(f"s{trial}-{k}" for k in range(trial + 1))


SURROGATE_APP = """
from resourcekit import App, Context
app = App("fast")
app.resource("text://a")(lambda: "hello")
app.resource("sur://fast")(lambda: "a\\ud800b")

@app.resource("sur://general")
def general(ctx: Context) -> str:
    return "a\\ud800b"
"""


def test_a_result_json_cannot_carry_is_answered_with_an_error_on_either_path(tmp_path: Path) -> None:
    with StdioServer(tmp_path, SURROGATE_APP) as server:
        for rid, uri in enumerate(("sur://general", "sur://fast", "text://a"), 1):  # a lone surrogate: not JSON
            server.send(read(rid, uri))
            got = server.answer()
            assert got["id"] == rid
            if uri == "text://a":  # and the server goes on serving
                assert got["result"]["contents"][0]["text"] == "hello"
            else:
                assert got["error"]["code"] == -32603


def test_a_line_over_max_message_size_is_refused_naming_the_limit_and_the_server_goes_on(tmp_path: Path) -> None:
    # as every limit's error: data names the limit and its value
    with StdioServer(tmp_path, STDIO_APP) as server:
        limit = App("t").limits.max_message_size
        server.send(b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * limit + b'"}}',
                    read(2, "text://a"))
        refused, served = server.answer(), server.answer()
        assert refused == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": f"Invalid Request: message larger than {limit} bytes",
            "data": {"limit": "max_message_size", "max": limit}}}
        assert served["id"] == 2 and served["result"]["contents"][0]["text"] == "hello"
