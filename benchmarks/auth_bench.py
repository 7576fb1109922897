"""What OAuth costs per HTTP read: W5 (small reads, 16 keep-alive clients) without and with a JWT.

The same ``rk_app.py`` served twice by ``resourcekit run --transport http``: once plain, once
with ``--auth-issuer/--auth-audience`` against the tests' authorization server (in this
process); every read of the second carries ``Authorization: Bearer <RS256 JWT>``. Runs
alternate (plain, auth, plain, auth, ...) so that a noisy machine hurts both alike; the
figure is the ratio of server CPU per read (and of req/s), median over the runs.

    .venv/bin/python benchmarks/auth_bench.py [--seconds 3] [--runs 3]   (needs psutil)
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import run  # noqa: E402

from tests.support.oauth_server import AuthorizationServer  # noqa: E402

TOKEN = b""
_plain_init = run._H1Conn.__init__


def _init_with_token(self: Any, port: int, st: Any) -> None:
    _plain_init(self, port, st)
    if TOKEN:
        self.prefix += b"authorization: Bearer " + TOKEN + b"\r\n"


run._H1Conn.__init__ = _init_with_token  # type: ignore[method-assign]


def measure(extra: list[str], seconds: float, clients: int) -> dict[str, float]:
    port = run.free_port()
    argv = [sys.executable, "-m", "resourcekit", "run", str(HERE / "servers" / "rk_app.py"), "--transport", "http",
            "--port", str(port), *(a.replace("{url}", f"http://127.0.0.1:{port}/mcp") for a in extra)]
    env = run.server_env("resourcekit", BENCH_WORKLOAD="small")
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=HERE.parent)
    ps = psutil.Process(proc.pid)
    procs = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                run.socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "no server") from None
                time.sleep(0.05)
        global TOKEN
        TOKEN = AS.mint(f"http://127.0.0.1:{port}/mcp", "bench").encode() if extra else b""
        ctx = multiprocessing.get_context("fork")
        parent_end, child_end = ctx.Pipe()
        p = ctx.Process(target=run._w5_client_proc, args=(port, clients, child_end), daemon=True)
        p.start()
        child_end.close()
        procs.append(p)
        ready = parent_end.recv() if parent_end.poll(30) else "no answer"
        if ready != "ready":
            proc.terminate()
            raise RuntimeError(f"clients did not initialize: {ready}; server: {proc.communicate()[1].decode()[-2000:]}")
        t_go = time.monotonic() + 0.05
        t_rec, t_end = t_go + 0.5, t_go + 0.5 + seconds
        parent_end.send((t_go, t_rec, t_end))
        time.sleep(max(0.0, t_rec - time.monotonic()))
        cpu0 = sum(ps.cpu_times()[:2])
        time.sleep(max(0.0, t_end - time.monotonic()))
        cpu = sum(ps.cpu_times()[:2]) - cpu0
        out = parent_end.recv()
        if "error" in out:
            raise RuntimeError(out["error"])
        return {"rps": out["count"] / seconds, "cpu_us": cpu / out["count"] * 1e6}
    finally:
        for p in procs:
            p.join(5)
        proc.terminate()
        proc.wait(10)


AS: AuthorizationServer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clients", type=int, default=run.W5_CLIENTS)
    args = parser.parse_args()
    global AS
    with AuthorizationServer() as AS:
        auth = ["--auth-issuer", AS.issuer, "--auth-audience", "{url}"]
        plain, guarded = [], []
        for _ in range(args.runs):
            plain.append(measure([], args.seconds, args.clients))
            guarded.append(measure(auth, args.seconds, args.clients))
    for label, rows in (("no auth", plain), ("valid JWT", guarded)):
        print(f"{label:10} req/s {statistics.median(r['rps'] for r in rows):8.0f}   "
              f"server CPU per read {statistics.median(r['cpu_us'] for r in rows):6.1f} µs")
    cpu_ratio = statistics.median(g["cpu_us"] for g in guarded) / statistics.median(p["cpu_us"] for p in plain)
    rps_ratio = statistics.median(p["rps"] for p in plain) / statistics.median(g["rps"] for g in guarded)
    print(f"cost with a JWT: {cpu_ratio:.2f}x CPU per read, {rps_ratio:.2f}x time per read (goal: at most 1.3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
