"""Raw HTTP against ``resourcekit run --transport http``: every status code, sessions, SSE, 2026-07-28."""

from __future__ import annotations

import base64
import threading
import time
from pathlib import Path

import httpx
import orjson
import pytest

from tests.helpers import APPS, modern_meta
from tests.http_server import http_server_process

APP = APPS / "http_app.py"
ACCEPT = "application/json, text/event-stream"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


@pytest.fixture(scope="module")
def url():
    with http_server_process(APP) as endpoint:
        yield endpoint


def post(url: str, body, headers: dict[str, str] | None = None, **kwargs) -> httpx.Response:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    all_headers = {"content-type": "application/json", "accept": ACCEPT, **(headers or {})}
    return httpx.post(url, content=data, headers=all_headers, timeout=10, **kwargs)


def session(url: str, version: str = "2025-11-25") -> tuple[str, dict[str, str]]:
    init = dict(INIT, params=dict(INIT["params"], protocolVersion=version))
    response = post(url, init)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    sid = response.headers["mcp-session-id"]
    assert sid and all(0x21 <= ord(c) <= 0x7E for c in sid) and len(sid) >= 24
    headers = {"mcp-session-id": sid, "mcp-protocol-version": version}
    assert post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).status_code == 202
    return sid, headers


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return headers


def sse_events(response: httpx.Response, count: int) -> list[dict]:
    """Read ``count`` SSE events (id, data) from a streaming response."""
    events: list[dict] = []
    current: dict = {}
    for line in response.iter_lines():
        if line.startswith(":"):
            continue
        if not line:
            if current:
                events.append(current)
                current = {}
                if len(events) >= count:
                    return events
            continue
        field, _, value = line.partition(":")
        current[field] = value.lstrip(" ")
    return events


def test_session_lifecycle_and_json_responses(url):
    sid, headers = session(url)
    read = post(url, {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "item://7"}}, headers)
    assert read.status_code == 200 and read.json()["result"]["contents"][0]["text"] == "item 7"
    missing = post(url, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert missing.status_code == 400 and missing.json()["error"]["code"] == -32600
    unknown = post(url, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, {"mcp-session-id": "nope"})
    assert unknown.status_code == 404
    bad_version = post(url, {"jsonrpc": "2.0", "id": 4, "method": "ping"},
                       {"mcp-session-id": sid, "mcp-protocol-version": "1999-01-01"})
    assert bad_version.status_code == 400
    no_version = post(url, {"jsonrpc": "2.0", "id": 5, "method": "ping"}, {"mcp-session-id": sid})
    assert no_version.status_code == 200  # missing header: assume 2025-03-26
    assert httpx.delete(url, headers=headers, timeout=10).status_code == 204
    assert post(url, {"jsonrpc": "2.0", "id": 6, "method": "ping"}, headers).status_code == 404


def test_status_codes_for_bad_requests(url):
    _, headers = session(url)
    assert httpx.put(url, content=b"{}", timeout=10).status_code == 405
    assert "POST" in httpx.put(url, content=b"{}", timeout=10).headers["allow"]
    assert httpx.get(url, headers={"accept": "text/event-stream"}, timeout=10).status_code == 405
    assert httpx.delete(url, timeout=10).status_code == 405
    assert post(url, INIT, {"content-type": "text/plain"}).status_code == 415
    assert post(url, INIT, {"accept": "text/html"}).status_code == 406
    too_big = post(url, b'{"pad": "' + b"x" * (100 * 1024) + b'"}', headers)
    assert too_big.status_code == 413
    parse = post(url, b"{not json", headers)
    assert parse.status_code == 400 and parse.json()["error"]["code"] == -32700
    assert post(url, INIT, {"origin": "http://evil.example.com"}).status_code == 403
    assert post(url, INIT, {"origin": "http://localhost:1234"}).status_code == 200
    evil_host = post(url, INIT, {"host": "evil.example.com"})
    assert evil_host.status_code in (403, 421)
    assert httpx.get(url.replace("/mcp", "/other"), timeout=10).status_code == 404
    for response in (too_big, parse, evil_host):
        assert "Traceback" not in response.text


def test_notifications_and_responses_get_202(url):
    _, headers = session(url)
    response = post(url, {"jsonrpc": "2.0", "id": 99, "result": {}}, headers)
    assert response.status_code == 202 and response.content == b""


def test_request_with_notifications_first_streams_sse_with_priming(url):
    _, headers = session(url)
    assert post(url, {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}},
                headers).status_code == 200
    with httpx.stream("POST", url, content=orjson.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "log://chatty"}}),
            headers={"content-type": "application/json", "accept": ACCEPT, **headers}, timeout=10) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response, 3)
    assert events[0]["id"] and events[0].get("data", "") == ""  # the 2025-11-25 priming event
    log_message = orjson.loads(events[1]["data"])
    assert log_message["method"] == "notifications/message"
    assert orjson.loads(events[2]["data"])["result"]["contents"][0]["text"] == "answered"


