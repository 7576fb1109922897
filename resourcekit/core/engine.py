"""A connection to the engine: JSON-RPC in, JSON-RPC out, no I/O, no threads of its own.

A transport owns the bytes and the threads.  It hands decoded messages (or raw lines) to a
``Connection`` with a ``reply`` for that exchange, and the replies come back through it: a
message dict, or a successful response already encoded as one JSON line.  Each request passes
the envelope checks once, here, then the step its session's plan has for the method
(``core.plan``): the same code for every transport and every session, whatever observes it.
Sync handlers run in the runner the transport hands to the ``Server`` (``ThreadRunner``: one lane
per session, fair between them); async ones as tasks on the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from .._jobs import Lane
from ..context import LEVEL_RANK
from ..eras import error_response
from ..errors import (
    InvalidParams,
    InvalidRequest,
    LimitExceeded,
    MCPError,
    MethodNotFound,
    ParseError,
    UnsupportedVersion,
)
from ..extensions import NONE, OptIn
from ..methods import NOTIFICATIONS, PENDING
from ..revisions import (
    BATCH_VERSION,
    META_CLIENT_CAPABILITIES,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
)
from ..telemetry import spans as telemetry
from . import observers
from .plan import HANDSHAKE, STATELESS, Profile, profile_for
from .request import Batch, Request, Send, Sink, awaited

if TYPE_CHECKING:
    from ..methods._base import SharedSubscriptions
    from .outbox import Outbox
    from .views import CallerView, Host

__all__ = ["Connection"]

log = logging.getLogger("resourcekit")
_NO_ID: Any = object()  # a message without an id: a notification


class Connection:
    """One client: a stdio process, an HTTP session, or one stateless HTTP request.

    Handshake-era state (negotiated version, log level, subscriptions) lives here and makes the
    session's profile, whose plan serves its requests; 2026-07-28 requests carry their state in
    ``_meta`` and find the plan for theirs.
    """

    __slots__ = (
        "__weakref__", "_max_inflight", "app", "caller", "client_capabilities", "client_info", "closed", "held",
        "inflight", "initialized", "lane", "limits", "log_level", "loop", "optin", "outbox", "principal", "profile",
        "protocol_version", "router", "runner", "seen", "seen_max", "send", "server", "session_id", "shared", "sink",
        "stateless", "traced", "tracker", "waiting",
    )

    def __init__(self, server: Host, send: Send, profile: Profile, caller: CallerView | None = None,
                 sink: Sink | None = None) -> None:
        self.server = server
        self.app = server.app
        self.send = send  # for messages not tied to a request (subscription updates)
        self.outbox: Outbox | None = None  # a stream session's (``Server.stream``), whose ``send`` it is
        # where a worker hands the replies it made for this session (``Outbox.put``); None: to the loop
        self.sink = sink
        self.caller = caller
        self.stateless = caller is not None  # one 2026-07-28 request's
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
        # who sends what comes next (the transport sets it per HTTP request); None: nobody checks scopes
        self.principal: Any = None
        self.session_id: str | None = None  # a handshake-era HTTP session's
        self.traced = server.traced
        # the session's jobs, in order, in the runner (fair between sessions); ``flush`` writes the
        # replies a worker made for it, once it leaves the lane (set by a transport with an outbox).
        # 2026-07-28 requests, of no session, share their caller's lane (``Server.connect``), and count
        # together against ``max_inflight``: one past it is refused
        self.lane = Lane() if caller is None else caller.lane
        if caller is not None:
            if caller.open >= self._max_inflight:
                self._max_inflight = 0
            caller.open += 1
        self.runner = server.runner  # the transport's (handed to the server)
        self.loop = server.loop  # where an async step's task runs
        self.router = self.app.router
        self.tracker = self.app.tracker
        # messages that wait while the session owes its reader too much (``hold``), in order
        self.held = False
        self.waiting: deque[tuple[Any, Send | None]] = deque()
        self.profile = profile  # until ``initialize`` (``replan``): the server's first, made once

    # --- the profile ---------------------------------------------------------------------------

    def replan(self) -> None:
        """The session's profile changed (``initialize``, ``logging/setLevel``): its own, and plan."""
        self.profile = profile_for(HANDSHAKE, self.protocol_version, self.log_level, self.optin, self.server.logged)

    # --- input ---------------------------------------------------------------------------------

    def feed_lines(self, lines: Iterable[bytes]) -> None:
        """Each line of a block of input, in order (``_receive_block``); the jobs the block made
        reach the runner together, at its end."""
        runner = self.runner
        publish = runner.defer()
        try:
            self._receive_block(lines, None)
        finally:
            if publish:
                runner.publish()

    def feed(self, data: bytes | str, reply: Send | None = None) -> None:
        """Decode one message (or a batch) and handle it."""
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            (reply or self.send)(error_response(None, ParseError(f"Parse error: {exc}")))
            return
        self.receive(message, reply)

    def receive(self, message: Any, reply: Send | None = None) -> None:
        """Handle one decoded message; responses go to ``reply`` (default: ``send``)."""
        if self.held:  # the reader owes too much: it waits, in order (``release``)
            self.waiting.append((message, reply))
            return
        if type(message) is dict:
            self._receive_block((message,), reply)
        elif type(message) is list:
            self._receive_batch(message, reply or self.send)
        else:
            (reply or self.send)(error_response(None, InvalidRequest("Invalid Request: expected a JSON object")))

    def _receive_block(self, items: Iterable[Any], reply: Send | None, waits: bool = True) -> None:
        """Each message of a block, in order (a message, or a line of input decoded first; a blank
        one is no message): the envelope checks, once, here, then the step its profile's plan has
        for the method.  ``reply``: where the answers go (None: the session's ``send``, and a worker
        hands the reply it made to the session's ``sink`` itself).  ``waits``: a message waits
        while the session is held (``hold``), but a batch's members are handled together."""
        send = reply or self.send
        sink = None if reply else self.sink
        inflight, max_inflight, traced = self.inflight, self._max_inflight, self.traced
        for msg in items:
            if type(msg) is not dict:  # a line of input
                try:
                    msg = orjson.loads(msg)
                except orjson.JSONDecodeError as exc:
                    if msg and not msg.isspace():  # a blank line is no message
                        send(error_response(None, ParseError(f"Parse error: {exc}")))
                    continue
                if type(msg) is not dict:
                    self.receive(msg, reply)  # a batch, or no message at all
                    continue
            if self.held and waits:
                self.receive(msg, reply)  # it waits
                continue
            method = msg.get("method")
            rid = msg.get("id", _NO_ID)
            if type(method) is not str or msg.get("jsonrpc") != "2.0":
                self._not_a_request(msg, method, send)
                continue
            params = msg.get("params")
            if rid is _NO_ID:
                if params is None or type(params) is dict:
                    self._notification(method, params or {})
                continue  # a receiver never answers a notification, even a bad one
            if type(rid) is not int and type(rid) is not str:  # (``eras.is_request_id``, written out)
                send(error_response(None, InvalidRequest(
                    "Invalid Request: id must be a string or an integer of at most 64 bits")))
                continue
            answer, answer_sink, spanned = send, sink, None
            if traced and telemetry.ON:  # a flag until a provider is configured (Server._probe)
                answer = spanned = telemetry.Traced(self, rid, method, params, send)
                answer_sink = None  # through the span: it ends with the reply
            if type(params) is not dict:
                if params is not None:
                    answer(error_response(rid, InvalidParams("Invalid params: expected an object")))
                    continue
                params = {}
            request = None
            try:
                if "_meta" in params and type(meta := params["_meta"]) is dict and META_PROTOCOL_VERSION in meta:
                    profile = self._modern_profile(meta)
                else:
                    if self.protocol_version is None:
                        self._before_initialize(method)
                    profile = self.profile
                request = Request()  # its fields (see ``Request``), stored here
                request.conn = self
                request.id = rid
                request.method = method
                request.params = params
                request.profile = profile
                request.reply = answer
                request.sink = answer_sink
                request.principal = self.principal
                request.cancelled = False
                request.watch = None
                step = profile.plan.get(method)
                if step is None:
                    raise MethodNotFound(f"Method not found: {method}", {"method": method})
                if rid in inflight:
                    raise InvalidRequest(f"Invalid Request: id {rid!r} is already in flight")
                if len(inflight) >= max_inflight and method != "ping":
                    raise LimitExceeded("max_inflight", self.limits.max_inflight,  # (a 2026-07-28 caller at it: 0 left)
                                        "Server busy: too many requests in flight", code=-32603)
                inflight[rid] = request
                outcome = step(request)
            except Exception as exc:
                self._refused(rid, method, params, request, answer, exc)
                continue
            if outcome is PENDING:
                continue
            if type(outcome) is dict:
                request.respond(outcome)
            else:
                coro = awaited(request, outcome)
                request.task = self.loop.create_task(coro) if spanned is None else spanned.spawn(self.loop, coro)

    def _not_a_request(self, msg: dict[str, Any], method: Any, reply: Send) -> None:
        """A message without jsonrpc '2.0' or a string method: a response of the client's to a
        request we never send is ignored, anything else refused."""
        if method is None and ("result" in msg or "error" in msg) and "id" in msg:
            return
        rid = msg.get("id")
        reply(error_response(rid if type(rid) is int or type(rid) is str else None, InvalidRequest(
            "Invalid Request: expected jsonrpc '2.0' and a string method")))

    def _refused(self, rid: Any, method: str, params: dict[str, Any], request: Request | None, reply: Send,
                 exc: Exception) -> None:
        """A request its step (or the envelope) refused: out of flight, answered with its error; an
        error that is no ``MCPError`` is a bug of ours or the user's: logged, never leaked."""
        if request is not None and self.inflight.get(rid) is request:
            del self.inflight[rid]
        if isinstance(exc, MCPError):
            if self.server.logged:
                observers.refused(method, params, exc, request)
            if request is not None:
                modern = request.modern
            else:  # refused before it was made: a 2026-07-28 request says so in its _meta
                meta = params.get("_meta")
                modern = type(meta) is dict and META_PROTOCOL_VERSION in meta
            reply(error_response(rid, exc, STATELESS if modern else HANDSHAKE))
            return
        log.exception("error handling %s", method)
        telemetry.record(reply, exc)
        reply(error_response(rid, exc))

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

    def _modern_profile(self, meta: dict[str, Any]) -> Profile:
        """A 2026-07-28 request's own profile, from its ``_meta``."""
        version = meta[META_PROTOCOL_VERSION]
        if version not in MODERN_VERSIONS:
            raise UnsupportedVersion(
                f"Unsupported protocol version: {version}",
                {"supported": list(MODERN_VERSIONS), "requested": version},
            )
        caps = meta.get(META_CLIENT_CAPABILITIES)
        if type(caps) is not dict:
            raise InvalidParams(
                f"Invalid params: _meta['{META_CLIENT_CAPABILITIES}'] is required",
                {"missing": [META_CLIENT_CAPABILITIES]},
            )
        level = meta.get(META_LOG_LEVEL)
        if level is not None and (type(level) is not str or level not in LEVEL_RANK):
            raise InvalidParams(f"Invalid params: unknown log level {level!r}")
        return profile_for(STATELESS, version, level, OptIn.of(caps), self.server.logged)

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
                self._receive_block((item,), collect, waits=False)
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

    # --- a reader that does not read -------------------------------------------------------------

    def hold(self) -> None:
        """The session owes its reader more than it may (``Limits.max_owed_bytes``): its waiting
        jobs stay unstarted and what comes next waits, in order, until ``release``."""
        if not self.held:
            self.held = True
            self.runner.hold(self.lane)

    def release(self) -> None:
        """On the loop: the reader caught up; what waited is served, in order."""
        if not self.held:
            return
        self.held = False
        self.runner.release(self.lane)
        waiting = self.waiting
        while waiting and not self.held:
            message, reply = waiting.popleft()
            self.receive(message, reply)

    # --- lifecycle -----------------------------------------------------------------------------

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
        self.closed = True
        if self.caller is not None:  # a 2026-07-28 request's exchange is over
            self.caller.open -= 1
            if not self.inflight:  # answered: no subscription, no session, nothing else to end
                return
        self.waiting.clear()
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
        while (self.inflight or self.waiting) and loop.time() < deadline:
            await asyncio.sleep(0.01)
        self.close()


telemetry.KNOWN_METHODS.update(HANDSHAKE.methods, STATELESS.methods)
