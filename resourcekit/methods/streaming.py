"""``resources/stream`` (SEP-2532, a draft: experimental): a resource's bytes as the HTTP response
itself, without JSON-RPC, base64 or SSE around them.

The read is ``resources/read``'s (``reading.serve``: the same router, not-found, scopes, limits,
``Context`` and handler failures); only what becomes of the handler's value differs.  Instead of
encoded contents the request is answered with a ``ByteStream``: the bytes in memory (``str``,
``bytes``, ``Text``, ``Blob``, JSON data, made by ``contents.to_contents`` so the version is the
one ``resources/read`` gives), an open file (``pathlib.Path``: never read whole) or an iterator of
chunks (sync or async; its first chunk taken before the answer, so that a failure there is still
the request's JSON-RPC error).  Only a reply channel that can carry bytes takes that answer: a
``StreamSink``, which the HTTP transport makes for a POST whose one message is
``resources/stream``; anywhere else (stdio, a batch, the in-memory client) the answer is the SEP's
"stream not supported" (-32003), as it is for a client that did not declare ``resourceStreaming``
and for a resource that is not ``streamable``.  A body longer than the client's ``maxStreamSize``
is "resource too large" (-32004).

Versions: a body in memory has the content hash ``resources/read`` gives it (recorded as a read's
is); a streamed iterator's is computed as it streams and recorded once it has all gone; a file's
ETag comes from ``fstat`` (inode, size, modification time in ns), not its bytes, and is not
recorded: hashing a gigabyte would cost more than sending it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, cast

from ..contents import BINARY_MIME, guess_mime_type, to_contents
from ..errors import InvalidParams, LimitExceeded, ResourceTooLarge, StreamNotSupported
from ..revisions import META_CLIENT_CAPABILITIES
from ..telemetry.spans import unwrap
from ._base import PENDING, Method, uri_param
from .reading import serve, served
from .wire import last_segment

if TYPE_CHECKING:
    from ..declaration import Handler
    from ._base import RequestView as Request

__all__ = ["CHUNK", "METHOD", "METHODS", "ByteStream", "Slots", "StreamSink"]

log = logging.getLogger("resourcekit")

METHOD = "resources/stream"
CHUNK = 256 * 1024  # bytes read or taken at once; a stream holds two (one sent, the next read)


_PRIMING: set[asyncio.Task[None]] = set()  # tasks of ours: one nobody holds may be collected before it ran


class Slots:
    """The byte streams one process sends at once, at most ``limit`` (``Limits.max_byte_streams``)."""

    __slots__ = ("count", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def claim(self) -> None:
        if self.count >= self.limit:
            raise LimitExceeded("max_byte_streams", self.limit,
                                "Server busy: too many resources/stream responses at once", code=-32603)
        self.count += 1

    def release(self) -> None:
        self.count -= 1


class StreamSink:
    """The reply channel of one request that can carry a ``resources/stream`` answer as bytes (an
    HTTP POST's response): messages go to ``put``; a stream answered once the response is over
    (``finish``) is closed unsent.  A request holds one of the ``slots`` from its step on."""

    __slots__ = ("claimed", "closed", "put", "slots")

    def __init__(self, slots: Slots) -> None:
        self.slots = slots
        self.put: Callable[[Any], None] = _nowhere
        self.claimed = False
        self.closed = False

    def __call__(self, message: Any) -> None:
        if self.closed:
            if type(message) is ByteStream:
                message.close()
            return
        self.put(message)

    def claim(self) -> None:
        if not self.claimed:
            self.slots.claim()
            self.claimed = True

    def finish(self) -> None:
        self.closed = True
        if self.claimed:
            self.claimed = False
            self.slots.release()


def _nowhere(message: Any) -> None:
    """A sink not bound to a response yet."""


class ByteStream:
    """The answer to ``resources/stream``: what the response carries, from one of ``data`` (bytes in
    memory), ``file`` (open, unbuffered, of ``length`` bytes when opened) or ``chunks`` /
    ``achunks`` (an iterator whose ``first`` chunk was taken)."""

    __slots__ = ("achunks", "chunks", "data", "etag", "file", "first", "length", "max_size", "mime_type", "name",
                 "on_complete", "stamp", "uri")

    def __init__(self, uri: str, mime_type: str, name: str, max_size: int | None) -> None:
        self.uri = uri
        self.mime_type = mime_type
        self.name = name  # the file name a client may save it under (Content-Disposition)
        self.max_size = max_size  # the client's maxStreamSize
        self.length: int | None = None  # None: not known before the end (chunked)
        self.etag: str | None = None  # an entity tag without its quotes; None: none (no ranges)
        self.data: bytes | None = None
        self.file: IO[bytes] | None = None
        self.stamp: tuple[int, int] = (0, 0)  # the file's (size, mtime_ns) when opened
        self.chunks: Iterator[Any] | None = None
        self.achunks: AsyncIterator[Any] | None = None
        self.first: bytes | None = None
        # with a streamed iterator's version once every chunk went out (records it, as a read does)
        self.on_complete: Callable[[str], None] | None = None

    @property
    def ranged(self) -> bool:
        """Can a part be sent (``Range``)?  Bytes in memory and files: their length is known."""
        return self.length is not None and self.etag is not None

    def close(self) -> None:
        """Let go of the file or iterator (on the loop or in the worker that made it)."""
        if self.file is not None:
            self.file.close()
            self.file = None
        if self.chunks is not None:
            close = getattr(self.chunks, "close", None)
            self.chunks = None
            if callable(close):
                try:
                    close()
                except Exception:
                    log.exception("closing the chunks of %s failed", self.uri)
        if self.achunks is not None:
            aclose = getattr(self.achunks, "aclose", None)
            self.achunks = None
            if callable(aclose):
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:
                    return
                task = loop.create_task(_aclose(aclose, self.uri))
                _PRIMING.add(task)
                task.add_done_callback(_PRIMING.discard)

    async def prime(self) -> None:
        """Take an async iterator's first chunk (before the answer: its failure is the request's)."""
        assert self.achunks is not None
        try:
            self.first = as_bytes(await self.achunks.__anext__())
        except StopAsyncIteration:
            self.first = b""


async def _aclose(aclose: Callable[[], Any], uri: str) -> None:
    try:
        await aclose()
    except Exception:
        log.exception("closing the chunks of %s failed", uri)


def as_bytes(chunk: Any) -> bytes:
    """One chunk of a streamed iterator as bytes (``str`` as UTF-8); TypeError for anything else."""
    if type(chunk) is bytes:
        return chunk
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        return bytes(chunk)
    if isinstance(chunk, str):
        return chunk.encode("utf-8", "surrogatepass")
    raise TypeError(f"a streamed chunk must be bytes or str, not {type(chunk).__name__}")


# --- the method -------------------------------------------------------------------------------


def stream(req: Request) -> Any:
    """``resources/stream {uri}``: the resource's bytes as the response (``StreamSink``), or an error."""
    uri = uri_param(req)
    sink = unwrap(req.reply)
    if not isinstance(sink, StreamSink):
        raise StreamNotSupported(uri, "resources/stream is served over Streamable HTTP only, one request per POST")
    max_size = _max_stream_size(req, uri)
    match = req.conn.router.match(uri)  # refused before the handler runs; serve's lookup says not-found
    if match is not None and not match.handler.streamable:
        raise StreamNotSupported(uri, "this resource is not streamable")
    sink.claim()  # (given back by the transport once the response is over, whatever happened)

    def reply_of(r: Request, handler: Handler, u: str, value: Any) -> bytes:
        # not bytes: the body, which the sink's response sends (``ReplyOf`` names what reads make)
        return cast(bytes, _body(r, handler, u, value, max_size))

    outcome = serve(req, uri, reply_of, lambda ok, value: _answer(req, ok, value))
    return PENDING if outcome is PENDING else _answer_async(req, outcome)


