"""``RedisBroker``: what the workers of one app share, kept in Redis.

Keys (all under the prefix, ``resourcekit:`` by default, so several apps share a Redis):

- ``events``: the pub/sub channel between workers: ``[origin, kind, *args]`` messages.
- ``s:SID`` (hash): a handshake-era session's state (``cc``: it opted in to seed 000's
  ``content_changed``, sent after each ``updated``); ``sub:SID`` (hash): its subscriptions,
  URI -> the version it last heard of; ``ev:SID`` (stream): events for its GET stream, kept
  for ``Last-Event-ID``; all three expire after the idle timeout unless refreshed.
  ``ps:SID:KEY`` (stream): the events of one of its POST response streams, so that any
  worker resumes it; kept 30 s once finished.
- ``sessions`` (sorted set): live session ids by expiry time, for ``list_changed``.
- ``subs:URI`` (set): the sessions subscribed to a URI; ``watched`` (set): such URIs.
- ``ver:URI``: the last version announced of a URI (compare-and-set); ``listver``: the list's.
- ``lease:URI``: which worker polls a URI; ``wlease:URI``: which one runs its ``@app.watch``
  watcher; each expires when that worker stops renewing it (or is deleted when it lets go).

Exactly once per session and version: the fan-out is one Lua script that compares each
subscribed session's last version with the new one, updates it and appends the event,
atomically, whichever worker (or how many) detected the change.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import orjson
import redis.asyncio as aioredis
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeout

from ..methods.wire import fresh_resource, seed_fields
from ..pagination import set_cursor_key
from ..telemetry import causes
from .scripts import FANOUT, LEASES, LIST_FANOUT, PRUNE, RELEASE

if TYPE_CHECKING:
    from ..tracking import Tracker

__all__ = ["UNAVAILABLE", "RedisBroker", "check_reachable", "safe_url"]

log = logging.getLogger("resourcekit")

UNAVAILABLE = (RedisError, OSError)  # what an unreachable or restarting Redis raises
RECONNECT_DELAY = 0.5
HEARTBEAT = 1.0  # seconds between checks that Redis did not restart behind a silent reconnect
# seconds Redis has to answer a command a request waits for (and the heartbeat): a Redis that
# takes longer is paused or overloaded, and the request is answered 503 rather than kept waiting
# for redis-py's socket timeout (10 s, for the blocking reads of streams)
ANSWER_WITHIN = 1.0
T = TypeVar("T")
UPDATED = "notifications/resources/updated"
CONTENT_CHANGED = "notifications/resources/content_changed"
LIST_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}'
VERSION_TTL = 86_400  # seconds a last announced version is remembered
PRUNE_EVERY = 5.0  # seconds between two workers' looks for watches whose sessions all expired

def _caused(handle: Callable[..., None], arity: int) -> Callable[..., None]:
    """A handler of ``arity`` arguments and, after them, the ``traceparent`` of the change's cause."""
    def handler(*args: Any) -> None:
        if len(args) > arity:
            causes.caused_elsewhere(args[0], args[arity])
        handle(*args[:arity])
    return handler


