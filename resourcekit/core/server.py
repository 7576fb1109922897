"""What every connection to one App shares: the runner the transport handed in, the
subscribers, the server's info, and the observers decided once at start (the access log,
OpenTelemetry)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from .._jobs import Lane
from .._runner import ThreadRunner
from ..extensions import NONE
from ..methods import Subscriptions
from ..telemetry import spans as telemetry
from . import observers
from .engine import Connection
from .outbox import Outbox
from .plan import HANDSHAKE, profile_for
from .request import Send, Sink

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = ["Server"]


def _NOTHING_OWED() -> int:
    return 0


_CALLERS = 1024  # the callers of 2026-07-28 requests a server keeps (their lanes and counts)


class Caller:
    """Who sends 2026-07-28 requests, as the transport knows (a token's principal at an address):
    the lane their jobs share, and how many of them are open (``Limits.max_inflight`` bounds them
    as it bounds a session's requests in flight)."""

    __slots__ = ("lane", "open")

    def __init__(self) -> None:
        self.lane = Lane()
        self.open = 0


class Server:
    """What every connection to one App shares: the runner, subscribers, server info."""

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
        if app.resource_tools:  # a template tool's bad or shared name fails start-up (ToolNameError)
            from ..methods.template_tools import tool_table  # the tools feature: loaded when served

            tool_table(app)
        self._runner: ThreadRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self.connections: set[Connection] = set()
        # who sends 2026-07-28 requests (a connection each, of no session): a lane per caller, in the
        # order they came, beside the sessions' lanes, and its open requests (at most ``_CALLERS``
        # callers: then afresh)
        self._callers: dict[Hashable, Caller] = {}
        self._prober: asyncio.TimerHandle | None = None
        self.subscriptions = Subscriptions(self)
        # one log line per request at INFO (an observer of every plan): decided once here
        self.logged = observers.access_log_enabled()
        # a session's profile until its initialize (the same for all: made once here)
        self.first_profile = profile_for(HANDSHAKE, None, None, NONE, self.logged)
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

    def start(self, runner: ThreadRunner | None = None) -> None:
        """Bind to the running loop (call from the serving task); ``runner``: the transport's."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        if runner is not None:
            self._runner = runner
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
        if self.traced:
            telemetry.unwatch(self)
        self.app.tracker.detach(self.subscriptions)
        if self.app.skills is not None:
            self.app.skills.stop()
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    def stream(self, write: Callable[[bytes], None], owed: Callable[[], int] = _NOTHING_OWED) -> Connection:
        """A session whose messages go out as one stream of JSON lines (stdio, ``testing.Client``)
        through an ``Outbox``: ``write`` takes bytes from any thread; ``owed`` says how many the
        transport took and its reader has not (``Limits.max_owed_bytes``)."""
        outbox = Outbox(self.loop, write, owed, self.app.limits.max_owed_bytes)
        conn = self.connect(outbox.send, sink=outbox.put)
        conn.outbox = outbox
        outbox.conn = conn
        conn.lane.flush = outbox.flush  # a worker's replies for the session, written when it leaves them
        conn.lane.grew = outbox.grew  # ... or once those not small add up (the reader's debt is known)
        return conn

    def connect(self, send: Send, *, stateless: bool = False, sink: Sink | None = None,
                caller: Hashable = None) -> Connection:
        """A connection whose messages not tied to a request go to ``send``; ``sink``: where a worker
        hands on the replies it made for the session itself (from any thread), if anywhere.
        ``stateless``: one 2026-07-28 request's, whose jobs take the lane of its ``caller`` (who
        sent it, as the transport knows: a token's principal, an address), shared by the caller's
        other requests: a flood of them takes its turn beside each session and each other caller,
        and at most ``Limits.max_inflight`` of them are open at once (``close`` ends one)."""
        record = None
        if stateless:
            callers = self._callers
            record = callers.get(caller)
            if record is None:
                if len(callers) >= _CALLERS:  # (a record in use lives on in its connections)
                    callers.clear()
                record = callers[caller] = Caller()
        # (positional: keywords cost a class call a dict; each 2026-07-28 request is a connection)
        conn = Connection(self, send, self.first_profile, record, sink)
        if not stateless:
            self.connections.add(conn)
        return conn
