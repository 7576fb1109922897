"""Framing over stdio, against real ``resourcekit run`` processes: requests are lines, however the
client's writes cut them; a line over ``max_message_size`` is refused naming the limit and the
server goes on."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

from resourcekit import App
from tests.support.process import RawServer
from tests.support.wire import read

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
