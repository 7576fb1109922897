"""Streamable HTTP as the spec draws it, against ``resourcekit run --transport http``: what each POST,
GET and DELETE gets (every status code), sessions and their expiry, Accept, SSE streams with
priming and replay, batches, cancellation in both eras, 2026-07-28's stateless requests and listen
streams, a graceful stop.

Each server is a real subprocess; requests are plain httpx, so every header and status is
visible. ``basic_app.py`` serves most tests; ``http_app.py`` adds changing content, slow and
cancellable reads, and (run as a script) tiny limits.
"""

from __future__ import annotations

import base64
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.support.http_server import ACCEPT, http_server_process, post, sse_events, stream_post, wait_for
from tests.support.process import APPS
from tests.support.wire import modern_headers, modern_meta, read_message, request

FIXTURE = APPS / "http_app.py"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


@pytest.fixture(scope="module")
def url():
    with http_server_process(APPS / "basic_app.py") as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def fixture_url():
    with http_server_process(FIXTURE) as endpoint:
        yield endpoint


def session(url: str, version: str = "2025-11-25") -> tuple[str, dict[str, str]]:
    init = dict(INIT, params=dict(INIT["params"], protocolVersion=version))
    response = post(url, init)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["protocolVersion"] == version
    sid = response.headers["mcp-session-id"]
    assert len(sid) >= 24 and all(0x21 <= ord(c) <= 0x7E for c in sid)
    headers = {"mcp-session-id": sid, "mcp-protocol-version": version}
    assert post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).status_code == 202
    return sid, headers


# --- handshake era: sessions and plain JSON -----------------------------------------------


def test_session_lifecycle_and_json_responses(url):
    sid, headers = session(url)
    response = post(url, read_message(1, "text://hello"), headers)
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    assert response.json()["result"]["contents"][0]["text"] == "hello, world"
    missing = post(url, request(2, "ping"))
    assert missing.status_code == 400 and missing.json()["error"]["code"] == -32600
    assert post(url, request(3, "ping"), {"mcp-session-id": "nope"}).status_code == 404
    bad_version = post(url, request(4, "ping"), {"mcp-session-id": sid, "mcp-protocol-version": "1999-01-01"})
    assert bad_version.status_code == 400 and bad_version.json()["error"]["code"] == -32600
    no_version = post(url, request(5, "ping"), {"mcp-session-id": sid})
    assert no_version.status_code == 200  # a missing header means 2025-03-26: accepted
    deleted = httpx.delete(url, headers=headers, timeout=10)
    assert deleted.status_code == 204 and deleted.content == b"" and "content-length" not in deleted.headers
    assert post(url, request(6, "ping"), headers).status_code == 404
    assert httpx.delete(url, headers=headers, timeout=10).status_code == 404


