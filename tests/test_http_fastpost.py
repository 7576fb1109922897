"""The short path of a session's plain reads over HTTP (resourcekit/transports/http/_fastpost.py):
the same answers as the general path, reads of one batch that a blocking handler holds up for
nobody, cancellation and the end of a session as before, and a real server under concurrent
keep-alive clients."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import uvicorn

from resourcekit import App, Context, Limits
from resourcekit.errors import InvalidParams, MCPError
from resourcekit.protocol import Server
from resourcekit.request import Request
from resourcekit.transports.http import ASGIApp
from resourcekit.transports.http._fastpost import HttpAsyncRead, HttpRead
from tests.helpers import APPS
from tests.http_server import http_server_process
from tests.test_fastread import demo_app as stdio_demo_app
from tests.test_fastread_async import URIS as ASYNC_URIS
from tests.test_fastread_async import async_app

pytestmark = pytest.mark.anyio

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
JSON_AND_SSE = "application/json, text/event-stream"


def demo_app(gate: threading.Event | None = None) -> App:
    """The stdio fast path's demo resources, and a long text, a blocking one and an async one."""
    app = stdio_demo_app()
    app.resource("long://a")(lambda: "x" * 5000)

    @app.resource("slow://a")
    def slow() -> str:
        assert gate is not None and gate.wait(10)
        return "slow"

    @app.resource("async://a")
    async def later() -> str:
        return "async"

    return app


