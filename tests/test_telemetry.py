"""OpenTelemetry spans and metrics with the real SDK, over real stdio pipes and HTTP sockets, in both eras.

The server runs in this process (``serve_stdio`` on pipes, uvicorn on a loopback port) so that
the SDK's in-memory exporter and reader see what it records.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
import pytest

from resourcekit import App
from tests.support.telemetry import Otel, Wire, attrs, only, open_wire

pytestmark = pytest.mark.anyio

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRANSPORTS = ["pipe", "tcp"]
ERAS = ["handshake", "modern"]



def make_app(**options: Any) -> tuple[App, dict[str, str]]:
    state = {"note": "one"}
    app = App("traced", **options)

    @app.resource("note://a")
    def note() -> str:
        return state["note"]

    @app.resource("note://boom")
    def boom() -> str:
        raise RuntimeError("secret detail")

    @app.resource("note://slow")
    async def slow() -> str:
        await asyncio.sleep(30)
        return "late"

    return app, state


def not_found_code(era: str) -> int:
    return -32002 if era == "handshake" else -32602


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_one_server_span_per_request_with_the_conventions_attributes(sdk: Otel, transport: str,
                                                                          era: str) -> None:
    app, _ = make_app()
    async with open_wire(transport, app, era) as wire:
        answer = await wire.call("resources/read", {"uri": "note://a"}, rid="r-7")
        assert answer["result"]["contents"][0]["text"] == "one"
        await wire.call("resources/list")
        session = getattr(wire, "session", None)
    span = only(sdk.spans("resources/read"))
    a = attrs(span)
    assert span.kind.name == "SERVER"
    assert a["mcp.method.name"] == "resources/read"
    assert a["jsonrpc.request.id"] == "r-7"
    assert a["mcp.protocol.version"] == ("2025-11-25" if era == "handshake" else "2026-07-28")
    assert a["network.transport"] == transport
    assert a["mcp.resource.uri"] == "note://a"
    if transport == "tcp" and era == "handshake":
        assert a["mcp.session.id"] == session
    else:
        assert "mcp.session.id" not in a
    assert span.status.status_code.name == "UNSET"
    assert span.parent is None  # no trace context came: a trace of its own
    listing = only(sdk.spans("resources/list"))
    assert "mcp.resource.uri" not in attrs(listing)
    # the duration metric: per method, no URI, no id
    points = [p for p in sdk.points("mcp.server.operation.duration")
              if p.attributes["mcp.method.name"] == "resources/read"]
    assert sum(p.count for p in points) == 1
    assert "mcp.resource.uri" not in points[0].attributes and "jsonrpc.request.id" not in points[0].attributes
    assert points[0].attributes["network.transport"] == transport


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_trace_context_in_meta_makes_the_span_a_child(sdk: Otel, transport: str, era: str) -> None:
    app, _ = make_app()
    async with open_wire(transport, app, era) as wire:
        await wire.call("resources/read", {"uri": "note://a"}, meta={
            "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01", "tracestate": "rojo=00f067aa0ba902b7",
            "baggage": "user.secret=hunter2"})
        await wire.call("resources/read", {"uri": "note://a"}, meta={"traceparent": "00-not-a-traceparent-01"})
    child, orphan = sdk.spans("resources/read")
    assert child.parent is not None
    assert f"{child.context.trace_id:032x}" == TRACE_ID
    assert f"{child.parent.span_id:016x}" == PARENT_ID
    assert child.parent.is_remote
    assert child.context.trace_state.get("rojo") == "00f067aa0ba902b7"
    assert not any("hunter2" in str(v) or "secret" in k for k, v in attrs(child).items())
    assert orphan.parent is None and f"{orphan.context.trace_id:032x}" != TRACE_ID


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_errors_set_status_error_type_and_code(sdk: Otel, transport: str, era: str) -> None:
    app, _ = make_app()
    async with open_wire(transport, app, era) as wire:
        missing = await wire.call("resources/read", {"uri": "note://nothing"})
        failing = await wire.call("resources/read", {"uri": "note://boom"})
        unknown = await wire.call("tools/frobnicate", {})
        # refused before any handler runs: no uri (handshake), no client capabilities (2026-07-28)
        early = await (wire.call("resources/read", {}) if era == "handshake" else
                       wire.call("resources/list", meta={"io.modelcontextprotocol/clientCapabilities": None}))
    assert missing["error"]["code"] == not_found_code(era)
    assert failing["error"] == {"code": -32603, "message": "Internal error"}  # the client learns nothing more
    reads = sdk.spans("resources/read") + sdk.spans("resources/list")
    assert len(reads) == 3
    by_uri = {attrs(s).get("mcp.resource.uri"): s for s in reads}
    for span, code in ((by_uri["note://nothing"], not_found_code(era)), (by_uri["note://boom"], -32603),
                       (by_uri[None], -32602)):
        assert span.status.status_code.name == "ERROR"
        assert attrs(span)["error.type"] == str(code)
        assert attrs(span)["rpc.response.status_code"] == str(code)
    events = by_uri["note://boom"].events
    assert [e.name for e in events] == ["exception"]
    assert events[0].attributes is not None
    assert "secret detail" in events[0].attributes["exception.message"]
    assert events[0].attributes["exception.type"] == "RuntimeError"
    # an unknown method is named _OTHER: span names and metric labels stay low-cardinality
    other = only(sdk.spans("_OTHER"))
    assert attrs(other)["error.type"] == "-32601" and unknown["error"]["code"] == -32601
    assert early["error"]["code"] == -32602
    failed = [p for p in sdk.points("mcp.server.operation.duration") if "error.type" in p.attributes]
    assert {p.attributes["error.type"] for p in failed} == {str(not_found_code(era)), "-32603", "-32601", "-32602"}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_cancelled_request_ends_its_span(sdk: Otel, transport: str, era: str) -> None:
    app, _ = make_app()
    async with open_wire(transport, app, era) as wire:
        if transport == "tcp" and era == "modern":  # 2026-07-28 over HTTP: the client disconnects
            message = wire.message("resources/read", {"uri": "note://slow"})
            async with httpx.AsyncClient() as client:
                post = asyncio.ensure_future(client.post(wire.url, content=orjson.dumps(message),  # type: ignore[attr-defined]
                                                         headers=wire.headers(message)))  # type: ignore[attr-defined]
                await asyncio.sleep(0.3)
                post.cancel()
        else:
            message = wire.message("resources/read", {"uri": "note://slow"})
            post = asyncio.ensure_future(wire.send(message))
            await asyncio.sleep(0.3)
            notice = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": message["id"]}}
            if transport == "pipe":
                wire.write(notice)  # type: ignore[attr-defined]
            else:
                await wire.client.post(wire.url, json=notice, headers=wire.headers(notice))  # type: ignore[attr-defined]
        await _until(lambda: bool(sdk.spans("resources/read")))
        post.cancel()
    span = only(sdk.spans("resources/read"))
    assert [e.name for e in span.events] == ["cancelled"]
    assert attrs(span)["error.type"] == "cancelled"


async def _until(condition: Any, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_notifications_are_spans_linked_to_their_cause(sdk: Otel, transport: str) -> None:
    app, state = make_app()
    async with open_wire(transport, app, "handshake") as wire:
        if transport == "tcp":
            await wire.get_stream()  # type: ignore[attr-defined]
            await _until(lambda: bool(sdk.spans("GET /mcp")))
        await wire.call("resources/subscribe", {"uri": "note://a"})
        subscribe = only(sdk.spans("resources/subscribe"))
        state["note"] = "two"
        with sdk_tracer().start_as_current_span("user change") as cause:
            app.notify_changed("note://a")
        await wire.notification("notifications/resources/updated")
        await _until(lambda: bool(sdk.spans("notifications/resources/updated")))
        assert sum(p.value for p in sdk.points("resourcekit.subscriptions.active", latest=True)) == 1
    sent = only(sdk.spans("notifications/resources/updated"))
    assert sent.kind.name == "PRODUCER"
    assert attrs(sent)["mcp.method.name"] == "notifications/resources/updated"
    assert attrs(sent)["mcp.resource.uri"] == "note://a"
    linked = {link.context.span_id for link in sent.links}
    assert cause.get_span_context().span_id in linked
    assert sent.parent is None
    assert subscribe.context.span_id not in linked or len(linked) == 2
    counted = sdk.points("resourcekit.notifications.sent")
    assert any(p.attributes["mcp.method.name"] == "notifications/resources/updated" and p.value >= 1
               for p in counted)
    assert sum(p.count for p in sdk.points("resourcekit.notification.delay")) >= 1
    if transport == "tcp":
        get = only(sdk.spans("GET /mcp"))
        assert attrs(get)["mcp.session.id"] == wire.session  # type: ignore[attr-defined]
        assert any(p.attributes.get("resourcekit.stream.kind") == "get"
                   for p in sdk.points("resourcekit.stream.duration"))
    # the session ended: its duration is recorded
    sessions = sdk.points("mcp.server.session.duration")
    assert any(p.attributes.get("network.transport") == transport and p.count >= 1 for p in sessions)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_listen_span_ends_at_acknowledgement_and_list_changed_links_the_registration(
        sdk: Otel, transport: str) -> None:
    app, state = make_app()
    async with open_wire(transport, app, "modern") as wire:
        listen = wire.message("subscriptions/listen", {"notifications": {
            "resourceSubscriptions": ["note://a"], "resourcesListChanged": True}})
        await wire.start_listen(listen)  # type: ignore[attr-defined]
        await wire.notification("notifications/subscriptions/acknowledged")
        await _until(lambda: bool(sdk.spans("subscriptions/listen")))
        span = only(sdk.spans("subscriptions/listen"))
        assert attrs(span)["mcp.resource.uri"] == "note://a"
        assert attrs(span)["mcp.protocol.version"] == "2026-07-28"
        with sdk_tracer().start_as_current_span("deploy") as cause:
            app.add_resource(lambda: "new", "note://new")
        await wire.notification("notifications/resources/list_changed")
        await _until(lambda: bool(sdk.spans("notifications/resources/list_changed")))
        state["note"] = "three"
        app.notify_changed("note://a")  # no span current: the call gets a span of its own
        await wire.notification("notifications/resources/updated")
        await _until(lambda: bool(sdk.spans("notifications/resources/updated")))
    # the stream ended when the server closed: its lifetime is recorded
    streams = sdk.points("resourcekit.stream.duration")
    assert any(p.attributes.get("resourcekit.stream.kind") == "listen" for p in streams)
    changed = only(sdk.spans("notifications/resources/list_changed"))
    assert cause.get_span_context().span_id in {link.context.span_id for link in changed.links}
    updated = only(sdk.spans("notifications/resources/updated"))
    call = only(sdk.spans("resourcekit notify_changed"))
    assert [link.context.span_id for link in updated.links] == [call.context.span_id]
    assert attrs(call)["mcp.resource.uri"] == "note://a"


def sdk_tracer() -> Any:
    from opentelemetry import trace

    return trace.get_tracer("tests")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_telemetry_false_turns_it_off(sdk: Otel, transport: str) -> None:
    app, _ = make_app(telemetry=False)
    async with open_wire(transport, app, "modern") as wire:
        await wire.call("resources/read", {"uri": "note://a"})
    assert sdk.spans() == []


async def test_handler_spans_are_children_of_the_request_span(sdk: Otel) -> None:
    app = App("nested")

    @app.resource("note://nested")
    async def nested() -> str:
        with sdk_tracer().start_as_current_span("query the database"):
            return "ok"

    wire: Wire
    async with open_wire("pipe", app, "modern") as wire:
        await wire.call("resources/read", {"uri": "note://nested"})
    inner = only(sdk.spans("query the database"))
    outer = only(sdk.spans("resources/read"))
    assert inner.parent is not None and inner.parent.span_id == outer.context.span_id


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_failing_sampler_leaves_the_request_served(sdk: Otel, transport: str,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    app, _ = make_app()
    async with open_wire(transport, app, "modern") as wire:
        sdk.sampler.explode = True
        try:
            answer = await wire.call("resources/read", {"uri": "note://a"})
        finally:
            sdk.sampler.explode = False
    assert answer["result"]["contents"][0]["text"] == "one"
    assert "starting the span of resources/read failed" in caplog.text


async def test_each_member_of_a_batch_is_a_span_and_the_batch_still_answers_once(sdk: Otel) -> None:
    app, _ = make_app()
    async with open_wire("pipe", app, "batch") as wire:  # neither era's default: initialized below
        await wire.call("initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                       "clientInfo": {"name": "t", "version": "1"}})
        wire.write([{"jsonrpc": "2.0", "id": "b1", "method": "resources/read", "params": {"uri": "note://a"}},  # type: ignore[attr-defined]
                    {"jsonrpc": "2.0", "id": "b2", "method": "resources/read", "params": {"uri": "note://boom"}},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"}])
        batch: Any = await asyncio.wait_for(wire.notifications.get(), 10)  # a list: not one answer
    answers = {answer["id"]: answer for answer in batch}
    assert set(answers) == {"b1", "b2"} and answers["b2"]["error"]["code"] == -32603
    spans = {attrs(s)["jsonrpc.request.id"]: s for s in sdk.spans("resources/read")}
    assert spans["b1"].status.status_code.name == "UNSET" and spans["b2"].status.status_code.name == "ERROR"
    assert attrs(spans["b1"])["mcp.protocol.version"] == "2025-03-26"


async def test_a_streamed_resource_ends_its_span_with_its_bytes(sdk: Otel) -> None:
    """``resources/stream`` answers with bytes, not a JSON-RPC message: its span ends all the same."""
    app = App("traced")

    @app.resource("blob://big", streamable=True, mime_type="application/octet-stream")
    def big() -> bytes:
        return b"x" * 100_000

    message = {"jsonrpc": "2.0", "id": "s-1", "method": "resources/stream", "params": {"uri": "blob://big", "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"resourceStreaming": {}}}}}
    async with open_wire("tcp", app, "modern") as wire:
        response = await wire.client.post(wire.url, content=orjson.dumps(message), headers=wire.headers(message))
        assert response.status_code == 200 and response.content == b"x" * 100_000
    span = only(sdk.spans("resources/stream"))
    assert attrs(span)["mcp.resource.uri"] == "blob://big"
    assert span.status.status_code.name == "UNSET"