def _max_stream_size(req: Request, uri: str) -> int | None:
    """The client's ``resourceStreaming.maxStreamSize`` (None: none); -32003 without the capability."""
    caps = req.meta.get(META_CLIENT_CAPABILITIES) if req.modern else req.conn.client_capabilities
    wanted = caps.get("resourceStreaming") if type(caps) is dict else None
    if wanted is True:
        wanted = {}
    if type(wanted) is not dict:
        raise StreamNotSupported(uri, "the client did not declare the resourceStreaming capability")
    size = wanted.get("maxStreamSize")
    if size is None:
        return None
    if type(size) is not int or size < 0:
        raise InvalidParams("Invalid params: resourceStreaming.maxStreamSize must be a non-negative integer",
                            {"maxStreamSize": size})
    return size


def _answer(req: Request, ok: bool, value: Any) -> None:
    """On the loop: the body made where the handler ran (a worker), or its failure."""
    if not ok:
        req.fail(value)
        return
    body = cast(ByteStream, value)
    if req.cancelled:
        body.close()
    elif body.achunks is not None and body.first is None:  # a sync handler's async iterator
        task = asyncio.get_running_loop().create_task(_prime_then_answer(req, body))
        _PRIMING.add(task)
        task.add_done_callback(_PRIMING.discard)
    else:
        req.answer(cast(bytes, body))




