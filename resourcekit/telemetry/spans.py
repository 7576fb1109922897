"""OpenTelemetry traces and metrics, per the MCP semantic conventions.

On whenever ``opentelemetry-api`` is importable, and idle until the process configures
an SDK provider (before or after resourcekit is imported): until then a request checks
the flag ``ON``, and nothing of OpenTelemetry is imported or called; a running server
``probe``s for a provider (a look into ``sys.modules``) at start and once a second.
``App(..., telemetry=False)`` turns it off for one app.

- One SERVER span per request, named by the method, ended when its answer is sent
  (``Traced`` wraps the request's ``reply``); a listen stream's span ends at its
  acknowledgement. ``traceparent`` / ``tracestate`` / ``baggage`` in ``params._meta``
  make it a child of the caller's span; baggage is never copied anywhere.
- Notifications sent are PRODUCER spans linked to what caused them (``resourcekit.telemetry.causes``).
- Metrics: ``mcp.server.operation.duration``, ``mcp.server.session.duration``, and
  resourcekit's own (active subscriptions, notifications sent, change-to-notification
  delay, stream lifetimes).

Attribute and metric names are written as strings: the incubating semantic-convention
helpers are deprecated.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import MCPError
from ..revisions import HANDSHAKE_VERSIONS, META_PROTOCOL_VERSION, MODERN_VERSIONS

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
    from opentelemetry.trace import Span

    from .sampling import Dropped

__all__ = ["ON", "Traced", "active", "probe", "session_ended", "stream_ended", "use_meter_provider"]

# --- the names (MCP semantic conventions, and resourcekit's own) ---------------------------------
METHOD = "mcp.method.name"
REQUEST_ID = "jsonrpc.request.id"
PROTOCOL_VERSION = "mcp.protocol.version"
SESSION_ID = "mcp.session.id"
RESOURCE_URI = "mcp.resource.uri"
TRANSPORT = "network.transport"
PROTOCOL_NAME = "network.protocol.name"
ERROR_TYPE = "error.type"
STATUS_CODE = "rpc.response.status_code"
OPERATION_DURATION = "mcp.server.operation.duration"
SESSION_DURATION = "mcp.server.session.duration"
SUBSCRIPTIONS = "resourcekit.subscriptions.active"
NOTIFICATIONS = "resourcekit.notifications.sent"
NOTIFICATION_DELAY = "resourcekit.notification.delay"
STREAM_DURATION = "resourcekit.stream.duration"
STREAM_KIND = "resourcekit.stream.kind"
OTHER = "_OTHER"  # the name of a method nobody serves: names stay low-cardinality
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
# seconds: the conventions' advice, with finer steps below 10 ms (a read takes microseconds)
BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60,
           120, 300]

_modules = sys.modules
log = logging.getLogger("resourcekit")
#: method names the protocol core serves (it fills this in)
KNOWN_METHODS: set[str] = set()


class _Instruments:
    """The tracer and instruments, made once a provider is configured: OpenTelemetry, and the head
    sampling made for its SDK (``sampling``), load here, never before (the probe finds none)."""

    def __init__(self, meter_provider: MeterProvider | None) -> None:
        from opentelemetry import context, metrics, propagate, trace

        from .sampling import Dropped, presampler

        global _Dropped
        _Dropped = Dropped

        self.trace = trace
        self.context = context
        self.extract = propagate.extract
        self.root = context.Context()  # notifications start their own traces (linked to their causes)
        self.tracer = trace.get_tracer("resourcekit")
        self.presample = presampler(self.tracer)
        meter = (meter_provider or metrics.get_meter_provider()).get_meter("resourcekit")

        def seconds(name: str, description: str) -> Any:
            return meter.create_histogram(name, "s", description, explicit_bucket_boundaries_advisory=BUCKETS)

        self.operation = seconds(OPERATION_DURATION,
                                 "MCP request duration as observed on the server, until its answer is sent")
        self.session = seconds(SESSION_DURATION, "The duration of an MCP session (a stdio connection, an HTTP session)")
        self.sent = meter.create_counter(NOTIFICATIONS, "{notification}", "Notifications sent to subscribers")
        self.delay = seconds(NOTIFICATION_DELAY, "From a change being reported to its notification being written")
        self.stream = seconds(STREAM_DURATION, "How long a subscriptions/listen or GET stream stayed open")
        meter.create_observable_up_down_counter(
            SUBSCRIPTIONS, [_count_subscriptions], "{subscription}", "URIs subscribed to, per subscriber")


on: _Instruments | None = None
#: ``sampling.Dropped`` once the instruments are made (``sampling`` loads with them); no span before
_Dropped: type[Dropped] = type("_NotYet", (), {})
_meter_provider: MeterProvider | None = None
#: a provider is configured: all the request path checks (``probe`` sets it)
ON = False
PROBE_INTERVAL = 1.0  # seconds between looks for a provider while a server runs without one


def installed() -> bool:
    """Is ``opentelemetry-api`` importable?  Asked once per server (not imported)."""
    global _installed
    if _installed is None:
        try:
            _installed = importlib.util.find_spec("opentelemetry") is not None
        except (ImportError, ValueError):
            _installed = False
    return _installed


_installed: bool | None = None


def active() -> bool:
    """Is a provider configured?  A look into ``sys.modules`` until one is: not for every request."""
    return ON or probe()


def probe() -> bool:
    """Look for a configured provider; found, make the tracer and instruments and set ``ON``."""
    if ON:
        return True
    trace = _modules.get("opentelemetry.trace")
    metrics = _modules.get("opentelemetry.metrics._internal")
    if (trace is not None and trace._TRACER_PROVIDER is not None) or (
            metrics is not None and metrics._METER_PROVIDER is not None):
        _activate()
    return ON


def _activate(again: bool = False) -> None:
    global on, ON
    with _lock:  # a probe may come from any thread (notify_changed)
        if not ON or again:
            on = _Instruments(_meter_provider)
            ON = True


_lock = threading.Lock()


def use_meter_provider(provider: MeterProvider) -> None:
    """Record resourcekit's metrics with ``provider`` (``--metrics``) rather than the global one."""
    global _meter_provider
    _meter_provider = provider
    _activate(again=True)


