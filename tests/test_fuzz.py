"""Fuzzing the real transports with random input (issue 13, item 8).

stdio: one ``resourcekit run tests/apps/fuzz_app.py`` process per session kind for the
whole module (a 2025-11-25 session, and a 2025-03-26 one for batches), fed random
JSON-RPC messages, random JSON, garbage bytes, blank lines, over-long lines, split and
coalesced across writes.  Every example is checked against what the framing and
JSON-RPC say must come back: for each line, one error without an id (unparsable, too
large, not an object, a refused batch, a bad id) or nothing (blank, a notification, a
client's response); for each request with a valid id, exactly one response (or, for an
acknowledged ``subscriptions/listen``, its acknowledgement); a ``ping`` afterwards still
answers.  No answer leaks a traceback, every error code is documented, and -32603 only
ever names a limit.

HTTP: the ASGI app in-process behind ``httpx.ASGITransport`` (started through the
lifespan protocol), fed random verbs, headers and bodies; never a 5xx but 503, only
documented error codes, no traceback, and afterwards a 2026-07-28 ``server/discover``
(that era has no ``ping``) and a ``ping`` on a live session still answer 200.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import queue
import re
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resourcekit.http import ASGIApp
from tests.apps.fuzz_app import app as fuzz_app
from tests.support.process import APPS, RawServer
from tests.support.wire import modern_meta

APP = APPS / "fuzz_app.py"
LIMIT = fuzz_app.limits.max_message_size  # 64 KiB: over-long lines stay cheap

FUZZ = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
)

DOCUMENTED_CODES = frozenset({-32700, -32600, -32601, -32602, -32603, -32002, -32003, -32020, -32021, -32022})
# what a leaked traceback looks like (the bare word "line " is not enough: orjson's parse
# errors say "line 1 column 2", and they are echoed on purpose)
LEAKS = (re.compile(r"Traceback"), re.compile(r'File "'), re.compile(r"line \d+, in "),
         re.compile(r"[\w/\\-]+\.py\b"))
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
MODERN = "2026-07-28"

METHODS = [
    "initialize", "ping", "resources/read", "resources/list", "resources/templates/list",
    "resources/subscribe", "resources/unsubscribe", "completion/complete", "logging/setLevel",
    "resources/metadata", "resources/get", "subscriptions/listen", "server/discover",
]
NOTIFICATION_METHODS = ["notifications/initialized", "notifications/cancelled", "notifications/progress"]
URIS = [
    "text://hello", "json://config", "bin://bytes", "async://quick", "log://chatty", "item://3", "item://99",
    "user://7/profile", "user://7/profile?verbose=true", "user://x/profile", "mode://fast", "mode://medium",
    "path://a/b/c", "row://2", "row://{n}", "mode://{mode}", "nope://x", "", "text://hello#frag",
    "text://%ZZ", "user://1e999/profile", "path://" + "x" * 9000,
]

# --- strategies -------------------------------------------------------------------------------

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
scalars = st.one_of(
    st.none(), st.booleans(), INT64, st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=16),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=10,
)
good_ids = st.one_of(INT64, st.integers(-3, 3), st.text(max_size=10))
ids = st.one_of(
    good_ids, good_ids, good_ids,
    st.sampled_from([0, -1, "", "1", "ping", 1.0, 1.5, True, False, None, [], {}, [1], {"id": 1}]),
    json_values,
)
uris = st.one_of(st.sampled_from(URIS), st.text(max_size=24), st.builds("{}://{}".format,
                 st.sampled_from(["text", "user", "path", "row", "mode", "item"]), st.text(max_size=12)))
methods = st.one_of(st.sampled_from(METHODS), st.sampled_from(NOTIFICATION_METHODS), st.text(max_size=20))
metas = st.one_of(
    st.just(None), st.just(None), st.just(None),
    st.builds(modern_meta), st.builds(modern_meta),
    st.builds(lambda level: modern_meta(**{"io.modelcontextprotocol/logLevel": level}),
              st.sampled_from(["debug", "info", "loud", 3])),
    st.fixed_dictionaries({"io.modelcontextprotocol/protocolVersion": st.one_of(st.sampled_from(
        [MODERN, "2025-11-25", "2099-01-01", ""]), json_values)},
        optional={"io.modelcontextprotocol/clientCapabilities": json_values}),
    json_values,
)
# the parameters the methods read, with values of the right shape or of any shape
PARAM_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "uri": uris,
    "uris": st.one_of(st.lists(uris, max_size=3), json_values),
    "cursor": st.one_of(st.text(max_size=30), json_values),
    "filter": json_values,
    "version": st.one_of(st.text(max_size=10), json_values),
    "level": st.one_of(st.sampled_from(["debug", "info", "warning", "emergency", "loud"]), json_values),
    "protocolVersion": st.one_of(st.sampled_from(["2025-03-26", "2025-11-25", MODERN]), json_values),
    "capabilities": json_values,
    "clientInfo": json_values,
    "ref": st.one_of(st.fixed_dictionaries({"type": st.sampled_from(["ref/resource", "ref/prompt", "x"]),
                                            "uri": uris}), json_values),
    "argument": st.one_of(st.fixed_dictionaries({"name": st.sampled_from(["mode", "n", "rest", "x"]),
                                                 "value": st.text(max_size=6)}), json_values),
    "context": json_values,
    "notifications": st.one_of(
        st.fixed_dictionaries({}, optional={"resourceSubscriptions": st.one_of(st.lists(uris, max_size=3),
                                                                               json_values),
                                            "resourcesListChanged": st.one_of(st.booleans(), json_values)}),
        json_values),
    "requestId": ids,
    "reason": st.text(max_size=8),
}


def rarely(draw: st.DrawFn, n: int) -> bool:
    """True about once in ``n + 1`` draws; the simplest draw (what shrinking heads for) is False."""
    return draw(st.integers(0, n)) == n


@st.composite
def params_objects(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(sorted(PARAM_VALUES)), max_size=4, unique=True))
    params = {key: draw(PARAM_VALUES[key]) for key in keys}
    params.update(draw(st.dictionaries(st.text(max_size=6), json_values, max_size=2)))
    meta = draw(metas)
    if meta is not None:
        params["_meta"] = meta
    return params


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    """A JSON-RPC-ish object: mostly well formed, every field sometimes wrong or missing."""
    message: dict[str, Any] = {}
    if not rarely(draw, 9):
        message["jsonrpc"] = "2.0"
    elif draw(st.booleans()):
        message["jsonrpc"] = draw(st.one_of(st.sampled_from(["1.0", "2", 2.0]), json_values))
    if not rarely(draw, 5):
        message["method"] = draw(methods)
    elif draw(st.booleans()):
        message["method"] = draw(json_values)
    if not rarely(draw, 4):
        message["id"] = draw(ids)
    shape = draw(st.integers(0, 9))
    if shape < 7:
        message["params"] = draw(params_objects())
    elif shape == 7:
        message["params"] = draw(json_values)
    if rarely(draw, 15):
        message[draw(st.sampled_from(["result", "error"]))] = draw(json_values)
    return message


LOG_LEVEL = "io.modelcontextprotocol/logLevel"


# parameters each method reads, well formed (the values still vary)
GOOD_PARAMS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "initialize": st.fixed_dictionaries({"protocolVersion": PARAM_VALUES["protocolVersion"],
                                         "capabilities": st.just({}), "clientInfo": st.just({"name": "f"})}),
    "ping": st.just({}),
    "resources/read": st.fixed_dictionaries({"uri": uris}),
    "resources/metadata": st.fixed_dictionaries({"uri": uris}),
    "resources/get": st.fixed_dictionaries({"uri": uris}, optional={"version": st.text(max_size=8)}),
    "resources/list": st.fixed_dictionaries({}, optional={"cursor": st.text(max_size=12), "uri": uris,
                                                          "filter": json_values}),
    "resources/templates/list": st.fixed_dictionaries({}, optional={"cursor": st.text(max_size=12)}),
    "resources/subscribe": st.one_of(st.fixed_dictionaries({"uri": uris}),
                                     st.fixed_dictionaries({"uris": st.lists(uris, max_size=3)})),
    "resources/unsubscribe": st.fixed_dictionaries({"uri": uris}),
    "completion/complete": st.fixed_dictionaries({"ref": PARAM_VALUES["ref"], "argument": PARAM_VALUES["argument"]},
                                                 optional={"context": json_values}),
    "logging/setLevel": st.fixed_dictionaries({"level": PARAM_VALUES["level"]}),
    "subscriptions/listen": st.fixed_dictionaries({"notifications": st.fixed_dictionaries(
        {}, optional={"resourceSubscriptions": st.lists(st.sampled_from(URIS[:8]), max_size=3),
                      "resourcesListChanged": st.booleans()})}),
    "server/discover": st.just({}),
}
MODERN_ONLY = {"subscriptions/listen", "server/discover"}


@st.composite
def good_messages(draw: st.DrawFn) -> dict[str, Any]:
    """A well-formed request (or, without an id, notification) of a real method, either era."""
    method = draw(st.sampled_from(sorted(GOOD_PARAMS)))
    params = dict(draw(GOOD_PARAMS[method]))
    if method in MODERN_ONLY or draw(st.booleans()):
        params["_meta"] = modern_meta()
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if not rarely(draw, 7):
        message["id"] = draw(good_ids)
    return message


def line_of(value: Any) -> bytes:
    return orjson.dumps(value) + b"\n"


units = st.one_of(
    good_messages().map(line_of),
    good_messages().map(line_of),
    good_messages().map(line_of),
    good_messages().map(line_of),
    messages().map(line_of),
    messages().map(line_of),
    st.builds(lambda rid: {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}},
              good_ids).map(line_of),
    st.lists(st.one_of(messages(), json_values), max_size=3).map(line_of),  # a batch
    json_values.map(line_of),
    st.binary(max_size=40).map(lambda b: b + b"\n"),  # garbage, invalid UTF-8, stray newlines
    st.sampled_from([b"\n", b"   \n", b"\r\n", b"\t \x0b\n", b"{\n", b"\xff\xfe\n", b"nul\x00l\n",
                     b'{"jsonrpc":"2.0","id":1,"method":"ping"}{"x":1}\n']),
    st.integers(LIMIT - 40, LIMIT + 4096).map(  # around and over the message size limit
        lambda n: b'{"jsonrpc":"2.0","id":"long","method":"ping","params":{"pad":"' + b"x" * n + b'"}}\n'),
    st.integers(LIMIT + 1, 3 * LIMIT).map(lambda n: b"y" * n + b"\n"),
)


@st.composite
def streams(draw: st.DrawFn, unit: st.SearchStrategy[bytes] = units) -> tuple[bytes, list[bytes], bool]:
    """Some units as one byte stream, and how it is cut into writes (at random places)."""
    data = b"".join(draw(st.lists(unit, min_size=1, max_size=6)))
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=4))))
    chunks = [data[a:b] for a, b in itertools.pairwise([0, *cuts, len(data)]) if data[a:b]]
    return data, chunks, draw(st.booleans())


# --- the oracle: what must come back ------------------------------------------------------------


def valid_id(rid: Any) -> bool:
    return type(rid) is int or type(rid) is str


class Expected:
    """What one example must produce, derived from the bytes sent."""

    def __init__(self) -> None:
        self.null_codes: list[int] = []  # errors without an id, in order
        self.requests: Counter[Any] = Counter()  # valid id -> requests sent with it
        self.listens: set[Any] = set()  # ids of subscriptions/listen requests
        self.cancelled: set[Any] = set()  # ids a notifications/cancelled names
        self.batches = 0  # batch responses (arrays) that may come

    def line(self, line: bytes, batch_session: bool) -> None:
        if len(line) > LIMIT:
            self.null_codes.append(-32600)
            return
        if not line or line.isspace():
            return
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            self.null_codes.append(-32700)
            return
        if type(message) is dict:
            self.one(message, self.null_codes)
        elif type(message) is list:
            if not batch_session or not message or any(
                    type(m) is dict and m.get("method") == "initialize" for m in message):
                self.null_codes.append(-32600)
            else:
                inner: list[int] = []
                for item in message:
                    if type(item) is dict:
                        self.one(item, inner)
                    else:
                        inner.append(-32600)
                self.batches += 1  # its null-id errors travel inside the array
        else:
            self.null_codes.append(-32600)

    def one(self, msg: dict[str, Any], null_codes: list[int]) -> None:
        method = msg.get("method")
        if msg.get("jsonrpc") != "2.0" or not isinstance(method, str):
            if method is None and ("result" in msg or "error" in msg) and "id" in msg:
                return  # a response from the client: nothing to answer
            rid = msg.get("id")
            if valid_id(rid):
                self.requests[rid] += 1
            else:
                null_codes.append(-32600)
            return
        if "id" not in msg:  # a notification: never answered
            params = msg.get("params")
            if method == "notifications/cancelled" and type(params) is dict:
                target = params.get("requestId")
                if isinstance(target, (int, str)):
                    self.cancelled.add(target)  # True names id 1, as in the server's table
            return
        rid = msg["id"]
        if not valid_id(rid):
            null_codes.append(-32600)
            return
        self.requests[rid] += 1
        if method == "subscriptions/listen":
            self.listens.add(rid)


def shorten(data: bytes) -> str:
    """The bytes sent, with long runs of one byte (the padding of over-long lines) abbreviated."""
    return re.sub(rb"(.)\1{63,}", lambda m: b"<%d x %r>" % (len(m.group(0)), m.group(1)), data).decode(
        "ascii", errors="backslashreplace")[:4000]


def leaks(value: Any, sent: str) -> list[str]:
    """Strings in ``value`` that look like a traceback and were not in what was sent."""
    found = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            for pattern in LEAKS:
                found.extend(m.group(0) for m in pattern.finditer(item) if m.group(0) not in sent)
    return found


def check_error(error: Any, context: str) -> None:
    assert type(error) is dict, f"error is not an object: {error!r}\n{context}"
    code = error.get("code")
    assert type(code) is int, f"error code is not an integer: {error!r}\n{context}"
    assert type(error.get("message")) is str, f"error message is not a string: {error!r}\n{context}"
    assert code in DOCUMENTED_CODES, f"undocumented error code {code}: {error!r}\n{context}"
    if code == -32603:
        data = error.get("data")
        assert type(data) is dict and type(data.get("limit")) is str, \
            f"internal error from input (no data.limit): {error!r}\n{context}"


def check_response(response: Any, context: str) -> None:
    assert type(response) is dict and response.get("jsonrpc") == "2.0", f"not a response: {response!r}\n{context}"
    assert ("result" in response) != ("error" in response), f"result xor error: {response!r}\n{context}"
    if "error" in response:
        check_error(response["error"], context)
    else:
        assert type(response["result"]) is dict, f"result is not an object: {response!r}\n{context}"


# --- stdio ----------------------------------------------------------------------------------------


class Fuzzed:
    """A long-lived server plus the bookkeeping of one example at a time."""

    def __init__(self, server: RawServer, batch_session: bool) -> None:
        self.server = server
        self.batch_session = batch_session
        self.pings = itertools.count()

    def recv(self, deadline: float) -> Any:
        try:
            line = self.server.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        assert line, f"the server closed stdout; stderr:\n{self.server.stderr[-3000:]}"
        return orjson.loads(line)

    def resync(self) -> None:
        """Start from a quiet stream, even after an example that failed half-way (shrinking)."""
        sync_id = f"fuzz-sync-{next(self.pings)}"
        self.server.send({"jsonrpc": "2.0", "id": sync_id, "method": "ping"})
        deadline = time.monotonic() + 15
        while (message := self.recv(deadline)) is not None:
            if type(message) is dict and message.get("id") == sync_id:
                return
        raise AssertionError(f"no answer to ping {sync_id}; stderr:\n{self.server.stderr[-3000:]}")

    def run(self, data: bytes, chunks: list[bytes], pause: bool) -> None:
        assert self.server.proc.poll() is None, f"the server died; stderr:\n{self.server.stderr[-3000:]}"
        self.resync()
        expected = Expected()
        for line in data.split(b"\n")[:-1]:
            expected.line(line, self.batch_session)
        sent = data.decode("utf-8", errors="replace")
        context = f"sent {len(chunks)} write(s) of {[len(c) for c in chunks]} bytes: {shorten(data)}"
        for chunk in chunks:
            self.server.send_raw(chunk)
            if pause:
                time.sleep(0.002)

        counts: Counter[Any] = Counter()
        acked: set[Any] = set()
        nulls: list[int] = []
        arrays: list[list[Any]] = []
        log: list[Any] = []

        def take(message: Any) -> None:
            log.append(message)
            assert not leaks(message, sent), f"traceback text {leaks(message, sent)} in {message!r}\n{context}"
            if type(message) is list:
                arrays.append(message)
                for item in message:
                    check_response(item, context)
                    take_response(item)
                return
            if "method" in message and "id" not in message:  # a notification
                params = message.get("params")
                meta = params.get("_meta") if type(params) is dict else None
                if message["method"] == ACKNOWLEDGED and type(meta) is dict:
                    acked.add(meta.get(SUBSCRIPTION_ID))
                return
            check_response(message, context)
            if message.get("id") is None:
                nulls.append(message["error"]["code"])
            else:
                take_response(message)

        def take_response(message: dict[str, Any]) -> None:
            rid = message.get("id")
            if rid is not None:
                assert rid in expected.requests, f"a response to an id never sent: {message!r}\n{context}"
                counts[rid] += 1

        def answered(rid: Any) -> int:
            return counts[rid] + (rid in acked)

        # requests that a notifications/cancelled (theirs or ours) may have silenced answer at most once
        waited = {rid for rid in expected.requests if rid not in expected.cancelled}
        if self.batch_session:
            # a batch is answered once all its members are: its listen members only when cancelled
            waited -= expected.listens
        else:
            # an acknowledged listen answers nothing until cancelled: wait to see which were
            deadline = time.monotonic() + 15
            while any(answered(rid) < expected.requests[rid] for rid in waited) and time.monotonic() < deadline:
                if (message := self.recv(deadline)) is not None:
                    take(message)
            waited -= {rid for rid in expected.listens if rid in acked}
        # end the listen streams (a cancelled request answers nothing), so nothing stays in flight
        for rid in expected.listens:
            if rid in acked or self.batch_session:
                self.server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                  "params": {"requestId": rid}})
        ping_id = f"fuzz-ping-{next(self.pings)}"
        self.server.send({"jsonrpc": "2.0", "id": ping_id, "method": "ping"})
        pinged = False
        deadline = time.monotonic() + 15
        while not pinged or any(answered(rid) < expected.requests[rid] for rid in waited):
            message = self.recv(deadline)
            missing = {r: n - answered(r) for r, n in expected.requests.items() if r in waited and answered(r) < n}
            assert message is not None, (
                f"{'no answer to the ping' if not pinged else 'answers missing'} {missing}; log {log!r}\n{context}")
            if type(message) is dict and message.get("id") == ping_id:
                assert message == {"jsonrpc": "2.0", "id": ping_id, "result": {}}, f"ping: {message!r}\n{context}"
                pinged = True
            else:
                take(message)
        if set(expected.requests) - waited or expected.batches:  # answers that may still come
            deadline = time.monotonic() + 0.2
            while (message := self.recv(deadline)) is not None:
                take(message)

        summary = f"responses by id {dict(counts)}, acknowledged {acked}, log {log!r}\n{context}"
        for rid, n in expected.requests.items():
            if rid in waited:
                assert answered(rid) == n, f"id {rid!r}: {n} request(s), {answered(rid)} answer(s); {summary}"
            else:
                assert answered(rid) <= n, f"id {rid!r}: {n} request(s), {answered(rid)} answer(s); {summary}"
        assert sorted(nulls) == sorted(expected.null_codes), (
            f"errors without an id: got {nulls}, expected {expected.null_codes}; {summary}")
        assert len(arrays) <= expected.batches, f"more batch responses than batches; {summary}"


def started(version: str) -> Iterator[Fuzzed]:
    with RawServer(APP) as server:
        reply = server.initialize(version)
        assert reply["result"]["protocolVersion"] == version
        yield Fuzzed(server, batch_session=version == "2025-03-26")
        assert server.proc.poll() is None, "the server died"
        assert server.close() == 0
        assert "Traceback" not in server.stderr, server.stderr[-5000:]


@pytest.fixture(scope="module")
def stdio_server() -> Iterator[Fuzzed]:
    yield from started("2025-11-25")


@pytest.fixture(scope="module")
def batch_server() -> Iterator[Fuzzed]:
    yield from started("2025-03-26")


@FUZZ
@given(example=streams())
def test_stdio_random_input(stdio_server: Fuzzed, example: tuple[bytes, list[bytes], bool]) -> None:
    stdio_server.run(*example)


@FUZZ
@given(example=streams(units | st.lists(st.one_of(good_messages(), messages(), json_values), min_size=1, max_size=4)
                       .map(line_of)))
def test_stdio_random_batches(batch_server: Fuzzed, example: tuple[bytes, list[bytes], bool]) -> None:
    batch_server.run(*example)


# --- HTTP: the ASGI app in-process ---------------------------------------------------------------

HEALTH_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json",
                  "mcp-protocol-version": MODERN, "mcp-method": "server/discover"}
ODD_HEADER_VALUES = ["", " ", "x.²", "²", "١٢", "0", "-1", "1e3", "=?base64?dGV4dDovL2hlbGxv?=", "=?base64?!!?=",
                     "null", "*/*", "text/*;q=0", "application/json;q=0.0", "2025-11-25", MODERN, "\t"]
header_text = st.one_of(st.sampled_from(ODD_HEADER_VALUES),
                        st.text(st.characters(blacklist_categories=["Cc", "Cs"]), max_size=20))


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.failures: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            self.failures.append(self.format(record))


class HTTPFuzz:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.asgi = ASGIApp(fuzz_app)
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.asgi),
                                        base_url="http://127.0.0.1:8000")
        self.session_id = ""
        self.pings = itertools.count()

    def call(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    async def lifespan(self, *events: str) -> list[str]:
        incoming = [{"type": e} for e in events] + [{"type": "lifespan.never"}]
        sent: list[str] = []

        async def receive() -> dict[str, Any]:
            item = incoming.pop(0)
            if item["type"] == "lifespan.never":
                await asyncio.Event().wait()
            return item

        async def send(message: dict[str, Any]) -> None:
            sent.append(message["type"])

        with contextlib.suppress(asyncio.TimeoutError):  # not yet the builtin TimeoutError on 3.10
            await asyncio.wait_for(self.asgi({"type": "lifespan"}, receive, send), 2)
        return sent

    async def initialize(self) -> str:
        response = await self.client.post("/mcp", content=orjson.dumps({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "fuzz"}}}),
            headers={"accept": "application/json, text/event-stream", "content-type": "application/json"})
        assert response.status_code == 200, response.text
        return response.headers["mcp-session-id"]


@pytest.fixture(scope="module")
def http() -> Iterator[HTTPFuzz]:
    fuzz = HTTPFuzz()
    captured = Captured()
    logger = logging.getLogger("resourcekit")
    logger.addHandler(captured)
    try:
        assert fuzz.call(fuzz.lifespan("lifespan.startup")) == ["lifespan.startup.complete"]
        fuzz.session_id = fuzz.call(fuzz.initialize())
        yield fuzz
        assert fuzz.call(fuzz.lifespan("lifespan.shutdown")) == ["lifespan.shutdown.complete"]
        fuzz.call(fuzz.client.aclose())
    finally:
        logger.removeHandler(captured)
        fuzz.loop.close()
    assert not captured.failures, "\n".join(captured.failures)


@st.composite
def http_requests(draw: st.DrawFn) -> tuple[str, bytes, dict[str, bytes], Any]:
    verb = draw(st.sampled_from(["POST"] * 10 + ["GET", "DELETE", "OPTIONS", "PUT", "PATCH"]))
    kind = draw(st.integers(0, 8))
    message: Any = None
    if kind <= 3:
        message = draw(good_messages())
    elif kind <= 5:
        message = draw(messages())
    elif kind == 6:
        message = draw(st.lists(st.one_of(good_messages(), messages(), json_values), max_size=3))
    if message is not None:
        body = orjson.dumps(message)
    elif kind == 7:
        body = orjson.dumps(draw(json_values))
    else:
        body = draw(st.binary(max_size=64))
    headers: dict[str, Any] = {}
    if not rarely(draw, 5):
        headers["accept"] = draw(st.sampled_from(
            ["application/json, text/event-stream", "application/json", "text/event-stream", "*/*", ""])
            if not rarely(draw, 4) else header_text)
    if not rarely(draw, 9):
        headers["content-type"] = draw(st.sampled_from(
            ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON"])
            if not rarely(draw, 6) else st.one_of(st.just("text/plain"), header_text))
    params = message.get("params") if type(message) is dict else None
    modern = type(params) is dict and type(params.get("_meta")) is dict
    if type(message) is dict and (not rarely(draw, 3) if modern else rarely(draw, 3)):
        # the mirrored headers, agreeing with the body
        headers["mcp-protocol-version"] = MODERN
        if isinstance(message.get("method"), str) and message["method"].isascii():
            headers["mcp-method"] = message["method"]
        uri = params.get("uri") if type(params) is dict else None
        if isinstance(uri, str) and uri.isascii() and uri.isprintable():
            headers["mcp-name"] = uri
    elif draw(st.booleans()):
        headers["mcp-session-id"] = "<live>"  # the fixture's real session
    for name in ["origin", "mcp-session-id", "mcp-protocol-version", "last-event-id", "mcp-method", "mcp-name"]:
        if rarely(draw, 11):
            headers[name] = draw(header_text)
    if rarely(draw, 11):
        headers["origin"] = draw(st.sampled_from(["http://localhost:3000", "http://[::1]", "https://evil.example",
                                                  "null"]))
    return verb, body, {k: v.encode() for k, v in headers.items()}, message


def check_http_body(status: int, content_type: str, body: bytes, sent: str, context: str) -> None:
    text = body.decode("utf-8", errors="replace")
    assert not [m for p in LEAKS for m in p.findall(text) if m not in sent], f"traceback text in {text!r}\n{context}"
    payloads: list[Any] = []
    if content_type.startswith("application/json") and body:
        payloads.append(orjson.loads(body))
    elif content_type.startswith("text/event-stream"):
        for line in re.split(r"\r\n|\r|\n", text):  # SSE's line ends (not splitlines': U+0085 is data)
            if line.startswith("data:") and line[5:].strip():
                payloads.append(orjson.loads(line[5:]))
    for payload in payloads:
        for item in payload if type(payload) is list else [payload]:
            if type(item) is dict and "error" in item:
                check_error(item["error"], context)


@FUZZ
@given(request=http_requests())
def test_http_asgi_random_requests(http: HTTPFuzz, request: tuple[str, bytes, dict[str, bytes], Any]) -> None:
    verb, body, headers, message = request
    if headers.get("mcp-session-id") == b"<live>":
        headers["mcp-session-id"] = http.session_id.encode()
    context = f"{verb} /mcp headers={headers!r} body={body[:2000]!r}"
    # a stream may legitimately stay open (a GET on a live session, a subscriptions/listen)
    may_stream = verb == "GET" or b"subscriptions/listen" in body

    async def exchange() -> httpx.Response | None:
        try:
            return await asyncio.wait_for(http.client.request(verb, "/mcp", content=body, headers=headers),
                                          0.5 if may_stream else 10)
        except asyncio.TimeoutError:  # not yet the builtin TimeoutError on 3.10
            assert may_stream, f"no response within 10 s\n{context}"
            return None

    response = http.call(exchange())
    if response is not None:
        status = response.status_code
        assert status < 500 or status == 503, f"status {status}: {response.text[:2000]!r}\n{context}"
        sent = body.decode("utf-8", errors="replace") + repr(headers)
        check_http_body(status, response.headers.get("content-type", ""), response.content, sent,
                        f"status {status}\n{context}")
    # the endpoint still serves: a 2026-07-28 request (that era has no ping: server/discover), and a
    # ping on the live session (re-created if the example ended it)
    ping_id = f"fuzz-ping-{next(http.pings)}"

    async def health() -> None:
        reply = await http.client.post("/mcp", headers=HEALTH_HEADERS, content=orjson.dumps(
            {"jsonrpc": "2.0", "id": ping_id, "method": "server/discover", "params": {"_meta": modern_meta()}}))
        assert reply.status_code == 200, f"server/discover afterwards: {reply.status_code} {reply.text}\n{context}"
        result = reply.json()
        assert result["id"] == ping_id and result["result"]["resultType"] == "complete", result
        session_ping = await http.client.post("/mcp", content=orjson.dumps(
            {"jsonrpc": "2.0", "id": ping_id, "method": "ping"}), headers={
            "accept": "application/json, text/event-stream", "content-type": "application/json",
            "mcp-session-id": http.session_id})
        if session_ping.status_code == 404:  # a DELETE (or an eviction) ended it
            http.session_id = await http.initialize()
        else:
            assert session_ping.status_code == 200, f"session ping: {session_ping.status_code}\n{context}"

    http.call(health())


# --- bugs the fuzzing found ----------------------------------------------------------------------


@pytest.mark.parametrize("case", ["setLevel", "meta"])
def test_an_unhashable_log_level_is_invalid_params(case: str) -> None:
    with RawServer(APP) as server:
        if case == "setLevel":
            server.initialize()
            reply = server.request(1, "logging/setLevel", {"level": []})
        else:
            reply = server.request(1, "server/discover", {"_meta": modern_meta(**{LOG_LEVEL: []})})
        server.close()
        assert reply["error"]["code"] == -32602, reply
        assert "Traceback" not in server.stderr


def test_an_sse_body_is_split_at_sse_line_ends_only() -> None:
    # U+0085 (NEL) inside a JSON string is data, not a line end (str.splitlines would cut there)
    body = 'event: message\ndata: {"jsonrpc":"2.0","id":0,"result":{"uri":"\u0085"}}\n\n'.encode()
    check_http_body(200, "text/event-stream", body, "", "NEL")
