"""Scale-out figures (not a test): ``python benchmarks/scale.py [--seconds S] [--subscribers N]``.

1. Streamable HTTP reads (2026-07-28) from one process, then from ``--workers 2``.
2. Handshake-era session reads: one process in memory, then one process with ``--redis``.
3. Fan-out: N ``subscriptions/listen`` streams spread over two ``--redis`` workers; the time
   from the request that calls ``notify_changed`` to the last delivery (p50/p99 over rounds).
   The streams are held by ``--client-processes`` client processes (2 by default) that read
   raw sockets; ``--client-processes 1`` reads them all with httpx in this process, which is
   itself the bottleneck. The workers' CPU time per round is printed too.

Needs ``redis-server`` on PATH; starts and stops everything itself.  The load comes from one
Python process (httpx), which saturates long before the server does: read throughput here
compares configurations, it does not measure capacity (``benchmarks/http_bench.py`` does).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "tests" / "apps" / "scale_app.py"
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
JSON = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def start(*extra: str, data: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "resourcekit", "run", str(APP), "--transport", "http",
                             "--port", str(port), *extra], env={**os.environ, "SCALE_DATA": data,
                                                                "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    deadline = time.monotonic() + 30
    while httpx.get(f"http://127.0.0.1:{port}/readyz").status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}/mcp"


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


async def read_load(urls: list[str], seconds: float, session: bool, clients: int = 16) -> float:
    done = 0
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=clients * 2)) as client:
        headers: list[dict[str, str]] = []
        if session:
            for url in urls[:1]:
                init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}}}
                answer = await client.post(url, content=orjson.dumps(init), headers=JSON)
                headers.append({**JSON, "mcp-session-id": answer.headers["mcp-session-id"]})
        deadline = time.monotonic() + seconds

        async def one(k: int) -> None:
            nonlocal done
            i = k
            while time.monotonic() < deadline:
                url = urls[i % len(urls)]
                i += 1
                if session:
                    body = {"jsonrpc": "2.0", "id": f"{k}-{i}", "method": "resources/read",
                            "params": {"uri": "data://x"}}
                    answer = await client.post(url, content=orjson.dumps(body), headers=headers[0])
                else:
                    body = {"jsonrpc": "2.0", "id": i, "method": "resources/read",
                            "params": {"uri": "data://x", "_meta": MODERN}}
                    answer = await client.post(url, content=orjson.dumps(body), headers={
                        **JSON, "mcp-protocol-version": "2026-07-28", "mcp-method": "resources/read",
                        "mcp-name": "data://x"})
                assert answer.status_code == 200, answer.text
                done += 1

        await asyncio.gather(*(one(k) for k in range(clients)))
    return done / seconds


CPU_PER_ROUND = [0.0]  # the workers' CPU milliseconds per round, of the last fan-out measured


async def fanout(urls: list[str], subscribers: int, rounds: int, data: Path, pids: list[int]) -> list[float]:
    arrived: asyncio.Queue[float] = asyncio.Queue()
    ready = 0
    limits = httpx.Limits(max_connections=subscribers + 16, max_keepalive_connections=subscribers + 16)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
            "_meta": MODERN, "notifications": {"resourceSubscriptions": ["data://fan"]}}}
        headers = {**JSON, "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen"}

        async def listen(url: str) -> None:
            nonlocal ready
            async with client.stream("POST", url, content=orjson.dumps(body), headers=headers) as response:
                async for line in response.aiter_lines():
                    if "acknowledged" in line:
                        ready += 1
                    elif "resources/updated" in line:
                        arrived.put_nowait(time.perf_counter())

        tasks = [asyncio.create_task(listen(urls[k % len(urls)])) for k in range(subscribers)]
        while ready < subscribers:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        lasts = []
        cpu = sum(map(cpu_seconds, pids))
        for r in range(rounds):
            (data / "fan").write_text(f"round {r}")
            started = time.perf_counter()
            touch = {"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                     "params": {"uri": "control://touch/fan", "_meta": MODERN}}
            await client.post(urls[r % len(urls)], content=orjson.dumps(touch), headers={
                **JSON, "mcp-protocol-version": "2026-07-28", "mcp-method": "resources/read",
                "mcp-name": "control://touch/fan"})
            last = 0.0
            for _ in range(subscribers):
                last = await asyncio.wait_for(arrived.get(), 30)
            lasts.append((last - started) * 1000)
            await asyncio.sleep(0.3)
        CPU_PER_ROUND[0] = (sum(map(cpu_seconds, pids)) - cpu) * 1000 / rounds
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return lasts


async def listen_child(urls: list[str], count: int, offset: int) -> None:
    """One client process of the fan-out: ``count`` listen streams over plain sockets (the bytes are
    only searched, so the client costs little); prints "ready", then per round the
    ``time.monotonic()`` of its last delivery (one clock for every process on a host)."""
    arrived: list[float] = []
    ready = 0
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "_meta": MODERN, "notifications": {"resourceSubscriptions": ["data://fan"]}}})

    async def listen(url: str) -> None:
        nonlocal ready
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        writer.write(f"POST {parts.path} HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-type: application/json\r\n"
                     "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n"
                     f"mcp-method: subscriptions/listen\r\ncontent-length: {len(body)}\r\n\r\n".encode() + body)
        tail = b""
        while chunk := await reader.read(65536):
            now = time.monotonic()
            seen = tail + chunk
            if b"acknowledged" in seen and b"acknowledged" not in tail:
                ready += 1
                if ready == count:
                    print("ready", flush=True)
            for _ in range(seen.count(b"resources/updated") - tail.count(b"resources/updated")):
                arrived.append(now)
                if len(arrived) % count == 0:
                    print(f"{max(arrived[-count:]):.6f}", flush=True)
            tail = seen[-32:]

    await asyncio.gather(*(listen(urls[(offset + k) % len(urls)]) for k in range(count)))


async def fanout_processes(urls: list[str], subscribers: int, rounds: int, data: Path, processes: int,
                           pids: list[int]) -> list[float]:
    """The fan-out with its listen streams spread over ``processes`` client processes."""
    shares = [subscribers // processes + (1 if k < subscribers % processes else 0) for k in range(processes)]
    children = [await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--listen-child", ",".join(urls), "--subscribers", str(n), "--offset", str(k),
        stdout=asyncio.subprocess.PIPE) for k, n in enumerate(shares) if n]
    try:
        for child in children:
            assert child.stdout is not None
            assert (await asyncio.wait_for(child.stdout.readline(), 120)).strip() == b"ready"
        await asyncio.sleep(0.5)
        lasts = []
        cpu = sum(map(cpu_seconds, pids))
        async with httpx.AsyncClient(timeout=60) as client:
            for r in range(rounds):
                (data / "fan").write_text(f"round {r}")
                started = time.monotonic()
                touch = {"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                         "params": {"uri": "control://touch/fan", "_meta": MODERN}}
                await client.post(urls[r % len(urls)], content=orjson.dumps(touch), headers={
                    **JSON, "mcp-protocol-version": "2026-07-28", "mcp-method": "resources/read",
                    "mcp-name": "control://touch/fan"})
                ends = [float(await asyncio.wait_for(c.stdout.readline(), 30)) for c in children
                        if c.stdout is not None]
                lasts.append((max(ends) - started) * 1000)
                await asyncio.sleep(0.3)
        CPU_PER_ROUND[0] = (sum(map(cpu_seconds, pids)) - cpu) * 1000 / rounds
        return lasts
    finally:
        for child in children:
            child.terminate()
            await child.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--client-processes", type=int, default=2,
                        help="client processes holding the listen streams (1: this process, as before)")
    parser.add_argument("--fanout-only", action="store_true", help="skip the read throughput figures")
    parser.add_argument("--listen-child", help=argparse.SUPPRESS)
    parser.add_argument("--offset", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.listen_child:
        asyncio.run(listen_child(args.listen_child.split(","), args.subscribers, args.offset))
        return
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is needed")
    tmp = Path(tempfile.mkdtemp())
    (tmp / "x").write_text("hello")
    port = free_port()
    redis = subprocess.Popen([binary, "--save", "", "--appendonly", "no", "--port", str(port), "--dir", str(tmp)],
                             stdout=subprocess.DEVNULL)
    wait_port(port)
    url = f"redis://127.0.0.1:{port}/0"
    data = str(tmp)
    try:
        if not args.fanout_only:
            reads(args.seconds, url, data)
        a, url_a = start("--redis", url, data=data)
        b, url_b = start("--redis", url, data=data)
        try:
            pids = [a.pid, b.pid]
            if args.client_processes > 1:
                lasts = asyncio.run(fanout_processes([url_a, url_b], args.subscribers, args.rounds, tmp,
                                                     args.client_processes, pids))
            else:
                lasts = asyncio.run(fanout([url_a, url_b], args.subscribers, args.rounds, tmp, pids))
            lasts.sort()
            cpu = CPU_PER_ROUND[0]
        finally:
            stop(a)
            stop(b)
        p99 = lasts[min(len(lasts) - 1, int(len(lasts) * 0.99))]
        print(f"fan-out to {args.subscribers} listen streams over 2 workers ({args.client_processes} client "
              f"processes), notify_changed to last delivery: p50 {statistics.median(lasts):.1f} ms, "
              f"p99 {p99:.1f} ms ({len(lasts)} rounds); both workers' CPU {cpu:.0f} ms per round "
              "(the 0.3 s pause between rounds included)")
    finally:
        redis.terminate()
        redis.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reads(seconds: float, url: str, data: str) -> None:
    one, endpoint = start(data=data)
    single = asyncio.run(read_load([endpoint], seconds, False))
    memory = asyncio.run(read_load([endpoint], seconds, True))
    stop(one)
    two, endpoint2 = start("--workers", "2", "--redis", url, data=data)
    double = asyncio.run(read_load([endpoint2], seconds, False))
    stop(two)
    shared, endpoint3 = start("--redis", url, data=data)
    via_redis = asyncio.run(read_load([endpoint3], seconds, True))
    stop(shared)
    print(f"2026-07-28 reads, 16 clients: 1 worker {single:,.0f} req/s; 2 workers {double:,.0f} req/s "
          f"({double / single:.2f}x)")
    print(f"handshake session reads: in memory {memory:,.0f} req/s; through Redis {via_redis:,.0f} req/s "
          f"({via_redis / memory:.2f}x)")


if __name__ == "__main__":
    main()
