"""The real OpenTelemetry SDK for telemetry tests, and MCP over real transports in this process.

The global tracer provider can be set once per process: ``otel()`` sets it the first time,
with a sampler that records only while a telemetry test runs (other tests see sampled-out
spans, as a production server with sampling would).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import orjson
import uvicorn
from opentelemetry import trace
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

from resourcekit.http import ASGIApp
from resourcekit.registry import Registry
from resourcekit.telemetry import spans as telemetry
from resourcekit.transports.stdio import serve_stdio
from tests.support.http_server import free_port

MODERN = "2026-07-28"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


class Switch(Sampler):
    """Record while ``on``; drop otherwise."""

    on = False
    explode = False  # a broken sampler of the user's

    def should_sample(self, parent_context: Any, trace_id: int, name: str, kind: Any = None,
                      attributes: Any = None, links: Any = None, trace_state: Any = None) -> SamplingResult:
        if self.explode:
            raise RuntimeError("the sampler broke")
        state = trace.get_current_span(parent_context).get_span_context().trace_state  # as the SDK's samplers do
        return SamplingResult(Decision.RECORD_AND_SAMPLE if self.on else Decision.DROP, attributes, state)

    def get_description(self) -> str:
        return "Switch"


class Otel:
    def __init__(self) -> None:
        self.sampler = Switch()
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(sampler=self.sampler)
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        trace.set_tracer_provider(provider)
        assert trace.get_tracer_provider() is provider, "another tracer provider was set first"
        # deltas: each test sees what it recorded (points() keeps what it collected)
        self.reader = InMemoryMetricReader(preferred_temporality={
            Counter: AggregationTemporality.DELTA, Histogram: AggregationTemporality.DELTA})
        telemetry.use_meter_provider(MeterProvider(metric_readers=[self.reader]))
        self.collected: list[Any] = []

    def reset(self) -> None:
        self.exporter.clear()
        self.reader.get_metrics_data()
        self.collected = []

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def points(self, metric: str, latest: bool = False) -> list[Any]:
        """The data points of ``metric`` recorded during this test (``latest``: of this collection)."""
        data = self.reader.get_metrics_data()
        now = []
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                now.extend((m.name, p) for m in sm.metrics for p in m.data.data_points)
        self.collected.extend(now)
        return [p for name, p in (now if latest else self.collected) if name == metric]


_OTEL: Otel | None = None


def otel() -> Otel:
    global _OTEL
    if _OTEL is None:
        _OTEL = Otel()
    return _OTEL


class Wire:
    """One MCP client connection over a real transport: stdio pipes or an HTTP socket."""

    transport = ""

    def __init__(self, era: str) -> None:
        self.era = era
        self.next_id = 0
        self.notifications: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.answers: dict[Any, asyncio.Future[dict[str, Any]]] = {}

    def message(self, method: str, params: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
                rid: Any = None) -> dict[str, Any]:
        if rid is None:
            self.next_id += 1
            rid = self.next_id
        params = dict(params or {})
        merged = {**(MODERN_META if self.era == "modern" else {}), **(meta or {})}
        if merged:
            params["_meta"] = merged
        return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}

    async def call(self, method: str, params: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
                   rid: Any = None) -> dict[str, Any]:
        return await self.send(self.message(method, params, meta, rid))

    async def send(self, message: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _deliver(self, message: dict[str, Any]) -> None:
        if "id" in message and "method" not in message:
            future = self.answers.pop(message["id"], None)
            if future is not None and not future.done():
                future.set_result(message)
        else:
            self.notifications.put_nowait(message)

    async def notification(self, method: str, timeout: float = 5.0) -> dict[str, Any]:
        while True:
            message = await asyncio.wait_for(self.notifications.get(), timeout)
            if message.get("method") == method:
                return message


class StdioWire(Wire):
    transport = "pipe"

    def __init__(self, era: str, write_fd: int, lines: asyncio.StreamReader) -> None:
        super().__init__(era)
        self.write_fd = write_fd
        self.lines = lines
        self.pump = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        while True:
            line = await self.lines.readline()
            if not line:
                return
            self._deliver(orjson.loads(line))

    def write(self, message: Any) -> None:
        os.write(self.write_fd, orjson.dumps(message) + b"\n")

    async def send(self, message: dict[str, Any]) -> dict[str, Any]:
        future = self.answers[message["id"]] = asyncio.get_running_loop().create_future()
        self.write(message)
        return await asyncio.wait_for(future, 10)

    async def start_listen(self, message: dict[str, Any]) -> None:
        self.write(message)


class HttpWire(Wire):
    transport = "tcp"

    def __init__(self, era: str, url: str, client: httpx.AsyncClient) -> None:
        super().__init__(era)
        self.url = url
        self.client = client
        self.session: str | None = None
        self.tasks: list[asyncio.Task[Any]] = []

    def headers(self, message: dict[str, Any]) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if self.era == "modern":
            headers["MCP-Protocol-Version"] = MODERN
            headers["Mcp-Method"] = message["method"]
            if message["method"] == "resources/read":
                headers["Mcp-Name"] = message["params"].get("uri", "")
        elif self.session is not None:
            headers["Mcp-Session-Id"] = self.session
            headers["MCP-Protocol-Version"] = "2025-11-25"
        return headers

    async def send(self, message: dict[str, Any]) -> dict[str, Any]:
        response = await self.client.post(self.url, content=orjson.dumps(message), headers=self.headers(message))
        if "mcp-session-id" in response.headers:
            self.session = response.headers["mcp-session-id"]
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            events = [orjson.loads(line[5:]) for line in response.text.splitlines()
                      if line.startswith("data:") and line[5:].strip()]
            for event in events[:-1]:
                self._deliver(event)
            return dict(events[-1])
        return dict(response.json())

    async def start_listen(self, message: dict[str, Any]) -> None:
        """A stream the server keeps open: events arrive as notifications."""
        async def pump() -> None:
            async with self.client.stream("POST", self.url, content=orjson.dumps(message),
                                          headers=self.headers(message)) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data:") and line[5:].strip():  # not a priming event
                        self._deliver(orjson.loads(line[5:]))
        self.tasks.append(asyncio.ensure_future(pump()))

    async def get_stream(self) -> None:
        async def pump() -> None:
            headers = {"Accept": "text/event-stream", "Mcp-Session-Id": self.session or "",
                       "MCP-Protocol-Version": "2025-11-25"}
            async with self.client.stream("GET", self.url, headers=headers) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data:") and line[5:].strip():  # not a priming event
                        self._deliver(orjson.loads(line[5:]))
        self.tasks.append(asyncio.ensure_future(pump()))


@contextlib.asynccontextmanager
async def stdio_wire(app: Registry, era: str) -> AsyncIterator[StdioWire]:
    """``serve_stdio`` in this process over two pipes."""
    loop = asyncio.get_running_loop()
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    server = asyncio.ensure_future(serve_stdio(app, stdin=os.fdopen(in_r, "rb", buffering=0), stdout_fd=out_w))
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                os.fdopen(out_r, "rb", buffering=0))
    wire = StdioWire(era, in_w, reader)
    try:
        if era == "handshake":
            await wire.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "t", "version": "1"}})
            wire.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield wire
    finally:
        os.close(in_w)
        await asyncio.wait_for(server, 10)
        wire.pump.cancel()
        transport.close()


@contextlib.asynccontextmanager
async def http_wire(app: Registry, era: str, **options: Any) -> AsyncIterator[HttpWire]:
    """uvicorn serving the app's ASGIApp on a loopback socket, in this event loop."""
    port = free_port()
    asgi = ASGIApp(app, **options)
    server = uvicorn.Server(uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    async with httpx.AsyncClient(timeout=10) as client:
        wire = HttpWire(era, f"http://127.0.0.1:{port}/mcp", client)
        try:
            if era == "handshake":
                await wire.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                               "clientInfo": {"name": "t", "version": "1"}})
                await client.post(wire.url, content=orjson.dumps(
                    {"jsonrpc": "2.0", "method": "notifications/initialized"}), headers=wire.headers({}))
            yield wire
        finally:
            asgi.close()
            for pump in wire.tasks:
                pump.cancel()
            server.should_exit = True
            await asyncio.wait_for(task, 10)


def open_wire(transport: str, app: Registry, era: str) -> contextlib.AbstractAsyncContextManager[Wire]:
    return stdio_wire(app, era) if transport == "pipe" else http_wire(app, era)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def only(spans: Sequence[ReadableSpan]) -> ReadableSpan:
    assert len(spans) == 1, [(s.name, attrs(s)) for s in spans]
    return spans[0]