def safe_url(url: str) -> str:
    """The URL without its password, for logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class RedisBroker:
    """One worker's link to the shared Redis: pub/sub in and out, scripts, session records.

    ``handlers`` maps a message kind to what this worker does when another one publishes it.
    ``healthy`` is False while Redis is unreachable (``/readyz`` says 503 meanwhile).
    """

    def __init__(self, url: str, prefix: str = "resourcekit:", *, max_events: int = 256) -> None:
        self.url = url
        self.prefix = prefix
        self.id = secrets.token_hex(8)
        self.max_events = max_events
        self.redis: Any = aioredis.from_url(url, socket_connect_timeout=2, socket_timeout=10,
                                       health_check_interval=5)
        self.watched: set[str] = set()
        self.healthy = False
        self.handlers: dict[str, Callable[..., None]] = {}
        self.on_reconnect: list[Callable[[], None]] = []
        self.tracker: Tracker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._listener: asyncio.Task[None] | None = None
        self._run_id: Any = None  # the Redis server's run id: another one means it restarted
        self._ready = asyncio.Event()
        self._fanout = self.redis.register_script(FANOUT)
        self._list_fanout = self.redis.register_script(LIST_FANOUT)
        self._leases = self.redis.register_script(LEASES)
        self._release = self.redis.register_script(RELEASE)
        self._prune = self.redis.register_script(PRUNE)

    def key(self, *parts: str) -> str:
        return self.prefix + "".join(parts)

    # --- lifecycle --------------------------------------------------------------------------

    def start(self, tracker: Tracker) -> None:
        """Serve ``tracker``'s app from the running loop: listen to the other workers."""
        self._loop = asyncio.get_running_loop()
        self.tracker = tracker
        tracker.broker = self
        self.handlers.update(dirty=_caused(tracker.schedule, 1), list=lambda: tracker.schedule_list(),
                             watch=tracker.watch_shared, unwatch=tracker.unwatch_shared,
                             changed=_caused(tracker.report, 2))
        self._listener = self._loop.create_task(self._listen())

    async def answer(self, job: Awaitable[T], seconds: float = ANSWER_WITHIN) -> T:
        """``await job`` (Redis commands) within ``seconds``, else ``RedisTimeout`` (one of
        ``UNAVAILABLE``); until the heartbeat hears Redis again, ``healthy`` is then False, so the
        requests after it are answered 503 at once."""
        try:
            return await asyncio.wait_for(job, seconds)
        except asyncio.TimeoutError:
            self.healthy = False
            raise RedisTimeout(f"no answer within {seconds:g} s (paused or overloaded)") from None

    async def wait_ready(self, timeout: float) -> bool:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout)
        return self.healthy

    async def close(self) -> None:
        if self.tracker is not None and self.tracker.broker is self:
            self.tracker.broker = None
        if self._listener is not None:
            self._listener.cancel()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(*UNAVAILABLE):
            await self.redis.aclose()

    async def _listen(self) -> None:
        down_since: float | None = None
        while True:
            pubsub = self.redis.pubsub()
            try:
                await self.answer(pubsub.subscribe(self.key("events")))
                await self.answer(self._connected(restarted=down_since is not None))
                self.healthy = True
                self._ready.set()
                if down_since is not None:
                    log.warning("Redis at %s reachable again", safe_url(self.url))
                    down_since = None
                checked = pruned = time.monotonic()
                while True:
                    message = await pubsub.get_message(timeout=HEARTBEAT)
                    if message is not None and message.get("type") == "message":
                        self._receive(message["data"])
                    if time.monotonic() - checked >= HEARTBEAT:  # redis-py may reconnect without a word
                        await self.answer(self._connected(restarted=False))
                        self.healthy = True  # (a request that waited too long may have said otherwise)
                        checked = time.monotonic()
                    if checked - pruned >= PRUNE_EVERY:
                        pruned = checked
                        self.spawn(self.prune())
            except asyncio.CancelledError:
                with contextlib.suppress(*UNAVAILABLE):
                    await pubsub.aclose()
                raise
            except UNAVAILABLE as exc:
                if down_since is None:
                    down_since = time.monotonic()
                    log.error("Redis at %s unreachable (%s): shared sessions and cross-worker notifications "
                              "wait for it", safe_url(self.url), exc)
                self.healthy = False
                self._ready.set()
                with contextlib.suppress(*UNAVAILABLE):
                    await pubsub.aclose()
                await asyncio.sleep(RECONNECT_DELAY)

    async def _connected(self, restarted: bool) -> None:
        """(Re)connected, or checking: a Redis restarted meanwhile (another run id) may have forgotten
        what this worker cached; the URIs watched elsewhere are polled here too."""
        run_id = (await self.redis.info("server")).get("run_id")
        if self._run_id is not None and run_id != self._run_id:
            log.warning("Redis at %s restarted: cached sessions are looked up again", safe_url(self.url))
            restarted = True
        fresh = self._run_id is None or restarted
        self._run_id = run_id
        if restarted:
            for hook in self.on_reconnect:
                hook()
        if fresh:  # one cursor key for every worker: a list walk may continue on any of them
            await self.redis.set(self.key("cursor-key"), os.urandom(32).hex(), nx=True)
            shared_key = await self.redis.get(self.key("cursor-key"))
            if shared_key:
                set_cursor_key(bytes.fromhex(shared_key.decode() if isinstance(shared_key, bytes) else shared_key))
        if fresh:
            assert self.tracker is not None
            for uri in await self.redis.smembers(self.key("watched")):
                self.tracker.watch_shared(uri.decode())

    def _receive(self, data: bytes) -> None:
        try:
            origin, kind, *args = orjson.loads(data)
        except (orjson.JSONDecodeError, ValueError, TypeError):
            return
        if origin == self.id:
            return
        handler = self.handlers.get(kind)
        if handler is not None:
            try:
                handler(*args)
            except Exception:
                log.exception("handling %s from another worker failed", kind)

    async def prune(self) -> None:
        """A session that expired (never ended with DELETE) keeps no URI watched: the watched URIs
        whose subscribers' sessions are all gone stop being polled and watched on every worker."""
        for raw in await self._prune(args=[self.prefix]):
            uri = raw.decode() if isinstance(raw, bytes) else raw
            if self.tracker is not None:
                self.tracker.unwatch_shared(uri)
            await self.publish("unwatch", uri)

    # --- publishing ---------------------------------------------------------------------------

    def spawn(self, job: Coroutine[Any, Any, Any]) -> None:
        """Run ``job`` in the background (on the loop); a failure is logged, never raised."""
        task = asyncio.get_running_loop().create_task(self._quietly(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _quietly(self, job: Coroutine[Any, Any, Any]) -> None:
        try:
            await job
        except UNAVAILABLE as exc:
            log.warning("Redis at %s: %s", safe_url(self.url), exc)

    async def publish(self, kind: str, *args: Any) -> None:
        await self.redis.publish(self.key("events"), orjson.dumps([self.id, kind, *args]))

    def publish_soon(self, kind: str, *args: Any) -> None:
        """Publish from any thread."""
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: the worker stops
            loop.call_soon_threadsafe(lambda: self.spawn(self.publish(kind, *args)))

    # --- what the tracker tells (tracking.Broker) -----------------------------------------------

    def dirty(self, uri: str) -> None:
        cause = causes.carried(uri)  # the span that caused it, for the notifications elsewhere
        self.publish_soon("dirty", uri, *((cause,) if cause else ()))

    def list_dirty(self) -> None:
        self.publish_soon("list")

    def changed(self, uri: str, version: str) -> None:
        self.spawn(self._announce(uri, version, causes.current(uri)))

    async def _announce(self, uri: str, version: str, why: Any = None) -> None:
        message = orjson.dumps({"jsonrpc": "2.0", "method": UPDATED, "params": {"uri": uri}})
        told, moved = await self._fanout(args=[self.prefix, uri, version, self.max_events, message, VERSION_TTL,
                                               self._content_changed(uri)])
        causes.sent(UPDATED, uri, int(told), why)  # to sessions kept in Redis, wherever they are served
        if moved:  # the other workers' listen streams hear it even if they did not re-read
            cause = causes.carried_of(why)
            await self.publish("changed", uri, version, *((cause,) if cause else ()))

    def _content_changed(self, uri: str) -> bytes:
        """Seed 000's ``content_changed`` for sessions that opted in (``cc`` in their state), or b''."""
        match = self.tracker.registry.router.match(uri) if self.tracker is not None else None
        if match is None or self.tracker is None:
            return b""
        resource = fresh_resource(match.handler, None, uri)
        seed_fields(resource, match.handler, self.tracker)
        return orjson.dumps({"jsonrpc": "2.0", "method": CONTENT_CHANGED, "params": {"resource": resource}})

    def list_changed(self, version: str | None) -> None:
        self.spawn(self._list_fanout(args=[self.prefix, version or "", int(time.time() * 1000), self.max_events,
                                           LIST_CHANGED]))

    async def leases(self, uris: list[str], ttl: float, kind: str = "lease:") -> list[str]:
        """Of ``uris``, those whose lease of ``kind`` this worker holds now, for ``ttl`` seconds more."""
        if not uris:
            return []
        held = await self._leases(args=[self.prefix + kind, self.id, int(ttl * 1000), *uris])
        return [uri.decode() if isinstance(uri, bytes) else uri for uri in held]

    async def release(self, uris: list[str], kind: str) -> None:
        """Let go of the leases of ``kind`` this worker holds on ``uris``."""
        if uris:
            await self._release(args=[self.prefix + kind, self.id, *uris])


def check_reachable(url: str, wait: float = 0.0) -> None:
    """Return once Redis at ``url`` answers PING; ``ConnectionError`` naming it and why if it does
    not within ``wait`` seconds (0: one try). For start-up: a mistyped URL fails at once rather
    than serving 503 for good."""
    import redis as redis_sync

    deadline = time.monotonic() + wait
    while True:
        try:
            with redis_sync.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2) as probe:
                probe.ping()
            return
        except (RedisError, OSError, ValueError) as exc:  # (ValueError: not a Redis URL)
            if time.monotonic() >= deadline:
                raise ConnectionError(f"Redis at {safe_url(url)} is unreachable ({exc})") from None
        time.sleep(min(RECONNECT_DELAY, max(0.0, deadline - time.monotonic())))
