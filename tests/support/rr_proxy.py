"""A tiny round-robin HTTP proxy for the scale-out tests: no sticky routing at all.

Each request goes to the next upstream, on a connection of its own (``Connection: close``
both ways), and the response is piped back byte by byte as it arrives, so SSE streams flow
through live; when the client hangs up, the upstream connection is closed too.  It runs on
its own event loop in a thread, so sync and async tests alike can use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

HOP_BY_HOP = (b"connection", b"keep-alive", b"proxy-connection")


class RoundRobinProxy:
    def __init__(self, upstreams: list[str]) -> None:
        self.targets = [(urlsplit(u).hostname or "127.0.0.1", urlsplit(u).port or 80) for u in upstreams]
        self._next = itertools.cycle(range(len(self.targets)))
        self.routed: list[int] = []  # which upstream each request went to, in order
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the proxy did not start")

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._started.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            for task in asyncio.all_tasks(self._loop):
                task.cancel()
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(asyncio.sleep(0))
            self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *lines = head[:-4].split(b"\r\n")
            kept = [line for line in lines if line.split(b":", 1)[0].strip().lower() not in HOP_BY_HOP]
            length = next((int(line.split(b":", 1)[1]) for line in kept
                           if line.split(b":", 1)[0].strip().lower() == b"content-length"), 0)
            body = await reader.readexactly(length) if length else b""
            index = next(self._next)
            self.routed.append(index)
            up_reader, upstream = await asyncio.open_connection(*self.targets[index])
            upstream.write(b"\r\n".join([request_line, *kept, b"connection: close", b"", b""]) + body)
            await upstream.drain()
            pump = asyncio.ensure_future(self._pipe(up_reader, writer))
            hangup = asyncio.ensure_future(reader.read())  # b"" once the client closes
            await asyncio.wait({pump, hangup}, return_when=asyncio.FIRST_COMPLETED)
            for task in (pump, hangup):
                task.cancel()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            for w in (upstream, writer):
                if w is not None:
                    w.close()

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()


@contextlib.contextmanager
def round_robin(upstreams: list[str], path: str = "/mcp") -> Iterator[tuple[str, RoundRobinProxy]]:
    """Yield the proxy's endpoint URL (and the proxy) while it runs."""
    proxy = RoundRobinProxy(upstreams)
    proxy.start()
    try:
        yield f"http://127.0.0.1:{proxy.port}{path}", proxy
    finally:
        proxy.stop()
