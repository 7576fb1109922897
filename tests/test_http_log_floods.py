"""What a client can make the server's log say, against real ``resourcekit run --transport http``
processes: a disconnect the client caused is no error of the server's (no ERROR line, no
traceback, nothing from uvicorn), and a warning a client repeats at will is written once per
``Limits.log_repeat_interval`` with a count (``resourcekit.logs.Repeats``)."""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import socket
import textwrap
import time
from pathlib import Path

import httpx
import orjson

from resourcekit.logs import VARIANTS, Repeats
from tests.support.auth import ResourceServer, resource_server
from tests.support.http_server import wait_for
from tests.support.process import APPS


def logged(server: ResourceServer) -> list[str]:
    """The server's log after its "serving" line."""
    return [line for line in server.log.splitlines() if not line.startswith("resourcekit: serving ")]


def _post(port: int, body: dict[str, object], sid: str) -> bytes:
    data = orjson.dumps(body)
    return (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\ncontent-type: application/json\r\n"
            b"accept: application/json\r\nmcp-session-id: %s\r\ncontent-length: %d\r\n\r\n%s"
            % (port, sid.encode(), len(data), data))


def test_pipelined_requests_then_a_half_close_log_nothing() -> None:
    with resource_server(target=APPS / "basic_app.py") as server:
        sid = server.initialize("unused")
        calls = [("resources/read", {"uri": "text://hello"}), ("resources/list", {}), ("ping", {})]
        for connection in range(60):
            method, params = calls[connection % 3]
            burst = b"".join(_post(server.port, {"jsonrpc": "2.0", "id": i, "method": method, "params": params}, sid)
                             for i in range(20))
            with socket.create_connection(("127.0.0.1", server.port)) as sock:
                sock.sendall(burst)
                sock.shutdown(socket.SHUT_WR)  # the client is done sending, and leaves without reading
        # the server keeps serving, and what it was answering when they left is dropped quietly
        answer = server.call("ping", {}, None, session=sid)
        assert answer.status_code == 200 and answer.json()["result"] == {}
        time.sleep(0.5)  # (anything still being answered is answered by now)
        assert logged(server) == []  # no "error serving POST /mcp" with a traceback, no uvicorn ERROR


FLOOD_APP = textwrap.dedent("""
    from resourcekit import App, Limits
    app = App("flood", limits=Limits(log_repeat_interval=1.0))

    @app.resource("notes://x")
    def x() -> str:
        return "x"
""")
REFUSED = re.compile(r"WARNING resourcekit: auth: refused a token: .*?(?: \(… ([\d,]+) more in the last (\d+) s\))?$")


def test_a_flood_of_invalid_tokens_is_a_few_counted_lines(auth_server, tmp_path: Path) -> None:
    target = tmp_path / "flood.py"
    target.write_text(FLOOD_APP)
    sent = 2000
    with resource_server("--auth-issuer", auth_server.issuer, "--auth-audience", "{url}", target=target) as server:
        started = time.monotonic()
        with httpx.Client(timeout=10) as client:
            for i in range(sent):  # each naming a key the issuer never had: a text of its own
                header = base64.urlsafe_b64encode(orjson.dumps({"alg": "RS256", "kid": f"made-up-{i}"})).decode()
                refused = client.post(server.url, content=b"{}", headers={
                    "authorization": f"Bearer {header.rstrip('=')}.e30.c2ln", "content-type": "application/json",
                    "accept": "application/json"})
                assert refused.status_code == 401
        took = time.monotonic() - started

        def counted() -> int:  # the lines written plus those they say were held
            lines = [REFUSED.match(line.partition(" ")[2].partition(" ")[2]) for line in logged(server)]
            assert all(lines), server.log
            return sum(1 if m.group(1) is None else int(m.group(1).replace(",", "")) for m in lines if m)

        wait_for(lambda: counted() == sent, timeout=5)  # the last interval's count comes when it ends
        written = logged(server)
        # the first 16 texts, then one line per second (log_repeat_interval=1) for the rest together
        assert len(written) <= VARIANTS + took + 2, written
        assert "no key 'made-up-15'" in written[VARIANTS - 1] and "made-up-16" not in "".join(written[:VARIANTS])
        assert "more in the last 1 s)" in written[-1]
        assert server.call("resources/read", {"uri": "notes://x"}, auth_server.mint(server.url, "notes:read"),
                           ).status_code == 200


def test_repeats_counts_what_it_holds_back(caplog) -> None:
    logger = logging.getLogger("tests.repeats")
    caplog.set_level(logging.WARNING, "tests.repeats")
    repeats = Repeats(logger, interval=0.2)
    for i in range(5):  # no event loop: the count goes with the next line of the kind
        repeats.warning("refused a request from %s", f"10.0.0.{i % 2}")
    repeats.warning("100%% of %s", "them")  # another template: a line of its own
    assert caplog.messages == ["refused a request from 10.0.0.0", "refused a request from 10.0.0.1", "100% of them"]
    time.sleep(0.2)
    repeats.warning("refused a request from %s", "10.0.0.0")
    assert caplog.messages[-1] == "refused a request from 10.0.0.0 (… 2 more in the last 0.2 s)"

    async def flood() -> None:  # on a loop, a timer writes the count when the interval ends
        caplog.clear()
        looped = Repeats(logger, interval=0.2)
        for _ in range(10_000):
            looped.warning("no literal % lost")  # (no arguments: logging formats nothing)
        await asyncio.sleep(0.25)
        assert caplog.messages == ["no literal % lost", "no literal % lost (… 9,999 more in the last 0.2 s)"]

    asyncio.run(flood())


def test_the_documented_example_runs(caplog) -> None:
    caplog.set_level(logging.WARNING, "myapp")
    example = Path(__file__).resolve().parent.parent / "docs" / "errors-and-logging.md"
    code = example.read_text().split("```python\n")[-1].split("```")[0]
    exec(compile(code, str(example), "exec"), {})
    assert caplog.messages == ["refused a request from 10.0.0.7"]
