"""uvicorn's httptools protocol with a bounded header section (in bytes and in time), a
bounded time to send a request's body, and a client's disconnect told to the response it cuts.

httptools (llhttp) buffers a header section of any size and uvicorn never times one
out, so a client could send ``X: `` and megabytes without the final CRLF, or one byte
a second (slowloris), and hold memory and a connection for good.  Here the bytes
received while a header section is incomplete are counted (past ``max_header_bytes``:
431 and the connection closed), and a header section must be complete
``header_timeout`` seconds after the connection opens or the request's first byte
arrives (else the connection is closed).  Both come from the served app's ``Limits``.

Where a header section stands is read from uvicorn's own state after each ``data_received``
(a request's cycle exists once its header section is complete), not from parser callbacks of
ours: those ran for every request.

The clock is one sweep over the open connections, a few times per ``header_timeout``,
not a timer per request: arming and cancelling one for every request cost a tenth of
the server's time per read.  Nor does a request read the clock: the sweep stamps a
header section it finds incomplete and closes the connection when a later sweep finds
the same one still incomplete past the timeout (so the cut comes up to two sweep
periods late, never early).

The same sweep bounds a request body: once its header section is complete, the body must be
whole within ``body_timeout`` seconds (``Limits.body_timeout``), else 408 and the connection
closed; the clock stops while uvicorn does not read (a pipelined request waiting its turn, a
body the app has not read yet). A client that trickles its body a byte a second holds nothing
for long.

uvicorn tells a client's disconnect to the newest request of the connection only, so with
pipelined requests the one being answered went on writing to a closed transport (uvloop
raises) and uvicorn logged that it "returned without completing response": the request being
served (``running``) is told too, and the disconnect is one DEBUG line.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ...limits import DEFAULT_LIMITS, Limits

log = logging.getLogger("resourcekit")

_MESSAGE = b"Request header fields too large\n"
TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
             b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_MESSAGE), _MESSAGE))
_SLOW = b"Request body not received in time\n"
TOO_SLOW = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_SLOW), _SLOW))


def _limits_of(app: Any) -> Limits:
    """The ``Limits`` of the served ``ASGIApp``, under whatever middleware uvicorn wrapped it in."""
    for _ in range(8):
        limits = getattr(app, "limits", None)
        if isinstance(limits, Limits):
            return limits
        app = getattr(app, "app", None)
    return DEFAULT_LIMITS


class BoundedHeadersProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` that refuses header sections too large or too slow."""

    # slots: uvicorn's protocol keeps 28 attributes in its ``__dict__``; four more there would pass
    # the 30 keys a class's instances can share, and every attribute read in uvicorn's
    # per-request code would fall back to a plain dict lookup
    __slots__ = ("body_of", "body_since", "body_timeout", "head", "head_since", "header_timeout", "max_header_bytes",
                 "running")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limits = _limits_of(self.config.loaded_app)
        self.max_header_bytes = limits.max_header_bytes
        self.header_timeout = limits.header_timeout
        self.body_timeout = limits.body_timeout
        self.head: int | None = None  # bytes of the incomplete header section, None outside one
        self.head_since: float | None = None  # when a sweep first saw it incomplete (loop time)
        self.body_of: Any = None  # the request whose incomplete body a sweep saw, and since when
        self.body_since = 0.0
        self.running: Any = None  # the request being served (``self.cycle`` is the newest one parsed)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head()
        _watch(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head()
        _OPEN.discard(self)
        cut = self.cycle if self.running is None else self.running
        if cut is not None and not cut.response_complete:
            if cut is not self.cycle:  # (uvicorn tells ``self.cycle`` only)
                cut.disconnected = True
                cut.message_event.set()
            log.debug("connection closed before the response to %s %s was complete", cut.scope.get("method"),
                      cut.scope.get("path"))
        super().connection_lost(exc)

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        self.running = cycle
        HttpToolsProtocol._start_asgi_task(self, cycle, app)

    def data_received(self, data: bytes) -> None:
        transport = self.transport
        if transport.is_closing():
            return
        before = self.cycle
        HttpToolsProtocol.data_received(self, data)
        # where the parser stands, from what uvicorn made of the data (no callback of ours runs per
        # request): a request gets its cycle once its header section is complete
        cycle = self.cycle
        if cycle is not None and cycle.scope is self.scope:
            self.head = None  # every header section so far is complete (nearly every call)
            return
        if transport.is_closing():
            return
        if self.head is None or cycle is not before:  # a request began after a complete header section
            self.head = 0
            self.head_since = None
        self.head += len(data)
        if self.head > self.max_header_bytes:
            log.debug("header section over %d bytes: 431, connection closed", self.max_header_bytes)
            self._stop_head()
            transport.write(TOO_LARGE)
            transport.close()

    def handle_websocket_upgrade(self) -> None:
        # the connection is the WebSocket protocol's from here: no sweep, and no bound on what
        # the data this call hands over counts as (it was the upgrade request's, complete)
        _OPEN.discard(self)
        self.max_header_bytes = sys.maxsize
        HttpToolsProtocol.handle_websocket_upgrade(self)
        self._stop_head()

    def _start_head(self) -> None:
        self.head = 0
        self.head_since = None

    def _stop_head(self) -> None:
        self.head = None

    def _too_slow(self, now: float) -> bool:
        """Stamp an incomplete header section when first seen; True once it is over time."""
        if self.head is None:
            return False
        if self.head_since is None:
            self.head_since = now
            return False
        return now - self.head_since > self.header_timeout

    def _body_too_slow(self, now: float) -> bool:
        """Stamp a request whose body is incomplete when first seen; True once it is over time.
        While uvicorn does not read (its flow control), the clock starts again."""
        cycle = self.cycle
        if cycle is None or not cycle.more_body or cycle.disconnected or self.flow.read_paused:
            self.body_of = None
            return False
        if self.body_of is not cycle:
            self.body_of, self.body_since = cycle, now
            return False
        return now - self.body_since > self.body_timeout


_OPEN: set[BoundedHeadersProtocol] = set()  # connections of this process's server
_sweeping: list[asyncio.TimerHandle] = []


def _watch(protocol: BoundedHeadersProtocol) -> None:
    _OPEN.add(protocol)
    if not _sweeping:
        _sweeping.append(protocol.loop.call_later(_period(protocol), _sweep, protocol.loop))


def _period(protocol: BoundedHeadersProtocol) -> float:
    return min(1.0, protocol.header_timeout / 4, protocol.body_timeout / 4)


def _sweep(loop: asyncio.AbstractEventLoop) -> None:
    _sweeping.clear()
    now = loop.time()
    period = 1.0
    for protocol in list(_OPEN):
        period = min(period, _period(protocol))
        if protocol._too_slow(now) and not protocol.transport.is_closing():
            log.debug("header section not complete after %s s: connection closed", protocol.header_timeout)
            protocol.head = None
            protocol.transport.close()
        elif protocol._body_too_slow(now) and not protocol.transport.is_closing():
            log.debug("request body not complete after %s s: 408, connection closed", protocol.body_timeout)
            protocol.body_of = None
            if not protocol.cycle.response_started:
                protocol.transport.write(TOO_SLOW)
            protocol.transport.close()
    if _OPEN:
        _sweeping.append(loop.call_later(period, _sweep, loop))
