"""``resources/stream`` (SEP-2532, experimental) against real ``resourcekit run --transport http``
processes: the bytes on the POST's response (files in constant memory, bytes, iterators), ranges
and ``If-Range``, errors before the first byte as JSON-RPC errors, the capability over HTTP only,
``streamable`` in listings, the concurrent-stream limit, and the CLI."""

from __future__ import annotations

import hashlib
import http.client
import io
import os
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from resourcekit import MCPError
from resourcekit.testing import stream_resource
from tests.support.http_server import http_server, post
from tests.support.process import APPS, RawServer, cli

APP = APPS / "stream_app.py"
MODERN = "2026-07-28"
GiB = 1 << 30
MiB = 1 << 20
MARKS = {0: b"first", 123_456_789: b"middle", GiB - 4: b"last"}  # what the sparse file holds


class Hashing:
    """An ``out`` that keeps nothing but a hash and a count (a 1 GiB body in a test's memory: no)."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return len(data)


def file_digest(path: Path, start: int = 0) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        f.seek(start)
        while piece := f.read(4 * MiB):
            digest.update(piece)
    return digest.hexdigest()


def kib(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` figure (VmRSS, VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("stream")
    with (directory / "big.bin").open("wb") as f:  # 1 GiB, sparse: a few marks in holes
        f.truncate(GiB)
        for offset, mark in MARKS.items():
            f.seek(offset)
            f.write(mark)
    (directory / "doc.bin").write_bytes(os.urandom(3 * MiB))
    return directory


@pytest.fixture(scope="module")
def server(files: Path) -> Iterator[tuple[str, int, Path]]:
    log = files / "server.log"
    with http_server(APP, extra_env={"STREAM_DIR": str(files)}, log=log) as (url, proc):
        yield url, proc.pid, log


def modern(method: str, params: dict[str, Any], caps: dict[str, Any] | None = None, rid: int = 1) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"resourceStreaming": {}} if caps is None else caps}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": meta}}


def modern_post(url: str, message: dict[str, Any]) -> httpx.Response:
    headers = {"mcp-protocol-version": MODERN, "mcp-method": message["method"]}
    if message["method"] == "resources/read":
        headers["mcp-name"] = message["params"]["uri"]
    return post(url, message, headers)


def session(url: str, caps: dict[str, Any]) -> dict[str, str]:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": caps, "clientInfo": {"name": "t", "version": "0"}}}
    response = post(url, init)
    assert response.status_code == 200
    assert response.json()["result"]["capabilities"]["resources"]["stream"] is True
    return {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}


def stream_error(url: str, uri: str, **kwargs: Any) -> MCPError:
    with pytest.raises(MCPError) as caught:
        stream_resource(url, uri, io.BytesIO(), **kwargs)
    return caught.value


# --- the bytes --------------------------------------------------------------------------------


def test_a_gib_file_streams_in_constant_memory(server: tuple[str, int, Path], files: Path) -> None:
    url, pid, _ = server
    stream_resource(url, "file:///files/doc.bin", Hashing())  # warm: threads, buffers, imports
    before = kib(pid, "VmHWM")
    peak = [kib(pid, "VmRSS")]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak.append(kib(pid, "VmRSS"))

    sampler = threading.Thread(target=sample)
    sampler.start()
    out = Hashing()
    started = time.perf_counter()
    try:
        got = stream_resource(url, "file:///big.bin", out, timeout=120)
    finally:
        done.set()
        sampler.join()
    seconds = time.perf_counter() - started
    grown_mib = (kib(pid, "VmHWM") - before) / 1024
    assert got.status == 200 and got.complete and out.size == GiB
    assert got.headers["content-length"] == str(GiB)
    assert got.headers["content-type"] == "application/octet-stream"
    assert got.headers["mcp-resource-uri"] == "file:///big.bin"
    assert got.headers["accept-ranges"] == "bytes"
    assert out.digest.hexdigest() == file_digest(files / "big.bin")
    assert grown_mib < 32, f"the server's peak RSS grew {grown_mib:.1f} MiB streaming 1 GiB"
    assert (max(peak) - peak[0]) / 1024 < 32
    print(f"\n1 GiB streamed in {seconds:.2f} s ({GiB / MiB / seconds:.0f} MiB/s); "
          f"server peak RSS +{grown_mib:.1f} MiB")


def test_a_download_resumes_mid_file(server: tuple[str, int, Path], files: Path) -> None:
    url = server[0]
    first = io.BytesIO()
    head = stream_resource(url, "file:///files/doc.bin", first, range="bytes=0-999999")
    assert head.status == 206 and head.size == 1_000_000
    assert head.headers["content-range"] == f"bytes 0-999999/{3 * MiB}"
    rest = io.BytesIO()
    tail = stream_resource(url, "file:///files/doc.bin", rest, range="bytes=1000000-", if_range=head.etag)
    assert tail.status == 206 and tail.etag == head.etag
    assert tail.headers["content-range"] == f"bytes 1000000-{3 * MiB - 1}/{3 * MiB}"
    assert first.getvalue() + rest.getvalue() == (files / "doc.bin").read_bytes()
    suffix = io.BytesIO()
    assert stream_resource(url, "file:///files/doc.bin", suffix, range="bytes=-10").status == 206
    assert suffix.getvalue() == (files / "doc.bin").read_bytes()[-10:]
    # more digits than any offset has (int() refuses 4,300): not a range, the whole body
    assert stream_resource(url, "file:///files/doc.bin", io.BytesIO(), range="bytes=" + "9" * 5000 + "-").status == 200


def test_if_range_detects_a_file_changed_between_two_requests(server: tuple[str, int, Path], files: Path) -> None:
    url = server[0]
    path = files / "changing.bin"
    path.write_bytes(b"A" * 500_000)
    head = stream_resource(url, "file:///files/changing.bin", io.BytesIO(), range="bytes=0-99")
    replacement = files / "changing.new"  # replaced whole (a new inode), as editors and downloads do
    replacement.write_bytes(b"B" * 500_000)
    replacement.replace(path)
    rest = io.BytesIO()
    resumed = stream_resource(url, "file:///files/changing.bin", rest, range="bytes=100-", if_range=head.etag)
    assert resumed.status == 200 and resumed.etag != head.etag  # the whole new version, not its tail
    assert rest.getvalue() == b"B" * 500_000
    with path.open("r+b") as f:  # changed in place, same size: the modification time tells
        f.write(b"C")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    again = io.BytesIO()
    changed = stream_resource(url, "file:///files/changing.bin", again, range="bytes=100-", if_range=resumed.etag)
    assert changed.status == 200 and again.getvalue()[:1] == b"C"
    same = stream_resource(url, "file:///files/changing.bin", io.BytesIO(), range="bytes=100-",
                           if_range=changed.etag)
    assert same.status == 206 and same.size == 500_000 - 100


def test_ranges_that_cannot_be_served(server: tuple[str, int, Path]) -> None:
    url = server[0]
    beyond = stream_resource(url, "file:///files/doc.bin", io.BytesIO(), range=f"bytes={3 * MiB}-")
    assert beyond.status == 416 and beyond.headers["content-range"] == f"bytes */{3 * MiB}" and beyond.size == 0
    for ignored in ("bytes=0-1,5-6", "lines=1-2", "bytes=9-3", "nonsense"):  # the whole body (RFC 9110)
        whole = stream_resource(url, "file:///files/doc.bin", io.BytesIO(), range=ignored)
        assert whole.status == 200 and whole.size == 3 * MiB, ignored
    dated = stream_resource(url, "file:///files/doc.bin", io.BytesIO(), range="bytes=5-",
                            if_range="Wed, 21 Oct 2015 07:28:00 GMT")
    assert dated.status == 200 and dated.size == 3 * MiB


def test_bytes_and_text_in_memory_with_ranges(server: tuple[str, int, Path]) -> None:
    url = server[0]
    out = io.BytesIO()
    blob = stream_resource(url, "mem://blob", out)
    assert blob.status == 200 and out.getvalue() == bytes(range(256)) * 40
    assert blob.headers["content-type"] == "image/png" and blob.headers["content-length"] == "10240"
    read = modern_post(url, modern("resources/read", {"uri": "mem://blob"})).json()["result"]["contents"][0]
    assert blob.etag == f'"{read["_meta"]["io.resourcekit/version"]}"'  # the version resources/read gives
    part = io.BytesIO()
    assert stream_resource(url, "mem://blob", part, range="bytes=256-511", if_range=blob.etag).status == 206
    assert part.getvalue() == bytes(range(256))
    text = io.BytesIO()
    assert stream_resource(url, "mem://hello", text).headers["content-type"] == "text/plain"
    assert text.getvalue() == b"hello, stream\n"


def test_iterators_are_sent_chunked_as_they_come(server: tuple[str, int, Path]) -> None:
    url = server[0]
    out = io.BytesIO()
    got = stream_resource(url, "gen://counting", out)
    expected = b"".join(b"%d,%d\n" % (i, i * i) for i in range(100_000))
    assert got.status == 200 and got.complete and out.getvalue() == expected
    assert "content-length" not in got.headers and "accept-ranges" not in got.headers and got.etag is None
    assert got.headers["content-type"] == "text/csv"
    ranged = io.BytesIO()
    assert stream_resource(url, "gen://counting", ranged, range="bytes=0-9").status == 200  # no ranges: whole
    ticks = io.BytesIO()
    assert stream_resource(url, "gen://async", ticks).complete
    assert ticks.getvalue() == b"".join(f"tick {i}\n".encode() for i in range(5))


def test_a_session_streams_and_the_version_is_recorded(server: tuple[str, int, Path]) -> None:
    url = server[0]
    headers = session(url, {"resourceStreaming": {"maxStreamSize": 10 * MiB}})
    message = {"jsonrpc": "2.0", "id": 1, "method": "resources/stream", "params": {"uri": "gen://counting"}}
    response = post(url, message, headers)
    assert response.status_code == 200 and response.headers["content-type"] == "text/csv"
    assert response.content.endswith(b"99999,9999800001\n")
    listed = post(url, {"jsonrpc": "2.0", "id": 2, "method": "resources/list"}, headers).json()["result"]
    counting = next(r for r in listed["resources"] if r["uri"] == "gen://counting")
    streamed = hashlib.sha256(response.content + b"\0text/csv").hexdigest()[:32]  # contents.version_of's
    assert counting["_meta"]["io.resourcekit/version"] == streamed


# --- what is refused before the first byte ------------------------------------------------------


def test_errors_before_the_first_byte_are_json_rpc_errors(server: tuple[str, int, Path]) -> None:
    url, _, log = server
    missing = stream_error(url, "file:///files/absent.bin")
    assert missing.code == -32602 and missing.data == {"uri": "file:///files/absent.bin"}  # 2026-07-28's code
    plain = stream_error(url, "mem://plain")
    assert plain.code == -32003 and plain.message == "Stream not supported"
    assert plain.data["suggestion"] == "Use resources/read for this resource"
    too_large = stream_error(url, "file:///files/doc.bin", max_stream_size=MiB)
    assert too_large.code == -32004 and too_large.data == {"uri": "file:///files/doc.bin", "size": 3 * MiB,
                                                           "maxStreamSize": MiB}
    assert stream_error(url, "mem://blob", max_stream_size=100).code == -32004
    failing = stream_error(url, "gen://failing-first")
    assert (failing.code, failing.message) == (-32603, "Internal error")
    assert "secret" not in str(failing.data)
    assert "secret detail of the first chunk" in log.read_text()  # logged, never sent
    headers = session(url, {"resourceStreaming": {}})
    gone = post(url, {"jsonrpc": "2.0", "id": 3, "method": "resources/stream", "params": {"uri": "mem://x"}},
                headers)
    assert gone.headers["content-type"] == "application/json" and gone.json()["error"]["code"] == -32002


def test_without_the_client_capability_no_bytes_are_sent(server: tuple[str, int, Path]) -> None:
    url = server[0]
    answer = modern_post(url, modern("resources/stream", {"uri": "mem://blob"}, caps={}))
    assert answer.headers["content-type"] == "application/json"
    error = answer.json()["error"]
    assert error["code"] == -32003 and "resourceStreaming" in error["data"]["reason"]
    bad = modern_post(url, modern("resources/stream", {"uri": "mem://blob"},
                                  caps={"resourceStreaming": {"maxStreamSize": "big"}})).json()["error"]
    assert bad["code"] == -32602
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    response = post(url, init)
    headers = {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    refused = post(url, {"jsonrpc": "2.0", "id": 1, "method": "resources/stream", "params": {"uri": "mem://blob"}},
                   headers).json()["error"]
    assert refused["code"] == -32003


def test_a_failure_after_the_first_byte_cuts_the_response_short(server: tuple[str, int, Path]) -> None:
    url, _, log = server
    out = io.BytesIO()
    got = stream_resource(url, "gen://failing-later", out)
    assert got.status == 200 and not got.complete and out.getvalue() == b"a" * 100_000
    assert "secret detail of a later chunk" in log.read_text()
    assert stream_resource(url, "mem://hello", io.BytesIO()).complete  # the server serves on


# --- declared and listed --------------------------------------------------------------------------


def test_streamable_resources_and_templates_are_listed_so(server: tuple[str, int, Path]) -> None:
    url = server[0]
    resources = modern_post(url, modern("resources/list", {})).json()["result"]["resources"]
    flags = {r["uri"]: r.get("streamable") for r in resources}
    assert flags["file:///big.bin"] is True and flags["mem://plain"] is None
    templates = modern_post(url, modern("resources/templates/list", {})).json()["result"]["resourceTemplates"]
    assert [t.get("streamable") for t in templates] == [True]
    discovered = modern_post(url, modern("server/discover", {})).json()["result"]
    assert discovered["capabilities"]["resources"]["stream"] is True


def test_stdio_serves_as_usual_without_the_capability(files: Path) -> None:
    server = RawServer(APP)
    try:
        caps = server.initialize("2025-06-18", {"resourceStreaming": {}})["result"]["capabilities"]
        assert "stream" not in caps["resources"]
        answer = server.request(1, "resources/stream", {"uri": "mem://hello"})
        assert answer["error"]["code"] == -32003 and "HTTP" in answer["error"]["data"]["reason"]
        read = server.request(2, "resources/read", {"uri": "mem://hello"})
        assert read["result"]["contents"][0]["text"] == "hello, stream\n"
    finally:
        server.close()


def test_resources_read_of_a_streamable_resource_keeps_working(server: tuple[str, int, Path], files: Path) -> None:
    url = server[0]
    read = modern_post(url, modern("resources/read", {"uri": "file:///files/doc.bin"})).json()["result"]
    import base64

    assert base64.b64decode(read["contents"][0]["blob"]) == (files / "doc.bin").read_bytes()


# --- limits -----------------------------------------------------------------------------------------


STREAM_HEADERS = {"content-type": "application/json", "accept": "application/json, */*",
                  "mcp-protocol-version": MODERN, "mcp-method": "resources/stream"}


def held_stream(url: str, uri: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """A ``resources/stream`` of ``uri`` whose first bytes were read; the caller reads on, or not."""
    parts = urllib.parse.urlsplit(url)
    holder = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    holder.request("POST", parts.path, body=orjson.dumps(modern("resources/stream", {"uri": uri})),
                   headers=STREAM_HEADERS)
    held = holder.getresponse()
    assert held.status == 200 and len(held.read1(1024)) > 0
    return holder, held


def served_again(url: str, within: float = 10) -> float:
    """Seconds until a stream of ``url``'s server is served whole again (its one slot given back)."""
    started = time.monotonic()
    while True:
        try:
            assert stream_resource(url, "mem://hello", io.BytesIO()).complete
            return time.monotonic() - started
        except MCPError:
            assert time.monotonic() - started < within, "the slot was never given back"
            time.sleep(0.05)


