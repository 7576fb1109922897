"""The MCP Inspector CLI against ``resourcekit run``, over stdio and over HTTP, in both eras."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers import APPS, ROOT, env
from tests.http_server import http_server_process

CONFORMANCE = ROOT / "tests" / "conformance"
APP = APPS / "conformance_app.py"


@pytest.fixture(scope="module")
def inspector() -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: the Inspector is an npm package")
    if not (CONFORMANCE / "node_modules" / ".bin" / "inspector").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=CONFORMANCE, check=True,
                       capture_output=True, timeout=600)


def inspect(*args: str) -> subprocess.CompletedProcess[str]:
    environment = env()
    environment["PATH"] = f"{CONFORMANCE / 'node_modules' / '.bin'}{os.pathsep}{environment.get('PATH', '')}"
    return subprocess.run(["npx", "--no-install", "inspector", "--cli", *args], cwd=CONFORMANCE,
                          env=environment, capture_output=True, text=True, timeout=120)


def stdio(*args: str) -> subprocess.CompletedProcess[str]:
    return inspect(*args, "--format", "json", "-q", "--", sys.executable, "-m", "resourcekit", "run", str(APP))


def result_of(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("{"))
    return json.loads(line)["result"]


def test_stdio_list_templates_and_reads(inspector):
    resources = result_of(stdio("--method", "resources/list"))["resources"]
    assert {r["uri"] for r in resources} == {"test://static-text", "test://static-binary", "test://watched-resource"}
    templates = result_of(stdio("--method", "resources/templates/list"))["resourceTemplates"]
    assert templates[0]["uriTemplate"] == "test://template/{id}/data"
    text = result_of(stdio("--method", "resources/read", "--uri", "test://static-text"))["contents"][0]
    assert text["mimeType"] == "text/plain" and text["text"]
    blob = result_of(stdio("--method", "resources/read", "--uri", "test://static-binary"))["contents"][0]
    assert blob["mimeType"] == "image/png" and blob["blob"]
    templated = result_of(stdio("--method", "resources/read", "--uri", "test://template/42/data"))
    assert "42" in templated["contents"][0]["text"]


def test_stdio_errors_and_modern_era(inspector):
    missing = stdio("--method", "resources/read", "--uri", "test://nope")
    assert missing.returncode == 1 and "Resource not found: test://nope" in missing.stderr + missing.stdout
    modern = result_of(stdio("--protocol-era", "modern", "--method", "resources/read", "--uri", "test://static-text"))
    assert modern["cacheScope"] in ("public", "private") and modern["ttlMs"] >= 0
    assert modern["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "conformance-fixture"


def test_http_both_eras(inspector):
    with http_server_process(APP) as url:
        listed = result_of(inspect(url, "--method", "resources/list", "--format", "json", "-q"))
        assert len(listed["resources"]) == 3
        read = result_of(inspect(url, "--method", "resources/read", "--uri", "test://template/7/data",
                                 "--format", "json", "-q"))
        assert "7" in read["contents"][0]["text"]
        modern = result_of(inspect(url, "--protocol-era", "modern", "--method", "resources/read",
                                   "--uri", "test://static-binary", "--format", "json", "-q"))
        assert modern["contents"][0]["blob"] and modern["ttlMs"] >= 0