class Client:
    """A handshake-era session with an ASGIApp in process (httpx.ASGITransport)."""

    def __init__(self, asgi: ASGIApp) -> None:
        self.asgi = asgi
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=asgi), base_url="http://127.0.0.1:8000")
        self.sid = ""

    async def post(self, message: Any, accept: str = JSON_AND_SSE, **headers: str) -> httpx.Response:
        sent = {"content-type": "application/json", "accept": accept, **headers}
        if self.sid:
            sent["mcp-session-id"] = self.sid
        return await self.http.post("/mcp", content=orjson.dumps(message), headers=sent)

    async def start(self) -> Client:
        response = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
        self.sid = response.headers["mcp-session-id"]
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def read(self, rid: Any, uri: str, **headers: str) -> httpx.Response:
        return await self.post({"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri}},
                               **headers)

    def conn(self) -> Any:
        return self.asgi.sessions[self.sid].conn


@pytest.fixture
async def client() -> AsyncIterator[Any]:
    made: list[Client] = []

    async def make(app: App) -> Client:
        made.append(await Client(ASGIApp(app)).start())
        return made[-1]

    yield make
    for c in made:
        await c.http.aclose()
        c.asgi.close()


async def general_answers(app: App, messages: list[dict[str, Any]]) -> list[Any]:
    """What the core's general path answers (no transport's short way)."""
    server = Server(app, "tcp")
    server.start()
    out: list[Any] = []
    conn = server.connect(out.append)
    conn.receive({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
    out.clear()
    for message in messages:
        conn.receive(message)
    for _ in range(300):
        if len(out) == len(messages):
            break
        await asyncio.sleep(0.01)
    server.close()
    return out



async def in_flight(c: Any, rid: int) -> None:
    """Wait (up to a second) until the read ``rid`` is in flight in the client's session."""
    for _ in range(100):
        if rid in c.conn().inflight:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"read {rid} never went in flight")

async def test_fast_reads_answer_exactly_as_the_general_path(client: Any) -> None:
    uris = ["text://a", "md://a", "json://a", "blob://a", "long://a", "item://7", "gone://a", "broken://a",
            "nothing://x", "async://a", "text://a"]
    app = demo_app()
    c = await client(app)
    got = [await c.read(rid, uri) for rid, uri in enumerate(uris, 1)]
    assert all(r.status_code == 200 and r.headers["content-type"] == "application/json" for r in got)
    assert int(got[0].headers["content-length"]) == len(got[0].content)
    reads = [{"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri}}
             for rid, uri in enumerate(uris, 1)]
    general = sorted(await general_answers(demo_app(), reads), key=lambda m: m["id"])  # not answered in order
    assert [r.json() for r in got] == general
    assert got[0].json()["result"]["contents"][0]["text"] == "hello"
    assert c.conn().seen["text://a"] == got[0].json()["result"]["contents"][0]["_meta"]["io.resourcekit/version"]
    assert not c.conn().inflight


@pytest.mark.parametrize("others", [1, 4])  # 1: a batch of two, whose worker may take the slow read at once
async def test_a_blocking_read_holds_up_no_other_read_of_its_batch(client: Any, others: int) -> None:
    gate = threading.Event()
    c = await client(demo_app(gate))
    slow = asyncio.ensure_future(c.read(1, "slow://a"))
    fast = [asyncio.ensure_future(c.read(rid, "text://a")) for rid in range(2, 2 + others)]  # the same iteration
    done, _ = await asyncio.wait(fast, timeout=5)
    assert len(done) == others and all(t.result().json()["result"]["contents"][0]["text"] == "hello" for t in done)
    assert not slow.done() and type(c.conn().inflight[1]) is HttpRead  # the read took the short way
    gate.set()
    assert (await asyncio.wait_for(slow, 5)).json()["result"]["contents"][0]["text"] == "slow"


@pytest.mark.parametrize("accept", [JSON_AND_SSE, "application/json"])
async def test_a_cancelled_read_says_nothing(client: Any, accept: str) -> None:
    gate = threading.Event()
    c = await client(demo_app(gate))
    slow = asyncio.ensure_future(c.read(1, "slow://a", accept=accept))
    await in_flight(c, 1)
    cancel = await c.post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert cancel.status_code == 202
    response = await asyncio.wait_for(slow, 5)
    if accept == JSON_AND_SSE:  # an event stream that ends without a response
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        assert b"data:" not in response.content
    else:
        assert response.status_code == 202 and response.content == b""
    gate.set()
    assert (await c.read(2, "text://a")).json()["result"]["contents"][0]["text"] == "hello"


async def test_a_read_waiting_when_its_session_ends_gets_404(client: Any) -> None:
    gate = threading.Event()
    c = await client(demo_app(gate))
    slow = asyncio.ensure_future(c.read(1, "slow://a"))
    await in_flight(c, 1)
    assert (await c.http.delete("/mcp", headers={"mcp-session-id": c.sid})).status_code == 204
    response = await asyncio.wait_for(slow, 5)
    gate.set()
    assert response.status_code == 404


async def test_ids_in_flight_and_clients_without_json_go_the_general_way(client: Any) -> None:
    gate = threading.Event()
    c = await client(demo_app(gate))
    slow = asyncio.ensure_future(c.read(1, "slow://a"))
    await in_flight(c, 1)
    again = await c.read(1, "text://a")
    assert again.json()["error"]["code"] == -32600 and "in flight" in again.json()["error"]["message"]
    gate.set()
    assert (await asyncio.wait_for(slow, 5)).json()["result"]["contents"][0]["text"] == "slow"
    sse = await c.read(2, "text://a", accept="text/event-stream")
    assert sse.headers["content-type"].startswith("text/event-stream")
    events = [orjson.loads(line[5:]) for line in sse.text.splitlines() if line.startswith("data:") and line[5:].strip()]
    assert [e["result"]["contents"][0]["text"] for e in events] == ["hello"]
    unsupported = await c.read(3, "text://a", **{"mcp-protocol-version": "1999-01-01"})
    assert unsupported.status_code == 400


async def test_headers_seen_before_still_get_every_refusal_and_cors(client: Any) -> None:
    """What a POST's Host, Origin, Content-Type and Accept allowed is kept per distinct values:
    other values are still judged (415, 406, 421, 403), an allowed page still gets CORS headers on
    every plain read, and changing the allowed origins judges them again."""
    c = await client(demo_app())
    assert (await c.read(1, "text://a")).status_code == 200
    assert (await c.read(2, "text://a", **{"content-type": "text/plain"})).status_code == 415
    assert (await c.read(3, "text://a", accept="text/html")).status_code == 406
    assert (await c.read(4, "text://a", host="evil.example.com")).status_code == 421
    assert (await c.read(5, "text://a", origin="https://evil.example.com")).status_code == 403
    page = "https://app.example.com"
    c.asgi.allowed_origins = frozenset({page})
    for rid in (6, 7):  # judged, then as kept
        allowed = await c.read(rid, "text://a", origin=page)
        assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == page
        assert allowed.json()["result"]["contents"][0]["text"] == "hello"
    c.asgi.allowed_origins = frozenset()
    assert (await c.read(8, "text://a", origin=page)).status_code == 403
    assert (await c.read(9, "text://a")).headers.get("access-control-allow-origin") is None


async def test_content_length_fits_each_body(client: Any) -> None:
    """Content-Length headers are shared by body size: each reply still carries its own."""
    c = await client(demo_app())
    for rid, uri in [(1, "text://a"), (22, "item://1"), (333, "item://22"), (4444, "long://a"), (5, "text://a")]:
        got = await c.read(rid, uri)
        assert got.status_code == 200 and int(got.headers["content-length"]) == len(got.content)
        assert got.json()["id"] == rid


async def test_a_plain_read_of_an_idle_or_unknown_session_is_refused_as_before(client: Any) -> None:
    """The session lookup inlined for plain reads: an unknown id, or one idle past the timeout, 404."""
    c = await client(demo_app())
    assert (await c.read(1, "text://a")).status_code == 200
    sid = c.sid
    c.sid = "no-such-session"
    assert (await c.read(2, "text://a")).status_code == 404
    c.sid = sid
    c.asgi.sessions[sid].last_seen -= c.asgi.sessions.limits.idle_timeout + 1
    assert (await c.read(3, "text://a")).status_code == 404
    assert sid not in c.asgi.sessions


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    app_file = tmp_path / "app.py"
    app_file.write_text(
        "from resourcekit import App\n"
        "app = App('fast')\n"
        "@app.resource('text://a')\n"
        "def a() -> str:\n"
        "    return 'hello'\n"
        "@app.template('item://{n}')\n"
        "def item(n: str) -> str:\n"
        "    return 'item ' + n\n"
    )
    with http_server_process(app_file) as url:
        yield url


def test_concurrent_keep_alive_clients_get_their_own_answers(served: str) -> None:
    headers = {"content-type": "application/json", "accept": JSON_AND_SSE}
    with httpx.Client(timeout=10) as first:
        init = first.post(served, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT},
                          headers=headers)
        headers["mcp-session-id"] = init.headers["mcp-session-id"]
        first.post(served, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)

    def client(k: int) -> list[tuple[int, str]]:
        got = []
        with httpx.Client(timeout=10) as http:
            for i in range(40):
                rid = k * 1000 + i
                uri = f"item://{rid}" if i % 2 else "text://a"
                body = http.post(served, json={"jsonrpc": "2.0", "id": rid, "method": "resources/read",
                                               "params": {"uri": uri}}, headers=headers).json()
                got.append((body["id"], body["result"]["contents"][0]["text"]))
        return got

    with ThreadPoolExecutor(8) as pool:
        for k, got in enumerate(pool.map(client, range(8))):
            assert got == [(k * 1000 + i, f"item {k * 1000 + i}" if i % 2 else "hello") for i in range(40)]


def test_sampled_out_http_reads_record_durations_and_sampled_ones_get_spans(tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    extra = {"SPANS_FILE": str(spans_file), "SAMPLE_RATIO": "0.5", "METRICS": "1"}
    headers = {"content-type": "application/json", "accept": JSON_AND_SSE}
    with http_server_process(APPS / "traced_app.py", extra_env=extra) as url, httpx.Client(timeout=10) as http:
        init = http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT},
                         headers=headers)
        headers["mcp-session-id"] = init.headers["mcp-session-id"]

        def read(rid: int, uri: str) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri}}
            return dict(http.post(url, json=body, headers=headers).json())

        assert all("result" in read(rid, "note://a") for rid in range(1, 401))
        assert all(read(rid, "note://boom")["error"]["code"] == -32603 for rid in range(500, 504))
        counts = orjson.loads(read(600, "metrics://operations")["result"]["contents"][0]["text"])
    found = [orjson.loads(line) for line in spans_file.read_text().splitlines()] if spans_file.exists() else []
    reads = [s for s in found if s["name"] == "resources/read" and s["attributes"]["mcp.resource.uri"] == "note://a"]
    assert 140 <= len(reads) <= 260, len(reads)  # binomial(400, 0.5): sd 10
    # every read has its duration: with a span (sampled) or without (the short path)
    assert counts.get("resources/read", 0) >= 400 and counts["resources/read/-32603"] == 4, counts


