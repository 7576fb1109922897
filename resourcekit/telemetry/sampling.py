"""Head sampling of root request spans, for the OpenTelemetry SDK's own samplers (``telemetry``).

The SDK spends several microseconds on a span it then drops (most of them, at 1% sampling). With
the SDK's ratio sampler (alone or as ``ParentBased``'s root) or ``ALWAYS_OFF``, a request without
a parent is decided here by the same rule (the trace id's low 64 bits against the sampler's
bound; tests hold it to the SDK's own decision): a dropped one makes no SDK span, and a span
object only if a handler's task needs a parent; a sampled one is started by the SDK with the
trace id drawn here. Any other sampler, or a request with a parent, decides in the SDK.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["ID_LIMIT", "Dropped", "Primed", "presampler"]

ID_LIMIT = (1 << 64) - 1  # TraceIdRatioBased.TRACE_ID_LIMIT


class Primed:
    """The tracer's id generator, handing out a trace id drawn beforehand (once, same thread)."""

    __slots__ = ("bound", "inner", "next")

    def __init__(self, inner: Any, bound: int) -> None:
        self.inner = inner
        self.bound = bound
        self.next: tuple[int, int] | None = None

    def draw(self) -> tuple[int, bool]:
        """A root request's trace id and whether the sampler's rule keeps its span."""
        trace_id = int(self.inner.generate_trace_id())
        return trace_id, trace_id & ID_LIMIT < self.bound

    def prime(self, trace_id: int) -> None:
        self.next = (threading.get_ident(), trace_id)

    def generate_trace_id(self) -> int:
        primed = self.next
        if primed is not None and primed[0] == threading.get_ident():
            self.next = None
            return primed[1]
        return int(self.inner.generate_trace_id())

    def generate_span_id(self) -> int:
        return int(self.inner.generate_span_id())

    def is_trace_id_random(self) -> bool:
        random = getattr(self.inner, "is_trace_id_random", None)
        return bool(random()) if random is not None else False


def presampler(tracer: Any) -> Primed | None:
    """The SDK's tracer with its ratio sampler (or ALWAYS_OFF) at the root: decide roots here."""
    if type(tracer).__module__ != "opentelemetry.sdk.trace" or not hasattr(tracer, "id_generator"):
        return None
    from opentelemetry.sdk.trace import sampling

    sampler = getattr(tracer, "sampler", None)
    if type(sampler) is sampling.ParentBased:
        sampler = getattr(sampler, "_root", None)
    if type(sampler) is sampling.TraceIdRatioBased:
        bound = sampler.bound
    elif sampler is sampling.ALWAYS_OFF:
        bound = 0
    else:  # any other sampler decides in the SDK, span by span
        return None
    primed = tracer.id_generator
    if type(primed) is Primed:  # the instruments made again (another meter provider)
        primed.bound = bound
    else:
        primed = tracer.id_generator = Primed(primed, bound)
    return primed


class Dropped:
    """A root span the sampler drops: its trace id; a span object only if a handler's task needs it."""

    __slots__ = ("generator", "trace_id")

    def __init__(self, trace_id: int, generator: Any) -> None:
        self.trace_id = trace_id
        self.generator = generator

    def is_recording(self) -> bool:
        return False

    def set_attribute(self, key: str, value: Any) -> None:
        pass

    def add_event(self, name: str) -> None:
        pass

    def end(self) -> None:
        pass

    def made(self, trace: Any) -> Span:
        """The non-recording span the SDK would have made (the handler's spans are its children)."""
        flags = trace.TraceFlags.DEFAULT
        random = getattr(self.generator, "is_trace_id_random", None)
        if random is not None and random():
            flags |= getattr(trace.TraceFlags, "RANDOM_TRACE_ID", 0)
        context = trace.SpanContext(self.trace_id, self.generator.generate_span_id(), False,
                                    trace.TraceFlags(flags))
        span: Span = trace.NonRecordingSpan(context)
        return span
