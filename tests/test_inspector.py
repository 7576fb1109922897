"""The MCP Inspector CLI (``npx inspector --cli``, 2.12.0) against ``resourcekit run``.

The same calls over stdio (the Inspector starts ``python -m resourcekit run APP`` itself)
and over Streamable HTTP (``resourcekit run APP --transport http``), in the handshake era
(the Inspector's default, ``legacy``) and with ``--protocol-era modern`` (2026-07-28).
Every Inspector call is its own node process (and, over stdio, its own server process), so
the calls of one transport run concurrently (they mostly wait: over stdio a modern-era call
ends only when the server has exited after the Inspector closed its stdin).  The Inspector's
bin is run by the Node 22 of node_modules/.bin/node -- what ``npx inspector`` does from
tests/conformance, minus npm's own start-up (half of each call's time).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest

from tests.support.http_server import http_server_process
from tests.support.node import ensure_npm_packages, inspect, node_env, result_of
from tests.support.process import APPS, env

APP = APPS / "conformance_app.py"
RESOURCES = {"test://static-text", "test://static-binary", "test://watched-resource"}

READ = ("--method", "resources/read", "--uri")
CALLS = {
    "list": ("--method", "resources/list"),
    "templates": ("--method", "resources/templates/list"),
    "text": (*READ, "test://static-text"),
    "binary": (*READ, "test://static-binary"),
    "template": (*READ, "test://template/42/data"),
    "unknown": (*READ, "test://nope"),
    "modern-list": ("--protocol-era", "modern", "--method", "resources/list"),
    "modern-binary": ("--protocol-era", "modern", *READ, "test://static-binary"),
    "modern-unknown": ("--protocol-era", "modern", *READ, "test://nope"),
}


@pytest.fixture(scope="module")
def inspector_env(tmp_path_factory) -> dict[str, str]:
    ensure_npm_packages()
    # Node 22 first on PATH; PYTHONPATH for the stdio server the Inspector starts; a private
    # HOME for the Inspector's ~/.mcp-inspector (catalog, storage)
    environment = node_env(env())
    environment["HOME"] = str(tmp_path_factory.mktemp("inspector-home"))
    return environment


@contextmanager
def target(transport: str) -> Iterator[tuple[list[str], list[str]]]:
    """(arguments before the options, arguments after them) naming the server for ``--cli``."""
    if transport == "stdio":
        yield [], ["--", sys.executable, "-m", "resourcekit", "run", str(APP)]
    else:
        with http_server_process(APP) as url:
            yield [url, "--transport", "http"], []


def error_of(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    line = next(line for line in (done.stderr + done.stdout).splitlines() if line.startswith('{"error"'))
    return json.loads(line)["error"]["message"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_inspector_cli(inspector_env, transport):
    with target(transport) as (before, after), ThreadPoolExecutor(len(CALLS)) as pool:
        futures = {name: pool.submit(inspect, inspector_env, before, options, after)
                   for name, options in CALLS.items()}
        done = {name: future.result() for name, future in futures.items()}

    for name in ("list", "modern-list"):
        resources = result_of(done[name])["resources"]
        assert {r["uri"] for r in resources} == RESOURCES, name
        assert {r["mimeType"] for r in resources} == {"text/plain", "image/png"}, name
    templates = result_of(done["templates"])["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["test://template/{id}/data"]

    [text] = result_of(done["text"])["contents"]
    assert text["uri"] == "test://static-text" and text["mimeType"] == "text/plain"
    assert text["text"] == "This is the content of the static text resource."
    binary = result_of(done["binary"])["contents"][0]
    assert binary["mimeType"] == "image/png" and "text" not in binary
    assert base64.b64decode(binary["blob"]).startswith(b"\x89PNG\r\n\x1a\n")
    templated = result_of(done["template"])["contents"][0]
    assert templated["uri"] == "test://template/42/data" and json.loads(templated["text"])["id"] == "42"

    # 2026-07-28: no handshake; results carry caching hints and the server's identity in _meta
    modern = result_of(done["modern-binary"])
    assert modern["cacheScope"] in ("public", "private") and modern["ttlMs"] >= 0
    assert modern["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "conformance-fixture"
    assert base64.b64decode(modern["contents"][0]["blob"]).startswith(b"\x89PNG")

    # an unknown URI: the Inspector prints the JSON-RPC error's message and exits 1
    for name in ("unknown", "modern-unknown"):
        assert error_of(done[name]) == "Resource not found: test://nope", name