async def _prime_then_answer(req: Request, body: ByteStream) -> None:
    try:
        await body.prime()
    except BaseException as exc:  # the iterator's failure, before any byte: the request's error
        body.close()
        if not req.cancelled:
            req.fail(exc)
        return
    if req.cancelled:
        body.close()
    else:
        req.answer(cast(bytes, body))


async def _answer_async(req: Request, outcome: Any) -> Any:
    """An async handler's body, primed, then the answer; a failure on the way is the request's
    (the engine answers it: this runs as the request's task)."""
    body = cast(ByteStream, await outcome)
    try:
        if body.achunks is not None and body.first is None:
            await body.prime()
    except BaseException:
        body.close()
        raise
    if req.cancelled:
        body.close()
    else:
        req.answer(cast(bytes, body))
    return PENDING


def _body(req: Request, handler: Handler, uri: str, value: Any, max_size: int | None) -> ByteStream:
    """The body of the handler's ``value`` (where the handler ran: a worker for a sync handler)."""
    if not handler.streamable:  # (declared otherwise since the step looked)
        raise StreamNotSupported(uri, "this resource is not streamable")
    paths = sys.modules.get("pathlib")
    if paths is not None and isinstance(value, paths.Path):
        return _file_body(uri, value, handler.mime_type, max_size)
    if hasattr(value, "__aiter__") and not isinstance(value, (str, bytes, dict, list)):
        body = ByteStream(uri, handler.mime_type or BINARY_MIME, last_segment(uri), max_size)
        body.achunks = value.__aiter__()
        _record_when_complete(req, body)
        return body
    if hasattr(value, "__next__"):  # an iterator (a generator): its first chunk now
        body = ByteStream(uri, handler.mime_type or BINARY_MIME, last_segment(uri), max_size)
        body.chunks = value
        try:
            body.first = as_bytes(next(value))
        except StopIteration:
            body.first = b""
        except BaseException:
            body.close()
            raise
        _record_when_complete(req, body)
        return body
    contents = to_contents(uri, value, handler.mime_type)  # what resources/read would serve
    if len(contents) != 1:
        raise StreamNotSupported(uri, "the resource has several contents; resources/stream sends one")
    content = contents[0]
    if max_size is not None and content.size > max_size:
        raise ResourceTooLarge(uri, content.size, max_size)
    body = ByteStream(content.uri, content.mime_type, last_segment(content.uri), max_size)
    body.data = content.data
    body.length = content.size
    body.etag = content.version
    served(req.conn, uri, content.version)
    return body


def _record_when_complete(req: Request, body: ByteStream) -> None:
    conn = req.conn
    body.on_complete = lambda version: served(conn, body.uri, version)


def _file_body(uri: str, path: Any, mime_type: str | None, max_size: int | None) -> ByteStream:
    """An open file, its length and ETag from ``fstat`` (the bytes are read as they are sent)."""
    file = open(path, "rb", buffering=0)  # noqa: SIM115 (the body owns it: closed once sent)
    try:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise TypeError(f"{path} is not a regular file: resources/stream sends files of known length")
        if max_size is not None and info.st_size > max_size:
            raise ResourceTooLarge(uri, info.st_size, max_size)
    except BaseException:
        file.close()
        raise
    body = ByteStream(uri, mime_type or guess_mime_type(path.name, BINARY_MIME), path.name, max_size)
    body.file = file
    body.length = info.st_size
    body.stamp = (info.st_size, info.st_mtime_ns)
    body.etag = f"f{info.st_ino:x}-{info.st_size:x}-{info.st_mtime_ns:x}"
    return body


METHODS: dict[str, Method] = {METHOD: stream}