def test_get_stream_subscription_updates_and_replay(url):
    _, headers = session(url)
    post(url, {"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "counter://value"}},
         headers)
    time.sleep(0.2)
    # two changes while no GET stream is open: buffered for the stream
    for rid in (2, 3):
        post(url, {"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": "control://bump"}},
             headers)
        time.sleep(0.2)
    get_headers = {"accept": "text/event-stream", **headers}
    with httpx.stream("GET", url, headers=get_headers, timeout=10) as response:
        assert response.status_code == 200
        events = sse_events(response, 3)  # priming + two updates
    updates = [e for e in events if e.get("data")]
    assert [orjson.loads(e["data"])["params"]["uri"] for e in updates] == ["counter://value"] * 2
    first_id = updates[0]["id"]
    with httpx.stream("GET", url, headers={**get_headers, "last-event-id": first_id}, timeout=10) as response:
        replayed = sse_events(response, 1)
    assert replayed[0]["id"] == updates[1]["id"]
    bad = httpx.get(url, headers={**get_headers, "last-event-id": "someone-else.1"}, timeout=10)
    assert bad.status_code == 400


def test_batches_on_2025_03_26(url):
    _, headers = session(url, "2025-03-26")
    response = post(url, [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "item://1"}},
    ], headers)
    assert response.status_code == 200
    assert sorted(r["id"] for r in response.json()) == [1, 2]
    _, newer = session(url, "2025-06-18")
    assert post(url, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], newer).json()["error"]["code"] == -32600


def test_stateless_2026_requests_and_header_checks(url):
    read = {"jsonrpc": "2.0", "id": 1, "method": "resources/read",
            "params": {"uri": "item://5", "_meta": modern_meta()}}
    ok = post(url, read, modern_headers("resources/read", "item://5"))
    assert ok.status_code == 200 and "mcp-session-id" not in ok.headers
    result = ok.json()["result"]
    assert result["resultType"] == "complete" and result["contents"][0]["text"] == "item 5"
    wrapped = "=?base64?" + base64.b64encode(b"item://5").decode() + "?="
    assert post(url, read, modern_headers("resources/read", wrapped)).status_code == 200
    for headers in (modern_headers("resources/list", "item://5"), modern_headers("resources/read", "item://6"),
                    modern_headers("resources/read"), {"mcp-method": "resources/read", "mcp-name": "item://5"}):
        mismatch = post(url, read, headers)
        assert mismatch.status_code == 400 and mismatch.json()["error"]["code"] == -32020, headers
    unknown = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": modern_meta()}}
    response = post(url, unknown, modern_headers("tools/list"))
    assert response.status_code == 404 and response.json()["error"]["code"] == -32601
    no_meta = post(url, {"jsonrpc": "2.0", "id": 3, "method": "resources/list", "params": {}},
                   modern_headers("resources/list"))
    assert no_meta.status_code == 400 and no_meta.json()["error"]["code"] == -32602
    future = {"jsonrpc": "2.0", "id": 4, "method": "resources/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2031-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}}
    response = post(url, future, {"mcp-protocol-version": "2031-01-01", "mcp-method": "resources/list"})
    assert response.status_code == 400 and response.json()["error"]["code"] == -32022
    missing = post(url, {"jsonrpc": "2.0", "id": 5, "method": "resources/read",
                         "params": {"uri": "nope://x", "_meta": modern_meta()}},
                   modern_headers("resources/read", "nope://x"))
    assert missing.json()["error"]["code"] == -32602 and missing.json()["error"]["data"] == {"uri": "nope://x"}


def test_listen_stream_over_sse(url):
    listen = {"jsonrpc": "2.0", "id": "L1", "method": "subscriptions/listen", "params": {
        "_meta": modern_meta(), "notifications": {"resourceSubscriptions": ["counter://value"]}}}
    events: list[dict] = []

    def consume() -> None:
        with httpx.stream("POST", url, content=orjson.dumps(listen), timeout=10, headers={
                "content-type": "application/json", "accept": ACCEPT,
                **modern_headers("subscriptions/listen")}) as response:
            assert response.headers["x-accel-buffering"] == "no"
            events.extend(sse_events(response, 2))

    reader = threading.Thread(target=consume)
    reader.start()
    time.sleep(0.5)
    post(url, {"jsonrpc": "2.0", "id": 2, "method": "resources/read",
               "params": {"uri": "control://bump", "_meta": modern_meta()}},
         modern_headers("resources/read", "control://bump"))
    reader.join(10)
    ack, update = (orjson.loads(e["data"]) for e in events)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert update["method"] == "notifications/resources/updated"
    assert update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L1"


def test_client_disconnect_cancels_the_handler(tmp_path: Path):
    marker = tmp_path / "cancelled"
    with http_server_process(APP, extra_env={"RESOURCEKIT_CANCEL_MARKER": str(marker)}) as endpoint:
        read = {"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                "params": {"uri": "slow://cancellable", "_meta": modern_meta()}}
        with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes the connection
            httpx.post(endpoint, content=orjson.dumps(read), timeout=1.0, headers={
                "content-type": "application/json", "accept": ACCEPT,
                **modern_headers("resources/read", "slow://cancellable")})
        for _ in range(50):
            if marker.exists():
                break
            time.sleep(0.1)
        assert marker.read_text() == "cancelled"


def test_limits_session_expiry_and_caps():
    with http_server_process(APP, script=True) as endpoint:
        _, headers = session(endpoint)
        time.sleep(1.2)  # idle timeout is 0.5 s
        assert post(endpoint, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers).status_code == 404
        session(endpoint)
        session(endpoint)
        assert post(endpoint, INIT).status_code == 503  # at most two sessions