# --- requests --------------------------------------------------------------------------------------


class Subscribers(Protocol):
    def total(self) -> int: ...


class Observed(Protocol):
    """What spans and metrics read of a server (``core.Server``)."""

    @property
    def transport(self) -> str | None: ...
    @property
    def subscriptions(self) -> Subscribers: ...


class Session(Protocol):
    """What spans and metrics read of a session (``core.Connection``)."""

    @property
    def server(self) -> Observed: ...
    @property
    def protocol_version(self) -> str | None: ...
    @property
    def session_id(self) -> str | None: ...


class Traced:
    """A request's ``reply``, wrapped: the span and the duration end with the answer."""

    __slots__ = ("acked", "attrs", "conn", "context", "exception", "inner", "method", "on", "rid", "span", "start")

    def __init__(self, conn: Session, rid: Any, method: str, params: Any, reply: Callable[[Any], None]) -> None:
        instruments = on
        assert instruments is not None
        self.on = instruments
        self.inner = reply
        self.conn = conn
        self.rid = rid
        if method not in KNOWN_METHODS:
            method = OTHER
        self.method = method
        self.exception: BaseException | None = None
        self.acked: float | None = None  # when a listen stream was acknowledged
        self.context: Context | None = None
        self.span: Span | Dropped | None = None
        self.start = _now()
        meta = params.get("_meta") if type(params) is dict else None
        version = meta.get(META_PROTOCOL_VERSION) if type(meta) is dict else None
        key = (method, conn.server.transport, version if type(version) is str else conn.protocol_version)
        # what a sampler may look at, given at the start (the rest only for a span that records);
        # the metric's too: no id, no URI, no session. Shared by requests alike: never changed.
        self.attrs = attrs = _ATTRIBUTES.get(key) or _attributes(key)
        try:
            if type(meta) is dict and ("traceparent" in meta or "baggage" in meta):
                # a malformed traceparent yields no parent: the span starts its own trace
                self.context = instruments.extract({k: v for k, v in meta.items() if type(v) is str})
            else:  # the current context, looked up once here rather than three times in the SDK
                self.context = context = instruments.context.get_current()
                presample = instruments.presample
                if presample is not None and not context:  # a root span, sampled by the SDK's own rule
                    trace_id, kept = presample.draw()
                    if not kept:  # dropped: no SDK span at all
                        self.span = _Dropped(trace_id, presample.inner)
                        return
                    presample.prime(trace_id)  # sampled: the SDK's span gets this trace id
            span = self.span = instruments.tracer.start_span(self.method, self.context,
                                                             instruments.trace.SpanKind.SERVER, attrs)
            if instruments.presample is not None:
                instruments.presample.next = None  # unused if the SDK made no span of its own
            if span.is_recording():  # most are sampled out: they skip what follows
                more: dict[str, Any] = {REQUEST_ID: str(rid)}
                if conn.session_id is not None:
                    more[SESSION_ID] = conn.session_id
                uri = _one_uri(params) if type(params) is dict else None
                if uri is not None:
                    more[RESOURCE_URI] = uri
                span.set_attributes(more)
        except Exception:  # a sampler or propagator of the user's failed: serve the request untraced
            log.exception("starting the span of %s failed", method)

    def __call__(self, message: Any) -> None:
        # the request's answer: a message with its id, or a successful response that is no message (one
        # encoded already, bytes; a body the transport sends as it is, resources/stream's)
        if type(message) is dict:
            answer: dict[str, Any] | None = message if message.get("id", ...) == self.rid else None
        elif type(message) is list:  # a batch's responses pass through the batch, never here
            answer = None
        else:
            answer = {}
        if answer is not None or type(message) is dict:
            span = self.span
            if span is not None:
                if answer is not None:
                    if type(span) is _Dropped and "error" not in answer and self.method != "initialize":
                        self.span = None  # the common answer of a sampled-out request: its duration only
                        self.on.operation.record(_now() - self.start, self.attrs)
                    else:
                        self._end(answer)
                elif message.get("method") == ACKNOWLEDGED:  # the stream is open: its span ends
                    self.acked = time.perf_counter()
                    self._end(message)
            elif self.acked is not None and answer is not None:
                stream_ended("listen", self.acked)
        self.inner(message)

    def spawn(self, loop: Any, coro: Any) -> Any:
        """A task for the handler, in the span's context (its own spans become children)."""
        span = self.span
        if span is None:  # answered already
            return loop.create_task(coro)
        if type(span) is _Dropped:  # the handler's own spans need a parent: a non-recording one
            span = span.made(self.on.trace)
        token = self.on.context.attach(self.on.trace.set_span_in_context(span, self.context))
        try:
            return loop.create_task(coro)
        finally:
            self.on.context.detach(token)

    def cancel(self) -> None:
        span = self.span
        if span is not None:
            span.add_event("cancelled")  # status stays unset: the client asked for it
            span.set_attribute(ERROR_TYPE, "cancelled")
            self._finish(span, {ERROR_TYPE: "cancelled"})
        else:
            stream_ended("listen", self.acked)

    def _end(self, message: dict[str, Any]) -> None:
        span = self.span
        assert span is not None
        error = message.get("error")
        failed = None
        if type(error) is dict:
            code = str(error.get("code"))
            failed = {ERROR_TYPE: code, STATUS_CODE: code}
            if not isinstance(span, _Dropped) and span.is_recording():
                recording = cast("Span", span)
                recording.set_attributes(failed)
                exc = self.exception
                why = exc.message if isinstance(exc, MCPError) else str(error.get("message"))
                recording.set_status(self.on.trace.Status(self.on.trace.StatusCode.ERROR, why))
                if exc is not None:
                    recording.record_exception(exc)
        if PROTOCOL_VERSION not in self.attrs and self.conn.protocol_version is not None:  # initialize
            self.attrs = {**self.attrs, PROTOCOL_VERSION: self.conn.protocol_version}
            span.set_attribute(PROTOCOL_VERSION, self.conn.protocol_version)
        if self.method == "initialize" and failed is None:
            _sessions[self.conn] = time.perf_counter()
        self._finish(span, failed)

    def _finish(self, span: Span | Dropped, extra: dict[str, Any] | None) -> None:
        self.span = None
        span.end()
        attrs = self.attrs if extra is None else {**self.attrs, **extra}
        self.on.operation.record(time.perf_counter() - self.start, attrs)


