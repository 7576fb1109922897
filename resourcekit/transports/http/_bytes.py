"""The response to ``resources/stream`` (SEP-2532): the resource's bytes, whole or a range of them.

``PostSink`` is the reply channel ``_post`` gives a POST whose one message is
``resources/stream``: the method answers it with a ``ByteStream`` (or a JSON-RPC error, sent as
any other), and ``send_bytes`` writes it.  Chunks go out as they are read or made, at most two
held at once (the one being sent and the next, read meanwhile in a worker): what the server holds
does not grow with the body, and uvicorn's flow control holds ``send`` while the reader is behind.

HTTP's own ranges apply to what has a known length (bytes in memory, files): ``Range: bytes=a-b``
(one range; several, or one that does not parse, are ignored and the whole body sent) answers 206
with ``Content-Range``, or 416 when it starts past the end; ``If-Range`` with an ETag other than
the body's sends the whole body instead, so a resumed download never joins two versions.  A
failure once the first byte went out cannot become an error message any more: the response is
cut short (its ``Content-Length`` unmet, or a chunked body without its end) and the failure
logged.  So is a file that changed while it was sent, and an iterator past the client's
``maxStreamSize``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import logging
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ...contents import StreamedVersion
from ...methods.streaming import CHUNK, ByteStream, Slots, StreamSink, as_bytes
from ._headers import Headers, Receive, Send

if TYPE_CHECKING:
    from ...core import Connection
    from ._sse import Inbox

__all__ = ["PostSink", "send_bytes"]

log = logging.getLogger("resourcekit")

_RANGE = re.compile(rb"\s*bytes\s*=\s*(\d{0,18})\s*-\s*(\d{0,18})\s*")  # (more digits: no range, ignored)
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._ +-]")
_EXPOSED = (b"access-control-expose-headers", b"MCP-Resource-Uri, ETag, Content-Range, Accept-Ranges, "
                                               b"Content-Disposition, Content-Length")


class PostSink(StreamSink):
    """A POST's reply channel that takes a ``resources/stream`` answer, with the request's
    ``Range`` and ``If-Range`` headers."""

    __slots__ = ("if_range", "range")

    def __init__(self, slots: Slots, headers: Mapping[bytes, bytes]) -> None:
        super().__init__(slots)
        self.range = headers.get(b"range")
        self.if_range = headers.get(b"if-range")


def header_text(value: str) -> bytes:
    """A header value from text a client may have chosen (a URI): as it is when it is printable
    ASCII, else ``=?base64?…?=`` of its UTF-8 (the form 2026-07-28's ``Mcp-Name`` takes)."""
    if value.isascii() and value.isprintable():
        return value.encode("ascii")
    return b"=?base64?" + base64.b64encode(value.encode("utf-8", "surrogatepass")) + b"?="


def _disposition(name: str) -> bytes:
    safe = _SAFE_NAME.sub("_", name)[:200] or "download"
    value = f'attachment; filename="{safe}"'
    if safe != name:
        value += "; filename*=UTF-8''" + quote(name[:200].encode("utf-8", "surrogatepass"), safe="")
    return value.encode("ascii")


def _mime(mime_type: str) -> bytes:
    return mime_type.encode("ascii") if mime_type.isascii() and mime_type.isprintable() \
        else b"application/octet-stream"


def byte_range(sink: PostSink, body: ByteStream) -> tuple[int, int, int]:
    """(status, start, stop) of what to send: 200 and all of it, 206 and a part, or 416."""
    length = body.length
    if sink.range is None or length is None or not body.ranged:
        return 200, 0, length or 0
    if sink.if_range is not None and sink.if_range.strip() != b'"%s"' % body.etag.encode():  # type: ignore[union-attr]
        return 200, 0, length  # a date, a weak or another tag: the whole body (RFC 9110 13.1.5)
    found = _RANGE.fullmatch(sink.range)
    if found is None:
        return 200, 0, length  # several ranges, another unit, or not a range: ignored (RFC 9110 14.2)
    first, last = found.group(1), found.group(2)
    if not first:
        if not last:
            return 200, 0, length
        suffix = int(last)
        if suffix == 0:
            return 416, 0, 0
        return 206, max(0, length - suffix), length
    start = int(first)
    stop = length if not last else int(last) + 1
    if last and stop <= start:
        return 200, 0, length  # last before first: not a valid range, ignored
    if start >= length:
        return 416, 0, 0
    return 206, start, min(stop, length)


async def send_bytes(body: ByteStream, sink: PostSink, inbox: Inbox, receive: Receive, send: Send,
                     conn: Connection) -> None:
    """Write ``body`` as the response to ``sink``'s POST; the body is closed afterwards."""
    try:
        status, start, stop = byte_range(sink, body)
        headers: Headers = [(b"content-type", _mime(body.mime_type)), (b"mcp-resource-uri", header_text(body.uri)),
                            (b"cache-control", b"no-store"), (b"content-disposition", _disposition(body.name)),
                            _EXPOSED]
        if body.ranged:
            headers.append((b"accept-ranges", b"bytes"))
            headers.append((b"etag", b'"%s"' % body.etag.encode()))  # type: ignore[union-attr]
        if status == 416:
            headers[0] = (b"content-type", b"text/plain")
            headers += [(b"content-range", b"bytes */%d" % (body.length or 0)), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 416, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        if body.length is not None:
            headers.append((b"content-length", b"%d" % (stop - start)))
            if status == 206:
                headers.append((b"content-range", b"bytes %d-%d/%d" % (start, stop - 1, body.length)))
        watcher = inbox.watcher  # the client going away (a disconnect): reading stops
        if watcher is None or watcher.done():
            watcher = inbox.watcher = asyncio.ensure_future(receive())
        await send({"type": "http.response.start", "status": status, "headers": headers})
        stall = _StallWatch(conn.limits.stream_stall_timeout)
        pump: asyncio.Future[Any] = asyncio.ensure_future(
            _pump(body, start, stop, stall.sending(send), watcher, conn))
        stall.start(pump)
        try:
            await asyncio.wait((pump, watcher), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not pump.done():  # the client left: no more reading (the worker's read under way ends first)
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pump
            stall.stop()
        if stall.cut:
            log.warning("resources/stream of %s: its reader took nothing for %g s; the response was cut "
                        "(Limits.stream_stall_timeout)", body.uri[:200], stall.seconds)
        elif not pump.cancelled() and pump.result():
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        body.close()


class _StallWatch:
    """Cuts a response whose reader takes none of the bytes waiting for it for ``seconds``
    (``Limits.stream_stall_timeout``): a reader that stops reading holds no stream.  A producer
    that is slow to make the next chunk is no stall: only the time a chunk waits to be taken counts.
    Looked at every ``seconds`` / 2, so a stall is cut after 1 to 1.5 times ``seconds``."""

    __slots__ = ("cut", "handle", "pump", "seconds", "since")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.since: float | None = None  # when the chunk being sent began to wait for its reader
        self.cut = False
        self.pump: asyncio.Future[Any] | None = None
        self.handle: asyncio.TimerHandle | None = None

    def sending(self, send: Send) -> Send:
        """``send``, timed by the watch."""
        loop = asyncio.get_running_loop()

        async def timed(message: Any) -> None:
            self.since = loop.time()
            await send(message)
            self.since = None

        return timed

    def start(self, pump: asyncio.Future[Any]) -> None:
        self.pump = pump
        self.handle = asyncio.get_running_loop().call_later(self.seconds / 2, self._look)

    def _look(self) -> None:
        pump = self.pump
        if pump is None or pump.done():
            return
        loop = asyncio.get_running_loop()
        if self.since is not None and loop.time() - self.since >= self.seconds:
            self.cut = True
            pump.cancel()
            return
        self.handle = loop.call_later(self.seconds / 2, self._look)

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()


async def _pump(body: ByteStream, start: int, stop: int, send: Send, gone: asyncio.Future[Any],
                conn: Connection) -> bool:
    """Send the body's bytes; True once all went, False if the client left or it failed (logged)."""
    try:
        if body.data is not None:
            return await _send_data(body.data, start, stop, send, gone)
        if body.file is not None:
            return await _send_file(body, start, stop, send, gone, conn)
        return await _send_chunks(body, send, gone, conn)
    except Exception:
        log.exception("resources/stream of %s failed after its first byte: the response was cut short",
                      body.uri[:200])
        return False


async def _send_data(data: bytes, start: int, stop: int, send: Send, gone: asyncio.Future[Any]) -> bool:
    if stop - start <= CHUNK:
        await send({"type": "http.response.body", "body": data[start:stop], "more_body": True})
        return True
    view = memoryview(data)
    for at in range(start, stop, CHUNK):
        if gone.done():
            return False
        await send({"type": "http.response.body", "body": bytes(view[at:min(at + CHUNK, stop)]), "more_body": True})
    return True


async def _send_file(body: ByteStream, start: int, stop: int, send: Send, gone: asyncio.Future[Any],
                     conn: Connection) -> bool:
    """The file's bytes from ``start`` to ``stop``, each chunk read in a worker while the previous one
    is sent; the file checked unchanged (size, mtime) before its last chunk goes out."""
    assert body.file is not None
    fd = body.file.fileno()
    runner, lane = conn.runner, conn.lane
    stamp = body.stamp

    def read(at: int) -> bytes:
        size = min(CHUNK, stop - at)
        chunk = os.pread(fd, size, at)
        if len(chunk) != size:
            raise OSError(f"{body.name} is shorter than when it was opened")
        if at + size >= stop:
            info = os.fstat(fd)
            if (info.st_size, info.st_mtime_ns) != stamp:
                raise OSError(f"{body.name} changed while it was sent")
        return chunk

    at = start
    pending = asyncio.ensure_future(runner.call(functools.partial(read, start), lane)) if stop > start else None
    try:
        while pending is not None:
            chunk = await asyncio.shield(pending)  # (a cancel waits for the read: ``_settled``)
            at += len(chunk)
            pending = asyncio.ensure_future(runner.call(functools.partial(read, at), lane)) if at < stop else None
            if gone.done():
                return False
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        return True
    finally:
        await _settled(pending)


async def _settled(pending: asyncio.Future[Any] | None) -> None:
    """Wait for a worker's read or ``next`` under way: the file or generator is closed after it."""
    if pending is not None:
        with contextlib.suppress(BaseException):
            await pending


async def _send_chunks(body: ByteStream, send: Send, gone: asyncio.Future[Any], conn: Connection) -> bool:
    """An iterator's chunks as they come (a sync one's taken in a worker while the previous chunk is
    sent), hashed on the way: the version is recorded once the last one went out."""
    hasher = StreamedVersion()
    limit = body.max_size
    sent = 0
    chunk: bytes | None = body.first or b""
    sync = body.chunks

    def take() -> bytes | None:
        assert sync is not None
        for item in sync:
            return as_bytes(item)
        return None

    while chunk is not None:
        pending: asyncio.Future[Any] | None = None
        if sync is not None:
            pending = asyncio.ensure_future(conn.runner.call(take, conn.lane))
        try:
            if chunk:
                sent += len(chunk)
                if limit is not None and sent > limit:
                    raise OverflowError(f"more than the client's maxStreamSize ({limit} bytes)")
                hasher.update(chunk)
                if gone.done():
                    return False
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if pending is not None:
                chunk = await asyncio.shield(pending)
                pending = None
            else:
                assert body.achunks is not None
                try:
                    chunk = as_bytes(await body.achunks.__anext__())
                except StopAsyncIteration:
                    chunk = None
        finally:
            await _settled(pending)
    if body.on_complete is not None:
        body.on_complete(hasher.version(body.mime_type))
    return True
