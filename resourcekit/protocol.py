"""The protocol core: JSON-RPC in, JSON-RPC out, no I/O.

A transport owns the bytes.  It decodes a message and hands it to
``Connection.receive`` (or hands raw bytes to ``Connection.feed``), passing a
``reply`` callable that puts a message on the wire for that request.  The core
decides the era of each request (a handshake-era session after ``initialize``,
or a stateless 2026-07-28 request carrying its version in ``_meta``),
dispatches through a table, runs handlers concurrently (async ones as tasks,
sync ones in worker threads) and calls ``reply`` with the response.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import orjson

from . import accesslog, telemetry
from ._fastread import read_lines, write_out
from ._runner import ThreadRunner
from .context import LEVEL_RANK
from .eras import HANDSHAKE, STATELESS, Era, error_response
from .errors import (
    InvalidParams,
    InvalidRequest,
    LimitExceeded,
    MCPError,
    MethodNotFound,
    ParseError,
    UnsupportedVersion,
)
from .methods import NOTIFICATIONS, PENDING, Subscriptions
from .optin import NONE
from .request import Batch, Request, Send
from .versions import (
    BATCH_VERSION,
    META_CLIENT_CAPABILITIES,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
)

if TYPE_CHECKING:
    from .methods.subscriptions import SharedSubscriptions
    from .registry import Registry

__all__ = ["HANDSHAKE", "STATELESS", "Connection", "Era", "Request", "Server", "error_response"]

log = logging.getLogger("resourcekit")


class Server:
    """What every connection to one App shares: workers, subscribers, server info."""

    def __init__(self, app: Registry, transport: str | None = None) -> None:
        self.app = app
        self.transport = transport  # network.transport in telemetry: "pipe" (stdio), "tcp" (HTTP)
        info: dict[str, Any] = {"name": app.name, "version": app.version}
        if app.title:
            info["title"] = app.title
        if app.website_url:
            info["websiteUrl"] = app.website_url
        if app.icons:
            info["icons"] = app.icons
        self.server_info = info
        self._runner: ThreadRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self.connections: set[Connection] = set()
        self._prober: asyncio.TimerHandle | None = None
        self.subscriptions = Subscriptions(self)
        # one log line per request at INFO: decided once here, not per request
        self.request_type: type[Request] = accesslog.LoggedRequest if accesslog.enabled() else Request
        # OpenTelemetry: off for the app, or not installed, costs one attribute check per request
        self.traced = app.telemetry and telemetry.installed()
        if self.traced:
            telemetry.watch(self)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
        return self._loop

    def on_loop(self) -> bool:
        """Is the caller the thread that runs this server's loop?"""
        return threading.get_ident() == self._loop_thread

    @property
    def runner(self) -> ThreadRunner:
        if self._runner is None:
            limits = self.app.limits
            self._runner = ThreadRunner(self.loop, limits.max_workers, limits.max_queued_jobs)
        return self._runner

    def start(self) -> None:
        """Bind to the running loop (call from the serving task)."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.app.tracker.attach(self.subscriptions)
        if self.app.skills is not None:
            self.app.skills.start(self._loop, self.runner)
        if self.traced:
            self._probe()

    def _probe(self) -> None:
        """Until an OpenTelemetry provider is configured, look for one every second: requests check a flag."""
        if not telemetry.probe() and self._loop is not None:
            self._prober = self._loop.call_later(telemetry.PROBE_INTERVAL, self._probe)

    def close(self) -> None:
        if self._prober is not None:
            self._prober.cancel()
        self.app.tracker.detach(self.subscriptions)
        if self.app.skills is not None:
            self.app.skills.stop()
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    def connect(self, send: Send, *, stateless: bool = False) -> Connection:
        conn = Connection(self, send, stateless=stateless)
        if not stateless:
            self.connections.add(conn)
        return conn


class Connection:
    """One client: a stdio process, an HTTP session, or one stateless HTTP request.

    Handshake-era state (negotiated version, log level, subscriptions) lives
    here; 2026-07-28 requests carry their state in ``_meta`` and ignore it.
    """

    def __init__(self, server: Server, send: Send, *, stateless: bool = False) -> None:
        self.server = server
        self.app = server.app
        self.send = send  # for messages not tied to a request (subscription updates)
        # a transport writing JSON lines takes encoded replies too, from any thread: reads then
        # take the fast path (_fastread)
        self.send_bytes: Callable[[bytes], None] | None = None
        self.fast_batch: Any = None  # the fast reads of this loop iteration (_fastread)
        self.fast_watch: Any = None  # looks at the batches that may not be answered yet (_fastread)
        self.fast_out: list[bytes] | None = None  # replies of async fast reads, written once per iteration
        self.input_ends_batches = False  # the transport calls end_of_input() after each block
        self.stateless = stateless
        self.protocol_version: str | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.optin = NONE  # what the client opted into at initialize
        self.limits = server.app.limits
        self.client_info: dict[str, Any] = {}
        self.initialized = False
        self.log_level: str | None = None
        self.inflight: dict[Any, Request] = {}
        self.closed = False
        # the version of each URI this session read last, so that a subscription starts from
        # what the client holds; bounded, oldest forgotten first
        self.seen: dict[str, str] = {}
        self.seen_max = self.limits.max_subscriptions
        self._max_inflight = self.limits.max_inflight
        # a session whose subscriptions live in a store shared by several processes (scale-out)
        self.shared: SharedSubscriptions | None = None
        self.new_request = server.request_type  # plain, or logged at INFO (accesslog)
        # who sends what comes next (the transport sets it per HTTP request); None: nobody checks scopes
        self.principal: Any = None
        self.session_id: str | None = None  # a handshake-era HTTP session's
        self.traced = server.traced

    # --- input -------------------------------------------------------------

    def end_of_input(self) -> None:
        """The transport fed a whole block of input: the reads it held go to the workers now."""
        if self.fast_batch is not None:
            self.fast_batch.submit()

    def feed_lines(self, lines: Iterable[bytes]) -> None:
        """``feed`` each line of a block of input that is not blank (then ``end_of_input``)."""
        read_lines(self, lines)

    def feed(self, data: bytes | str, reply: Send | None = None) -> None:
        """Decode one message (or a batch) and handle it."""
        if reply is None and self.send_bytes is not None and data and not data.isspace():
            read_lines(self, (data,))  # reads may take the fast path (_fastread)
            return
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            (reply or self.send)(error_response(None, ParseError(f"Parse error: {exc}")))
            return
        if type(message) is dict:  # ``receive``, inlined for the common case
            self._receive_one(message, reply or self.send)
        else:
            self.receive(message, reply)

    def receive(self, message: Any, reply: Send | None = None) -> None:
        """Handle one decoded message; responses go to ``reply`` (default: ``send``)."""
        reply = reply or self.send
        if type(message) is dict:
            self._receive_one(message, reply)
        elif type(message) is list:
            self._receive_batch(message, reply)
        else:
            reply(error_response(None, InvalidRequest("Invalid Request: expected a JSON object")))

    def _receive_one(self, msg: dict[str, Any], reply: Send) -> None:
        method = msg.get("method")
        if msg.get("jsonrpc") != "2.0" or not isinstance(method, str):
            if method is None and ("result" in msg or "error" in msg) and "id" in msg:
                return  # a response to a request we never send: nothing to do
            rid = msg.get("id")
            reply(error_response(rid if type(rid) is int or type(rid) is str else None, InvalidRequest(
                "Invalid Request: expected jsonrpc '2.0' and a string method")))
            return
        params = msg.get("params")
        if "id" not in msg:
            if params is None or type(params) is dict:
                self._notification(method, params or {})
            return  # a receiver never answers a notification, even a bad one
        rid = msg["id"]
        if type(rid) is not int and type(rid) is not str:
            reply(error_response(None, InvalidRequest("Invalid Request: id must be a string or integer")))
            return
        traced = None
        if self.traced and telemetry.ON:  # a flag until a provider is configured (Server._probe)
            reply = traced = telemetry.Traced(self, rid, method, params, reply)
        if params is None:
            params = {}
        elif type(params) is not dict:
            reply(error_response(rid, InvalidParams("Invalid params: expected an object")))
            return
        meta = params.get("_meta")
        version = meta.get(META_PROTOCOL_VERSION) if type(meta) is dict else None
        request = None
        try:
            if version is not None:
                request = self._modern_request(rid, method, params, meta, version, reply)  # type: ignore[arg-type]
            else:
                if self.protocol_version is None:
                    self._before_initialize(method)
                request = self.new_request(self, rid, method, params, self.protocol_version, HANDSHAKE,
                                           self.log_level, reply)
            entry = request.era.methods.get(method)
            if entry is None:
                raise MethodNotFound(f"Method not found: {method}", {"method": method})
            if rid in self.inflight:
                raise InvalidRequest(f"Invalid Request: id {rid!r} is already in flight")
            if len(self.inflight) >= self._max_inflight and method != "ping":
                raise LimitExceeded("max_inflight", self._max_inflight,
                                    "Server busy: too many requests in flight on this connection", code=-32603)
            outcome = entry(request)
        except MCPError as exc:
            if self.new_request is not Request:
                accesslog.refused(method, params, exc, request)
            reply(error_response(rid, exc, STATELESS if version in MODERN_VERSIONS else HANDSHAKE))
            return
        except Exception as exc:  # a bug of ours or the user's: log it, never leak it
            log.exception("error handling %s", method)
            telemetry.record(reply, exc)
            reply(error_response(rid, exc))
            return
        if outcome is PENDING:
            self.inflight[rid] = request
        elif type(outcome) is dict:
            request.respond(outcome)
        else:
            self.inflight[rid] = request
            coro = _run(request, outcome)
            loop = self.server.loop
            request.task = loop.create_task(coro) if traced is None else traced.spawn(loop, coro)

    def _before_initialize(self, method: str) -> None:
        """A session request before ``initialize``: only ``initialize`` and ``ping`` may come."""
        if method not in ("initialize", "ping"):
            if method in STATELESS.methods and method not in HANDSHAKE.methods:
                raise InvalidParams(
                    f"Invalid params: {method} needs _meta['{META_PROTOCOL_VERSION}']",
                    {"missing": [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES]},
                )
            raise InvalidRequest(
                "Invalid Request: send initialize first, or put the protocol version in "
                f"_meta['{META_PROTOCOL_VERSION}']",
                {"missing": [META_PROTOCOL_VERSION]},
            )

    def _modern_request(
        self,
        rid: Any,
        method: str,
        params: dict[str, Any],
        meta: dict[str, Any],
        version: Any,
        reply: Send,
    ) -> Request:
        if version not in MODERN_VERSIONS:
            raise UnsupportedVersion(
                f"Unsupported protocol version: {version}",
                {"supported": list(MODERN_VERSIONS), "requested": version},
            )
        if type(meta.get(META_CLIENT_CAPABILITIES)) is not dict:
            raise InvalidParams(
                f"Invalid params: _meta['{META_CLIENT_CAPABILITIES}'] is required",
                {"missing": [META_CLIENT_CAPABILITIES]},
            )
        level = meta.get(META_LOG_LEVEL)
        if level is not None and (type(level) is not str or level not in LEVEL_RANK):
            raise InvalidParams(f"Invalid params: unknown log level {level!r}")
        return self.new_request(self, rid, method, params, version, STATELESS, level, reply)

    def _receive_batch(self, batch: list[Any], reply: Send) -> None:
        if self.protocol_version != BATCH_VERSION:
            reply(error_response(None, InvalidRequest(
                "Invalid Request: batches are only allowed in protocol version 2025-03-26")))
            return
        if not batch:
            reply(error_response(None, InvalidRequest("Invalid Request: empty batch")))
            return
        if any(type(m) is dict and m.get("method") == "initialize" for m in batch):
            reply(error_response(None, InvalidRequest(
                "Invalid Request: initialize must not be part of a batch")))
            return
        collect = Batch(reply)
        for item in batch:
            if type(item) is dict:
                self._receive_one(item, collect)
            else:
                collect(error_response(None, InvalidRequest("Invalid Request: expected a JSON object")))
        # counted, not predicted: responses and notifications in a batch get no answer
        # (a copy: worker threads take the reads they answered out of flight)
        collect.expect(sum(1 for r in list(self.inflight.values()) if telemetry.unwrap(r.reply) is collect))

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        handler = NOTIFICATIONS.get(method)
        if handler is not None:
            try:
                handler(self, params)
            except Exception:
                log.exception("error handling notification %s", method)

    # --- lifecycle --------------------------------------------------------------

    def cancel(self, rid: Any) -> bool:
        request = self.inflight.pop(rid, None)
        if request is None or request.method == "initialize":
            return False
        request.cancel()
        return True

    def close(self) -> None:
        """The client is gone: cancel its requests and drop its subscriptions."""
        if self.closed:
            return
        if self.fast_out:  # replies of async reads that ended this loop iteration: written, not lost
            write_out(self)
        self.closed = True
        for request in list(self.inflight.values()):
            request.cancel()
        self.inflight.clear()
        if self.protocol_version is not None:
            telemetry.session_ended(self)
        self.server.connections.discard(self)
        self.server.subscriptions.drop(self)

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for in-flight requests, then cancel the rest."""
        loop = self.server.loop
        deadline = loop.time() + timeout
        while self.inflight and loop.time() < deadline:
            await asyncio.sleep(0.01)
        self.close()


async def _run(request: Request, outcome: Awaitable[Any]) -> None:
    try:
        result = await outcome
    except asyncio.CancelledError:
        if not request.cancelled:
            raise
        return
    except BaseException as exc:
        request.fail(exc)
        return
    if result is not PENDING:
        request.respond(result)


telemetry.KNOWN_METHODS.update(HANDSHAKE.methods, STATELESS.methods)