_ATTRIBUTES: dict[tuple[str, str | None, str | None], dict[str, Any]] = {}
_now = time.perf_counter


def _attributes(key: tuple[str, str | None, str | None]) -> dict[str, Any]:
    """The attributes every request of one method, transport and protocol version starts with."""
    method, transport, version = key
    attrs: dict[str, Any] = {METHOD: method}
    if transport is not None:
        attrs[TRANSPORT] = transport
        if transport == "tcp":
            attrs[PROTOCOL_NAME] = "http"
    if version is not None:
        attrs[PROTOCOL_VERSION] = version
    if version is None or version in HANDSHAKE_VERSIONS or version in MODERN_VERSIONS:  # bounded
        _ATTRIBUTES[key] = attrs
    return attrs


def _one_uri(params: dict[str, Any]) -> str | None:
    """The one resource a request names, if it names exactly one."""
    uri = params.get("uri")
    if type(uri) is str:
        return uri
    uris = params.get("uris")
    if type(uris) is list and len(uris) == 1 and type(uris[0]) is str:
        return uris[0]
    wanted = params.get("notifications")
    if type(wanted) is dict:
        uris = wanted.get("resourceSubscriptions")
        if type(uris) is list and len(uris) == 1 and type(uris[0]) is str:
            return uris[0]
    return None


