"""A stdio session's life against a real ``resourcekit run`` process: initialize and its versions,
requests before it, the stateless 2026-07-28 requests beside it, log levels, batches (2025-03-26
only), errors on the wire, and the exit (end of input, SIGTERM, an open listen stream)."""

from __future__ import annotations

import signal
import time

from tests.support.process import APPS, RawServer
from tests.support.wire import modern_meta

APP = APPS / "basic_app.py"



def test_initialize_echoes_supported_versions():
    for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        with RawServer(APP) as s:
            result = s.initialize(version)["result"]
            assert result["protocolVersion"] == version
            assert result["serverInfo"] == {"name": "basic", "version": "9.9.9"}
            assert result["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
            assert ("completions" in result["capabilities"]) == (version != "2024-11-05")
            assert result["instructions"] == "for tests"


def test_initialize_unknown_version_gets_latest(server):
    assert server.initialize("1999-01-01")["result"]["protocolVersion"] == "2025-11-25"


def test_not_found_is_32002_with_uri(server):
    server.initialize()
    reply = server.request(1, "resources/read", {"uri": "nope://x"})
    assert reply["error"]["code"] == -32002
    assert reply["error"]["data"] == {"uri": "nope://x"}


def test_handler_exception_is_generic_and_logged(server):
    server.initialize()
    reply = server.request(1, "resources/read", {"uri": "boom://fail"})
    assert reply["error"] == {"code": -32603, "message": "Internal error"}
    assert server.request(2, "ping")["result"] == {}
    server.close()
    assert "secret internal detail" in server.stderr  # the traceback went to stderr only
    assert "Traceback" in server.stderr


def test_request_before_initialize_is_refused(server):
    reply = server.request(1, "resources/list")
    assert reply["error"]["code"] == -32600
    assert server.request(2, "ping")["result"] == {}


def test_batches_only_in_2025_03_26():
    with RawServer(APP) as s:
        s.initialize("2025-03-26")
        s.send([
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "text://hello"}},
            {"jsonrpc": "2.0", "id": 3, "method": "nope"},
        ])
        replies = s.recv()
        assert isinstance(replies, list)
        by_id = {r["id"]: r for r in replies}
        assert set(by_id) == {1, 2, 3}
        assert by_id[2]["result"]["contents"][0]["text"] == "hello, world"
        assert by_id[3]["error"]["code"] == -32601
        s.send([])
        assert s.recv()["error"]["code"] == -32600
    with RawServer(APP) as s:
        s.initialize("2025-06-18")
        s.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
        assert s.recv()["error"]["code"] == -32600


def test_modern_requests_without_handshake(server):
    reply = server.request(1, "server/discover", {"_meta": modern_meta()})
    result = reply["result"]
    assert result["supportedVersions"] == ["2026-07-28"]
    assert result["resultType"] == "complete"
    assert result["ttlMs"] >= 0 and result["cacheScope"] in ("public", "private")
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "basic"
    assert "resources" in result["capabilities"]

    read = server.request(2, "resources/read", {"uri": "text://hello", "_meta": modern_meta()})["result"]
    assert read["contents"][0]["text"] == "hello, world"
    assert read["resultType"] == "complete" and "ttlMs" in read and "cacheScope" in read

    missing = server.request(3, "resources/read", {"uri": "nope://x", "_meta": modern_meta()})
    assert missing["error"]["code"] == -32602 and missing["error"]["data"] == {"uri": "nope://x"}

    old = server.request(4, "resources/read", {
        "uri": "text://hello",
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2031-01-01",
                  "io.modelcontextprotocol/clientCapabilities": {}},
    })
    assert old["error"]["code"] == -32022
    assert old["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2031-01-01"}

    no_caps = server.request(5, "resources/list", {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
    assert no_caps["error"]["code"] == -32602

    for removed in ("initialize", "ping", "logging/setLevel", "resources/subscribe"):
        reply = server.request(removed, removed, {"_meta": modern_meta(), "uri": "text://hello"})
        assert reply["error"]["code"] == -32601, removed

    listed = server.request(6, "resources/list", {"_meta": modern_meta()})["result"]
    assert len(listed["resources"]) == 7 and listed["nextCursor"] and listed["ttlMs"] >= 0


def test_modern_log_level_in_meta(server):
    server.send({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {
        "uri": "ctx://me", "_meta": modern_meta(**{"io.modelcontextprotocol/logLevel": "debug"})}})
    first = server.recv()
    assert first["method"] == "notifications/message"
    assert first["params"] == {"level": "info", "data": "reading me"}
    assert server.recv()["result"]["contents"][0]["mimeType"] == "application/json"
    # without a logLevel, no message
    reply = server.request(2, "resources/read", {"uri": "ctx://me", "_meta": modern_meta()})
    assert reply["id"] == 2


def test_handshake_log_level(server):
    server.initialize()
    assert server.request(1, "resources/read", {"uri": "ctx://me"})["id"] == 1  # no level set: silent
    assert server.request(2, "logging/setLevel", {"level": "info"})["result"] == {}
    server.send({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "ctx://me"}})
    assert server.recv()["method"] == "notifications/message"
    assert server.recv()["id"] == 3
    server.request(4, "logging/setLevel", {"level": "error"})
    assert server.request(5, "resources/read", {"uri": "ctx://me"})["id"] == 5


def test_exit_on_eof_and_sigterm():
    with RawServer(APP) as s:
        s.initialize()
        assert s.close(timeout=10) == 0
    with RawServer(APP) as s:
        s.initialize()
        s.send({"jsonrpc": "2.0", "id": "sync", "method": "resources/read", "params": {"uri": "slow://sync"}})
        time.sleep(0.3)
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(10) == 0
        # the in-flight request finished before exit
        assert s.recv()["result"]["contents"][0]["text"] == "slept sync"


def test_exit_is_prompt_with_an_open_listen_stream():
    with RawServer(APP) as server:
        server.send({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {
            "_meta": modern_meta(), "notifications": {"resourcesListChanged": True}}})
        assert server.recv()["method"] == "notifications/subscriptions/acknowledged"
        started = time.monotonic()
        assert server.close(timeout=10) == 0
        assert time.monotonic() - started < 2.5
