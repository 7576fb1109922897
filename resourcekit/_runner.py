"""Run sync handlers in worker threads, delivering results to the loop in batches.

``loop.run_in_executor`` costs a future, a wrapping future and one loop wake-up
per call.  Here workers put results on a deque and wake the loop only when no
wake-up is already pending, so under load one wake-up delivers many results.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["ThreadRunner"]

Callback = Callable[[bool, Any], None]


class ThreadRunner:
    def __init__(self, loop: asyncio.AbstractEventLoop, max_workers: int = 32) -> None:
        self._loop = loop
        self._max_workers = max_workers
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Callback] | None] = queue.SimpleQueue()
        self._done: deque[tuple[Callback, bool, Any]] = deque()
        self._wake_pending = False
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[[], Any], callback: Callback) -> None:
        """Run ``fn()`` in a worker; ``callback(ok, result_or_exception)`` runs on the loop."""
        self._jobs.put((fn, callback))
        if self._idle == 0 and len(self._threads) < self._max_workers:
            with self._lock:
                if self._idle == 0 and len(self._threads) < self._max_workers and not self._closed:
                    thread = threading.Thread(
                        target=self._work, name=f"resourcekit-worker-{len(self._threads)}", daemon=True
                    )
                    self._threads.append(thread)
                    thread.start()

    async def call(self, fn: Callable[[], Any]) -> Any:
        """``await runner.call(fn)``: run ``fn()`` in a worker from the loop and get its result."""
        future: asyncio.Future[Any] = self._loop.create_future()

        def done(ok: bool, value: Any) -> None:
            if not future.done():
                (future.set_result if ok else future.set_exception)(value)

        self.submit(fn, done)
        return await future

    def _work(self) -> None:
        jobs, done = self._jobs, self._done
        while True:
            with self._lock:
                self._idle += 1
            job = jobs.get()
            with self._lock:
                self._idle -= 1
            if job is None:
                return
            fn, callback = job
            try:
                outcome = (callback, True, fn())
            except BaseException as exc:  # delivered to the loop, which decides
                outcome = (callback, False, exc)
            done.append(outcome)
            if not self._wake_pending:
                self._wake_pending = True
                try:
                    self._loop.call_soon_threadsafe(self._deliver)
                except RuntimeError:  # loop closed while we worked: nobody to tell
                    return

    def _deliver(self) -> None:
        self._wake_pending = False
        done = self._done
        while done:
            callback, ok, value = done.popleft()
            callback(ok, value)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._jobs.put(None)
