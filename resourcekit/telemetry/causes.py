"""What made a resource change, for the notification spans (see ``resourcekit.telemetry``).

``notify_changed``, a poll tick or a registration notes its cause here: the span current
then, or, when none is, a span made only if a notification follows, dated when the call
came. The tracker announces the re-read it reports (``reporting``); whoever tells
subscribers asks ``current`` and writes one PRODUCER span per notification method, linked
to those causes. Across workers (``resourcekit.scaleout``) a cause travels as a traceparent.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from . import spans as telemetry
from .spans import METHOD, RESOURCE_URI

if TYPE_CHECKING:
    from opentelemetry.trace import Link, SpanContext

__all__ = ["LIST", "caused", "caused_elsewhere", "causes", "current", "reporting", "sent"]

LIST = "<list>"  # the key under which causes of list_changed wait
MAX_CAUSES = 4096  # URIs whose causes wait for a notification; past it they are forgotten

#: URI (or LIST) -> when the first pending cause came, and the causes: a span context, or a lazy
#: span's (name, start in ns) made only if a notification follows
_causes: dict[str, tuple[float, list[Any]]] = {}
#: the URI whose change is being reported now, and its causes (``reporting``)
_current: tuple[str, tuple[float, list[Link]] | None] = ("", None)


def caused(uris: Iterable[str], kind: str = "notify_changed") -> None:
    """``uris`` may have changed, because of what runs now (a request, the user's span) or ``kind``."""
    if not telemetry.active():
        return
    assert telemetry.on is not None
    current = telemetry.on.trace.get_current_span().get_span_context()
    _add(uris, current if current.is_valid else (f"resourcekit {kind}", time.time_ns()))


def _add(uris: Iterable[str], cause: Any) -> None:
    now = time.perf_counter()
    for uri in uris:
        entry = _causes.get(uri)
        if entry is None:
            if len(_causes) >= MAX_CAUSES:
                _causes.clear()
            _causes[uri] = (now, [cause])
        elif len(entry[1]) < 8 and cause not in entry[1]:
            entry[1].append(cause)


def _resolve(uri: str, cause: Any) -> SpanContext:
    """A cause's span context; a lazy one becomes a span now, dated when it came."""
    if type(cause) is not tuple:
        return cause  # type: ignore[no-any-return]
    assert telemetry.on is not None
    span = telemetry.on.tracer.start_span(cause[0], telemetry.on.root, telemetry.on.trace.SpanKind.INTERNAL,
                                 {RESOURCE_URI: uri} if uri != LIST else None, start_time=cause[1])
    span.end(cause[1])
    return span.get_span_context()


def causes(uri: str) -> tuple[float, list[Link]] | None:
    """What made ``uri`` change (when, and links to it), forgotten once asked."""
    entry = _causes.pop(uri, None)
    if entry is None or telemetry.on is None:
        return None
    return entry[0], [telemetry.on.trace.Link(_resolve(uri, cause)) for cause in entry[1]]


def reporting(uri: str) -> None:
    """The tracker reports a re-read of ``uri`` now: whoever tells subscribers asks ``current``."""
    global _current
    if telemetry.on is not None:
        _current = (uri, causes(uri))


def current(uri: str) -> tuple[float, list[Link]] | None:
    return _current[1] if _current[0] == uri else None


# --- across workers (resourcekit.scaleout): the cause travels as a W3C traceparent -------------------


def carried(uri: str) -> str | None:
    """The ``traceparent`` of what made ``uri`` change here, for the other workers."""
    entry = _causes.get(uri) if telemetry.on is not None else None
    if entry is None or not entry[1]:
        return None
    context = entry[1][0] = _resolve(uri, entry[1][0])
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def carried_of(why: tuple[float, list[Link]] | None) -> str | None:
    if not why or not why[1]:
        return None
    context = why[1][0].context
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def caused_elsewhere(uri: str, traceparent: Any) -> None:
    """Another worker says ``uri`` changed because of the span ``traceparent`` names."""
    if type(traceparent) is not str or not telemetry.active():
        return
    assert telemetry.on is not None
    context = telemetry.on.trace.get_current_span(telemetry.on.extract({"traceparent": traceparent})).get_span_context()
    if context.is_valid:
        _add((uri,), context)


def sent(method: str, uri: str | None, count: int, why: tuple[float, list[Link]] | None) -> None:
    """``count`` notifications ``method`` (about ``uri``) were written: one span, linked to their cause."""
    if count == 0 or telemetry.on is None:
        return
    attrs: dict[str, Any] = {METHOD: method, "resourcekit.notification.recipients": count}
    if uri is not None:
        attrs[RESOURCE_URI] = uri
    on = telemetry.on
    span = on.tracer.start_span(method, on.root, on.trace.SpanKind.PRODUCER, attrs, why[1] if why else None)
    span.end()
    on.sent.add(count, {METHOD: method})
    if why is not None:
        on.delay.record(time.perf_counter() - why[0], {METHOD: method})
