"""Head sampling of root request spans (``resourcekit.telemetry.sampling``): with the SDK's ratio sampler a
dropped request makes no SDK span, and the decisions are the SDK's own, at the configured rate; over
stdio and HTTP, a sampled-out read still records its duration."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    TraceIdRatioBased,
)
from opentelemetry.trace import SpanKind

from resourcekit.telemetry.sampling import ID_LIMIT, presampler
from tests.support.http_server import ACCEPT, http_server_process, open_session
from tests.support.process import APPS, RawServer
from tests.support.wire import read_message

APP = APPS / "traced_app.py"


def test_the_rule_is_the_sdk_samplers_own_decision() -> None:
    for rate in (0.0, 0.01, 0.3, 0.5, 1.0):
        for sampler in (TraceIdRatioBased(rate), ParentBased(TraceIdRatioBased(rate))):
            primed = presampler(TracerProvider(sampler=sampler).get_tracer(f"t{rate}"))
            assert primed is not None
            rng = random.Random(rate)
            for _ in range(3000):
                trace_id = rng.getrandbits(128)
                sdk = sampler.should_sample(None, trace_id, "resources/read").decision.is_sampled()
                assert (trace_id & ID_LIMIT < primed.bound) == sdk, (rate, trace_id)


def test_other_samplers_decide_in_the_sdk_span_by_span() -> None:
    assert presampler(TracerProvider(sampler=ALWAYS_ON).get_tracer("on")) is None
    assert presampler(TracerProvider(sampler=ParentBased(ALWAYS_ON)).get_tracer("pb")) is None
    assert presampler(object()) is None  # not the SDK's tracer
    off = presampler(TracerProvider(sampler=ALWAYS_OFF).get_tracer("off"))
    assert off is not None and off.bound == 0


def test_a_sampled_root_is_started_by_the_sdk_with_the_trace_id_drawn_first() -> None:
    tracer = TracerProvider(sampler=ParentBased(TraceIdRatioBased(1.0))).get_tracer("primed")
    primed = presampler(tracer)
    assert primed is not None
    primed.prime(0x1234)
    span = tracer.start_span("resources/read", None, SpanKind.SERVER)
    assert span.get_span_context().trace_id == 0x1234 and span.is_recording()
    # once: the next span draws its own
    assert tracer.start_span("other").get_span_context().trace_id != 0x1234


def read_all(server: RawServer, count: int, uri: str = "note://a", meta: dict[str, Any] | None = None) -> None:
    params: dict[str, Any] = {"uri": uri}
    if meta:
        params["_meta"] = meta
    for start in range(1, count + 1, 64):  # pipelined, as W1
        ids = range(start, min(start + 64, count + 1))
        for rid in ids:
            server.send({"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": params})
        for _ in ids:
            assert "result" in server.recv()


def spans(path: Path, expected: int | None = None) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while True:
        found = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        found = [s for s in found if s["name"] == "resources/read"]
        if expected is None or len(found) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def sampled_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ratio: str, **extra: str) -> RawServer:
    """traced_app.py in a real process, exporting spans to tmp_path/spans.jsonl, initialized."""
    monkeypatch.setenv("SPANS_FILE", str(tmp_path / "spans.jsonl"))
    monkeypatch.setenv("SAMPLE_RATIO", ratio)
    for name, value in extra.items():
        monkeypatch.setenv(name, value)
    server = RawServer(APP)
    server.initialize()
    return server


def test_a_server_samples_its_roots_at_the_configured_rate(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    spans_file = tmp_path / "spans.jsonl"
    server = sampled_server(tmp_path, monkeypatch, "0.5")
    try:
        read_all(server, 2000)
    finally:
        assert server.close() == 0
    found = spans(spans_file)
    # binomial(2000, 0.5): sd 22; drawing twice (a decision here, another in the SDK) would give 500
    assert 850 <= len(found) <= 1150, len(found)
    bound = TraceIdRatioBased(0.5).bound
    for span in found:  # each sampled span's trace id is one the rule samples: drawn once
        assert int(span["trace_id"], 16) & ID_LIMIT < bound
        assert span["parent_id"] is None and span["attributes"]["mcp.resource.uri"] == "note://a"


def test_with_nothing_sampled_a_parent_still_decides_and_handlers_get_a_valid_trace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spans_file = tmp_path / "spans.jsonl"
    server = sampled_server(tmp_path, monkeypatch, "0")
    try:
        read_all(server, 300)
        # a dropped root span still gives the handler's own spans a parent: a valid, unsampled trace
        reply = server.request(9000, "resources/read", {"uri": "span://child"})
        child = json.loads(reply["result"]["contents"][0]["text"])
        assert child["valid"] and not child["sampled"] and not child["recording"]
        # a caller's sampled trace context decides in the SDK: recorded, the caller's child
        parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        read_all(server, 1, meta={"traceparent": parent})
        (span,) = spans(spans_file, 1)
        assert span["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
        assert span["parent_id"] == "b7ad6b7169203331"
    finally:
        assert server.close() == 0


def test_made_again_the_tracer_keeps_one_primed_generator() -> None:
    tracer = TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.25))).get_tracer("again")
    first = presampler(tracer)
    assert first is not None and presampler(tracer) is first and tracer.id_generator is first
    assert type(first.inner).__name__ == "RandomIdGenerator"


def test_sampled_out_reads_still_record_their_durations(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = sampled_server(tmp_path, monkeypatch, "0", METRICS="1")
    try:
        read_all(server, 640)  # pipelined over stdio: sampled out, no span made
        for rid in range(5000, 5005):
            assert server.request(rid, "resources/read", {"uri": "note://boom"})["error"]["code"] == -32603
        reply = server.request(6000, "resources/read", {"uri": "metrics://operations"})
        counts = json.loads(reply["result"]["contents"][0]["text"])
    finally:
        assert server.close() == 0
    assert counts.get("resources/read", 0) >= 640, counts
    assert counts["resources/read/-32603"] == 5, counts
    assert not spans(tmp_path / "spans.jsonl")


def test_sampled_out_http_reads_record_durations_and_sampled_ones_get_spans(tmp_path: Path) -> None:
    """Over HTTP (a real ``resourcekit run --transport http``) with a 0.5 ratio sampler: about half
    of 400 reads get a span, and every read records its duration, sampled or not, failures under
    their error type."""
    spans_file = tmp_path / "spans.jsonl"
    extra = {"SPANS_FILE": str(spans_file), "SAMPLE_RATIO": "0.5", "METRICS": "1"}
    with http_server_process(APP, extra_env=extra) as url, httpx.Client(timeout=10) as http:
        headers = {"content-type": "application/json", "accept": ACCEPT, **open_session(url, "2025-11-25")}

        def read(rid: int, uri: str) -> dict[str, Any]:
            return dict(http.post(url, content=orjson.dumps(read_message(rid, uri)), headers=headers).json())

        assert all("result" in read(rid, "note://a") for rid in range(1, 401))
        assert all(read(rid, "note://boom")["error"]["code"] == -32603 for rid in range(500, 504))
        counts = json.loads(read(600, "metrics://operations")["result"]["contents"][0]["text"])
    reads = [s for s in spans(spans_file) if s["attributes"]["mcp.resource.uri"] == "note://a"]
    assert 140 <= len(reads) <= 260, len(reads)  # binomial(400, 0.5): sd 10
    assert counts.get("resources/read", 0) >= 400 and counts["resources/read/-32603"] == 4, counts
