"""Side-by-side benchmark: resourcekit vs mcp 2.3.0 (MCPServer) vs fastmcp 4.x vs the raw limits.

The raw limits are what one Python process can do with orjson and nothing else: raw_loop.py over
stdio, raw_http.py (asyncio) over HTTP, and asgi, the same replies as a bare ASGI app on uvicorn
(raw_asgi.py, W5 only): the best any framework on uvicorn can do. The asyncio floor
(raw_asyncio.py, W4 and W2 only) is raw_loop.py driven by an asyncio loop: no server on asyncio
starts faster. The off-loop floor (raw_asgi_thread.py, W5 only) is the bare ASGI app with each reply
made in a worker thread: no framework that runs sync handlers off the loop serves faster.

With BENCH_BASELINE_DIR set to another checkout (a directory holding a resourcekit/ package, e.g. a
`git worktree` of an earlier commit), a fifth server, baseline, serves the same rk_app.py with that
checkout's resourcekit, and the report shows resourcekit/baseline.

Every server is a real stdio subprocess. One client of our own (raw JSON-RPC over the
pipes, newline-delimited, orjson, no asyncio) drives them, alternating servers inside
one run, the order reversed in every other run: A1 B1 C1 D1, D2 C2 B2 A2, A3 ...

    python benchmarks/run.py            # full: 3 runs each, ~7-10 minutes
    python benchmarks/run.py --quick    # 1 run each, short durations, ~1 minute
    python benchmarks/run.py --check    # issue 17's target ratios from a short run; exit 1 if one falls short

Run it with the bench venv's python (see benchmarks/README.md). Results go to
benchmarks/results.json and benchmarks/RESULTS.md (plus chart.png when matplotlib is there).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import importlib.util
import multiprocessing
import os
import platform
import resource
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SERVERS_DIR = HERE / "servers"
LOG_DIR = HERE / ".logs"
PROTOCOL_VERSION = "2025-11-25"
SERVER_NAMES = ("resourcekit", "baseline", "editable", "mcp", "fastmcp", "raw", "asyncio", "asgi", "asgi-thread")
# servers with no stdio side: they run W5 only (the other workloads skip them)
HTTP_ONLY = ("asgi", "asgi-thread")
HTTP_WORKLOADS = {"asgi": ("W5", "W5a"), "asgi-thread": ("W5",)}  # (the off-loop floor is a sync handler's)
# W1a and W5a: W1 and W5 with the handler an ``async def``: resourcekit (and baseline) against the
# raw limits, whose replies have no handler; mcp and fastmcp are not run again for them
ASYNC_WORKLOADS = ("W1a", "W5a")
SYNC_ONLY = ("mcp", "fastmcp")
# the floor of any server on asyncio (raw_loop.py driven by an asyncio loop): start-up only (W4, W2)
START_ONLY = ("asyncio", "editable")
# editable (W4 and W2 only): this checkout as CI and a developer run it, an editable install in the
# project's venv (.venv, with the dev extras: the OpenTelemetry SDK among them), its import hook in
# front; BENCH_EDITABLE_PYTHON names another venv's python
EDITABLE_PYTHON = os.environ.get("BENCH_EDITABLE_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
# resourcekit and baseline are served from a regular (non-editable) install of their checkout: the
# package's files copied into a directory of their own and compiled to bytecode, as pip installs a
# wheel (install_servers); that directory alone is put on PYTHONPATH
INSTALL_DIR = HERE / ".install"
# resourcekit and baseline serve the same servers/rk_app.py, each with the resourcekit package of
# its own checkout: this one, or the one named by BENCH_BASELINE_DIR (an earlier commit).
RK_SERVERS = ("resourcekit", "baseline")
RK_ONLY = ("W5m",)  # 2026-07-28 stateless reads: measured against resourcekit's own W5
BASELINE_ENV = "BENCH_BASELINE_DIR"
# -P (3.11+): no script or working directory in front of sys.path, so that PYTHONPATH alone says
# which checkout's resourcekit is imported (the working directory is that checkout too, for 3.10).
PY_FLAGS = ["-P"] if sys.version_info >= (3, 11) else []
W5_CLIENTS = 16  # concurrent HTTP clients in W5, one keep-alive connection each
F_SETPIPE_SZ = 1031  # Linux fcntl
# Both pipes are enlarged (default 64 KiB) so that a 1 MiB reply is not cut into 16 wake-ups of
# client and server; BENCH_PIPE_SIZE=0 keeps the system default.
PIPE_SIZE = int(os.environ.get("BENCH_PIPE_SIZE", str(1 << 20)))


# --------------------------------------------------------------------------- servers


def rk_checkout(name: str) -> Path:
    """The directory whose resourcekit/ package serves rk_app.py for server `name`."""
    if name == "baseline":
        return Path(os.environ[BASELINE_ENV]).resolve()
    return ROOT


# The two installs' directories have names of one length, so the two children differ in nothing
# but the package's code: with `.install/resourcekit` against `.install/baseline` (the same commit in
# both columns), W6's CPU per read was 1.16-1.39x in the resourcekit column in every run of nine;
# with names of one length, 0.91x and 0.99x (medians of 3).
INSTALL_NAMES = {"resourcekit": "this", "baseline": "base"}


def rk_installed(name: str) -> Path:
    """The directory holding the regular install of server `name`'s resourcekit (install_servers)."""
    return INSTALL_DIR / INSTALL_NAMES[name]


