"""``BENCH_OTEL``: the OpenTelemetry set-up a benchmark server runs with (issue 16, point 6).

- unset: nothing (whether ``opentelemetry-api`` is installed is up to the venv);
- ``api``: the API imported, no provider: resourcekit's request path checks one flag;
- ``sdk-1%``: the SDK, ``ParentBased(TraceIdRatioBased(0.01))``, a batch processor exporting nowhere;
- ``sdk-all``: the same, every request sampled.
"""

from __future__ import annotations

import os

MODE = os.environ.get("BENCH_OTEL", "")


def configure(mode: str = MODE) -> None:
    if not mode:
        return
    from opentelemetry import trace

    if mode == "api":
        return
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased, TraceIdRatioBased

    class Nowhere(SpanExporter):
        def export(self, spans):  # type: ignore[no-untyped-def]
            return SpanExportResult.SUCCESS

    if mode not in ("sdk-1%", "sdk-all"):
        raise SystemExit(f"BENCH_OTEL={mode!r}: use api, sdk-1% or sdk-all")
    provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.01)) if mode == "sdk-1%" else ALWAYS_ON)
    provider.add_span_processor(BatchSpanProcessor(Nowhere()))
    trace.set_tracer_provider(provider)


configure()
