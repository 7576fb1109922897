"""Framing over stdio, against real ``resourcekit run`` processes: requests are lines, however the
client's writes cut them; a line over ``max_message_size`` is refused naming the limit and the
server goes on; bad input is answered; stray output goes to stderr; files work as pipes do."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import orjson

from resourcekit import App
from tests.support.process import APPS, RawServer
from tests.support.wire import read

BASIC_APP = APPS / "basic_app.py"


APP = """
from resourcekit import App
app = App("lines")
app.resource("text://a")(lambda: "hello")
app.template("item://{n}")(lambda n: f"item {n}")
"""


def served(tmp_path: Path) -> RawServer:
    app_file = tmp_path / "lines_app.py"
    app_file.write_text(APP)
    server = RawServer(app_file)
    assert server.initialize()["id"] == 0
    return server


def test_lines_cut_anywhere_between_blocks(tmp_path: Path) -> None:
    """200 reads, each line followed by an empty one, written in pieces that end inside a line,
    between its newlines or at one, each piece read on its own: every read is answered once,
    with its own text."""
    data = b"".join(read(i, "text://a" if i % 2 else f"item://{i}") + b"\n\n" for i in range(1, 201))
    cuts = [0, 5, 6, 90, 91, 400, 1000, 1001, 3000, len(data)]
    with served(tmp_path) as server:
        for start, end in itertools.pairwise(cuts):
            server.send_raw(data[start:end])
            time.sleep(0.02)  # a block of its own
        got = {}
        for _ in range(200):
            message = server.recv()
            assert message["id"] not in got
            got[message["id"]] = message["result"]["contents"][0]["text"]
        assert got == {i: "hello" if i % 2 else f"item {i}" for i in range(1, 201)}


def test_a_line_over_max_message_size_is_refused_naming_the_limit_and_the_server_goes_on(tmp_path: Path) -> None:
    """A request line one limit long plus its envelope: answered -32600 without an id, the error's
    message and data naming ``max_message_size`` and its value, as every limit's; the read on the
    next line is served."""
    limit = App("t").limits.max_message_size
    with served(tmp_path) as server:
        server.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * limit
                        + b'"}}\n' + read(2, "text://a") + b"\n")
        refused, answered = server.recv(), server.recv()
        assert refused == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": f"Invalid Request: message larger than {limit} bytes",
            "data": {"limit": "max_message_size", "max": limit}}}
        assert answered["id"] == 2 and answered["result"]["contents"][0]["text"] == "hello"


def test_bad_input_is_answered_and_server_keeps_serving(server):
    server.initialize()
    server.send_raw(b"{not json\n")
    assert server.recv()["error"]["code"] == -32700
    server.send_raw(b"42\n")
    assert server.recv()["error"]["code"] == -32600
    server.send({"jsonrpc": "1.0", "id": 5, "method": "ping"})
    reply = server.recv()
    assert reply["id"] == 5 and reply["error"]["code"] == -32600
    server.send({"jsonrpc": "2.0", "id": None, "method": "ping"})
    assert server.recv()["error"]["code"] == -32600
    assert server.request(6, "no/such/method")["error"]["code"] == -32601
    assert server.request(7, "resources/read", {"uri": 3})["error"]["code"] == -32602
    assert server.request(8, "resources/read", [1, 2])["error"]["code"] == -32602
    assert server.request(9, "resources/list", {"cursor": "garbage!"})["error"]["code"] == -32602
    assert server.request(10, "logging/setLevel", {"level": "loud"})["error"]["code"] == -32602
    assert server.request(11, "ping") == {"jsonrpc": "2.0", "id": 11, "result": {}}


def test_oversized_line_is_skipped_not_fatal():
    with RawServer(BASIC_APP) as s:
        s.initialize()
        s.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (5 * 1024 * 1024) + b'"}}\n')
        reply = s.recv()
        assert reply["error"]["code"] == -32600 and "larger" in reply["error"]["message"]
        assert s.request(2, "ping")["result"] == {}


def test_print_goes_to_stderr(server):
    server.initialize()
    reply = server.request(1, "resources/read", {"uri": "noisy://print"})
    assert reply["result"]["contents"][0]["text"] == "quiet"
    server.close()
    assert "this must not reach stdout" in server.stderr


def test_files_instead_of_pipes(tmp_path):
    """``resourcekit run app.py < requests.jsonl > replies.jsonl`` works: stdin and stdout may be files."""
    import subprocess

    from tests.support.process import command, env

    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "f", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "text://hello"}},
    ]))
    replies = tmp_path / "replies.jsonl"
    with requests.open("rb") as stdin, replies.open("wb") as stdout:
        done = subprocess.run(command("run", str(BASIC_APP)), stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                              env=env(), timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [orjson.loads(line) for line in replies.read_bytes().splitlines()]
    assert [m["id"] for m in lines] == [0, 1]
    assert lines[1]["result"]["contents"][0]["text"] == "hello, world"
