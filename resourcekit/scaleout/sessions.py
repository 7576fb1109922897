"""Handshake-era sessions in Redis: their state, subscriptions and GET-stream events.

``SessionStore`` reads and writes the records (see ``broker`` for the keys); ``SharedSession``
is what a Connection consults for its subscriptions (``methods.subscriptions.SharedSubscriptions``).
Every record of a session expires after the idle timeout unless a request or an open GET
stream refreshes it.
"""

from __future__ import annotations

import time
from typing import Any

from .broker import RedisBroker

__all__ = ["SessionStore", "SharedSession", "event_id_key", "unwatched"]

# a session ended meanwhile must not come back as a record holding a cursor or a log level only
SET_IF_ALIVE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""


def event_id_key(eid: str) -> tuple[int, int] | None:
    """A Redis stream id (``MS-SEQ``) as something to compare; None if it is not one."""
    ms, sep, seq = eid.partition("-")
    if not (ms.isdigit() and ms.isascii() and (not sep or (seq.isdigit() and seq.isascii()))):
        return None
    return int(ms), int(seq or 0)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class SessionStore:
    def __init__(self, broker: RedisBroker, ttl: float) -> None:
        self.broker = broker
        self.redis: Any = broker.redis
        self.ttl = max(1, int(ttl + 0.999))
        self._set_if_alive = self.redis.register_script(SET_IF_ALIVE)

    def _keys(self, sid: str) -> tuple[str, str, str]:
        key = self.broker.key
        return key("s:", sid), key("sub:", sid), key("ev:", sid)

    async def create(self, sid: str, state: dict[str, str]) -> None:
        state_key, _, _ = self._keys(sid)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(state_key, mapping=state)
            pipe.expire(state_key, self.ttl)
            pipe.zadd(self.broker.key("sessions"), {sid: (time.time() + self.ttl) * 1000})
            await pipe.execute()

    async def load(self, sid: str) -> dict[str, str] | None:
        state = await self.redis.hgetall(self._keys(sid)[0])
        found = {_text(k): _text(v) for k, v in state.items()}
        return found if found.get("v") else None

    async def touch(self, sid: str) -> bool:
        """Refresh the session's expiry; False if it is gone (expired, ended, or Redis forgot it)."""
        state_key, subs_key, events_key = self._keys(sid)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.expire(state_key, self.ttl)
            pipe.expire(subs_key, self.ttl)
            pipe.expire(events_key, self.ttl)
            pipe.zadd(self.broker.key("sessions"), {sid: (time.time() + self.ttl) * 1000})
            alive, *_ = await pipe.execute()
        return bool(alive)

    async def update(self, sid: str, fields: dict[str, str]) -> None:
        await self._set_if_alive(keys=[self._keys(sid)[0]], args=[x for pair in fields.items() for x in pair])
        await self.broker.publish("state", sid)

    async def end(self, sid: str) -> None:
        state_key, subs_key, events_key = self._keys(sid)
        uris = [_text(uri) for uri in await self.redis.hkeys(subs_key)]
        async with self.redis.pipeline(transaction=True) as pipe:
            for uri in uris:
                pipe.srem(self.broker.key("subs:", uri), sid)
                pipe.scard(self.broker.key("subs:", uri))
            pipe.delete(state_key, subs_key, events_key)
            pipe.zrem(self.broker.key("sessions"), sid)
            done = await pipe.execute()
        await self.broker.publish("end", sid)
        # a session that ends subscribed leaves as if it had unsubscribed: the last one unwatches
        await unwatched(self.broker, [uri for i, uri in enumerate(uris) if done[2 * i + 1] == 0])

    async def append(self, sid: str, events: list[tuple[bytes | None, int, bytes | None]], grace: float) -> None:
        """Events, in order: ``(None, 0, message)`` for the GET stream; ``(KEY, N, event)`` of a POST
        response stream (``None``: that stream finished; it is kept ``grace`` seconds more)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for key, number, data in events:
                if key is None:
                    pipe.xadd(self._keys(sid)[2], {"m": data}, maxlen=self.broker.max_events, approximate=True)
                    continue
                stream = self._post_key(sid, key.decode("latin-1"))
                fields: dict[str, Any] = {"n": number, "m": data} if data is not None else {"n": number, "end": 1}
                pipe.xadd(stream, fields, maxlen=self.broker.max_events, approximate=True)
                pipe.expire(stream, self.ttl if data is not None else max(1, int(grace)))
            await pipe.execute()

    def _post_key(self, sid: str, key: str) -> str:
        return self.broker.key("ps:", sid, ":", key)

    async def post_events(self, sid: str, key: str, after: str, block_ms: int) -> list[tuple[str, dict[bytes, bytes]]]:
        """A POST stream's events after ``after`` (``0-0``: all kept); waits ``block_ms`` for more."""
        stream = self._post_key(sid, key)
        if after == "0-0":
            return [(_text(eid), fields) for eid, fields in await self.redis.xrange(stream)]
        found = await self.redis.xread({stream: after}, count=256, block=block_ms)
        return [(_text(eid), fields) for _, entries in found for eid, fields in entries]

    async def read(self, sid: str, after: str, block_ms: int) -> list[tuple[str, bytes]]:
        found = await self.redis.xread({self._keys(sid)[2]: after}, count=256, block=block_ms)
        return [(_text(eid), fields[b"m"]) for _, entries in found for eid, fields in entries]

    async def missed(self, sid: str, after: str) -> bool:
        """Were events after ``after`` dropped (past the replay budget) before anyone read them?"""
        wanted = event_id_key(after)
        try:
            info = await self.redis.xinfo_stream(self._keys(sid)[2])
        except Exception:  # no stream: no event was ever kept, none dropped
            return False
        dropped = event_id_key(_text(info.get("max-deleted-entry-id", "0-0")))
        return wanted is not None and dropped is not None and dropped > wanted

    async def cursor(self, sid: str) -> str:
        """Where a GET stream without ``Last-Event-ID`` starts: after what the last one wrote."""
        cursor = await self.redis.hget(self._keys(sid)[0], "cur")
        return _text(cursor) if cursor else "0-0"

    async def set_cursor(self, sid: str, eid: str) -> None:
        await self._set_if_alive(keys=[self._keys(sid)[0]], args=["cur", eid])

    async def subscribed(self, sid: str) -> list[str]:
        return [_text(uri) for uri in await self.redis.hkeys(self._keys(sid)[1])]