def install_servers(servers: list[str]) -> None:
    """Install resourcekit (and baseline) the regular way: its package copied out of the checkout and
    compiled, as from a wheel (a checkout's own directory would serve as well, but nothing stale or
    editable can come in front of a copy)."""
    import compileall

    for name in servers:
        if name in RK_SERVERS:
            target = rk_installed(name)
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(rk_checkout(name) / "resourcekit", target / "resourcekit",
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            compileall.compile_dir(str(target / "resourcekit"), quiet=1)


def _rk_argv(*extra: str, python: str = sys.executable) -> list[str]:
    """resourcekit and baseline start alike: `python -P -m resourcekit run rk_app.py ...`."""
    return [python, *PY_FLAGS, "-m", "resourcekit", "run", str(SERVERS_DIR / "rk_app.py"), *extra]


def server_argv(name: str) -> list[str]:
    if name in RK_SERVERS:
        return _rk_argv()
    if name == "editable":
        return _rk_argv(python=EDITABLE_PYTHON)
    file = {"mcp": "mcp_app.py", "fastmcp": "fastmcp_app.py", "raw": "raw_loop.py", "asyncio": "raw_asyncio.py"}[name]
    return [sys.executable, str(SERVERS_DIR / file)]


def server_env(name: str, **extra: str) -> dict[str, str]:
    """The child's environment: resourcekit and baseline get their checkout in front of PYTHONPATH."""
    env = dict(os.environ, **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    if name in RK_SERVERS:
        env["PYTHONPATH"] = os.pathsep.join([str(rk_installed(name)), *filter(None, [env.get("PYTHONPATH")])])
    return env


def server_cwd(name: str) -> Path:
    return rk_checkout(name) if name in RK_SERVERS else ROOT


class ServerError(Exception):
    pass


def wrapped_argv(name: str, argv: list[str]) -> list[str]:
    """BENCH_WRAP_<NAME>: a profiler in front of the server. A wrapper that starts with a
    python ("python -m cProfile -o f.prof") takes the place of the interpreter; any other
    ("py-spy record -o f.svg --") goes in front of the whole command."""
    wrap = os.environ.get(f"BENCH_WRAP_{name.upper()}", "").split()
    if wrap and Path(wrap[0]).name.startswith("python"):
        if argv[0] != sys.executable:
            return wrap + argv
        rest = argv[1:]
        flags: list[str] = []  # the interpreter's own options (-P) stay with the interpreter
        while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
            flags.append(rest.pop(0))
        return [wrap[0], *flags, *wrap[1:], *rest]
    return wrap + argv


def start_pyspy(pid: int, stem: str) -> subprocess.Popen[bytes] | None:
    """BENCH_PYSPY_DIR=dir: sample process pid with py-spy (collapsed stacks) from here on."""
    out_dir = os.environ.get("BENCH_PYSPY_DIR")
    pyspy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not out_dir or not Path(pyspy).exists():
        return None
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [pyspy, "record", "--pid", str(pid), "--rate", "250", "--nonblocking", "--threads",
         "--format", "raw", "--output", str(Path(out_dir) / f"{stem}.txt")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    time.sleep(0.3)  # let it attach
    return proc


def stop_pyspy(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is not None:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.terminate()


def log_tail(path: Path) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return " | ".join(text[-3:]) or "no stderr"


def peak_rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class Server:
    """One server subprocess and the client end of its pipes."""

    def __init__(self, name: str, workload: str, tag: str) -> None:
        self.name = name
        env = server_env(name, BENCH_WORKLOAD=workload)
        argv = wrapped_argv(name, server_argv(name))
        LOG_DIR.mkdir(exist_ok=True)
        self.log_path = LOG_DIR / f"{name}-{tag}.stderr"
        self._log = open(self.log_path, "wb")  # noqa: SIM115
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, cwd=server_cwd(name), env=env,
            bufsize=0,
        )
        assert self.proc.stdin and self.proc.stdout
        self.fd_in = self.proc.stdin.fileno()
        self.fd_out = self.proc.stdout.fileno()
        os.set_blocking(self.fd_out, False)
        os.set_blocking(self.fd_in, False)
        if PIPE_SIZE:
            for fd in (self.fd_in, self.fd_out):
                with contextlib.suppress(OSError):
                    fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.fd_out, selectors.EVENT_READ)
        self.ps = psutil.Process(self.proc.pid)
        self._parts: list[bytes] = []
        self._pending_out = b""
        self.next_id = 1
        self.startup_s: float | None = None
        self._pyspy: subprocess.Popen[bytes] | None = None

    # -- raw I/O
    def send(self, data: bytes) -> None:
        """Queue bytes for the server and write what the pipe takes now."""
        self._pending_out += data
        self._drain_out()

    def _drain_out(self) -> None:
        while self._pending_out:
            try:
                n = os.write(self.fd_in, self._pending_out)
            except BlockingIOError:
                return
            except BrokenPipeError as exc:
                raise ServerError(f"{self.name}: server closed its stdin ({self._tail()})") from exc
            self._pending_out = self._pending_out[n:]

    def recv_lines(self, timeout: float) -> list[bytes] | None:
        """Whole lines that arrived within timeout; None if nothing arrived at all."""
        if self._pending_out:
            self._drain_out()
        if not self.sel.select(timeout):
            if self.proc.poll() is not None:
                raise ServerError(f"{self.name}: server exited with {self.proc.returncode} ({self._tail()})")
            return None
        lines: list[bytes] = []
        got_any = False
        while True:
            try:
                chunk = os.read(self.fd_out, 1 << 20)
            except BlockingIOError:
                break
            if not chunk:
                if not got_any:
                    self.proc.wait(5)
                    raise ServerError(f"{self.name}: server closed stdout ({self._tail()})")
                break
            got_any = True
            if b"\n" not in chunk:  # part of a long message: keep the pieces, join once
                self._parts.append(chunk)
                continue
            if self._parts:
                self._parts.append(chunk)
                chunk = b"".join(self._parts)
                self._parts = []
            *new, rest = chunk.split(b"\n")
            lines.extend(new)
            if rest:
                self._parts.append(rest)
        return lines

    def _tail(self) -> str:
        return log_tail(self.log_path)

    # -- JSON-RPC helpers
    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0) -> dict[str, Any]:
        rid = self.next_id
        self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(orjson.dumps(msg) + b"\n")
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise ServerError(f"{self.name}: no reply to {method} within {timeout:.0f} s")
            for line in self.recv_lines(min(left, 0.5)) or ():
                if not line.strip():
                    continue
                reply = orjson.loads(line)
                if reply.get("id") == rid and "method" not in reply:
                    if "error" in reply:
                        raise ServerError(f"{self.name}: {method} -> {reply['error']}")
                    return reply["result"]  # type: ignore[no-any-return]
                self._answer_server_request(reply)

    def _answer_server_request(self, msg: dict[str, Any]) -> None:
        if "method" in msg and "id" in msg:  # a request from the server (ping, roots/list): answer empty
            self.send(orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}}) + b"\n")

    def handshake(self, timeout: float) -> float:
        """initialize + notifications/initialized; returns seconds from spawn to the initialize reply."""
        self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "resourcekit-bench", "version": "0"},
            },
            timeout=timeout,
        )
        self.startup_s = time.perf_counter() - self.t_spawn
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self._maybe_profile()
        return self.startup_s

    def _maybe_profile(self) -> None:
        """BENCH_PYSPY_DIR=dir: sample the server with py-spy (collapsed stacks) from here on."""
        self._pyspy = start_pyspy(self.proc.pid, self.log_path.stem.replace(".stderr", ""))

    # -- measurements of the child
    def cpu_s(self) -> float:
        t = self.ps.cpu_times()
        return t.user + t.system

    def peak_rss_mib(self) -> float:
        return peak_rss_mib(self.proc.pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(3)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        stop_pyspy(self._pyspy)
        self.sel.close()
        self.proc.stdout.close()  # type: ignore[union-attr]
        self._log.close()


# --------------------------------------------------------------------------- load


def pipelined_reads(
    srv: Server, uris: Callable[[int], str], duration: float, depth: int, warmup: int, check: Callable[[dict], None]
) -> dict[str, float]:
    """Keep `depth` resources/read requests in flight for `duration` seconds."""
    sent_at: dict[int, int] = {}
    lat_ns: list[int] = []
    n = 0

    def make(k: int) -> bytes:
        nonlocal n
        rid = srv.next_id
        srv.next_id += 1
        n += 1
        sent_at[rid] = k
        return b'{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%s}}\n' % (
            rid,
            orjson.dumps(uris(n)),
        )

    def run_phase(total: int | None, seconds: float | None, record: bool) -> tuple[int, float]:
        done = 0
        in_flight = 0
        t0 = time.perf_counter()
        stop_sending = False
        now_ns = time.perf_counter_ns()
        batch = [make(now_ns) for _ in range(depth)]
        in_flight = depth
        srv.send(b"".join(batch))
        started = depth
        checked = False
        while in_flight:
            lines = srv.recv_lines(30.0)
            if lines is None:
                raise ServerError(f"{srv.name}: stalled with {in_flight} reads in flight")
            now_ns = time.perf_counter_ns()
            got = 0
            for line in lines:
                if not line:
                    continue
                msg = orjson.loads(line)
                rid = msg.get("id")
                if rid is None or "method" in msg:
                    srv._answer_server_request(msg)
                    continue
                if "result" not in msg:
                    raise ServerError(f"{srv.name}: read failed: {line[:300]!r}")
                if not checked:
                    check(msg["result"])
                    checked = True
                t_sent = sent_at.pop(rid)
                if record:
                    lat_ns.append(now_ns - t_sent)
                got += 1
            in_flight -= got
            done += got
            if not stop_sending:
                if seconds is not None and time.perf_counter() - t0 >= seconds:
                    stop_sending = True
                if total is not None and started >= total:
                    stop_sending = True
            if not stop_sending and got:
                srv.send(b"".join([make(now_ns) for _ in range(got)]))
                in_flight += got
                started += got
        return done, time.perf_counter() - t0

    run_phase(warmup, None, record=False)
    cpu0 = srv.cpu_s()
    me0 = resource.getrusage(resource.RUSAGE_SELF)
    done, elapsed = run_phase(None, duration, record=True)
    cpu = srv.cpu_s() - cpu0
    me1 = resource.getrusage(resource.RUSAGE_SELF)
    client_cpu = (me1.ru_utime - me0.ru_utime) + (me1.ru_stime - me0.ru_stime)
    lat_ns.sort()
    return {
        "reads": done,
        "seconds": elapsed,
        "rps": done / elapsed,
        "p50_ms": lat_ns[len(lat_ns) // 2] / 1e6,
        "p99_ms": lat_ns[min(len(lat_ns) - 1, int(len(lat_ns) * 0.99))] / 1e6,
        "cpu_us_per_read": cpu / done * 1e6,
        "server_cpu_share": cpu / elapsed,  # 1.0 = one core busy all the time
        "client_cpu_share": client_cpu / elapsed,
    }


def _text_of(result: dict[str, Any]) -> str:
    contents = result["contents"]
    return contents[0].get("text")  # type: ignore[no-any-return]


sys.path.insert(0, str(SERVERS_DIR))
import _content as content  # noqa: E402

sys.path.pop(0)


@dataclass
class Config:
    quick: bool
    runs: int
    w1_seconds: float
    w3_seconds: float
    w6_seconds: float
    depth: int = 64
    w6_depth: int = int(os.environ.get("BENCH_W6_DEPTH", "4"))
    w4_spawns: int = 3
    w5_seconds: float = 3.0
    w5_warmup: float = 0.5
    w5_clients: int = W5_CLIENTS
    w5_procs: int = int(os.environ.get("BENCH_W5_PROCS", "1"))
    list_sizes: tuple[str, ...] = ("list10k", "list100k")
    startup_timeout: float = 120.0
    slow_once: dict[tuple[str, str], float] = field(default_factory=dict)  # (server, workload) -> timeout, 1 run
    skip: set[tuple[str, str]] = field(default_factory=set)  # (server, workload) not measured


def w1(name: str, cfg: Config, tag: str, workload: str = "small") -> dict[str, Any]:
    srv = Server(name, workload, tag)
    try:
        startup = srv.handshake(cfg.startup_timeout)

        def check(result: dict[str, Any]) -> None:
            assert _text_of(result) == content.SMALL_TEXT, result

        r = pipelined_reads(srv, lambda i: content.SMALL_URI, cfg.w1_seconds, cfg.depth, 500, check)
        r["startup_s"] = startup
        r["peak_rss_mib"] = srv.peak_rss_mib()
        return r
    finally:
        srv.close()


# W3's URIs: 4,096 instances spread over every template, in a scattered order (read again and again)
W3_URIS = [f"tpl{(j * 7919) % content.N_TEMPLATES}://item/{j}" for j in range(4096)]


def never_read(i: int) -> str:
    """W3c's i-th URI: an instance no read before asked for, over every template in a scattered order."""
    return f"tpl{(i * 7919) % content.N_TEMPLATES}://item/{i}"


def w3(name: str, cfg: Config, tag: str, fresh: bool = False) -> dict[str, Any]:
    """W3: reads cycling over 4,096 URIs of 1,000 templates (after the first round, caches answer);
    W3c (``fresh``): every read a URI the server has not read before, as a client reading
    ``notes://{id}`` for many ids does."""
    srv = Server(name, "templates", tag)
    try:
        startup = srv.handshake(cfg.startup_timeout)
        def check(result: dict[str, Any]) -> None:
            text = _text_of(result)
            assert text.startswith("item ") and " of template " in text, result

        r = pipelined_reads(srv, never_read if fresh else lambda i: W3_URIS[i & 4095], cfg.w3_seconds, cfg.depth,
                            500, check)
        r["startup_s"] = startup
        r["peak_rss_mib"] = srv.peak_rss_mib()
        return r
    finally:
        srv.close()


def w6(name: str, cfg: Config, tag: str) -> dict[str, Any]:
    srv = Server(name, "big", tag)
    big = content.big_text()
    try:
        startup = srv.handshake(cfg.startup_timeout)

        def check(result: dict[str, Any]) -> None:
            assert _text_of(result) == big, "1 MiB content differs"

        r = pipelined_reads(srv, lambda i: content.BIG_URI, cfg.w6_seconds, cfg.w6_depth, 20, check)
        r["mb_per_s"] = r["rps"] * len(big) / 1e6
        r["startup_s"] = startup
        r["peak_rss_mib"] = srv.peak_rss_mib()
        return r
    finally:
        srv.close()


def w2(name: str, workload: str, cfg: Config, tag: str, timeout: float) -> dict[str, Any]:
    expected = content.LIST_SIZES[workload]
    srv = Server(name, workload, tag)
    try:
        try:
            startup = srv.handshake(timeout)
        except ServerError as exc:
            if "within" in str(exc):
                return {"timeout_s": timeout, "error": str(exc)}
            raise
        t0 = time.perf_counter()
        cursor = None
        pages = 0
        seen = 0
        while True:
            result = srv.request("resources/list", {"cursor": cursor} if cursor else {}, timeout=timeout)
            pages += 1
            seen += len(result["resources"])
            cursor = result.get("nextCursor")
            if not cursor:
                break
            if pages > expected:
                raise ServerError(f"{name}: listing does not end")
        walk = time.perf_counter() - t0
        if seen != expected:
            raise ServerError(f"{name}: listed {seen} resources, expected {expected}")
        return {"pages": pages, "walk_s": walk, "startup_s": startup, "peak_rss_mib": srv.peak_rss_mib()}
    finally:
        srv.close()


def w4(name: str, cfg: Config, tag: str) -> dict[str, Any]:
    times = []
    for k in range(cfg.w4_spawns):
        srv = Server(name, "small", f"{tag}-{k}")
        try:
            times.append(srv.handshake(cfg.startup_timeout) * 1000)
        finally:
            srv.close()
    return {"startup_ms": statistics.median(times), "samples_ms": times}


# --------------------------------------------------------------------------- W5: Streamable HTTP
#
# Each server listens on a free loopback port; W5_CLIENTS clients, each on its own keep-alive
# connection, initialize a session and then read the small resource back to back (one request
# in flight per connection). The clients are hand-written HTTP/1.1 over asyncio Protocols (uvloop
# when installed), spread over BENCH_W5_PROCS forked processes so that the client is not the
# limit; all of them share one clock window: a warm-up, then the timed window.

HTTP_FILES = {"mcp": "mcp_app.py", "fastmcp": "fastmcp_app.py", "raw": "raw_http.py", "asgi": "raw_asgi.py",
              "asgi-thread": "raw_asgi_thread.py"}


def http_server_argv(name: str, port: int) -> list[str]:
    if name in RK_SERVERS:
        return _rk_argv("--transport", "http", "--host", "127.0.0.1", "--port", str(port))
    return [sys.executable, str(SERVERS_DIR / HTTP_FILES[name])]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpServer:
    """One server subprocess listening on 127.0.0.1:port (POST /mcp)."""

    def __init__(self, name: str, workload: str, tag: str) -> None:
        self.name = name
        self.port = free_port()
        env = server_env(name, BENCH_WORKLOAD=workload, BENCH_TRANSPORT="http", BENCH_PORT=str(self.port))
        LOG_DIR.mkdir(exist_ok=True)
        self.log_path = LOG_DIR / f"{name}-{tag}.stderr"
        self._log = open(self.log_path, "wb")  # noqa: SIM115
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(
            wrapped_argv(name, http_server_argv(name, self.port)), stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=self._log, cwd=server_cwd(name), env=env,
        )
        self.ps = psutil.Process(self.proc.pid)
        self._pyspy: subprocess.Popen[bytes] | None = None

    def wait_listening(self, timeout: float) -> float:
        """Seconds from spawn until the port accepts connections."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"{self.name}: server exited with {self.proc.returncode} ({self._tail()})")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return time.perf_counter() - self.t_spawn
            except OSError:
                time.sleep(0.02)
        raise ServerError(f"{self.name}: not listening on {self.port} within {timeout:.0f} s ({self._tail()})")

    def _tail(self) -> str:
        return log_tail(self.log_path)

    def profile(self) -> None:
        self._pyspy = start_pyspy(self.proc.pid, self.log_path.stem.replace(".stderr", ""))

    def threads(self) -> int:
        """Threads of the server process (worker threads show how sync jobs were spread)."""
        with contextlib.suppress(psutil.Error):
            return int(self.ps.num_threads())
        return 0

    def cpu_s(self) -> float:
        total = 0.0
        for p in (self.ps, *self.ps.children(recursive=True)):
            with contextlib.suppress(psutil.Error):
                t = p.cpu_times()
                total += t.user + t.system
        return total

    def peak_rss_mib(self) -> float:
        return peak_rss_mib(self.proc.pid)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        stop_pyspy(self._pyspy)
        self._log.close()


def _header(head: bytes, name: bytes, lower: bytes | None = None) -> bytes | None:
    """A header's value (name in lower case) from a response head (status line and headers)."""
    at = (lower or head.lower()).find(b"\r\n" + name + b":")
    if at < 0:
        return None
    start = at + len(name) + 3
    stop = head.find(b"\r\n", start)
    return head[start:stop if stop >= 0 else len(head)].strip()


class _H1Conn(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection, one request at a time; Content-Length or chunked bodies.

    The handshake goes through post() (a future per request); the timed reads run as callbacks
    (each complete response sends the next request from data_received): no task or future per
    read, so the client spends little beside the server."""

    def __init__(self, port: int, st: _W5State) -> None:
        self.prefix = (
            b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-type: application/json\r\n"
            b"accept: application/json, text/event-stream\r\nmcp-protocol-version: %s\r\n"
            % (port, PROTOCOL_VERSION.encode())
        )
        self.st = st
        self.buf = b""
        self.waiter: asyncio.Future[tuple[int, bytes, bytes]] | None = None
        self.reads: asyncio.Future[None] | None = None  # set while the timed reads run

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        for fut in (self.waiter, self.reads):
            if fut is not None and not fut.done():
                fut.set_exception(ConnectionError(f"connection closed by the server ({exc})"))

    def data_received(self, data: bytes) -> None:
        self.buf = self.buf + data if self.buf else data
        if self.reads is not None:
            try:
                got = self._parse()
                if got is not None:
                    self._read_done(*got)
            except Exception as exc:  # ends this client with the error
                if not self.reads.done():
                    self.reads.set_exception(exc)
        elif self.waiter is not None and not self.waiter.done():
            try:
                got = self._parse()
            except Exception as exc:
                self.waiter.set_exception(exc)
                return
            if got is not None:
                self.waiter.set_result(got)

    def _parse(self) -> tuple[int, bytes, bytes] | None:
        """(status, head, body) of the first whole response in the buffer, or None."""
        buf = self.buf
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        head = buf[:end]
        lower = head.lower()
        status = int(head[9:12])
        pos = end + 4
        length = _header(head, b"content-length", lower)
        if length is not None:
            stop = pos + int(length)
            if len(buf) < stop:
                return None
            body = buf[pos:stop]
        elif _header(head, b"transfer-encoding", lower) == b"chunked":
            parts = []
            while True:
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    return None
                size = int(buf[pos:eol].split(b";", 1)[0], 16)
                if len(buf) < eol + 2 + size + 2:
                    return None
                parts.append(buf[eol + 2:eol + 2 + size])
                pos = eol + 2 + size + 2
                if size == 0:  # these servers send no trailers
                    break
            body, stop = b"".join(parts), pos
        elif status in (202, 204, 304) or 100 <= status < 200:
            body, stop = b"", pos
        else:
            raise ServerError(f"response without a length: {buf[:end]!r}")
        self.buf = buf[stop:]
        return status, head, body

    def _request(self, body: bytes) -> bytes:
        return b"%scontent-length: %d\r\n\r\n%s" % (self.prefix, len(body), body)

    async def post(self, body: bytes) -> tuple[int, bytes, bytes]:
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(self._request(body))
        return await self.waiter

    def run_reads(self, session: bytes | None) -> asyncio.Future[None]:
        if session:
            self.prefix += b"mcp-session-id: " + session + b"\r\n"
        self.reads = asyncio.get_running_loop().create_future()
        self.rid = 0
        self._send_read()
        return self.reads

    def _send_read(self) -> None:
        self.t0 = t0 = time.monotonic()
        if t0 >= self.st.window[2]:
            self.reads.set_result(None)  # type: ignore[union-attr]
            return
        self.rid += 1
        if self.st.modern:
            self.transport.write(self._request(
                b'{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%s,"_meta":%s}}'
                % (self.rid, self.st.uri, MODERN_META)))
        else:
            self.transport.write(self._request(
                b'{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%s}}' % (self.rid, self.st.uri)))

    def _read_done(self, status: int, head: bytes, body: bytes) -> None:
        t1 = time.monotonic()
        msg = _jsonrpc_of(body)
        if status != 200 or msg.get("id") != self.rid or "result" not in msg:
            raise ServerError(f"read -> {status} {body[:300]!r}")
        if msg["result"]["contents"][0].get("text") != content.SMALL_TEXT:
            raise ServerError(f"read returned {body[:300]!r}")
        st = self.st
        if self.t0 >= st.window[1] and t1 <= st.window[2]:
            st.lat.append(t1 - self.t0)
            st.count += 1
        self._send_read()


def _jsonrpc_of(body: bytes) -> dict[str, Any]:
    """The JSON-RPC response in a JSON body or in an SSE stream (the data event that carries an id)."""
    if body[:1] == b"{":
        return orjson.loads(body)  # type: ignore[no-any-return]
    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:"))
        if data[:1] == b"{":
            msg = orjson.loads(data)
            if "id" in msg and "method" not in msg:
                return msg  # type: ignore[no-any-return]
    raise ServerError(f"no JSON-RPC response in {body[:300]!r}")


class _W5State:
    """What the clients of one process share."""

    def __init__(self, n: int, modern: bool = False) -> None:
        self.n = n
        self.modern = modern  # 2026-07-28: no initialize, every read stateless with its _meta
        self.initialized = 0
        self.all_initialized = asyncio.Event()
        self.go = asyncio.Event()
        self.window = (0.0, 0.0, 0.0)  # go, record from, end (time.monotonic, the same in every process)
        self.uri = orjson.dumps(content.SMALL_URI)
        self.lat = array("d")
        self.count = 0


async def _w5_session(conn: _H1Conn) -> None:
    """Initialize a 2025-11-25 session on ``conn``; its requests carry its id from then on."""
    init = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "resourcekit-bench", "version": "0"}}})
    status, head, body = await conn.post(init)
    if status != 200 or "result" not in _jsonrpc_of(body):
        raise ServerError(f"initialize -> {status} {body[:300]!r}")
    session = _header(head, b"mcp-session-id")
    if session:
        conn.prefix += b"mcp-session-id: " + session + b"\r\n"
    status, _, body = await conn.post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    if status not in (200, 202, 204):
        raise ServerError(f"notifications/initialized -> {status} {body[:300]!r}")


async def _w5_client(port: int, st: _W5State) -> None:
    loop = asyncio.get_running_loop()
    transport, conn = await loop.create_connection(lambda: _H1Conn(port, st), "127.0.0.1", port)
    transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if st.modern:  # stateless: the headers 2026-07-28 requires, no session
        conn.prefix = conn.prefix.replace(PROTOCOL_VERSION.encode(), b"2026-07-28") + (
            b"mcp-method: resources/read\r\nmcp-name: " + orjson.loads(st.uri).encode() + b"\r\n")
    else:
        await _w5_session(conn)
    st.initialized += 1
    if st.initialized == st.n:
        st.all_initialized.set()
    await st.go.wait()
    await asyncio.sleep(max(0.0, st.window[0] - time.monotonic()))
    await conn.run_reads(None)
    transport.close()


MODERN_META = orjson.dumps({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                            "io.modelcontextprotocol/clientCapabilities": {}})


def _w5_client_proc(port: int, n: int, pipe: Any, modern: bool = False) -> None:
    """A forked client process with n connections: says "ready" once they are initialized,
    receives the window, runs it, sends back its counts and latencies."""
    try:
        try:
            import uvloop

            loop = uvloop.new_event_loop()
        except ImportError:
            loop = asyncio.new_event_loop()

        async def main() -> dict[str, Any]:
            st = _W5State(n, modern)
            tasks = [asyncio.ensure_future(_w5_client(port, st)) for _ in range(n)]
            waiter = asyncio.ensure_future(st.all_initialized.wait())
            await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
            for t in tasks:
                if t.done():  # before the window only a failure ends a client
                    t.result()
            pipe.send("ready")
            st.window = await loop.run_in_executor(None, pipe.recv)
            ru0 = resource.getrusage(resource.RUSAGE_SELF)
            st.go.set()
            await asyncio.gather(*tasks)
            ru1 = resource.getrusage(resource.RUSAGE_SELF)
            cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
            return {"count": st.count, "lat": st.lat.tobytes(), "cpu_s": cpu}

        pipe.send(loop.run_until_complete(main()))
    except BaseException as exc:  # reported to the parent
        pipe.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        pipe.close()
        os._exit(0)


def w5(name: str, cfg: Config, tag: str, workload: str = "small", modern: bool = False) -> dict[str, Any]:
    srv = HttpServer(name, workload, tag)
    procs: list[tuple[Any, Any]] = []
    try:
        listening = srv.wait_listening(cfg.startup_timeout)
        ctx = multiprocessing.get_context("fork")
        nprocs = max(1, min(cfg.w5_procs, cfg.w5_clients))
        for k in range(nprocs):
            parent_end, child_end = ctx.Pipe()
            n = cfg.w5_clients // nprocs + (1 if k < cfg.w5_clients % nprocs else 0)
            p = ctx.Process(target=_w5_client_proc, args=(srv.port, n, child_end, modern), daemon=True)
            p.start()
            child_end.close()
            procs.append((p, parent_end))
        for _, pipe in procs:
            if not pipe.poll(cfg.startup_timeout):
                raise ServerError(f"{name}: clients not initialized within {cfg.startup_timeout:.0f} s")
            msg = pipe.recv()
            if msg != "ready":
                raise ServerError(f"{name}: {msg.get('error', msg)}")
        srv.profile()
        t_go = time.monotonic() + 0.05
        t_rec = t_go + cfg.w5_warmup
        t_end = t_rec + cfg.w5_seconds
        for _, pipe in procs:
            pipe.send((t_go, t_rec, t_end))
        time.sleep(max(0.0, t_rec - time.monotonic()))
        cpu0 = srv.cpu_s()
        time.sleep(max(0.0, t_end - time.monotonic()))
        cpu = srv.cpu_s() - cpu0
        lat = array("d")
        count = 0
        client_cpu = 0.0
        for _, pipe in procs:
            if not pipe.poll(60):
                raise ServerError(f"{name}: a client process did not finish")
            out = pipe.recv()
            if "error" in out:
                raise ServerError(f"{name}: {out['error']}")
            lat.frombytes(out["lat"])
            count += out["count"]
            client_cpu += out["cpu_s"]
        if not count:
            raise ServerError(f"{name}: no read completed in the window")
        lats = sorted(lat)
        return {
            "reads": count,
            "seconds": cfg.w5_seconds,
            "rps": count / cfg.w5_seconds,
            "p50_ms": lats[len(lats) // 2] * 1000,
            "p99_ms": lats[min(len(lats) - 1, int(len(lats) * 0.99))] * 1000,
            "cpu_us_per_read": cpu / count * 1e6,
            "server_cpu_share": cpu / cfg.w5_seconds,
            "client_cpu_share": client_cpu / (t_end - t_go),
            "listen_s": listening,
            "peak_rss_mib": srv.peak_rss_mib(),
            "threads": srv.threads(),
        }
    finally:
        for p, pipe in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
            pipe.close()
        srv.close()


# --------------------------------------------------------------------------- orchestration


_PROBE = (
    "import importlib.util, resourcekit, resourcekit.cli\n"
    "from resourcekit import App\n"
    "assert importlib.util.find_spec('resourcekit.__main__'), 'no resourcekit/__main__.py'\n"
    "print(resourcekit.__file__)"
)


def probe_rk(name: str) -> str | None:
    """Import resourcekit the way server `name` will (same interpreter, flags, PYTHONPATH and working
    directory) and check that it comes from the right checkout. None, after a message, if not."""
    checkout = rk_checkout(name)
    if not (checkout / "resourcekit" / "__init__.py").is_file():
        print(f"!! {name} skipped: {checkout} has no resourcekit/ package", file=sys.stderr)
        return None
    probe = subprocess.run(
        [sys.executable, *PY_FLAGS, "-c", _PROBE], capture_output=True, text=True,
        cwd=server_cwd(name), env=server_env(name),
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        print(f"!! {name}: resourcekit is not importable, skipped: {last}", file=sys.stderr)
        return None
    imported = Path(probe.stdout.strip().splitlines()[-1]).resolve()
    if not imported.is_relative_to((rk_installed(name) / "resourcekit").resolve()):
        print(f"!! {name} skipped: it would import resourcekit from {imported}, not from the install of {checkout}",
              file=sys.stderr)
        return None
    return str(imported)


def _probe_editable() -> str | None:
    """Where EDITABLE_PYTHON imports resourcekit from: this checkout, through an editable install."""
    try:
        probe = subprocess.run([EDITABLE_PYTHON, *PY_FLAGS, "-c", _PROBE], capture_output=True, text=True, cwd=ROOT,
                               env=server_env("editable"))
    except OSError as exc:
        print(f"!! editable skipped: {EDITABLE_PYTHON}: {exc}", file=sys.stderr)
        return None
    imported = Path((probe.stdout.strip().splitlines() or ["?"])[-1]).resolve()
    if probe.returncode != 0 or not imported.is_relative_to((ROOT / "resourcekit").resolve()):
        print(f"!! editable skipped: {EDITABLE_PYTHON} does not import this checkout's resourcekit "
              f"({(probe.stderr.strip().splitlines() or [str(imported)])[-1]})", file=sys.stderr)
        return None
    return str(imported)


def checkout_desc(path: Path) -> str:
    """'<short commit> (<subject>)' of a git checkout, with '+ local changes' after the commit when
    its resourcekit/ differs from it."""
    git = ["git", "-C", str(path)]
    try:
        head = subprocess.run([*git, "log", "-1", "--format=%h%n%s"], capture_output=True, text=True)
    except OSError:  # no git
        return f"{path.name} (commit unknown)"
    if head.returncode != 0 or not head.stdout.strip():
        return f"{path.name} (not a git checkout)"
    commit, _, subject = head.stdout.strip().partition("\n")
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "--", "resourcekit"],
                           capture_output=True, text=True).stdout.strip()
    return f"{commit}{' + local changes' if dirty else ''} ({subject})"


def available_servers(wanted: list[str]) -> list[str]:
    out = []
    for name in wanted:
        if name not in SERVER_NAMES:
            print(f"!! unknown server {name!r} skipped (known: {', '.join(SERVER_NAMES)})", file=sys.stderr)
            continue
        if name == "baseline" and not os.environ.get(BASELINE_ENV):
            print(f"!! baseline skipped: {BASELINE_ENV} is not set (point it at a checkout of the commit to "
                  "compare with, e.g. `git worktree add ../rk-base <commit>`)", file=sys.stderr)
            continue
        if name == "editable":
            editable = _probe_editable()
            if editable is None:
                continue
            print(f"editable: resourcekit from {editable} ({EDITABLE_PYTHON})", file=sys.stderr)
        if name in RK_SERVERS:
            install_servers([name])
            imported = probe_rk(name)
            if imported is None:
                continue
            print(f"{name}: resourcekit from {imported} ({checkout_desc(rk_checkout(name))})", file=sys.stderr)
        if name in HTTP_ONLY:
            missing = [m for m in ("uvicorn", "httptools", "uvloop") if importlib.util.find_spec(m) is None]
            if missing:
                print(f"!! {name} skipped: it runs on uvicorn with httptools and uvloop; missing: {', '.join(missing)}",
                      file=sys.stderr)
                continue
        out.append(name)
    return out


def median_of(samples: list[dict[str, Any]]) -> dict[str, Any]:
    good = [s for s in samples if "error" not in s]
    if not good:
        return dict(samples[0]) if samples else {}
    keys = [k for k, v in good[0].items() if isinstance(v, (int, float))]
    return {k: statistics.median(s[k] for s in good) for k in keys}


def in_turn(servers: list[str], r: int) -> list[str]:
    """The servers in run r's order: as given in even runs, reversed in odd ones, so that a machine
    getting slower or faster during a workload's runs favours no column."""
    return servers if r % 2 == 0 else servers[::-1]


def run_all(cfg: Config, servers: list[str], workloads: list[str]) -> dict[str, Any]:
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}

    def record(workload: str, name: str, sample: dict[str, Any]) -> None:
        results.setdefault(workload, {}).setdefault(name, []).append(sample)

    def measure(workload: str, name: str, fn: Callable[[], dict[str, Any]]) -> None:
        t = time.perf_counter()
        try:
            sample = fn()
        except Exception as exc:  # a server that fails is reported, not fatal
            sample = {"error": f"{type(exc).__name__}: {exc}"}
        record(workload, name, sample)
        brief = {k: round(v, 3) if isinstance(v, float) else v for k, v in sample.items() if k != "samples_ms"}
        print(f"  {workload:9s} {name:12s} {time.perf_counter() - t:6.1f}s  {brief}", file=sys.stderr, flush=True)

    plan: list[tuple[str, Callable[[str, int], Callable[[], dict[str, Any]]]]] = []
    if "w1" in workloads:
        plan.append(("W1", lambda n, r: lambda: w1(n, cfg, f"w1-{r}")))
    if "w1a" in workloads:
        plan.append(("W1a", lambda n, r: lambda: w1(n, cfg, f"w1a-{r}", "small-async")))
    if "w3" in workloads:
        plan.append(("W3", lambda n, r: lambda: w3(n, cfg, f"w3-{r}")))
    if "w5" in workloads:
        plan.append(("W5", lambda n, r: lambda: w5(n, cfg, f"w5-{r}")))
    if "w3c" in workloads:
        plan.append(("W3c", lambda n, r: lambda: w3(n, cfg, f"w3c-{r}", fresh=True)))
    if "w5a" in workloads:
        plan.append(("W5a", lambda n, r: lambda: w5(n, cfg, f"w5a-{r}", "small-async")))
    if "w5m" in workloads:
        plan.append(("W5m", lambda n, r: lambda: w5(n, cfg, f"w5m-{r}", modern=True)))
    if "w6" in workloads:
        plan.append(("W6", lambda n, r: lambda: w6(n, cfg, f"w6-{r}")))
    if "w4" in workloads:
        plan.append(("W4", lambda n, r: lambda: w4(n, cfg, f"w4-{r}")))
    for wl, fnf in plan:
        print(f"== {wl}", file=sys.stderr)
        for r in range(cfg.runs):
            for name in in_turn(servers, r):
                if (name not in HTTP_ONLY or wl in HTTP_WORKLOADS.get(name, ())) and (
                        name not in START_ONLY or wl == "W4") and (name not in SYNC_ONLY or wl not in ASYNC_WORKLOADS
                                                                   ) and (wl not in RK_ONLY or name in RK_SERVERS):
                    measure(wl, name, fnf(name, r))
    if "w2" in workloads:
        for size in cfg.list_sizes:
            wl = f"W2-{size}"
            print(f"== {wl}", file=sys.stderr)
            for r in range(cfg.runs):
                for name in in_turn(servers, r):
                    if (name, size) in cfg.skip or name in HTTP_ONLY:
                        continue
                    once = cfg.slow_once.get((name, size))
                    if once is not None and r > 0:
                        continue
                    timeout = once if once is not None else cfg.startup_timeout
                    measure(wl, name, lambda n=name, s=size, r=r, t=timeout: w2(n, s, cfg, f"{s}-{r}", t))
    return {
        wl: {name: {"median": median_of(samples), "runs": samples} for name, samples in per.items()}
        for wl, per in results.items()
    }


# --------------------------------------------------------------------------- report


def _get(res: dict[str, Any], wl: str, name: str, key: str) -> float | None:
    try:
        v = res[wl][name]["median"].get(key)
    except KeyError:
        return None
    return v if isinstance(v, (int, float)) else None


def _timed_out(res: dict[str, Any], wl: str, name: str) -> float | None:
    try:
        return res[wl][name]["median"].get("timeout_s")  # type: ignore[no-any-return]
    except KeyError:
        return None


def _fmt(v: float | None, digits: int = 3) -> str:
    if v is None:
        return "—"
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.{digits}g}" if v < 1 else f"{v:.2f}"


ROWS: list[tuple[str, str, str, bool]] = [
    # label, workload, key, higher_is_better
    ("W1 small reads, req/s (64 in flight)", "W1", "rps", True),
    ("W1 p50 latency, ms", "W1", "p50_ms", False),
    ("W1 p99 latency, ms", "W1", "p99_ms", False),
    ("W1 server CPU per read, µs", "W1", "cpu_us_per_read", False),
    ("W1 server peak RSS, MiB", "W1", "peak_rss_mib", False),
    ("W1a async def handler: reads, req/s", "W1a", "rps", True),
    ("W1a server CPU per read, µs", "W1a", "cpu_us_per_read", False),
    ("W2 10k: pages", "W2-list10k", "pages", False),
    ("W2 10k: walk s", "W2-list10k", "walk_s", False),
    ("W2 10k: start-up s", "W2-list10k", "startup_s", False),
    ("W2 10k: peak RSS, MiB", "W2-list10k", "peak_rss_mib", False),
    ("W2 100k: pages", "W2-list100k", "pages", False),
    ("W2 100k: walk s", "W2-list100k", "walk_s", False),
    ("W2 100k: start-up s", "W2-list100k", "startup_s", False),
    ("W2 100k: peak RSS, MiB", "W2-list100k", "peak_rss_mib", False),
    ("W3 reads across 1,000 templates, req/s", "W3", "rps", True),
    ("W3 p50 / p99 latency, ms", "W3", "p50_ms", False),
    ("W3 server CPU per read, µs", "W3", "cpu_us_per_read", False),
    ("W3c template reads, each URI new, req/s", "W3c", "rps", True),
    ("W3c server CPU per read, µs", "W3c", "cpu_us_per_read", False),
    ("W4 start-up to initialize reply, ms", "W4", "startup_ms", False),
    (f"W5 Streamable HTTP, {W5_CLIENTS} clients, req/s", "W5", "rps", True),
    ("W5 p50 / p99 latency, ms", "W5", "p50_ms", False),
    ("W5 server CPU per read, µs", "W5", "cpu_us_per_read", False),
    ("W5 server peak RSS, MiB", "W5", "peak_rss_mib", False),
    ("W5a async def handler over HTTP, req/s", "W5a", "rps", True),
    ("W5a server CPU per read, µs", "W5a", "cpu_us_per_read", False),
    ("W5m W5 with 2026-07-28 stateless reads, req/s", "W5m", "rps", True),
    ("W5m server CPU per read, µs", "W5m", "cpu_us_per_read", False),
    ("W6 1 MiB reads, MB/s (4 in flight)", "W6", "mb_per_s", True),
    ("W6 server peak RSS, MiB", "W6", "peak_rss_mib", False),
    ("W6 server CPU per read, ms", "W6", "cpu_ms_per_read", False),
]


def _cell(res: dict[str, Any], wl: str, name: str, key: str) -> str:
    if key == "cpu_ms_per_read":
        v = _get(res, wl, name, "cpu_us_per_read")
        return _fmt(v / 1000 if v is not None else None)
    if key == "p50_ms" and wl in ("W3", "W5", "W5a"):
        a, b = _get(res, wl, name, "p50_ms"), _get(res, wl, name, "p99_ms")
        return f"{_fmt(a)} / {_fmt(b)}" if a is not None else "—"
    v = _get(res, wl, name, key)
    if key == "pages" and v is not None:
        return f"{v:,.0f}"
    if v is None:
        t = _timed_out(res, wl, name)
        if t is not None:
            return f"> {t:.0f} (timed out)" if key == "startup_s" else "—"
        err = res.get(wl, {}).get(name, {}).get("median", {}).get("error")
        return "error" if err else "—"
    return _fmt(v)


REGRESSION_LIMIT = 0.05  # the project's rule: no workload more than 5% worse than the starting commit


def _ratio_value(res: dict[str, Any], wl: str, key: str, other: str) -> float | None:
    """resourcekit ÷ other for one row's figure, None when either is missing."""
    if key == "cpu_ms_per_read":
        key = "cpu_us_per_read"
    if key == "pages":
        return None
    a, b = _get(res, wl, "resourcekit", key), _get(res, wl, other, key)
    return a / b if a is not None and b else None


def _worse(ratio: float, higher_is_better: bool) -> bool:
    """More than REGRESSION_LIMIT worse than the baseline."""
    return ratio < 1 - REGRESSION_LIMIT if higher_is_better else ratio > 1 + REGRESSION_LIMIT


def _base_ratio(res: dict[str, Any], wl: str, key: str, higher_is_better: bool) -> str:
    """The rk/base cell: the ratio, bold and marked when resourcekit is more than 5% worse."""
    if key == "pages":
        return ""
    v = _ratio_value(res, wl, key, "baseline")
    if v is None:
        return "—"
    if _worse(v, higher_is_better):
        return f"**{v:.3g}x** worse"
    better = v > 1 + REGRESSION_LIMIT if higher_is_better else v < 1 - REGRESSION_LIMIT
    return f"{v:.3g}x better" if better else f"{v:.3g}x"


def base_regressions(res: dict[str, Any]) -> list[str]:
    """The rows where resourcekit is more than 5% worse than the baseline."""
    out = []
    for label, wl, key, hib in ROWS:
        v = _ratio_value(res, wl, key, "baseline")
        if v is not None and key != "pages" and _worse(v, hib):
            out.append(f"{label}: {v:.3g}x")
    return out


def _ratio(res: dict[str, Any], wl: str, key: str, other: str) -> str:
    if key == "cpu_ms_per_read":
        key = "cpu_us_per_read"
    if key == "pages":
        return ""
    a, b = _get(res, wl, "resourcekit", key), _get(res, wl, other, key)
    if a is None or b is None or b == 0:
        if a is not None and _timed_out(res, wl, other) is not None and key == "startup_s":
            return f"< {a / _timed_out(res, wl, other):.3g}x"  # type: ignore[operator]
        return "—"
    return f"{a / b:.3g}x"


@dataclass(frozen=True)
class Target:
    """One of issue 17's targets: resourcekit ÷ reference for one figure, at least or at most `limit`."""

    label: str
    workload: str
    key: str
    reference: str  # the server resourcekit is measured against
    limit: float
    at_least: bool  # True: the ratio must be ≥ limit (throughput); False: ≤ limit (time, memory)

    def met(self, ratio: float) -> bool:
        return ratio >= self.limit if self.at_least else ratio <= self.limit


# Close to the limit (issue 17): ratios against the honest limits, measured side by side in one run
TARGETS = (
    Target("W1 small reads over stdio, req/s ≥ 0.6x raw", "W1", "rps", "raw", 0.6, True),
    Target("W3 reads across 1,000 templates, req/s ≥ 0.6x raw", "W3", "rps", "raw", 0.6, True),
    # issue 30: start-up against the floor of any server on asyncio, from a regular install
    Target("W4 spawn → initialize reply ≤ 1.2x the asyncio floor", "W4", "startup_ms", "asyncio", 1.2, False),
    Target("W2 start-up with 100,000 resources ≤ 2x the asyncio floor", "W2-list100k", "startup_s", "asyncio", 2.0,
           False),
    Target("W2 peak RSS with 100,000 resources ≤ 1.3x raw", "W2-list100k", "peak_rss_mib", "raw", 1.3, False),
    Target(f"W5 Streamable HTTP, {W5_CLIENTS} clients, req/s ≥ 0.8x the bare ASGI app", "W5", "rps", "asgi", 0.8,
           True),
    Target("W6 1 MiB reads, MB/s ≥ 0.95x raw", "W6", "mb_per_s", "raw", 0.95, True),
    # the request pipeline's (issue 27)
    Target("W3c template reads, each URI new, req/s ≥ 0.6x raw", "W3c", "rps", "raw", 0.6, True),
    Target("W5 Streamable HTTP, req/s ≥ 0.85x the off-loop floor", "W5", "rps", "asgi-thread", 0.85, True),
    Target("W5a async def handler over HTTP, req/s ≥ 0.8x the bare ASGI app", "W5a", "rps", "asgi", 0.8, True),
    Target("W5m 2026-07-28 stateless reads, req/s ≥ 0.9x resourcekit's W5", "W5m", "rps", "resourcekit:W5", 0.9,
           True),
)


@dataclass
class TargetResult:
    target: Target
    value: float | None  # resourcekit's figure
    reference: float | None  # the reference server's figure
    ratio: float | None  # value ÷ reference; None when either is missing

    @property
    def met(self) -> bool | None:
        return None if self.ratio is None else self.target.met(self.ratio)


def target_results(res: dict[str, Any], workloads: set[str] | None = None) -> list[TargetResult]:
    """Each target (of the given workloads, or all) with its figures from the medians in res."""
    out = []
    for t in TARGETS:
        if workloads is not None and t.workload not in workloads:
            continue
        reference, _, workload = t.reference.partition(":")  # "server:workload": another workload's figure
        a, b = _get(res, t.workload, "resourcekit", t.key), _get(res, workload or t.workload, reference, t.key)
        out.append(TargetResult(t, a, b, a / b if a is not None and b else None))
    return out


# (label, workload, key, unit, the floor's server and name, the target's reference server and name)
FLOORS = (("W4 spawn → initialize reply", "W4", "startup_ms", "ms", "asyncio", "the asyncio floor", "raw", "raw"),
          ("W2 start-up with 100,000 resources", "W2-list100k", "startup_s", "s", "asyncio", "the asyncio floor",
           "raw", "raw"),
          ("W5 Streamable HTTP", "W5", "rps", "req/s", "asgi-thread", "the off-loop floor", "asgi",
           "the bare ASGI app"))


def floor_lines(res: dict[str, Any]) -> list[str]:
    """Each target that has a floor beside its reference: the start-up targets beside the floor of any
    server on asyncio (``servers/raw_asyncio.py``), W5 beside the floor of any framework on uvicorn
    that runs sync handlers off the loop (``servers/raw_asgi_thread.py``): how much of resourcekit's
    ratio to the reference is the floor's (the runtime's, the rule's), and how much its own."""
    out = []
    for label, wl, key, unit, floor_name, floor_label, ref_name, ref_label in FLOORS:
        rk, ref, floor = (_get(res, wl, n, key) for n in ("resourcekit", ref_name, floor_name))
        if rk is None or ref is None or floor is None or not ref or not floor:
            continue
        editable = _get(res, wl, "editable", key) if floor_name == "asyncio" else None
        out.append(f"{label}: {floor_label} {_fmt(floor)} {unit} is {floor / ref:.2f}x {ref_label}; resourcekit "
                   f"{_fmt(rk)} {unit} is {rk / floor:.2f}x the floor"
                   + (f" (an editable install, as CI runs it: {_fmt(editable)} {unit}, {editable / floor:.2f}x)"
                      if editable else ""))
    return out


def markdown(doc: dict[str, Any]) -> str:
    res = doc["results"]
    names = [n for n in SERVER_NAMES if n in doc["servers"]]
    rk_commit = doc["versions"].get("resourcekit checkout", "?").split(" (", 1)[0]
    base_commit = doc["versions"].get("baseline checkout", "?").split(" (", 1)[0]
    head = {"resourcekit": "resourcekit", "baseline": f"baseline {base_commit.split(' ', 1)[0]}",
            "mcp": f"mcp {doc['versions'].get('mcp', '')}",
            "fastmcp": f"fastmcp {doc['versions'].get('fastmcp', '')}", "raw": "raw limit",
            "asyncio": "asyncio floor", "editable": "resourcekit editable", "asgi": "bare ASGI on uvicorn",
            "asgi-thread": "off-loop floor"}
    cols = [head[n] for n in names]
    vs_base = "resourcekit" in names and "baseline" in names
    ratio_cols = [o for o in ("mcp", "fastmcp", "raw", "asgi") if o in names and "resourcekit" in names]
    base_cols = " | rk/base | better" if vs_base else ""
    lines = [
        "# Benchmark results",
        "",
        f"Measured {doc['date']} on {doc['machine']} — {doc['mode']} run, {doc['runs']} run(s) per server, "
        "servers alternating (the order reversed in every other run); figures are medians. Only ratios from one "
        "run compare well.",
        "",
        "| workload | " + " | ".join(cols) + base_cols + "".join(f" | rk/{o}" for o in ratio_cols) + " |",
        "|---" * (1 + len(cols) + 2 * vs_base + len(ratio_cols)) + "|",
    ]
    for label, wl, key, hib in ROWS:
        if wl not in res:
            continue
        cells = [_cell(res, wl, n, key) for n in names]
        # the W3/W5 latency row shows p50 / p99; its ratios are of p50
        ratios = [_ratio(res, wl, key, o) for o in ratio_cols]
        if vs_base:
            direction = "" if key == "pages" else ("higher" if hib else "lower")
            ratios = [_base_ratio(res, wl, key, hib), direction, *ratios]
        lines.append(f"| {label} | " + " | ".join(cells) + "".join(f" | {r}" for r in ratios) + " |")
    lines += ["", "Ratios are resourcekit ÷ other: above 1 is better for req/s and MB/s, below 1 is better for "
              "latency, CPU, RSS, seconds.", ""]
    if vs_base:
        worse = base_regressions(res)
        lines += [
            f"rk/base is resourcekit (this checkout, {rk_commit}) ÷ baseline (the same app on the resourcekit of "
            f"{base_commit}, from {BASELINE_ENV}); the column "
            "\"better\" says which way is better for that row: higher for req/s and MB/s, lower for latency, CPU, "
            f"start-up, walk time and RSS. Bold marks a row more than {REGRESSION_LIMIT:.0%} worse than the baseline "
            "(the project's limit, judged on medians of 3 runs).",
            "",
            "More than 5% worse than the baseline: " + ("; ".join(worse) if worse else "none") + ".",
            "",
        ]
    if "resourcekit" in names:
        lines += ["## Targets", "",
                  "Close to the limit: resourcekit ÷ the honest limit of each workload, measured in this run "
                  "(`benchmarks/run.py --check` measures the same ratios in a short run).", "",
                  "| target | resourcekit | reference | ratio | met |", "|---|---|---|---|---|"]
        for tr in target_results(res, set(res)):
            met = "—" if tr.met is None else ("yes" if tr.met else "**no**")
            ratio = "—" if tr.ratio is None else f"{tr.ratio:.2f}x"
            lines.append(f"| {tr.target.label} | {_fmt(tr.value)} | {_fmt(tr.reference)} ({tr.target.reference}) "
                         f"| {ratio} | {met} |")
        lines.append("")
        floors = floor_lines(res)
        if floors:
            lines += ["Beside the floors (`servers/raw_asyncio.py`: the raw limit's work driven by an asyncio loop, "
                      "importing asyncio is most of its start-up; `servers/raw_asgi_thread.py`: the bare ASGI app with "
                      "each reply made in a worker thread, as the rule that sync handlers run off the loop asks):",
                      "",
                      *[f"- {line}" for line in floors], ""]
    errors = [
        f"- {wl} / {n}: {s['error']}"
        for wl, per in res.items()
        for n, d in per.items()
        for s in d["runs"]
        if "error" in s and "timeout_s" not in s
    ]
    if errors:
        lines += ["## Errors", "", *errors, ""]
    lines += [
        "## Set-up",
        "",
        *[f"- {k}: {v}" for k, v in doc["versions"].items()],
        "- raw limit: over stdio `servers/raw_loop.py` (blocking reads of 64 KiB blocks, lines split by hand, "
        "`orjson.loads`, an if-chain, the reply dict built by hand, one `os.write` per batch of replies, `os.writev` "
        "when big; no asyncio, no hashing); W6's handler returns a new `str` per read (decoded from bytes, as from "
        "a file) in every server; over HTTP (W5) `servers/raw_http.py`, an asyncio HTTP/1.1 server with the same "
        "hand-built replies.",
        *(["- asyncio floor (W4 and W2 only): `servers/raw_asyncio.py`, the raw limit's reads, replies and writes "
           "driven by an asyncio event loop (`add_reader` on stdin): no server on asyncio starts faster."]
          if "asyncio" in names else []),
        "- resourcekit and baseline: a regular install of their checkout's package (copied out and compiled to "
        "bytecode, as from a wheel, in `benchmarks/.install/this` and `.../base`: paths of one length), alone on "
        "PYTHONPATH, started with `-P`.",
        *(["- resourcekit editable (W4 and W2 only): this checkout through the editable install of the project's "
           "venv (`.venv`, the dev extras with the OpenTelemetry SDK; `BENCH_EDITABLE_PYTHON`), as CI runs it: its "
           "import hook in front."] if "editable" in names else []),
        *(["- bare ASGI on uvicorn (W5 only): `servers/raw_asgi.py`, the same hand-built replies as one ASGI "
           "callable under uvicorn with httptools and uvloop, access log, `Server` and `Date` headers off: the best "
           "any framework on uvicorn can do."] if "asgi" in names else []),
        *(["- off-loop floor (W5 only): `servers/raw_asgi_thread.py`, the bare ASGI app with each read's reply made "
           "in a worker thread (the reads of one loop iteration as one job, their replies handed back with one "
           "wake-up): what any framework on uvicorn pays that runs sync handlers off the event loop."]
          if "asgi-thread" in names else []),
        f"- client: one Python process, raw JSON-RPC over the child's pipes (orjson, selectors), "
        f"protocolVersion {PROTOCOL_VERSION}; W1/W3 keep {doc['config']['depth']} reads in flight for "
        f"{doc['config']['w1_seconds']} s, W6 keeps {doc['config']['w6_depth']} in flight for "
        f"{doc['config']['w6_seconds']} s; W4 is the median of {doc['config']['w4_spawns']} spawns per run.",
        *([w5_setup(doc["config"])] if "W5" in res else []),
        "- server CPU: user+system time of the child (all its threads) over the timed window ÷ reads.",
        "- peak RSS: VmHWM of the child at the end of the workload.",
        "- W2 start-up is spawn → initialize reply with all resources registered; walk is the time to follow "
        "nextCursor from the first resources/list to the last page.",
    ]
    if doc.get("notes"):
        lines += ["", "## Notes", "", *[f"- {n}" for n in doc["notes"]]]
    if doc.get("chart"):
        lines += ["", f"![chart]({doc['chart']})"]
    elif doc.get("ascii_chart"):
        lines += ["", "```", doc["ascii_chart"], "```"]
    return "\n".join(lines) + "\n"


CHART_METRICS = [
    ("W1 req/s", "W1", "rps"),
    ("W3 req/s (1,000 templates)", "W3", "rps"),
    ("W6 MB/s (1 MiB reads)", "W6", "mb_per_s"),
    ("W4 start-up ms (lower is better)", "W4", "startup_ms"),
    ("W2 10k start-up s (lower is better)", "W2-list10k", "startup_s"),
    ("W1 peak RSS MiB (lower is better)", "W1", "peak_rss_mib"),
    (f"W5 HTTP req/s ({W5_CLIENTS} clients)", "W5", "rps"),
    ("W5 p99 latency ms (lower is better)", "W5", "p99_ms"),
]


def w5_setup(config: dict[str, Any]) -> str:
    procs = config.get("w5_procs", 1)
    return (
        f"- W5: every server on 127.0.0.1 over Streamable HTTP (resourcekit `run --transport http`, mcp "
        f"`run(\"streamable-http\")`, fastmcp `run(transport=\"http\")`, raw: `servers/raw_http.py`, "
        f"asgi: `servers/raw_asgi.py`, off-loop floor: `servers/raw_asgi_thread.py`); "
        f"{config.get('w5_clients', W5_CLIENTS)} clients, one keep-alive connection each, in "
        f"{procs} client process{'es' if procs != 1 else ''} (hand-written HTTP/1.1 on asyncio Protocols), each "
        f"initializes a {PROTOCOL_VERSION} session then reads the small resource back to back (one in flight per "
        f"connection) for {config.get('w5_seconds', '?')} s after a warm-up; JSON and SSE replies are parsed "
        "and checked."
    )


def chart(doc: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    res = doc["results"]
    names = [n for n in SERVER_NAMES if n in doc["servers"]]
    colors = {"resourcekit": "#2b7bba", "baseline": "#8fbfe0", "mcp": "#999999", "fastmcp": "#c9a227",
              "raw": "#444444", "asyncio": "#5e5e5e", "editable": "#8a6d3b", "asgi": "#777777",
              "asgi-thread": "#9a9a9a"}
    fig, axes = plt.subplots(2, 4, figsize=(17, 7))
    for ax, (title, wl, key) in zip(axes.flat, CHART_METRICS, strict=False):
        shown = [n for n in names if n in res.get(wl, {})]  # asgi runs W5 only
        vals = [(_get(res, wl, n, key) or 0.0) for n in shown]
        bars = ax.bar(shown, vals, color=[colors[n] for n in shown])
        ax.set_title(title, fontsize=10)
        positive = [v for v in vals if v > 0]
        if positive and max(positive) / min(positive) > 30:
            ax.set_yscale("log")
        for b, v in zip(bars, vals, strict=True):
            xy = (b.get_x() + b.get_width() / 2, b.get_height() or 1)
            ax.annotate(_fmt(v) if v else "n/a", xy, ha="center", va="bottom", fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle(f"resourcekit vs mcp vs fastmcp vs the raw limits — medians ({doc['mode']} run, {doc['date']})",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def ascii_chart(doc: dict[str, Any]) -> str:
    res = doc["results"]
    names = [n for n in SERVER_NAMES if n in doc["servers"]]
    out = []
    for title, wl, key in CHART_METRICS:
        vals = {n: _get(res, wl, n, key) or 0.0 for n in names if n in res.get(wl, {})}
        top = max(vals.values(), default=0) or 1
        out.append(title)
        for n, v in vals.items():
            out.append(f"  {n:12s} {'#' * max(0, round(40 * v / top)):40s} {_fmt(v)}")
    return "\n".join(out)


def cpu_model() -> str:
    """The CPU's model name (RESULTS.md names it: ratios differ between CPUs of one machine type)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip().lower() in ("model name", "hardware", "cpu model") and value.strip():
                return value.strip()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == "Model name" and value.strip():
                return value.strip()
    return platform.processor() or "CPU model unknown"


def versions(servers: list[str] | None = None) -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("resourcekit", "mcp", "fastmcp", "orjson", "anyio", "pydantic", "uvicorn", "httptools", "uvloop"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    if servers and "baseline" in servers:
        out["resourcekit checkout"] = checkout_desc(ROOT)
        out["baseline checkout"] = checkout_desc(rk_checkout("baseline"))
    return out


def default_notes(cfg: Config, servers: list[str]) -> list[str]:
    notes = []
    if "fastmcp" in servers:
        notes.append(
            "fastmcp 4.1.6 is installed with `--no-deps` (its `server` extra asks for certifi>=2026.10.19, newer "
            "than the package index here serves: 2026.10.18 is used); its other requirements come from resolving "
            "fastmcp 4.1.2, the newest release that installs cleanly (see requirements.txt)."
        )
    once = [f"{n} {w}" for (n, w), _ in cfg.slow_once.items() if n in servers and (n, w) not in cfg.skip
            and w in cfg.list_sizes]
    if once and cfg.runs > 1:
        notes.append("measured in one run only (slow start-up): " + ", ".join(once) + ".")
    skipped = [f"{n} {w}" for n, w in cfg.skip if n in servers and w in cfg.list_sizes]
    if skipped:
        notes.append("not measured in this mode: " + ", ".join(skipped) + ".")
    if "baseline" in servers:
        notes.append(
            "baseline serves the same `servers/rk_app.py` with the resourcekit package of another checkout "
            f"({BASELINE_ENV}); resourcekit and baseline both start as `{' '.join(['python', *PY_FLAGS])} -m "
            "resourcekit run benchmarks/servers/rk_app.py` with their checkout first on PYTHONPATH and as working "
            "directory."
        )
    notes.append(
        f"pipes between client and server are {PIPE_SIZE // 1024} KiB (F_SETPIPE_SZ)" if PIPE_SIZE
        else "pipes between client and server have the system default size (64 KiB)"
    )
    return notes


def _server_list(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def compile_servers(servers: list[str]) -> None:
    """pip compiles installed packages (mcp, fastmcp) to bytecode; an editable install of resourcekit
    (or a fresh checkout for baseline) has none, and PYTHONDONTWRITEBYTECODE may be set: compile them
    the same way."""
    import compileall

    for name in dict.fromkeys(n for n in ("resourcekit", *servers) if n in RK_SERVERS):
        compileall.compile_dir(str(rk_checkout(name) / "resourcekit"), quiet=1)
    compileall.compile_dir(str(HERE / "servers"), quiet=1)


# --------------------------------------------------------------------------- --check

CHECK_SERVERS = ("resourcekit", "raw", "asyncio", "editable", "asgi", "asgi-thread")


def check(servers_arg: str | None, workloads: list[str], runs: int, seconds: float) -> int:
    """--check: a short alternating run of resourcekit and the limits, each target's ratio with PASS or
    SHORT; 0 when every target of the workloads run is met, 1 otherwise (a figure missing included).
    A regression guard, not a measurement: the ratios of a short run on a busy machine move by
    several percent, so a SHORT near the line wants a full run before it means anything."""
    wanted = _server_list(servers_arg) if servers_arg else [
        *CHECK_SERVERS, *(["baseline"] if os.environ.get(BASELINE_ENV) else [])]
    servers = available_servers(wanted)
    if "resourcekit" not in servers:
        print("--check: resourcekit cannot run", file=sys.stderr)
        return 2
    cfg = Config(quick=True, runs=runs, w1_seconds=seconds, w3_seconds=seconds, w6_seconds=seconds, w4_spawns=1,
                 w5_seconds=seconds, w5_warmup=0.3, list_sizes=("list100k",))
    compile_servers(servers)
    t0 = time.perf_counter()
    print(f"--check: servers {servers}; workloads {workloads}; {runs} run(s) of {seconds:g} s, medians",
          file=sys.stderr)
    res = run_all(cfg, servers, workloads)
    wanted_wl = {w.upper()[:2] + w[2:] for w in workloads} | ({"W2-list100k"} if "w2" in workloads else set())
    rows = target_results(res, wanted_wl)
    print(f"\nTargets (resourcekit ÷ reference, medians of {runs} short run(s), servers alternating) on "
          f"{cpu_model()}, {os.cpu_count()} cores, {time.perf_counter() - t0:.0f} s:")
    width = max((len(tr.target.label) for tr in rows), default=0)
    failed = []
    for tr in rows:
        t = tr.target
        if tr.ratio is None:
            status, ratio = "SHORT", "—"
            figures = "no figure: " + _check_error(res, t.workload, ("resourcekit", t.reference))
        else:
            status, ratio = ("PASS" if tr.met else "SHORT"), f"{tr.ratio:.2f}x"
            figures = f"{_fmt(tr.value)} vs {_fmt(tr.reference)} ({t.reference})"
        if status != "PASS":
            failed.append(f"{t.workload} {t.key}")
        print(f"  {status:5s} {ratio:>6s}  {t.label:{width}s}  {figures}")
    if "baseline" in servers:
        print(f"\nresourcekit ÷ baseline ({checkout_desc(rk_checkout('baseline'))}), the same figures; informational: "
              f"the {REGRESSION_LIMIT:.0%} rule is judged on a full run (medians of 3):")
        for tr in rows:
            t = tr.target
            v = _ratio_value(res, t.workload, t.key, "baseline")
            worse = v is not None and _worse(v, t.at_least)
            shown = "—" if v is None else f"{v:.3f}x" + (f"  more than {REGRESSION_LIMIT:.0%} worse" if worse else "")
            print(f"  {t.workload:12s} {t.key:13s} {shown}")
    floors = floor_lines(res)
    if floors:
        print("\nBeside the floors (servers/raw_asyncio.py, asyncio's start-up; servers/raw_asgi_thread.py, the "
              "bare ASGI app with replies made in a worker thread):")
        for line in floors:
            print(f"  {line}")
    summary = f"{len(rows) - len(failed)} of {len(rows)} targets met"
    print(f"\n{summary}; short: {'; '.join(failed)}" if failed else f"\n{summary}")
    return 1 if failed or not rows else 0


def _check_error(res: dict[str, Any], wl: str, names: tuple[str, ...]) -> str:
    for name in names:
        runs = res.get(wl, {}).get(name, {}).get("runs", [])
        errors = [s["error"] for s in runs if "error" in s]
        if errors:
            return f"{name}: {errors[0]}"[:300]
        if not runs:
            return f"{name} not measured"
    return "—"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1 run, short durations, 10k list only (~1 minute)")
    p.add_argument("--runs", type=int, help="runs per server (default 3, quick 1)")
    p.add_argument("--servers", help="comma list of " + ",".join(SERVER_NAMES) + " (default all; --check: "
                   + ",".join(CHECK_SERVERS) + ", and baseline when " + BASELINE_ENV + " is set)")
    p.add_argument("--workloads", help="comma list of w1,w1a,w2,w3,w3c,w4,w5,w5a,w5m,w6 (w1a, w5a: w1, w5 with an "
                   "async def handler; w3c: w3 with every URI new; w5m: w5 with 2026-07-28 stateless reads; default "
                   "all, --check: those with a target)")
    p.add_argument("--check", action="store_true",
                   help="a short run (3 runs of 1 s each) judged against the targets; exit status 1 when one falls "
                        "short (writes nothing)")
    p.add_argument("--seconds", type=float, help="duration of each W1/W3/W5/W6 run")
    p.add_argument("--no-write", action="store_true", help="print only; leave results.json/RESULTS.md alone")
    p.add_argument("--note", action="append", default=[], help="a line for the Notes section of RESULTS.md")
    p.add_argument("--report-only", action="store_true", help="rewrite RESULTS.md and chart.png from results.json")
    args = p.parse_args(argv)
    if args.report_only:
        doc = orjson.loads((HERE / "results.json").read_bytes())
        doc["notes"] = [n for n in doc.get("notes", []) if n not in args.note] + args.note
        if chart(doc, HERE / "chart.png"):
            doc["chart"] = "chart.png"
        md = markdown(doc)
        (HERE / "RESULTS.md").write_text(md)
        (HERE / "results.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        print(md)
        return 0

    chosen = args.workloads or ("w1,w2,w3,w3c,w4,w5,w5m,w6" if args.check else "w1,w1a,w2,w3,w3c,w4,w5,w5a,w5m,w6")
    workloads = [w.strip().lower() for w in chosen.split(",") if w.strip()]
    if args.check:
        return check(args.servers, workloads, args.runs or 3, args.seconds or 1.0)
    quick = args.quick
    secs = args.seconds or (1.0 if quick else 3.0)
    cfg = Config(
        quick=quick,
        runs=args.runs or (1 if quick else 3),
        w1_seconds=secs,
        w3_seconds=secs,
        w6_seconds=secs,
        w4_spawns=1 if quick else 3,
        w5_seconds=secs,
        w5_warmup=0.3 if quick else 0.5,
        list_sizes=("list10k",) if quick else ("list10k", "list100k"),
    )
    # fastmcp registers quadratically (10k resources take over a minute to start here): it is
    # measured once at 10k (not at all by --quick) and at 100k tried once and given up after 60 s.
    cfg.slow_once[("fastmcp", "list10k")] = 240.0
    cfg.slow_once[("fastmcp", "list100k")] = 60.0
    cfg.slow_once[("mcp", "list100k")] = 240.0  # ~40 s to start here: once keeps a full run under 10 minutes
    if quick:
        cfg.skip.add(("fastmcp", "list10k"))

    servers = available_servers(_server_list(args.servers or ",".join(SERVER_NAMES)))
    if not servers:
        print("no server to run", file=sys.stderr)
        return 1
    compile_servers(servers)
    t0 = time.perf_counter()
    print(f"servers: {servers}; workloads: {workloads}; runs: {cfg.runs}", file=sys.stderr)
    results = run_all(cfg, servers, workloads)
    doc: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{cpu_model()} ({platform.machine()}, {os.cpu_count()} cores), "
                   f"{platform.system()} {platform.release()}",
        "cpu": cpu_model(),
        "mode": "quick" if quick else "full",
        "runs": cfg.runs,
        "servers": servers,
        "versions": versions(servers),
        "config": {
            "depth": cfg.depth,
            "w6_depth": cfg.w6_depth,
            "w1_seconds": cfg.w1_seconds,
            "w6_seconds": cfg.w6_seconds,
            "w4_spawns": cfg.w4_spawns,
            "w5_seconds": cfg.w5_seconds,
            "w5_clients": cfg.w5_clients,
            "w5_procs": cfg.w5_procs,
            "w5_server_argv": {n: http_server_argv(n, 0) for n in servers if n not in START_ONLY},
            "list_sizes": list(cfg.list_sizes),
            "server_argv": {n: server_argv(n) for n in servers if n not in HTTP_ONLY},
        },
        "results": results,
        "notes": default_notes(cfg, servers) + args.note,
        "elapsed_s": time.perf_counter() - t0,
    }
    if not args.no_write:
        if chart(doc, HERE / "chart.png"):
            doc["chart"] = "chart.png"
        else:
            doc["ascii_chart"] = ascii_chart(doc)
    else:
        doc["ascii_chart"] = ascii_chart(doc)
    md = markdown(doc)
    print(md)
    if not args.no_write:
        (HERE / "results.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        (HERE / "RESULTS.md").write_text(md)
        print(f"wrote {HERE / 'results.json'} and {HERE / 'RESULTS.md'} in {doc['elapsed_s']:.0f} s", file=sys.stderr)
    shutil.rmtree(LOG_DIR, ignore_errors=True) if os.environ.get("BENCH_DROP_LOGS") else None
    return 0


if __name__ == "__main__":
    sys.exit(main())