def test_concurrent_streams_are_bounded_and_given_back(files: Path) -> None:
    with http_server(APP, extra_env={"STREAM_DIR": str(files), "STREAM_LIMIT": "1"}) as (url, _):
        holder, _held = held_stream(url, "gen://slow")  # its first chunk came; it holds the slot
        busy = stream_error(url, "mem://hello")
        assert busy.code == -32603 and busy.data == {"limit": "max_byte_streams", "max": 1}
        holder.close()  # the client leaves mid-stream: the server stops and gives the slot back
        served_again(url)


def test_a_reader_that_stops_reading_gives_its_stream_back(files: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    env = {"STREAM_DIR": str(files), "STREAM_LIMIT": "1", "STREAM_STALL": "1"}
    with http_server(APP, extra_env=env, log=log) as (url, _):
        # a producer slow to make its next chunk is no stall: its stream is kept past the limit
        holder, _held = held_stream(url, "gen://slow")
        time.sleep(2.5)
        assert stream_error(url, "mem://hello").data == {"limit": "max_byte_streams", "max": 1}
        holder.close()
        served_again(url)
        # a reader that stops reading 1 GiB (the socket stays open): cut after the limit, its slot given back
        holder, _held = held_stream(url, "file:///big.bin")
        assert stream_error(url, "mem://hello").data == {"limit": "max_byte_streams", "max": 1}
        assert served_again(url) >= 0.9  # not before the limit
        holder.close()
    assert "its reader took nothing for 1 s; the response was cut" in log.read_text()


def test_a_client_that_leaves_stops_the_file_being_read(files: Path) -> None:
    with http_server(APP, extra_env={"STREAM_DIR": str(files), "STREAM_LIMIT": "1"}) as (url, proc):
        with httpx.stream("POST", url, content=orjson.dumps(modern("resources/stream", {"uri": "file:///big.bin"})),
                          headers=STREAM_HEADERS) as response:
            assert response.status_code == 200
            first = next(response.iter_bytes())
            assert first.startswith(b"first")
        reads = lambda: int(Path(f"/proc/{proc.pid}/io").read_text().split("rchar: ")[1].split()[0])  # noqa: E731
        served_again(url)  # the slot comes back once the server noticed
        settled = reads()
        time.sleep(0.5)
        assert reads() - settled < 64 * MiB  # nothing more of the 1 GiB is read


# --- the CLI --------------------------------------------------------------------------------------


def test_the_cli_streams_to_a_file(server: tuple[str, int, Path], files: Path, tmp_path: Path) -> None:
    url = server[0]
    out = tmp_path / "doc.bin"
    done = cli("read", url, "file:///files/doc.bin", "--stream", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == (files / "doc.bin").read_bytes()
    assert f"{3 * MiB} bytes" in done.stderr
    refused = cli("read", url, "mem://plain", "--stream", "-o", str(tmp_path / "plain"))
    assert refused.returncode == 1 and "Stream not supported" in refused.stderr and "-32003" in refused.stderr
    needs_url = cli("read", str(APP), "mem://hello", "--stream", "-o", str(tmp_path / "x"))
    assert needs_url.returncode != 0 and "URL" in needs_url.stderr
