"""``notify(url, uris)``: tell every worker sharing a Redis that resources may have changed.

For processes that serve nothing (a cron job, a database trigger, a deploy hook): the
workers hear it on their pub/sub channel, re-read what their subscribers watch, and
tell those whose version moved.  redis-py is imported only when called.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import orjson

__all__ = ["notify", "notify_async"]

ORIGIN = "notify"  # no worker has this id: every worker acts on it


async def notify_async(url: str, uris: Iterable[str], *, prefix: str = "resourcekit:", timeout: float = 5.0) -> int:
    """Publish a change announcement for each URI; return how many workers heard the last one.

    Raises ``redis.exceptions.RedisError`` (or ``OSError``) when Redis is unreachable.
    """
    import redis.asyncio as aioredis

    client = aioredis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        async with client.pipeline(transaction=False) as pipe:
            for uri in uris:
                pipe.publish(prefix + "events", orjson.dumps([ORIGIN, "dirty", uri]))
            done = await pipe.execute()
        return int(done[-1]) if done else 0
    finally:
        await client.aclose()


def notify(url: str, uris: Iterable[str], *, prefix: str = "resourcekit:", timeout: float = 5.0) -> int:
    """``notify_async`` for synchronous code (not from a running event loop)."""
    return asyncio.run(notify_async(url, list(uris), prefix=prefix, timeout=timeout))
