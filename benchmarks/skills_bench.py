"""Agent Skills figures (not a test): ``python benchmarks/skills_bench.py [--skills N] [--files F]``.

Writes N skills of F files each (a ``SKILL.md`` and F-1 supporting files of 1-4 KiB) to a
temporary directory, starts ``resourcekit skills DIR`` over stdio and measures:

* start-up: process start to the ``initialize`` reply (every file walked, read and hashed once);
* ``skills/list``: a full walk, page by page (the default page size, 1,000 entries);
* ``skills/get``: every skill once;
* a rescan with nothing changed (in process): stat only, no file re-read (digests computed once);
* the server's RSS after all of that.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent


def make_skills(root: Path, skills: int, files: int) -> int:
    total = 0
    for n in range(skills):
        name = f"skill-{n:04d}"
        folder = root / f"team-{n % 10}" / name
        (folder / "references").mkdir(parents=True)
        md = f"---\nname: {name}\ndescription: Benchmark skill number {n}.\nmetadata:\n  n: {n}\n---\n\n# {name}\n"
        (folder / "SKILL.md").write_text(md + "Do the thing.\n" * 50)
        total += 1
        for f in range(files - 1):
            (folder / "references" / f"ref-{f}.md").write_text(f"# Reference {f}\n" + "x" * (1024 * (1 + f % 4)))
            total += 1
    return total


class Stdio:
    def __init__(self, directory: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "resourcekit", "skills", str(directory), "--poll", "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        self.proc.stdin.write(orjson.dumps(message) + b"\n")
        self.proc.stdin.flush()
        reply = orjson.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["result"]

    def rss_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--files", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        total = make_skills(root, args.skills, args.files)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        print(f"{args.skills} skills, {total} files, {size / 2**20:.1f} MiB")

        started = time.perf_counter()
        server = Stdio(root)
        server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "bench", "version": "0"}})
        print(f"start-up to the initialize reply: {(time.perf_counter() - started) * 1000:.0f} ms")

        started = time.perf_counter()
        entries, pages, cursor = [], 0, None
        while True:
            page = server.request("skills/list", {"cursor": cursor} if cursor else {})
            entries.extend(page["skills"])
            pages += 1
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        walk = time.perf_counter() - started
        assert len(entries) == args.skills and all(len(e["resources"]) == args.files for e in entries)
        print(f"skills/list walk: {walk * 1000:.0f} ms ({pages} pages, {len(entries)} entries)")

        started = time.perf_counter()
        for entry in entries:
            server.request("skills/get", {"uri": entry["uri"]})
        gets = time.perf_counter() - started
        print(f"skills/get of every skill: {gets * 1000:.0f} ms ({gets / len(entries) * 1e6:.0f} us each)")
        print(f"server RSS: {server.rss_mib():.1f} MiB")
        server.close()

        from resourcekit import App
        from resourcekit import skills as skills_module

        app = App("bench")
        started = time.perf_counter()
        app.add_skills(root, poll=None)
        print(f"add_skills in process: {(time.perf_counter() - started) * 1000:.0f} ms")
        hashed = []
        original = skills_module.hash_file
        skills_module.hash_file = lambda r, p: hashed.append(p) or original(r, p)  # type: ignore[assignment]
        assert app.skills is not None
        started = time.perf_counter()
        app.skills.rescan()
        print(f"rescan with nothing changed: {(time.perf_counter() - started) * 1000:.0f} ms, "
              f"{len(hashed)} files re-read")


if __name__ == "__main__":
    main()
