"""Scale-out: several worker processes (on any hosts) serving one app through Redis.

With a Redis URL (``resourcekit run --redis URL``, ``RESOURCEKIT_REDIS_URL``,
``ASGIApp(app, redis=URL)``) handshake-era sessions, their subscriptions and GET-stream
events, the last announced version of each URI, polling leases and change announcements
live in Redis, so any worker serves any request.  Without one nothing here is imported and
redis-py (the ``redis`` extra) is not needed.

- ``broker``: ``RedisBroker``: the connection, pub/sub between workers, the shared records.
- ``notify``: announce changes from any process (``resourcekit notify``).
"""

from .notify import notify, notify_async

__all__ = ["DEFAULT_PREFIX", "notify", "notify_async"]

DEFAULT_PREFIX = "resourcekit:"
