"""``GET /metrics``: resourcekit's metrics as Prometheus text, on the MCP endpoint's listener.

``resourcekit run FILE --transport http --metrics`` wraps the ``ASGIApp`` in ``MetricsEndpoint``:
resourcekit's instruments record into a meter provider of their own, read by OpenTelemetry's
Prometheus exporter (the ``otel`` extra), whatever else the process configured. The
scrape passes the same Host and Origin checks as ``/mcp``; everything else goes to the ``ASGIApp``.
"""

from __future__ import annotations

from typing import Any

from ...telemetry import spans as telemetry
from ._gate import check_host_and_origin
from ._headers import HTTPError, Receive, RequestHeaders, Scope, Send, error_body, respond

__all__ = ["METRICS_PATH", "MetricsEndpoint"]

METRICS_PATH = "/metrics"


class MetricsEndpoint:
    """An ASGI app: ``GET /metrics`` here, everything else to ``asgi`` (an ``ASGIApp``).

    Raises ImportError naming the ``otel`` extra when the Prometheus exporter is missing.
    """

    def __init__(self, asgi: Any) -> None:
        try:
            from opentelemetry.exporter.prometheus import PrometheusMetricReader
            from opentelemetry.sdk.metrics import MeterProvider
            from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
        except ImportError as exc:
            raise ImportError(f"--metrics needs the OpenTelemetry SDK and Prometheus exporter ({exc.name} is "
                              "missing): pip install 'resourcekit[otel]'") from None
        self.asgi = asgi
        self.registry = CollectorRegistry()
        self._generate = generate_latest
        self._content_type = CONTENT_TYPE_LATEST.encode()
        self.provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=self.registry)])
        telemetry.use_meter_provider(self.provider)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != METRICS_PATH:
            await self.asgi(scope, receive, send)
            return
        try:
            check_host_and_origin(scope, RequestHeaders(scope.get("headers", ())), self.asgi.allowed_hosts,
                                  self.asgi.allowed_origins)
            if scope.get("method") not in ("GET", "HEAD"):
                raise HTTPError(405, "GET /metrics", [(b"allow", b"GET")])
        except HTTPError as exc:
            await respond(send, exc.status, error_body(exc.status, exc.message), exc.headers)
            return
        body = self._generate(self.registry)
        await respond(send, 200, body if scope.get("method") == "GET" else b"", content_type=self._content_type)
