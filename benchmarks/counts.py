"""What one read costs, counted rather than timed: this checkout against the baseline, side by side.

Timings on a shared VM swing by 10% between runs of one commit; counts do not.  For each workload a
server reads N1 and then N2 times, each under callgrind (valgrind), and (total(N2) - total(N1)) /
(N2 - N1) is what one more read costs: start-up, warm-up and shutdown cancel out.  ``--ops`` counts
instead, with ``sys.settrace``, the bytecodes each Python function runs and the calls per read (the
interpreter's share of a read, function by function).

Workloads, as ``run.py`` names them:

  W1   stdio, a small text from a sync handler       a real ``python -P -m resourcekit run
  W1a  stdio, the same from an ``async def`` handler  servers/rk_app.py``, driven over its pipes:
  W3   stdio, template reads over 4,096 URIs          32 requests a write, 64 in flight
  W3c  stdio, template reads, every URI new
  W5   Streamable HTTP, a session's read, sync        in process: ``ASGIApp`` and 16 client
  W5a  the same, ``async def``                        coroutines, no uvicorn, no sockets
  W5m  a 2026-07-28 stateless read, sync              (uvloop when installed, as served)

In process, the clients' own instructions are counted too (the same on both sides); ``--ops``
leaves their functions out.

    python benchmarks/counts.py                      # every workload, instructions per read
    python benchmarks/counts.py --workloads W1,W5    # some
    python benchmarks/counts.py --ops                # bytecodes and calls per read, by function

resourcekit and baseline (``BENCH_BASELINE_DIR``) run from the same regular installs as in
``run.py``.  Instructions need valgrind; ``--ops`` needs nothing.  A run of every workload takes
about 5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SERVERS_DIR = HERE / "servers"
THIS = Path(__file__).resolve()
STDIO = ("W1", "W1a", "W3", "W3c")
HTTP = ("W5", "W5a", "W5m")
WORKLOAD_OF = {"W1": "small", "W1a": "small-async", "W3": "templates", "W3c": "templates",
               "W5": "small", "W5a": "small-async", "W5m": "small"}
# reads at the two counts: W3's lower count has read each of its 4,096 URIs once already
SIZES = {"W3": (6000, 14000), **{w: (2000, 12000) for w in ("W1", "W1a", "W3c")},
         **{w: (1600, 6400) for w in HTTP}}
OPS_SIZES = {"W3": (6000, 10000), **{w: (1000, 3000) for w in (*STDIO, *HTTP) if w != "W3"}}
HTTP_CLIENTS = 16
PIPELINE = 64  # stdio requests in flight
BLOCK = 32  # stdio requests a write
DESCRIPTION = {
    "W1": "stdio read, sync handler", "W1a": "stdio read, async def handler",
    "W3": "stdio template read, 4,096 URIs", "W3c": "stdio template read, each URI new",
    "W5": "HTTP session read, sync (in process)", "W5a": "HTTP session read, async def (in process)",
    "W5m": "HTTP 2026-07-28 read (in process)",
}


# --------------------------------------------------------------------------- the children


def drive_stdio(argv: list[str], env: dict[str, str], cwd: Path, uri: Callable[[int], str], n: int) -> None:
    """Start the server with ``argv``, initialize, read ``uri(i)`` for i in 1..``n`` pipelined, close
    its input."""
    import orjson
    from run import PROTOCOL_VERSION

    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=cwd)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def send(data: bytes) -> None:
        stdin.write(data)
        stdin.flush()

    hello = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "counts", "version": "0"}}
    send(orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}) + b"\n")
    if b'"result"' not in stdout.readline():
        raise SystemExit(f"{argv}: initialize failed")
    send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    sent = got = 0
    while got < n:
        if sent < n and sent - got <= PIPELINE - BLOCK:
            lines = []
            while sent < n and sent - got < PIPELINE and len(lines) < BLOCK:
                sent += 1
                lines.append(b'{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"%s"}}\n'
                             % (sent, uri(sent).encode()))
            send(b"".join(lines))
        line = stdout.readline()
        if b'"result"' not in line:
            raise SystemExit(f"a read failed: {line[:200]!r}")
        got += 1
    stdin.close()
    proc.wait()


def serve_http(workload: str, n: int) -> None:
    """In a child: ``ASGIApp`` over the workload's resource, ``HTTP_CLIENTS`` coroutines reading
    ``n`` times in all (after a warm-up of 20 reads each)."""
    import asyncio

    import _content as c
    import orjson

    from resourcekit import App
    from resourcekit.transports.http.asgi import ASGIApp

    app = App("bench")
    if workload == "W5a":
        @app.resource(c.SMALL_URI)
        async def small_async() -> str:
            return c.SMALL_TEXT
    else:
        @app.resource(c.SMALL_URI)
        def small() -> str:
            return c.SMALL_TEXT
    asgi = ASGIApp(app)
    base = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream")]
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}

    async def post(headers: list[tuple[bytes, bytes]], body: bytes) -> list[dict[str, Any]]:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "",
                 "headers": headers, "client": ("127.0.0.1", 5555), "server": ("127.0.0.1", 8000)}
        sent: list[dict[str, Any]] = []
        given = False

        async def receive() -> dict[str, Any]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Future()  # the client stays
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await asgi(scope, receive, send)
        return sent

    async def client(reads: int) -> None:
        if workload == "W5m":
            headers = [*base, (b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", b"resources/read"),
                       (b"mcp-name", c.SMALL_URI.encode())]
        else:
            init = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "counts", "version": "0"}}})
            sid = dict((await post(base, init))[0]["headers"])[b"mcp-session-id"]
            headers = [*base, (b"mcp-protocol-version", b"2025-11-25"), (b"mcp-session-id", sid)]
            await post(headers, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        params: dict[str, Any] = {"uri": c.SMALL_URI}
        if workload == "W5m":
            params["_meta"] = meta
        for i in range(reads):
            sent = await post(headers, orjson.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "resources/read",
                                                     "params": params}))
            if sent[0]["status"] != 200:
                raise SystemExit(f"{workload}: a read failed: {sent!r}")

    async def main() -> None:
        asgi.start()
        await asyncio.gather(*[client(20) for _ in range(HTTP_CLIENTS)])
        await asyncio.gather(*[client(n // HTTP_CLIENTS) for _ in range(HTTP_CLIENTS)])
        asgi.close()

    try:
        import uvloop
    except ImportError:
        asyncio.run(main())
    else:
        uvloop.run(main())


def trace_ops(out: str) -> None:
    """Count each Python function's bytecodes and calls in this process, every thread; written to
    ``out`` as JSON at exit."""
    ops: collections.Counter[str] = collections.Counter()
    calls: collections.Counter[str] = collections.Counter()

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        code = frame.f_code
        key = f"{Path(code.co_filename).name}:{code.co_name}"
        if event == "call":
            calls[key] += 1
            frame.f_trace_opcodes = True
        elif event == "opcode":
            ops[key] += 1
        return tracer

    def dump() -> None:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        Path(out).write_text(json.dumps({"ops": ops, "calls": calls}))

    sys.settrace(tracer)
    threading.settrace(tracer)
    atexit.register(dump)


def child(argv: list[str]) -> None:
    """``counts.py --child stdio OUT APP`` (the server, traced into OUT) or ``--child http OUT|-
    WORKLOAD N`` (the in-process clients and server, traced when OUT is a file)."""
    kind, out = argv[0], argv[1]
    sys.path.insert(0, str(SERVERS_DIR))
    if out != "-":
        trace_ops(out)
    if kind == "stdio":
        from resourcekit import cli

        cli.main(["run", argv[2]])
    else:
        serve_http(argv[2], int(argv[3]))


# --------------------------------------------------------------------------- the parent


def run_once(name: str, workload: str, n: int, mode: str) -> Any:
    """Instructions of one run (``mode`` "ir") or its bytecode and call counts ("ops")."""
    import run as bench

    env = bench.server_env(name, BENCH_WORKLOAD=WORKLOAD_OF[workload], PYTHONHASHSEED="0")
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(SERVERS_DIR)])
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        prefix = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] if mode == "ir" else []
        trace = out if mode == "ops" else "-"
        python = [sys.executable, *bench.PY_FLAGS]
        if workload in STDIO:  # instructions: what run.py starts, under valgrind; bytecodes: traced
            app = str(SERVERS_DIR / "rk_app.py")
            server = ["-m", "resourcekit", "run", app] if mode == "ir" else [str(THIS), "--child", "stdio", out, app]
            uri = {"W3": lambda i: bench.W3_URIS[i & 4095], "W3c": bench.never_read}.get(
                workload, lambda i: bench.content.SMALL_URI)  # run.py's own
            drive_stdio([*prefix, *python, *server], env, bench.server_cwd(name), uri, n)
        else:
            argv = [*prefix, *python, str(THIS), "--child", "http", trace, workload, str(n)]
            subprocess.run(argv, env=env, cwd=bench.server_cwd(name), check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        text = Path(out).read_text()
    if mode == "ops":
        return json.loads(text)
    for line in text.splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"{workload}: no totals in callgrind's output")


def per_read(name: str, workload: str, mode: str, pool: ThreadPoolExecutor) -> Any:
    lo, hi = (OPS_SIZES if mode == "ops" else SIZES)[workload]
    a, b = pool.map(lambda n: run_once(name, workload, n, mode), (lo, hi))
    if mode == "ir":
        return (b - a) / (hi - lo)
    return {kind: {k: (b[kind].get(k, 0) - a[kind].get(k, 0)) / (hi - lo) for k in set(a[kind]) | set(b[kind])
                   if not k.startswith(f"{THIS.name}:")}  # (the in-process HTTP clients': not the server's)
            for kind in ("ops", "calls")}


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=",".join((*STDIO, *HTTP)), help="comma-separated (default: all)")
    parser.add_argument("--ops", action="store_true", help="bytecodes and calls per read, by function")
    parser.add_argument("--top", type=int, default=12, help="--ops: functions shown per server")
    args = parser.parse_args()
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in workloads if w not in WORKLOAD_OF]
    if unknown:
        parser.error(f"unknown workloads: {', '.join(unknown)} (known: {', '.join(WORKLOAD_OF)})")
    mode = "ops" if args.ops else "ir"
    if mode == "ir" and subprocess.run(["valgrind", "--version"], capture_output=True).returncode:
        raise SystemExit("instruction counts need valgrind (apt-get install valgrind); --ops needs nothing")
    sys.path.insert(0, str(HERE))  # run.py's installs, environments and URIs
    import run as bench

    names = ["resourcekit", *(["baseline"] if os.environ.get(bench.BASELINE_ENV) else [])]
    if len(names) == 1:
        print(f"!! no baseline: {bench.BASELINE_ENV} is not set (a checkout of the commit to compare with)")
    bench.install_servers(names)
    with ThreadPoolExecutor(2) as pool:
        if mode == "ir":
            print("| workload | " + " | ".join(f"{n} (instructions per read)" for n in names)
                  + (" | resourcekit/baseline |" if len(names) > 1 else " |"))
            print("|---" * (len(names) + 1 + (len(names) > 1)) + "|")
            for w in workloads:
                got = [per_read(n, w, mode, pool) for n in names]
                ratio = f" | {got[0] / got[1]:.3f}x" if len(got) > 1 else ""
                print(f"| {w} {DESCRIPTION[w]} | " + " | ".join(f"{g / 1000:.1f}k" for g in got) + ratio + " |",
                      flush=True)
            return
        for w in workloads:
            for n in names:
                got = per_read(n, w, mode, pool)
                ops, calls = got["ops"], got["calls"]
                print(f"\n{w} {DESCRIPTION[w]}, {n}: {sum(ops.values()):.0f} bytecodes in "
                      f"{sum(calls.values()):.2f} Python calls per read")
                for key in sorted(ops, key=lambda k: -ops[k])[:args.top]:
                    if ops[key] >= 0.5:
                        print(f"  {ops[key]:7.1f} bytecodes {calls.get(key, 0):5.2f} calls  {key}")


if __name__ == "__main__":
    main()
