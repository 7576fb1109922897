"""A session's one output channel, for a transport that writes one stream (stdio).

Every message for the session passes here: replies encoded in the worker that made them,
notifications, errors.  The outbox coalesces them: those of one loop iteration go out in one
write at its end, and those a worker made in a row for the session in one write when the worker
leaves the session's lane (``Lane.flush``, or the runner's look at a worker stuck in a slow job;
a worker serving the lane long flushes every ``FLUSH_EVERY`` jobs), or once the replies of at least
``COUNTED_REPLY`` bytes it made add up to ``FLUSH_BYTES`` (``grew``: a big reply goes at once).
Replies wait unwritten for at most about 1.25 MiB (``FLUSH_EVERY`` small ones, and ``FLUSH_BYTES``).

It bounds what the session may owe its reader (``Limits.max_owed_bytes``): past it the session
is *held* (``Connection.hold``: its waiting jobs stay unstarted, what it reads waits, and the
transport stops reading), and released once the transport took the bytes and its reader caught
up below half the limit.  While it is held, the notifications that keep coming whatever the
session does (``updated``, ``list_changed``, ``content_changed``: changes to what it subscribed to)
wait in the outbox instead, each merged with one waiting about the same thing
(``methods.subscriptions.coalescing_key``: at most one per subscribed URI), and are written when
the session is released; others (a request's log messages, bounded by the requests running) go on
in order with the replies.  The outbox writes nothing itself: ``write`` is the transport's, and
takes bytes from any thread.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from orjson import OPT_APPEND_NEWLINE, dumps

from ..methods.subscriptions import coalescing_key, newest_wins
from ..revisions import META_SUBSCRIPTION_ID

if TYPE_CHECKING:
    import asyncio

    from .views import Session

__all__ = ["Outbox"]

DRAIN_LOOK = 0.02  # seconds between looks at a held session's reader
FLUSH_BYTES = 256 * 1024  # bytes of replies not small (``grew``) that a worker's flush waits for at most
get_ident = threading.get_ident


class Outbox:
    """The replies and notifications of one session, on their way to its transport's ``write``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, write: Callable[[bytes], None],
                 owed: Callable[[], int], limit: int) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._write = write  # the transport's: any thread
        self._owed = owed  # bytes the transport took and could not write yet
        self.limit = limit
        # what waits for the next write, in the order it came, from any thread: a deque's append is
        # atomic, and ``flush`` takes the items one by one under the lock
        self._pending: deque[bytes] = deque()
        # a reply a worker made (``Connection.sink``), from any thread, no lock: the deque's own
        # append (a C call per read); it goes out with the worker's others (``Lane.flush``)
        self.put: Callable[[bytes], None] = self._pending.append
        self._lock = threading.Lock()
        self._scheduled = False  # a flush is due at the end of this loop iteration
        self._grown = 0  # bytes of replies not small put since the last flush (``grew``; about: no lock)
        self.conn: Session | None = None  # the session it holds when its reader owes too much
        self.on_hold: Callable[[bool], None] | None = None  # the transport's: stop (True) or go on reading
        # notifications waiting while the session is held: coalescing key -> message
        self._parked: dict[tuple[Any, ...], dict[str, Any]] = {}

    def send(self, message: Any) -> None:
        """A message for the session (``Connection.send``, a request's ``reply``), from any thread:
        a dict or list is encoded here, a response encoded already (``bytes``) passes as it is.
        (A worker hands the replies it makes to ``put``, the session's sink, instead.)"""
        if type(message) is dict and "id" not in message and self.conn is not None and self.conn.held \
                and self._park(message):
            return
        self._pending.append(message if type(message) is bytes else dumps(message, option=OPT_APPEND_NEWLINE))
        # a flush at the end of this loop iteration; ``flush`` clears the flag before it takes what
        # waits, so a message appended before the flag was seen set is taken by that flush
        if not self._scheduled:
            self._scheduled = True
            if get_ident() == self._loop_thread:
                self._loop.call_soon(self.flush)
            else:  # a notification from another thread (a change reported there)
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to write it
                    self._loop.call_soon_threadsafe(self.flush)

    def grew(self, size: int) -> None:
        """A worker put a reply of ``size`` bytes, not small (``Request.run``): written once such
        replies add up to ``FLUSH_BYTES``, so that the session is held in time."""
        self._grown += size
        if self._grown >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Hand what waits to the transport, in one write (from any thread); hold the session when
        its reader owes more than the limit."""
        with self._lock:
            self._scheduled = False
            self._grown = 0
            pending = self._pending
            if not pending:
                return
            buffer = [pending.popleft()]
            while pending:  # in the order they came (appended without the lock)
                buffer.append(pending.popleft())
            self._write(buffer[0] if len(buffer) == 1 else b"".join(buffer))  # under the lock: whole, in order
        if self._owed() > self.limit:
            self.hold()

    def _park(self, message: dict[str, Any]) -> bool:
        """While the session is held: a change notification waits here (see the module); False:
        not one, or the session was released meanwhile."""
        kind = coalescing_key(message)
        if kind is None:
            return False
        meta = message.get("params", {}).get("_meta")  # a listen's: one waits per subscription
        key = (*kind, meta.get(META_SUBSCRIPTION_ID) if type(meta) is dict else None)
        with self._lock:
            conn = self.conn
            if conn is None or not conn.held:
                return False
            if key not in self._parked or newest_wins(message):
                self._parked[key] = message  # (a newer one in the waiting one's place)
            return True

    def _unpark(self) -> None:
        """The notifications that waited, on their way (the session is released)."""
        with self._lock:
            parked, self._parked = self._parked, {}
            for message in parked.values():
                self._pending.append(dumps(message, option=OPT_APPEND_NEWLINE))

    def hold(self) -> None:
        """The reader owes more than the limit: the session waits (from any thread)."""
        conn = self.conn
        if conn is None or conn.held:
            return
        conn.hold()
        if threading.get_ident() == self._loop_thread:
            self._stop_reading()
        else:
            self._loop.call_soon_threadsafe(self._stop_reading)

    def _stop_reading(self) -> None:
        if self.on_hold is not None:
            self.on_hold(True)
        self._loop.call_later(DRAIN_LOOK, self._look)

    def _look(self) -> None:
        """While the session is held: has its reader caught up?  (The transport says so too, when
        it held enough to pause: ``drained``.)"""
        conn = self.conn
        if conn is not None and conn.held and not conn.closed:
            self.drained()
            if conn.held:
                self._loop.call_later(DRAIN_LOOK, self._look)

    def drained(self) -> None:
        """On the loop, when the transport wrote what it held back: release the session once its
        reader owes less than half the limit."""
        conn = self.conn
        if conn is None or not conn.held:
            return
        if sum(map(len, list(self._pending))) + self._owed() <= self.limit // 2:
            if self.on_hold is not None:
                self.on_hold(False)
            conn.release()
            if self._parked:
                self._unpark()
                self.flush()