def test_status_codes_for_bad_requests(url, fixture_url):
    _, headers = session(url)
    put = httpx.put(url, content=b"{}", timeout=10)
    assert put.status_code == 405 and "POST" in put.headers["allow"] and "GET" in put.headers["allow"]
    assert httpx.get(url, headers={"accept": "text/event-stream"}, timeout=10).status_code == 405
    assert httpx.delete(url, timeout=10).status_code == 405
    assert httpx.get(url, headers={**headers, "accept": "application/json"}, timeout=10).status_code == 406
    assert post(url, INIT, {"content-type": "text/plain"}).status_code == 415
    assert post(url, INIT, {"accept": "text/html"}).status_code == 406
    assert post(url, INIT, {"accept": "application/json;q=0, text/event-stream;q=0"}).status_code == 406
    parse = post(url, b"{not json", headers)
    assert parse.status_code == 400 and parse.json()["error"]["code"] == -32700
    assert post(url, INIT, {"origin": "http://evil.example.com"}).status_code == 403
    assert post(url, INIT, {"origin": "null"}).status_code == 403
    assert post(url, INIT, {"origin": "http://localhost:1234"}).status_code == 200
    assert post(url, INIT, {"origin": "http://127.0.0.1:6274"}).status_code == 200
    for host in ("evil.example.com", "evil.example.com:8000"):
        assert post(url, INIT, {"host": host}).status_code in (403, 421)
    assert post(url, INIT, {"host": "localhost:1"}).status_code == 200
    assert httpx.get(url.replace("/mcp", "/other"), timeout=10).status_code == 404
    # the fixture app allows 64 KiB per message: declared or streamed, a larger body is 413
    too_big = post(fixture_url, b'{"pad": "' + b"x" * (100 * 1024) + b'"}')
    assert too_big.status_code == 413
    chunked = httpx.post(fixture_url, content=iter([b'{"pad": "', b"x" * (100 * 1024), b'"}']), timeout=10,
                         headers={"content-type": "application/json", "accept": ACCEPT})
    assert chunked.status_code == 413
    failing = post(url, read_message(7, "boom://fail"), headers)
    assert failing.json()["error"] == {"code": -32603, "message": "Internal error"}
    for response in (too_big, parse, failing):
        assert "Traceback" not in response.text and "secret" not in response.text


def test_notifications_and_responses_get_202_without_body(url):
    _, headers = session(url)
    for body in ({"jsonrpc": "2.0", "id": 99, "result": {}},
                 {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12345}}):
        response = post(url, body, headers)
        assert response.status_code == 202 and response.content == b""
        assert response.headers["content-length"] == "0"


def test_accept_negotiation(url):
    _, headers = session(url)
    post(url, request(1, "logging/setLevel", {"level": "info"}), headers)
    # JSON only: the log message cannot be delivered, the response still is
    only_json = post(url, read_message(2, "ctx://me"), {**headers, "accept": "application/json"})
    assert only_json.headers["content-type"] == "application/json" and only_json.json()["id"] == 2
    # SSE only: even a plain answer comes as an event
    with stream_post(url, read_message(3, "text://hello"), {**headers, "accept": "text/event-stream"}) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [e for e in sse_events(response, 2) if e.get("data")]
    assert orjson.loads(events[0]["data"])["result"]["contents"][0]["text"] == "hello, world"


# --- handshake era: SSE, GET streams, resumption -------------------------------------------


def test_request_with_notifications_first_streams_sse_with_priming(url):
    _, headers = session(url)
    assert post(url, request(1, "logging/setLevel", {"level": "info"}), headers).json()["result"] == {}
    with stream_post(url, read_message(2, "ctx://me"), headers) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-accel-buffering"] == "no"
        events = sse_events(response, 3)
    assert events[0]["id"] and events[0].get("data", "") == ""  # the 2025-11-25 priming event
    log_message = orjson.loads(events[1]["data"])
    assert log_message["method"] == "notifications/message" and log_message["params"]["data"] == "reading me"
    assert orjson.loads(events[2]["data"])["id"] == 2
    assert len({e["id"] for e in events}) == 3  # ids are unique within the session


def test_no_priming_event_before_2025_11_25(url):
    _, headers = session(url, "2025-06-18")
    post(url, request(1, "logging/setLevel", {"level": "info"}), headers)
    with stream_post(url, read_message(2, "ctx://me"), headers) as response:
        events = sse_events(response, 2)
    assert [orjson.loads(e["data"]).get("method") for e in events] == ["notifications/message", None]