class SharedSession:
    """One session's subscriptions in Redis, for its Connection in this worker."""

    __slots__ = ("sid", "store")

    def __init__(self, store: SessionStore, sid: str) -> None:
        self.store = store
        self.sid = sid

    async def subscriptions(self) -> dict[str, str]:
        held = await self.store.redis.hgetall(self.store._keys(self.sid)[1])
        return {_text(k): _text(v) for k, v in held.items()}

    async def subscribe(self, versions: dict[str, str]) -> None:
        broker = self.store.broker
        subs_key = self.store._keys(self.sid)[1]
        async with self.store.redis.pipeline(transaction=True) as pipe:
            for uri, version in versions.items():
                pipe.hsetnx(subs_key, uri, version)  # already subscribed: keeps what it last heard of
                pipe.sadd(broker.key("subs:", uri), self.sid)
                pipe.sadd(broker.key("watched"), uri)
            pipe.expire(subs_key, self.store.ttl)
            done = await pipe.execute()
        tracker = broker.tracker
        for i, uri in enumerate(versions):
            if tracker is not None:
                tracker.watch_shared(uri)
            if done[3 * i + 2]:  # nobody watched it: every worker polls it (one at a time) from now
                await broker.publish("watch", uri)

    async def unsubscribe(self, uris: list[str]) -> None:
        broker = self.store.broker
        async with self.store.redis.pipeline(transaction=True) as pipe:
            for uri in uris:
                pipe.hdel(self.store._keys(self.sid)[1], uri)
                pipe.srem(broker.key("subs:", uri), self.sid)
                pipe.scard(broker.key("subs:", uri))
            done = await pipe.execute()
        await unwatched(broker, [uri for i, uri in enumerate(uris) if done[3 * i + 2] == 0])


async def unwatched(broker: RedisBroker, uris: list[str]) -> None:
    """``uris`` lost their last subscriber in the store: no worker polls or watches them any more."""
    for uri in uris:
        await broker.redis.srem(broker.key("watched"), uri)
        if broker.tracker is not None:
            broker.tracker.unwatch_shared(uri)
        await broker.publish("unwatch", uri)