def test_the_app_is_still_an_asgi3_coroutine_callable() -> None:
    asgi = ASGIApp(demo_app())
    config = uvicorn.Config(asgi)  # what `uvicorn module:app` makes of it: __call__ is the POST coroutine
    config.load()
    assert config.interface == "asgi3" and asyncio.iscoroutinefunction(asgi.__call__)


async def test_a_result_json_cannot_carry_is_answered_with_its_id(client: Any) -> None:
    app = App("t", telemetry=False)

    @app.resource("sur://general")
    def general(ctx: Context) -> str:  # the general path (a Context)
        return "a\ud800b"  # a lone surrogate: not JSON

    app.resource("sur://fast")(lambda: "a\ud800b")
    c = await client(app)
    for rid, uri in ((1, "sur://general"), (2, "sur://fast")):
        response = await c.read(rid, uri)
        assert response.status_code == 200
        assert response.json()["id"] == rid and response.json()["error"]["code"] == -32603
    streamed = await c.read(3, "sur://general", accept="text/event-stream")  # a client that takes SSE only
    data = [line[6:] for line in streamed.text.splitlines() if line.startswith("data: ") and line != "data: "]
    assert streamed.status_code == 200 and [orjson.loads(d)["error"]["code"] for d in data] == [-32603]
    assert orjson.loads(data[0])["id"] == 3


