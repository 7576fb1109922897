"""Observability: spans and metrics printed to stderr by the OpenTelemetry SDK's console exporters.

    pip install 'resourcekit[otel]' opentelemetry-sdk
    resourcekit run cookbook/observability.py                     # stdio: spans go to stderr
    resourcekit run cookbook/observability.py --transport http --metrics   # and GET /metrics

Each request is a SERVER span named by its method (``resources/read``) carrying
``mcp.resource.uri``, the session, the protocol version; a request whose ``params._meta``
carries a ``traceparent`` joins the caller's trace. ``notify_changed`` (here: every write to
``counter://value``, and every 2 s by polling ``clock://now``) ends in a
``notifications/resources/updated`` span linked to the span that caused it.

To send them to a collector instead, replace the console exporters with OTLP ones
(``pip install opentelemetry-exporter-otlp``)::

    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    processor = BatchSpanProcessor(OTLPSpanExporter(endpoint="http://collector:4317"))

or configure nothing here and run ``opentelemetry-instrument resourcekit run app.py`` with the
usual ``OTEL_*`` variables (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``, ...).
"""

from __future__ import annotations

import sys
import time

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

from resourcekit import App

# stdout carries the MCP protocol over stdio: the console exporters must write to stderr
resource = Resource.create({"service.name": "observability-example"})
tracer_provider = TracerProvider(resource=resource)
tracer_provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=sys.stderr),
                                                      schedule_delay_millis=500))
trace.set_tracer_provider(tracer_provider)
metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[
    PeriodicExportingMetricReader(ConsoleMetricExporter(out=sys.stderr), export_interval_millis=10_000)]))

app = App("observability", instructions="A counter (bump it with counter://bump) and a clock.")
tracer = trace.get_tracer("observability-example")
COUNTER = {"value": 0}


@app.resource("counter://value", mime_type="text/plain")
def value() -> str:
    return str(COUNTER["value"])


@app.resource("counter://bump", description="Reading it adds one to counter://value")
async def bump() -> str:
    # a span of our own, a child of the request's; notify_changed links the notification to it
    with tracer.start_as_current_span("bump the counter"):
        COUNTER["value"] += 1
        app.notify_changed("counter://value")
    return str(COUNTER["value"])


@app.resource("clock://now", poll=2.0)
def now() -> str:
    return time.strftime("%H:%M:%S")


if __name__ == "__main__":
    app.run()