def test_get_stream_subscription_updates_and_replay(fixture_url):
    url = fixture_url
    _, headers = session(url)
    post(url, request(1, "resources/subscribe", {"uri": "counter://value"}), headers)
    time.sleep(0.2)
    # two changes while no GET stream is open: buffered for the stream, as one update (same URI)
    for rid in (2, 3):
        post(url, read_message(rid, "control://bump"), headers)
        time.sleep(0.2)
    get_headers = {"accept": "text/event-stream", **headers}
    with httpx.stream("GET", url, headers=get_headers, timeout=10) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        events = sse_events(lines, 2)  # priming + one update
        post(url, read_message(4, "control://bump"), headers)  # a change while the stream is open
        events += sse_events(lines, 1)
    assert events[0].get("data", "") == ""
    updates = events[1:]
    assert [orjson.loads(e["data"])["params"]["uri"] for e in updates] == ["counter://value"] * 2
    # resuming after the first update replays the second, from this stream only
    with httpx.stream("GET", url, headers={**get_headers, "last-event-id": updates[0]["id"]}, timeout=10) as response:
        replayed = sse_events(response, 1)
    assert replayed[0]["id"] == updates[1]["id"] and replayed[0]["data"] == updates[1]["data"]
    other_sid, other = session(url)
    foreign = httpx.get(url, headers={**get_headers, **other, "last-event-id": updates[0]["id"]}, timeout=10)
    assert foreign.status_code == 400  # another session's stream is never replayed
    assert httpx.get(url, headers={**get_headers, "last-event-id": "garbage"}, timeout=10).status_code == 400