async def test_an_error_or_result_json_cannot_carry_is_answered_as_the_general_path_answers_it(client: Any) -> None:
    """A lone surrogate in a result (short or long text), or in the message or data of an error a
    handler raised: the short path's response is the general path's, byte for byte (its -32603
    with the read's id, 200, CORS headers), never a 500 without id."""
    app = App("t", telemetry=False)
    app.resource("sur://short")(lambda: "a\ud800b")
    app.resource("sur://long")(lambda: "a\udcff" * 300)

    @app.resource("sur://message")
    def message() -> str:
        raise InvalidParams("Invalid params: no file named \udcff")  # a name os.listdir could give

    @app.resource("sur://data")
    def data() -> str:
        raise MCPError("Internal error", {"file": "\udcff"})

    asgi = ASGIApp(app, allowed_origins=["https://app.example.com"])
    fast, general = await Client(asgi).start(), await Client(asgi).start()
    general.conn().new_request = _GeneralRequest  # not the plain Request: the general path
    try:
        for rid, uri in enumerate(("sur://short", "sur://long", "sur://message", "sur://data"), 1):
            got = [await c.read(rid, uri, origin="https://app.example.com") for c in (fast, general)]
            assert [(r.status_code, r.headers.items(), r.content) for r in got] == \
                [(got[1].status_code, got[1].headers.items(), got[1].content)] * 2
            assert got[0].status_code == 200 and got[0].json()["id"] == rid
            assert got[0].json()["error"] == {"code": -32603,
                                              "message": "Internal error: the result could not be encoded as JSON"}
            assert got[0].headers["access-control-allow-origin"] == "https://app.example.com"
        assert not fast.conn().inflight
    finally:
        await fast.http.aclose()
        await general.http.aclose()
        asgi.close()


class _GeneralRequest(Request):
    """A plain request by another class: a session whose reads go the general way."""

    __slots__ = ()


async def test_a_batch_stuck_behind_busy_workers_is_queued_once_not_every_look() -> None:
    """Every worker held by a blocking read: the batch's reads left wait in one job of the queue,
    as the general path's reads would, so that other requests are not refused for max_queued_jobs
    (the batch used to be queued again at every look, 100 jobs a second)."""
    gate = threading.Event()
    app = demo_app(gate)
    app.limits = app.limits.replace(max_workers=1, max_queued_jobs=20)
    asgi = ASGIApp(app)
    first, other = await Client(asgi).start(), await Client(asgi).start()
    try:
        slow = asyncio.ensure_future(first.read(1, "slow://a"))
        fast = asyncio.ensure_future(first.read(2, "text://a"))  # the same batch: behind the slow read
        await asyncio.sleep(0.5)  # 50 looks at the batch
        later = asyncio.ensure_future(other.read(3, "text://a"))
        await asyncio.sleep(0.05)
        gate.set()
        for rid, task in ((1, slow), (2, fast), (3, later)):
            answer = (await asyncio.wait_for(task, 5)).json()
            assert answer["id"] == rid and "result" in answer, answer
    finally:
        gate.set()
        await first.http.aclose()
        await other.http.aclose()
        asgi.close()


async def test_a_verdict_judged_before_the_allowed_origins_changed_is_not_kept() -> None:
    """A POST judged under the old allowed origins whose auth hook answers after they changed:
    its verdict is not kept for the next POSTs (they are judged under the new ones)."""
    page = "https://app.example.com"
    hold = asyncio.Event()

    async def auth(headers: dict[str, str]) -> None:
        if headers.get("x-hold"):
            await hold.wait()

    asgi = ASGIApp(demo_app(), allowed_origins=[page], auth=auth)
    c = await Client(asgi).start()
    try:
        held = asyncio.ensure_future(c.read(1, "text://a", origin=page, **{"x-hold": "1"}))
        await asyncio.sleep(0.05)  # judged (allowed), waiting for the hook
        asgi.allowed_origins = frozenset()  # the page is no longer allowed
        hold.set()
        assert (await asyncio.wait_for(held, 5)).status_code == 200  # it came before the change
        refused = await c.read(2, "text://a", origin=page)
        assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers
    finally:
        await c.http.aclose()
        asgi.close()