def record(reply: Any, exc: BaseException) -> None:
    """``exc`` failed the request ``reply`` answers: its span records it (the client sees none of it)."""
    if type(reply) is Traced:
        reply.exception = exc


def unwrap(reply: Any) -> Any:
    return reply.inner if type(reply) is Traced else reply


# --- sessions and streams ----------------------------------------------------------------------------

_sessions: weakref.WeakKeyDictionary[Session, float] = weakref.WeakKeyDictionary()
_servers: weakref.WeakSet[Observed] = weakref.WeakSet()


def session_ended(conn: Session) -> None:
    started = _sessions.pop(conn, None)
    if started is not None and on is not None:
        attrs = {PROTOCOL_VERSION: conn.protocol_version}
        if conn.server.transport is not None:
            attrs[TRANSPORT] = conn.server.transport
        on.session.record(time.perf_counter() - started, attrs)


def stream_opened(session_id: str) -> float | None:
    """A GET stream was acknowledged (its 200 sent): a span for it; returns when, for its lifetime."""
    if not active():
        return None
    assert on is not None
    on.tracer.start_span("GET /mcp", None, on.trace.SpanKind.SERVER, {
        SESSION_ID: session_id, TRANSPORT: "tcp", PROTOCOL_NAME: "http", "http.request.method": "GET"}).end()
    return time.perf_counter()


def stream_ended(kind: str, opened: float | None) -> None:
    if opened is not None and on is not None:
        on.stream.record(time.perf_counter() - opened, {STREAM_KIND: kind})


def watch(server: Observed) -> None:
    """Count ``server``'s subscriptions in the active-subscriptions gauge (until ``unwatch``)."""
    _servers.add(server)


def unwatch(server: Observed) -> None:
    """``server`` closed: its subscriptions count no more (whenever it is collected)."""
    _servers.discard(server)


def _count_subscriptions(options: CallbackOptions) -> Iterable[Observation]:
    from opentelemetry.metrics import Observation

    total = sum(server.subscriptions.total() for server in list(_servers))
    return [Observation(total)]
