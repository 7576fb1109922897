"""Every bound a client can push against, in one frozen record.

``App(limits=Limits(...))`` carries it to every layer and transport; the
``resourcekit run`` flags set the ones operators tune.  Each limit has one
documented outcome for the client (README, "Limits"): a JSON-RPC error whose
``data.limit`` names the field, or an HTTP status.
"""

# No ``from __future__ import annotations`` here: ``NamedTuple`` checks each field's annotation,
# and a string one costs a compile; the types themselves cost nothing (start-up, 0.2 ms).
from typing import Any, NamedTuple, TypeVar

__all__ = ["Limits", "put_bounded"]

K = TypeVar("K")
V = TypeVar("V")

KiB = 1024
MiB = 1024 * KiB


class _Fields(NamedTuple):
    #: bytes of one incoming message (a stdio line, an HTTP body): -32600 / HTTP 413
    max_message_size: int = 4 * MiB
    #: characters of a URI in any request: -32602 before any template is tried
    max_uri_length: int = 8 * KiB
    #: bytes of an HTTP request's header section: HTTP 431 and the connection closed
    max_header_bytes: int = 64 * KiB
    #: seconds a client may take to send a complete header section: the connection is closed
    header_timeout: float = 10.0
    #: seconds a client may take to send a whole HTTP request body once its header section is complete:
    #: HTTP 408 and the connection closed
    body_timeout: float = 30.0
    #: requests one connection (session, stdio client), or one caller of 2026-07-28 requests over HTTP
    #: (a token's principal at an address, else the address), may have in flight: -32603 "busy"
    max_inflight: int = 256
    #: bytes of replies one session may owe a reader that does not read them (stdio): past it the
    #: session's waiting requests stay unstarted and its input is not read until the reader catches up
    max_owed_bytes: int = 4 * MiB
    #: bytes of contents (before base64) one ``resources/read`` or ``resources/get`` may answer with:
    #: -32603 naming the limit (a file a handler returns is measured before it is read).
    #: ``resources/stream`` (``streamable=True``, HTTP) serves larger ones in constant memory
    max_read_size: int = 64 * MiB
    #: threads for sync handlers, listers and completers at most (started as they are needed:
    #: see ``docs/limits.md``)
    max_workers: int = 32
    #: sync jobs waiting for a worker, across connections: -32603 "busy"
    max_queued_jobs: int = 4096
    #: URIs one handshake-era session may subscribe to: -32602
    max_subscriptions: int = 1000
    #: URIs one 2026-07-28 subscriptions/listen stream may ask for: -32602
    max_listen_uris: int = 1000
    #: distinct notifications queued for one subscriber; a URI already pending is not queued twice,
    #: and a subscriber this far behind has its stream closed (HTTP) with a log line
    max_pending_notifications: int = 1000
    #: bytes of SSE events one HTTP session keeps for Last-Event-ID resumption (whole events, oldest
    #: dropped first; a finished stream is kept 30 s); resuming past what was dropped misses those events
    max_replay_bytes: int = 1 * MiB
    #: concurrent HTTP sessions; at the cap the least recently used idle one is evicted, else HTTP 503
    max_sessions: int = 1000
    #: seconds an idle HTTP session (no request in flight, no stream open) lives; then HTTP 404
    session_idle_timeout: float = 600.0
    #: seconds one HTTP GET stream or listen stream may stay open before it is ended cleanly (a listen
    #: stream with its result); the client reconnects
    max_stream_lifetime: float = 3600.0
    #: bytes of contents (before base64) a ``notifications/resources/updated`` may carry to a listen stream
    #: that asked for ``embedResources`` (SEP-3119, draft): past it the notification goes in its plain
    #: form, the URI alone, and the client reads the resource
    max_embedded_bytes: int = 256 * KiB
    #: ``resources/stream`` responses (SEP-2532, HTTP) sending bytes at once in one process: -32603
    #: "busy" before the first byte; each holds at most two chunks of 256 KiB while its reader reads
    max_byte_streams: int = 64
    #: seconds a ``resources/stream`` reader may take none of the bytes waiting for it (a slow
    #: producer does not count): past it the response is cut (logged) and its stream given back
    stream_stall_timeout: float = 30.0
    #: items one list page may examine (listers, filter, children); past it the page comes back
    #: short with a nextCursor
    page_scan_budget: int = 10_000
    #: items per list page
    page_size: int = 1000
    #: seconds between two log lines of one kind of warning a client can cause (a refused token, a
    #: stream closed unread, Redis unreachable): the first is written, the rest counted, then one line
    #: says "… N more in the last 60 s" (``resourcekit.logs.Repeats``)
    log_repeat_interval: float = 60.0


class Limits(_Fields):
    """Every bound a client can push against (each field above: its default and outcome).

    Immutable (a named tuple: a dataclass would cost every start-up milliseconds to build).
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> "Limits":
        self = super().__new__(cls, *args, **kwargs)
        for name, value in zip(self._fields, self, strict=True):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive number, not {value!r}")
        return self

    def replace(self, **changes: Any) -> "Limits":
        """A copy with some limits changed (``None`` values are ignored)."""
        return Limits(**{**self._asdict(), **{k: v for k, v in changes.items() if v is not None}})


DEFAULT_LIMITS = Limits()


def put_bounded(table: dict[K, V], key: K, value: V, max_items: int) -> None:
    """``table[key] = value``, starting the table afresh once it holds ``max_items``.

    For tables that are caches (a version remembered to save a read): bounded at the
    cost of one dict store in the common case; what is forgotten is read again.
    """
    if len(table) >= max_items and key not in table:
        table.clear()
    table[key] = value
