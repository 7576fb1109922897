"""W5 (not a test): Streamable HTTP reads with 16 concurrent clients, resourcekit vs mcp vs fastmcp.

Each server serves the small resource of W1 over HTTP on loopback with its defaults
(resourcekit: ``resourcekit run --transport http``; mcp: ``MCPServer.run("streamable-http")``;
fastmcp: ``run(transport="http")``). 16 clients, each on its own keep-alive connection,
initialize a session (2025-11-25) and then read ``bench://small`` back to back for a few
seconds. The client is raw asyncio sockets with hand-written HTTP/1.1 (it parses JSON and SSE
bodies, Content-Length and chunked), so it costs little beside the servers. Servers alternate,
3 runs each; medians.

    .venv-bench/bin/python benchmarks/http_bench.py [--seconds 3] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
CLIENTS = 16

SERVER_MAIN = {
    "mcp": "import mcp_app; mcp_app.server.run('streamable-http', host='127.0.0.1', port={port})",
    "fastmcp": "import fastmcp_app; fastmcp_app.server.run(transport='http', host='127.0.0.1', port={port}, "
               "show_banner=False)",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(name: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "BENCH_WORKLOAD": "small", "PYTHONPATH": str(HERE / "servers")}
    if name == "resourcekit":
        argv = [sys.executable, "-m", "resourcekit", "run", str(HERE / "servers" / "rk_app.py"),
                "--transport", "http", "--port", str(port)]
    else:
        argv = [sys.executable, "-c", SERVER_MAIN[name].format(port=port)]
    proc = subprocess.Popen(argv, env=env, cwd=HERE / "servers", stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{name} did not start")


class Conn:
    def __init__(self, port: int) -> None:
        self.port = port
        self.session: str | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def post(self, message: dict[str, object]) -> tuple[int, dict[str, str], bytes]:
        body = orjson.dumps(message)
        head = [b"POST /mcp HTTP/1.1", b"host: 127.0.0.1:%d" % self.port, b"content-type: application/json",
                b"accept: application/json, text/event-stream", b"content-length: %d" % len(body),
                b"mcp-protocol-version: 2025-11-25"]
        if self.session:
            head.append(b"mcp-session-id: " + self.session.encode())
        self.writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if "content-length" in headers:
            data = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            chunks = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                chunks.append(chunk[:-2])
            data = b"".join(chunks)
        else:
            data = b""
        return status, headers, data


def result_of(data: bytes) -> dict[str, object]:
    if data.startswith(b"{"):
        return orjson.loads(data)  # type: ignore[no-any-return]
    for line in data.split(b"\n"):  # SSE: the last data line carrying a response
        if line.startswith(b"data:") and b'"id"' in line:
            return orjson.loads(line[5:])  # type: ignore[no-any-return]
    raise ValueError(f"no JSON-RPC response in {data[:200]!r}")


async def client(port: int, seconds: float, latencies: list[float]) -> int:
    conn = Conn(port)
    await conn.open()
    status, headers, data = await conn.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    assert status == 200, (status, data[:200])
    conn.session = headers.get("mcp-session-id")
    await conn.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    reads, rid = 0, 1
    deadline = time.perf_counter() + seconds
    while True:
        started = time.perf_counter()
        if started >= deadline:
            break
        status, _, data = await conn.post({"jsonrpc": "2.0", "id": rid, "method": "resources/read",
                                           "params": {"uri": "bench://small"}})
        response = result_of(data)
        assert status == 200 and "result" in response, response
        latencies.append(time.perf_counter() - started)
        reads += 1
        rid += 1
    conn.writer.close()
    return reads


def measure(name: str, seconds: float) -> dict[str, float]:
    port = free_port()
    proc = start(name, port)
    try:
        latencies: list[float] = []

        async def run() -> float:
            started = time.perf_counter()
            counts = await asyncio.gather(*(client(port, seconds, latencies) for _ in range(CLIENTS)))
            return sum(counts) / (time.perf_counter() - started)

        rps = asyncio.run(run())
        latencies.sort()
        return {"rps": rps, "p50_ms": latencies[len(latencies) // 2] * 1000,
                "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000}
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--servers", default="resourcekit,mcp,fastmcp")
    args = parser.parse_args()
    names = args.servers.split(",")
    runs: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    for _ in range(args.runs):
        for name in names:
            runs[name].append(measure(name, args.seconds))
            print(name, {k: round(v, 1) for k, v in runs[name][-1].items()}, file=sys.stderr)
    med = {n: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for n, rs in runs.items()}
    print(f"| W5 Streamable HTTP, {CLIENTS} clients | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    print("| req/s | " + " | ".join(f"{med[n]['rps']:,.0f}" for n in names) + " |")
    print("| p50 / p99 latency, ms | " + " | ".join(f"{med[n]['p50_ms']:.1f} / {med[n]['p99_ms']:.1f}"
                                                   for n in names) + " |")
    base = med.get("resourcekit")
    if base:
        for other in names[1:]:
            print(f"resourcekit / {other}: {base['rps'] / med[other]['rps']:.1f}x req/s")


if __name__ == "__main__":
    main()