def test_update_arriving_while_get_stream_is_open(fixture_url):
    url = fixture_url
    _, headers = session(url)
    post(url, request(1, "resources/subscribe", {"uri": "counter://value"}), headers)
    events: list[dict[str, str]] = []

    def consume() -> None:
        with httpx.stream("GET", url, headers={"accept": "text/event-stream", **headers}, timeout=10) as response:
            events.extend(sse_events(response, 2))

    reader = threading.Thread(target=consume)
    reader.start()
    time.sleep(0.5)
    post(url, read_message(2, "control://bump"), headers)
    reader.join(10)
    assert orjson.loads(events[1]["data"]) == {
        "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "counter://value"}}


def test_post_stream_resumes_with_last_event_id(fixture_url):
    url = fixture_url
    _, headers = session(url)
    post(url, request(1, "logging/setLevel", {"level": "info"}), headers)
    # slow://logged logs at once and answers a second later: leave after the log message
    with stream_post(url, read_message(2, "slow://logged"), headers) as response:
        priming, logged = sse_events(response, 2)
    assert orjson.loads(logged["data"])["params"]["data"] == "started"
    get_headers = {"accept": "text/event-stream", **headers}
    with httpx.stream("GET", url, headers={**get_headers, "last-event-id": logged["id"]}, timeout=10) as response:
        rest = sse_events(response, 10)  # returns when the stream ends: after the response
    assert len(rest) == 1 and orjson.loads(rest[0]["data"])["result"]["contents"][0]["text"] == "done"
    # the whole stream again, from the priming event
    with httpx.stream("GET", url, headers={**get_headers, "last-event-id": priming["id"]}, timeout=10) as response:
        again = sse_events(response, 2)
    assert [e["id"] for e in again] == [logged["id"], rest[0]["id"]]


def test_deleting_a_session_ends_its_streams_and_waiting_requests(fixture_url):
    url = fixture_url
    _, headers = session(url)
    outcome: dict[str, Any] = {}

    def slow_post() -> None:
        outcome["post"] = post(url, read_message(1, "slow://cancellable"), headers).status_code

    def get_stream() -> None:
        with httpx.stream("GET", url, headers={"accept": "text/event-stream", **headers}, timeout=10) as response:
            outcome["get"] = sse_events(response, 5)

    threads = [threading.Thread(target=slow_post), threading.Thread(target=get_stream)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    assert httpx.delete(url, headers=headers, timeout=10).status_code == 204
    for thread in threads:
        thread.join(10)
    assert outcome["post"] == 404  # the session it waited on is gone
    assert len(outcome["get"]) == 1  # the priming event, then the stream ended


def test_batches_on_2025_03_26(url):
    _, headers = session(url, "2025-03-26")
    response = post(url, [request(1, "ping"), read_message(2, "item://1")], headers)
    assert response.status_code == 200
    assert sorted(r["id"] for r in response.json()) == [1, 2]
    assert post(url, [{"jsonrpc": "2.0", "method": "notifications/initialized"}], headers).status_code == 202
    # a client response inside a batch gets no answer of its own
    mixed = post(url, [read_message(3, "item://2"), {"jsonrpc": "2.0", "id": "s1", "result": {}}], headers)
    assert [r["id"] for r in mixed.json()] == [3]
    # an id no request may have (a list) is refused in its place; the read beside it is still answered
    odd = post(url, [{"jsonrpc": "2.0", "id": [1], "method": "ping"}, read_message(4, "item://1")], headers)
    assert odd.status_code == 200, odd.text
    answers = odd.json()
    assert {(r.get("id"), "error" in r) for r in answers} == {(None, True), (4, False)}
    assert next(r for r in answers if "error" in r)["error"]["code"] == -32600
    _, newer = session(url, "2025-06-18")
    rejected = post(url, [request(1, "ping")], newer)
    assert rejected.status_code == 400 and rejected.json()["error"]["code"] == -32600


# --- cancellation: a disconnect (2026-07-28) or notifications/cancelled (handshake era) -----


def test_cancellation_in_both_eras(tmp_path: Path):
    marker = tmp_path / "cancelled"
    with http_server_process(FIXTURE, extra_env={"RESOURCEKIT_CANCEL_MARKER": str(marker)}) as endpoint:
        # 2026-07-28: closing the connection cancels the handler
        with pytest.raises(httpx.ReadTimeout):
            post(endpoint, read_message(1, "slow://cancellable", modern=True),
                 modern_headers("resources/read", "slow://cancellable"), timeout=1.0)
        wait_for(marker.exists)
        assert marker.read_text() == "cancelled"
        marker.unlink()
        # handshake era: a disconnect is not a cancellation...
        _, headers = session(endpoint)
        with pytest.raises(httpx.ReadTimeout):
            post(endpoint, read_message(2, "slow://cancellable"), headers, timeout=1.0)
        time.sleep(1.0)
        assert not marker.exists()
        # ...notifications/cancelled is, and the POST still waiting for it is answered at once
        waiting: dict[str, httpx.Response] = {}
        thread = threading.Thread(target=lambda: waiting.update(r=post(endpoint, read_message(3, "slow://cancellable"),
                                                                         headers)))
        thread.start()
        time.sleep(0.5)
        for rid in (2, 3):
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}
            assert post(endpoint, cancel, headers).status_code == 202
        thread.join(10)
        assert waiting["r"].status_code == 200 and waiting["r"].content == b""  # no response follows
        wait_for(marker.exists)


# --- 2026-07-28 -----------------------------------------------------------------------------


def test_stateless_2026_requests_and_header_checks(url):
    message = read_message(1, "item://5", modern=True)
    ok = post(url, message, modern_headers("resources/read", "item://5"))
    assert ok.status_code == 200 and "mcp-session-id" not in ok.headers
    result = ok.json()["result"]
    assert result["resultType"] == "complete" and result["contents"][0]["text"] == "item 5"
    wrapped = "=?base64?" + base64.b64encode(b"item://5").decode() + "?="
    assert post(url, message, modern_headers("resources/read", wrapped)).status_code == 200
    # a session id is ignored and never minted; Last-Event-ID is ignored
    ignored = post(url, message, {**modern_headers("resources/read", "item://5"), "mcp-session-id": "whatever",
                                  "last-event-id": "x.1"})
    assert ignored.status_code == 200 and "mcp-session-id" not in ignored.headers
    for headers in (modern_headers("resources/list", "item://5"), modern_headers("Resources/Read", "item://5"),
                    modern_headers("resources/read", "item://6"), modern_headers("resources/read"),
                    modern_headers("resources/read", "=?base64?not base64?="),
                    {"mcp-method": "resources/read", "mcp-name": "item://5"},
                    {**modern_headers("resources/read", "item://5"), "mcp-protocol-version": "2025-11-25"}):
        mismatch = post(url, message, headers)
        assert mismatch.status_code == 400, headers
        assert mismatch.json()["error"]["code"] == -32020 and mismatch.json()["id"] == 1
    for method in ("tools/list", "initialize", "ping", "resources/subscribe"):
        response = post(url, request(2, method, {"_meta": modern_meta()}), modern_headers(method))
        assert response.status_code == 404 and response.json()["error"]["code"] == -32601, method
    no_meta = post(url, request(3, "resources/list", {}), modern_headers("resources/list"))
    assert no_meta.status_code == 400 and no_meta.json()["error"]["code"] == -32602
    no_caps = post(url, request(4, "resources/list", {"_meta": {"io.modelcontextprotocol/protocolVersion":
                                                                "2026-07-28"}}), modern_headers("resources/list"))
    assert no_caps.status_code == 400 and no_caps.json()["error"]["code"] == -32602
    future = request(5, "resources/list", {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2031-01-01", "io.modelcontextprotocol/clientCapabilities": {}}})
    response = post(url, future, {"mcp-protocol-version": "2031-01-01", "mcp-method": "resources/list"})
    assert response.status_code == 400 and response.json()["error"]["code"] == -32022
    assert response.json()["error"]["data"]["supported"] == ["2026-07-28"]
    missing = post(url, read_message(6, "nope://x", modern=True), modern_headers("resources/read", "nope://x"))
    assert missing.status_code == 200
    assert missing.json()["error"]["code"] == -32602 and missing.json()["error"]["data"] == {"uri": "nope://x"}
    notification = {"jsonrpc": "2.0", "method": "notifications/whatever", "params": {"_meta": modern_meta()}}
    assert post(url, notification, {"mcp-protocol-version": "2026-07-28"}).status_code == 202
    get = httpx.get(url, headers={"accept": "text/event-stream", "mcp-protocol-version": "2026-07-28",
                                  "mcp-session-id": "x"}, timeout=10)
    assert get.status_code == 405


def test_listen_stream_over_sse(fixture_url):
    url = fixture_url
    listen = request("L1", "subscriptions/listen", {
        "_meta": modern_meta(), "notifications": {"resourceSubscriptions": ["counter://value"]}})
    events: list[dict[str, str]] = []

    def consume() -> None:
        with stream_post(url, listen, modern_headers("subscriptions/listen")) as response:
            assert response.headers["x-accel-buffering"] == "no"
            assert response.headers["content-type"].startswith("text/event-stream")
            events.extend(sse_events(response, 2))

    def watchers() -> int:
        answer = post(url, read_message(9, "debug://subscribers", modern=True),
                      modern_headers("resources/read", "debug://subscribers"))
        return int(answer.json()["result"]["contents"][0]["text"])

    before = watchers()  # sessions of earlier tests may still watch the counter
    reader = threading.Thread(target=consume)
    reader.start()
    wait_for(lambda: watchers() == before + 1)
    time.sleep(0.2)  # let the tracker take its baseline version
    post(url, read_message(2, "control://bump", modern=True), modern_headers("resources/read", "control://bump"))
    reader.join(10)
    ack, update = (orjson.loads(e["data"]) for e in events)
    assert "id" not in events[0]  # 2026-07-28 streams are not resumable: no event ids
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"resourceSubscriptions": ["counter://value"]}
    assert update["method"] == "notifications/resources/updated"
    assert update["params"]["uri"] == "counter://value"
    assert update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L1"
    wait_for(lambda: watchers() == before)  # closing the stream ended the subscription
    refused = post(url, listen, {**modern_headers("subscriptions/listen"), "accept": "application/json"})
    assert refused.status_code == 406


# --- limits, expiry, keep-alive and stopping (tiny limits: http_app.py run as a script) ----


def test_limits_session_expiry_and_keepalive():
    with http_server_process(FIXTURE, script=True) as endpoint:
        # idle sessions expire (0.5 s here), and their subscriptions with them
        _, headers = session(endpoint)
        post(endpoint, request(1, "resources/subscribe", {"uri": "counter://value"}), headers)
        probe = read_message(2, "debug://subscribers", modern=True)
        probe_headers = modern_headers("resources/read", "debug://subscribers")
        assert post(endpoint, probe, probe_headers).json()["result"]["contents"][0]["text"] == "1"
        time.sleep(1.2)
        assert post(endpoint, request(3, "ping"), headers).status_code == 404
        assert post(endpoint, probe, probe_headers).json()["result"]["contents"][0]["text"] == "0"
    # a long idle timeout here: no session may expire, however slow the machine
    with http_server_process(FIXTURE, script=True, extra_env={"HTTP_APP_IDLE_TIMEOUT": "60"}) as endpoint:
        # at most two sessions: an idle one makes room for a new one, so keep both busy
        _, first = session(endpoint)
        _, second = session(endpoint)
        held = [threading.Thread(target=post, args=(endpoint, read_message(9, "slow://held"), h))
                for h in (first, second)]
        for thread in held:
            thread.start()
        held_probe = read_message(10, "debug://held", modern=True)
        wait_for(lambda: post(endpoint, held_probe, modern_headers("resources/read", "debug://held"))
                 .json()["result"]["contents"][0]["text"] == "2")
        refused = post(endpoint, INIT)
        assert refused.status_code == 503 and "retry-after" in refused.headers
        # at most one open stream; quiet streams carry keep-alive comments (every 0.2 s here)
        comments: list[str] = []
        opened = threading.Event()

        def hold_stream() -> None:
            with httpx.stream("GET", endpoint, headers={"accept": "text/event-stream", **first},
                              timeout=10) as response:
                opened.set()
                for line in response.iter_lines():
                    if line.startswith(":"):
                        comments.append(line)
                        if len(comments) == 3:
                            return

        holder = threading.Thread(target=hold_stream)
        holder.start()
        assert opened.wait(10)  # its stream was claimed before its response started
        listen = request("L", "subscriptions/listen", {"_meta": modern_meta(), "notifications": {}})
        assert post(endpoint, listen, modern_headers("subscriptions/listen")).status_code == 503
        holder.join(10)
        assert comments == [": keep-alive"] * 3
        for headers in (first, second):  # ending a session answers its waiting POST
            assert httpx.delete(endpoint, headers=headers, timeout=10).status_code == 204
        for thread in held:
            thread.join(10)


def test_stopping_ends_open_streams_gracefully():
    events: list[dict[str, str]] = []
    get_lines: list[str] = []
    with http_server_process(FIXTURE) as endpoint:
        listen = request("L9", "subscriptions/listen", {"_meta": modern_meta(), "notifications": {}})
        _, headers = session(endpoint)

        def listen_stream() -> None:
            with stream_post(endpoint, listen, modern_headers("subscriptions/listen"), timeout=30) as response:
                events.extend(sse_events(response, 2))

        def get_stream() -> None:
            with httpx.stream("GET", endpoint, headers={"accept": "text/event-stream", **headers},
                              timeout=30) as response:
                get_lines.extend(response.iter_lines())

        threads = [threading.Thread(target=listen_stream), threading.Thread(target=get_stream)]
        for thread in threads:
            thread.start()
        wait_for(lambda: len(events) >= 1 or len(get_lines) >= 1)
        time.sleep(0.3)
        started = time.monotonic()
    assert time.monotonic() - started < 5  # SIGTERM did not wait for the streams
    for thread in threads:
        thread.join(10)
    final = orjson.loads(events[-1]["data"])
    assert final["id"] == "L9" and final["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L9"
