"""An app whose process exports its spans as JSON lines to $SPANS_FILE (the real SDK, set up after import)."""

import json
import os

from resourcekit import App

app = App("traced")


@app.resource("note://a", description="A note")
def note() -> str:
    return "one"


@app.resource("note://boom")
def boom() -> str:
    raise RuntimeError("secret detail")


STATE = os.environ.get("STATE_FILE", "")


@app.resource("state://value")
def state_value() -> str:
    return open(STATE).read() if STATE and os.path.exists(STATE) else ""


@app.resource("state://bump")
async def bump() -> str:
    """Changes state://value, inside this request's span: its notifications link to the span."""
    with open(STATE, "a") as out:
        out.write("+")
    app.notify_changed("state://value")
    return "bumped"


@app.resource("span://child")
async def child() -> str:
    """The span context a handler's own span gets: its parent is this request's span."""
    from opentelemetry import trace

    with trace.get_tracer("app").start_as_current_span("child") as span:
        context = span.get_span_context()
        return json.dumps({"trace_id": f"{context.trace_id:032x}", "valid": context.is_valid,
                           "sampled": context.trace_flags.sampled, "recording": span.is_recording()})


if os.environ.get("METRICS"):  # the durations recorded, read back through a resource
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    READER = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))

    @app.resource("metrics://operations")
    def operations() -> str:
        """{method or method/error.type: count} of mcp.server.operation.duration so far."""
        counts: dict[str, int] = {}
        data = READER.get_metrics_data()
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name == "mcp.server.operation.duration":
                        for point in metric.data.data_points:
                            attrs = dict(point.attributes)
                            key = "/".join(str(attrs[k]) for k in ("mcp.method.name", "error.type") if k in attrs)
                            counts[key] = counts.get(key, 0) + point.count
        return json.dumps(counts)


if os.environ.get("SPANS_FILE"):
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class JsonLines(SpanExporter):
        def __init__(self, path: str) -> None:
            self.path = path

        def export(self, spans):  # type: ignore[no-untyped-def]
            with open(self.path, "a") as out:
                for span in spans:
                    out.write(json.dumps({
                        "name": span.name, "kind": span.kind.name, "attributes": dict(span.attributes or {}),
                        "trace_id": f"{span.context.trace_id:032x}", "span_id": f"{span.context.span_id:016x}",
                        "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
                        "status": span.status.status_code.name, "events": [e.name for e in span.events],
                        "links": [f"{link.context.span_id:016x}" for link in span.links],
                    }) + "\n")
            return SpanExportResult.SUCCESS

    ratio = os.environ.get("SAMPLE_RATIO")  # the SDK's ratio sampler, as production servers run
    if ratio is not None:
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

        provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(float(ratio))))
    else:
        provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLines(os.environ["SPANS_FILE"])))
    trace.set_tracer_provider(provider)
