"""Telemetry across processes: the official ``mcp`` client, traced here, and a real ``resourcekit run``
process exporting its spans (one trace); the SDK set up after import; ``--metrics`` scraped over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.client import Client
from mcp.client.session import ClientSession
from prometheus_client.parser import text_string_to_metric_families

from tests.support.http_server import http_server_process
from tests.support.mcp_client import http_session, stdio_session
from tests.support.process import APPS, ROOT, command, env
from tests.support.redis_server import redis_process
from tests.support.telemetry import Otel

pytestmark = pytest.mark.anyio
APP = APPS / "traced_app.py"



def server_spans(path: Path, name: str, count: int = 1) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        found = [s for s in map(json.loads, lines) if s["name"] == name]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def check_one_trace(sdk: Otel, spans_file: Path) -> None:
    client = [s for s in sdk.spans() if s.kind.name == "CLIENT" and "resources/read" in s.name]
    assert len(client) == 1, [s.name for s in sdk.spans()]
    (server,) = server_spans(spans_file, "resources/read")
    assert server["kind"] == "SERVER"
    assert server["trace_id"] == f"{client[0].context.trace_id:032x}"
    assert server["parent_id"] == f"{client[0].context.span_id:016x}"
    assert server["attributes"]["mcp.resource.uri"] == "note://a"


async def test_mcp_client_traced_and_a_stdio_server_process_share_one_trace(sdk: Otel, tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    async with stdio_session(APP, extra_env={"SPANS_FILE": str(spans_file)}) as session:
        await session.read_resource("note://a")
    check_one_trace(sdk, spans_file)
    (server,) = server_spans(spans_file, "resources/read")
    assert server["attributes"]["network.transport"] == "pipe"
    assert server["attributes"]["mcp.protocol.version"] == "2025-11-25"


@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_mcp_client_traced_and_an_http_server_process_share_one_trace(sdk: Otel, tmp_path: Path,
                                                                           era: str) -> None:
    spans_file = tmp_path / "spans.jsonl"
    with http_server_process(APP, extra_env={"SPANS_FILE": str(spans_file)}) as url:
        if era == "modern":
            async with Client(url, mode="2026-07-28") as client:
                await client.read_resource("note://a")
        else:
            async with http_session(url) as session:
                await session.read_resource("note://a")
        check_one_trace(sdk, spans_file)
        (server,) = server_spans(spans_file, "resources/read")
    attributes = server["attributes"]
    assert attributes["network.transport"] == "tcp"
    if era == "handshake":
        assert attributes["mcp.session.id"]
    else:
        assert attributes["mcp.protocol.version"] == "2026-07-28" and "mcp.session.id" not in attributes


AFTER_IMPORT = r'''
import asyncio, sys
from resourcekit import App
from resourcekit.testing import Client

app = App("late")
app.resource("note://a")(lambda: "one")


def configure():
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


async def main() -> None:
    async with Client(app, protocol_version="2026-07-28") as client:
        await client.read("note://a")
        # no provider yet: nothing of OpenTelemetry was imported, although the API is installed
        assert not any(name.startswith("opentelemetry") for name in sys.modules), sorted(sys.modules)
        exporter = configure()  # while the server runs: it notices within a second
        await asyncio.sleep(1.5)
        await client.read("note://a")
    print(",".join(s.name for s in exporter.get_finished_spans()))

asyncio.run(main())
'''


def test_the_sdk_may_be_set_up_after_import_and_nothing_is_imported_before() -> None:
    done = subprocess.run([sys.executable, "-c", AFTER_IMPORT], env=env(), capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "resources/read"


def test_metrics_are_served_as_prometheus_text_behind_the_host_checks() -> None:
    with http_server_process(APP, "--metrics") as url:
        base = url.rsplit("/", 1)[0]
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read"}
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        for i, uri in enumerate(["note://a", "note://a", "note://boom"]):
            body = {"jsonrpc": "2.0", "id": i, "method": "resources/read", "params": {"uri": uri, "_meta": meta}}
            httpx.post(url, json=body, headers={**headers, "Mcp-Name": uri}, timeout=10)
        scrape = httpx.get(f"{base}/metrics", timeout=10)
        assert scrape.status_code == 200
        assert scrape.headers["content-type"].startswith("text/plain")
        families = {f.name: f for f in text_string_to_metric_families(scrape.text)}
        duration = families["mcp_server_operation_duration_seconds"]
        assert duration.type == "histogram"
        counts = {(s.labels["mcp_method_name"], s.labels.get("error_type") or None): s.value
                  for s in duration.samples if s.name.endswith("_count")}
        assert counts.get(("resources/read", None)) == 2, counts
        assert counts[("resources/read", "-32603")] == 1
        assert not any("mcp_resource_uri" in s.labels for f in families.values() for s in f.samples)
        # the same Host checks as /mcp
        refused = httpx.get(f"{base}/metrics", headers={"Host": "evil.example"}, timeout=10)
        assert refused.status_code == 421
        assert httpx.post(f"{base}/metrics", timeout=10).status_code == 405


@pytest.mark.parametrize(("extra", "message"), [
    (["--transport", "http", "--workers", "2", "--redis", "redis://127.0.0.1:1"], "--metrics cannot be combined"),
    ([], "--metrics only applies to --transport http"),
])
def test_metrics_refused_where_it_would_mislead(extra: list[str], message: str) -> None:
    done = subprocess.run(command("run", str(APP), "--metrics", *extra), env=env(), capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert message in done.stderr
    if "--workers" in extra:
        assert "each process keeps its own" in done.stderr


async def test_cookbook_example_prints_spans_to_stderr_and_keeps_stdout_for_the_protocol(sdk: Otel,
                                                                                        tmp_path: Path) -> None:
    # the client here samples its spans: the example's ParentBased sampler follows its decision
    import anyio
    from mcp.client.stdio import StdioServerParameters, stdio_client

    updated = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(getattr(message, "root", message), "method", None) == "notifications/resources/updated":
            updated.set()

    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "resourcekit", "run", "cookbook/observability.py"],
                                   env={"PYTHONPATH": env()["PYTHONPATH"]}, cwd=str(ROOT))
    with open(tmp_path / "stderr.txt", "w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write, message_handler=on_message) as session:
            await session.initialize()
            await session.subscribe_resource("counter://value")
            await session.read_resource("counter://bump")
            with anyio.fail_after(20):
                await updated.wait()
    printed = (tmp_path / "stderr.txt").read_text()
    assert '"name": "resources/read"' in printed
    assert '"mcp.resource.uri": "counter://bump"' in printed
    assert '"name": "notifications/resources/updated"' in printed
    assert '"name": "bump the counter"' in printed


def test_with_redis_a_notification_links_to_its_cause_in_another_worker(tmp_path: Path) -> None:
    """The change is made by a request on worker A; worker B, holding the listen stream, notifies."""
    state = tmp_path / "state.txt"
    spans = {name: tmp_path / f"{name}.jsonl" for name in "AB"}
    with redis_process() as redis, \
            http_server_process(APP, "--redis", redis.url, extra_env={"SPANS_FILE": str(spans["A"]),
                                                                      "STATE_FILE": str(state)}) as a, \
            http_server_process(APP, "--redis", redis.url, extra_env={"SPANS_FILE": str(spans["B"]),
                                                                      "STATE_FILE": str(state)}) as b:
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": "2026-07-28"}
        listen = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
            "notifications": {"resourceSubscriptions": ["state://value"]}, "_meta": meta}}
        with httpx.stream("POST", b, json=listen, headers={**headers, "Mcp-Method": "subscriptions/listen"},
                          timeout=20) as stream:
            lines = stream.iter_lines()
            assert any("acknowledged" in line for line in lines)
            time.sleep(0.3)
            bump = {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {
                "uri": "state://bump", "_meta": {**meta, "traceparent": f"00-{'ab' * 16}-{'cd' * 8}-01"}}}
            answer = httpx.post(a, json=bump, headers={**headers, "Mcp-Method": "resources/read",
                                                       "Mcp-Name": "state://bump"}, timeout=10)
            assert answer.json()["result"]["contents"][0]["text"] == "bumped"
            assert any("notifications/resources/updated" in line for line in lines)
        (request,) = server_spans(spans["A"], "resources/read")
        (updated,) = server_spans(spans["B"], "notifications/resources/updated")
    assert request["trace_id"] == "ab" * 16
    assert updated["links"] == [request["span_id"]]
    assert updated["attributes"]["mcp.resource.uri"] == "state://value"
