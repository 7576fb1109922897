"""``resources/stream`` (SEP-2532) against ``resources/read`` of the same 64 MiB file and against the
floor (``servers/stream_floor.py``: a bare ASGI app on uvicorn sending the file in 64 KiB chunks).

    .venv/bin/python benchmarks/stream_bench.py [ROUNDS]

Each server is a real process on a free loopback port; one client (``http.client``, 256 KiB reads,
the body discarded) fetches the file ``ROUNDS`` times (default 10) per run, servers alternating,
three runs; the medians are printed: MB/s (10^6 bytes of file per second) and the server's CPU
(user + system, from ``/proc``) per MiB of file.  ``resources/read`` answers JSON with the file
base64-encoded: its bytes on the wire are 4/3 of the file's, and the client decodes nothing.
"""

from __future__ import annotations

import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.http_server import free_port, wait_for_port  # noqa: E402

SIZE = 64 * 1024 * 1024
TICK = os.sysconf("SC_CLK_TCK")
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"resourceStreaming": {}}}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def fetch(port: int, method: str | None) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"content-type": "application/json", "accept": "application/json, */*"}
    body = b"{}"
    if method is not None:
        headers.update({"mcp-protocol-version": MODERN, "mcp-method": method})
        if method == "resources/read":
            headers["mcp-name"] = "file:///bench.bin"
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                             "params": {"uri": "file:///bench.bin", "_meta": META}})
    connection.request("POST", "/mcp", body=body, headers=headers)
    response = connection.getresponse()
    assert response.status == 200, response.status
    size = 0
    while piece := response.read1(256 * 1024):
        size += len(piece)
    connection.close()
    return size


def measure(name: str, argv: list[str], port: int, method: str | None, rounds: int,
            env: dict[str, str]) -> tuple[float, float]:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        fetch(port, method)  # warm
        before, started = cpu_seconds(proc.pid), time.perf_counter()
        for _ in range(rounds):
            got = fetch(port, method)
        seconds, cpu = time.perf_counter() - started, cpu_seconds(proc.pid) - before
        expected = SIZE if method != "resources/read" else None
        assert expected is None or got == expected, (name, got)
        return SIZE * rounds / seconds / 1e6, cpu * 1000 / (SIZE * rounds / 2**20)
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "bench.bin"
        path.write_bytes(os.urandom(SIZE))
        env = {**os.environ, "BENCH_FILE": str(path), "PYTHONPATH": str(ROOT)}
        results: dict[str, list[tuple[float, float]]] = {"resources/stream": [], "resources/read": [], "floor": []}
        for _ in range(3):
            for name in results:
                port = free_port()
                if name == "floor":
                    argv = [sys.executable, str(ROOT / "benchmarks/servers/stream_floor.py"), str(port)]
                    method = None
                else:
                    argv = [sys.executable, "-m", "resourcekit", "run", str(ROOT / "benchmarks/servers/stream_app.py"),
                            "--transport", "http", "--port", str(port)]
                    method = name
                results[name].append(measure(name, argv, port, method, rounds if name != "resources/read" else 2,
                                             env))
    floor = statistics.median(r[0] for r in results["floor"])
    print(f"64 MiB file, medians of 3 runs ({rounds} fetches each; resources/read 2)")
    print("| server | MB/s | server CPU ms per MiB | vs floor |")
    print("|---|---|---|---|")
    for name, runs in results.items():
        rate = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"| {name} | {rate:,.0f} | {cpu:.2f} | {rate / floor:.2f}x |")


if __name__ == "__main__":
    main()