async def test_an_allowed_page_can_read_every_refusal(client: Any) -> None:
    """CORS headers on every response to an allowed origin, refusals included (a page whose session
    expired must see the 404 to initialize again; without the headers it saw a network error)."""
    page = "https://app.example.com"
    c = await client(demo_app())
    c.asgi.allowed_origins = frozenset({page})
    sid = c.sid
    c.sid = "no-such-session"
    refusals = [await c.read(1, "text://a", origin=page),  # 404, on the short path's lookup
                await c.post({"jsonrpc": "2.0", "id": 2, "method": "resources/list"}, origin=page),  # 404
                await c.read(3, "text://a", origin=page, **{"content-type": "text/plain"}),  # 415
                await c.http.delete("/mcp", headers={"mcp-session-id": "no-such-session", "origin": page}),  # 404
                await c.http.get("/mcp", headers={"mcp-session-id": sid, "origin": page, "accept": "text/html"})]
    assert [r.status_code for r in refusals] == [404, 404, 415, 404, 406]
    assert all(r.headers.get("access-control-allow-origin") == page for r in refusals)
    c.sid = sid
    foreign = await c.read(4, "text://a", origin="https://evil.example.com")
    assert foreign.status_code == 403 and "access-control-allow-origin" not in foreign.headers


# --- reads of async def handlers (the demo app of tests/test_fastread_async.py) ---------------


async def test_async_reads_over_http_take_the_short_way_and_answer_as_the_general_path(client: Any) -> None:
    gate = asyncio.Event()
    c = await client(async_app(gate))
    got = [await c.read(rid, uri) for rid, uri in enumerate(ASYNC_URIS, 1)]
    assert all(r.status_code == 200 and r.headers["content-type"] == "application/json" for r in got)
    assert all(int(r.headers["content-length"]) == len(r.content) for r in got)
    reads = [{"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri}}
             for rid, uri in enumerate(ASYNC_URIS, 1)]
    general = sorted(await general_answers(async_app(), reads), key=lambda m: m["id"])
    assert [r.json() for r in got] == general
    slow = asyncio.ensure_future(c.read(100, "slow://a"))
    await in_flight(c, 100)
    assert type(c.conn().inflight[100]) is HttpAsyncRead  # the short way took it
    assert (await c.read(101, "text://a")).json()["result"]["contents"][0]["text"] == "hello"  # held up by nobody
    gate.set()
    assert (await asyncio.wait_for(slow, 5)).json()["result"]["contents"][0]["text"] == "slow"
    assert not c.conn().inflight


async def test_cancelling_an_async_read_over_http_cancels_its_handler(client: Any) -> None:
    gate, ran = asyncio.Event(), []
    c = await client(async_app(gate, ran))
    slow = asyncio.ensure_future(c.read(1, "slow://a", accept="application/json"))
    await in_flight(c, 1)
    cancel = await c.post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert cancel.status_code == 202
    response = await asyncio.wait_for(slow, 5)
    assert response.status_code == 202 and response.content == b""  # as a cancelled sync read
    assert ran == ["cancelled"] and not c.conn().inflight
    again = asyncio.ensure_future(c.read(2, "slow://a"))
    await in_flight(c, 2)
    assert (await c.http.delete("/mcp", headers={"mcp-session-id": c.sid})).status_code == 204
    assert (await asyncio.wait_for(again, 5)).status_code == 404  # the session ended while it waited
    assert ran == ["cancelled", "cancelled"]


async def test_ids_in_flight_and_the_inflight_cap_hold_for_async_reads_over_http(client: Any) -> None:
    gate = asyncio.Event()
    app = async_app(gate)
    app.limits = Limits(max_inflight=2)
    c = await client(app)
    first = asyncio.ensure_future(c.read(1, "slow://a"))
    await in_flight(c, 1)
    again = await c.read(1, "text://a")
    assert again.json()["error"]["code"] == -32600 and "in flight" in again.json()["error"]["message"]
    second = asyncio.ensure_future(c.read(2, "slow://a"))
    await in_flight(c, 2)
    over = (await c.read(3, "slow://a")).json()["error"]
    assert over["code"] == -32603 and over["data"] == {"limit": "max_inflight", "max": 2}
    gate.set()
    for read_ in (first, second):
        assert (await asyncio.wait_for(read_, 5)).json()["result"]["contents"][0]["text"] == "slow"
