"""Raw JSON-RPC against a real ``resourcekit run`` process: bad input, eras, batches, cancellation."""

from __future__ import annotations

import signal
import time

import orjson
import pytest

from tests.support.process import APPS, RawServer
from tests.support.wire import modern_meta

APP = APPS / "basic_app.py"


@pytest.fixture
def server():
    with RawServer(APP) as s:
        yield s


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
    with RawServer(APP) as s:
        s.initialize()
        s.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (5 * 1024 * 1024) + b'"}}\n')
        reply = s.recv()
        assert reply["error"]["code"] == -32600 and "larger" in reply["error"]["message"]
        assert s.request(2, "ping")["result"] == {}


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


def test_print_goes_to_stderr(server):
    server.initialize()
    reply = server.request(1, "resources/read", {"uri": "noisy://print"})
    assert reply["result"]["contents"][0]["text"] == "quiet"
    server.close()
    assert "this must not reach stdout" in server.stderr


def test_request_before_initialize_is_refused(server):
    reply = server.request(1, "resources/list")
    assert reply["error"]["code"] == -32600
    assert server.request(2, "ping")["result"] == {}


def test_slow_handler_does_not_delay_ping_or_reads(server):
    server.initialize()
    server.send({"jsonrpc": "2.0", "id": "slow", "method": "resources/read", "params": {"uri": "slow://sleep"}})
    server.send({"jsonrpc": "2.0", "id": "slow-sync", "method": "resources/read", "params": {"uri": "slow://sync"}})
    started = time.monotonic()
    assert server.request("p", "ping")["result"] == {}
    read = server.request("r", "resources/read", {"uri": "text://hello"})
    assert read["result"]["contents"][0]["text"] == "hello, world"
    assert time.monotonic() - started < 1.5


def test_cancellation_sends_no_response(server):
    server.initialize()
    server.send({"jsonrpc": "2.0", "id": "slow", "method": "resources/read", "params": {"uri": "slow://sleep"}})
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}})
    assert server.request("after", "ping") == {"jsonrpc": "2.0", "id": "after", "result": {}}
    server.close()
    with pytest.raises(EOFError):
        server.recv(timeout=5)  # nothing was ever sent for "slow"


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
        done = subprocess.run(command("run", str(APP)), stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                              env=env(), timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [orjson.loads(line) for line in replies.read_bytes().splitlines()]
    assert [m["id"] for m in lines] == [0, 1]
    assert lines[1]["result"]["contents"][0]["text"] == "hello, world"


def test_exit_is_prompt_with_an_open_listen_stream():
    with RawServer(APP) as server:
        server.send({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {
            "_meta": modern_meta(), "notifications": {"resourcesListChanged": True}}})
        assert server.recv()["method"] == "notifications/subscriptions/acknowledged"
        started = time.monotonic()
        assert server.close(timeout=10) == 0
        assert time.monotonic() - started < 2.5
