"""Start-up: what a stdio server imports before it answers (not timed: which modules are loaded)."""

from __future__ import annotations

import hashlib
import os
import site
import subprocess
import sys

import orjson

from resourcekit import contents
from tests.support.process import APPS, ROOT


def test_a_stdio_server_answers_its_first_read_without_the_deferred_modules() -> None:
    # -S: no site (an editable install's path finder imports pathlib); the packages come by PYTHONPATH
    paths = os.pathsep.join([str(ROOT), *site.getsitepackages()])
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "test://loaded"}},
    ]
    result = subprocess.run(
        [sys.executable, "-S", "-m", "resourcekit", "run", str(APPS / "startup_app.py")],
        input=b"".join(orjson.dumps(m) + b"\n" for m in messages), capture_output=True, timeout=60,
        env={**os.environ, "PYTHONPATH": paths},
    )
    replies = {r["id"]: r for r in map(orjson.loads, result.stdout.splitlines())}
    assert replies[0]["result"]["serverInfo"]["name"] == "startup", result.stderr
    assert replies[1]["result"]["contents"][0]["text"] == ""  # none of DEFERRED


def test_versions_hash_the_same_before_and_after_hashlib_is_bound() -> None:
    short, long = b"hello", b"x" * (1 << 17)
    assert contents.version_of(short, "text/plain") == hashlib.blake2b(short + b"\0text/plain",
                                                                       digest_size=16).hexdigest()
    assert contents.version_of(long, "text/plain") == hashlib.sha256(long + b"\0text/plain").hexdigest()[:32]
    assert contents.blake2b is hashlib.blake2b and contents.sha256 is hashlib.sha256  # bound by now
