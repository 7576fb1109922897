"""stdio: newline-delimited JSON-RPC on stdin/stdout.

The real stdout is kept for the protocol only; file descriptor 1 and
``sys.stdout`` are pointed at stderr so that stray ``print()`` calls (or C
libraries writing to fd 1) cannot corrupt the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import stat
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if sys.platform == "linux":
    import fcntl

from .._runner import ThreadRunner
from ..core import Connection, Server, error_response
from ..errors import LifespanFailed, LimitExceeded

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = ["run_stdio", "serve_stdio"]

log = logging.getLogger("resourcekit")
SHUTDOWN_GRACE = 5.0
PIPE_SIZE = 1024 * 1024  # bytes a stdout pipe holds (when the system lets us)
READ_SIZE = 64 * 1024  # bytes of stdin read at a time at most


class _Pipe:
    """Writes stdout, the only writer of its descriptor, from any thread: at once while nothing
    waits to be written (a worker writing its replies does not wake the loop); what the pipe does
    not take waits here as views of the replies (nothing copied, each byte written once) and the
    loop writes it as the reader reads.  A lock keeps writes whole and in order.  A regular file
    (output redirected) takes blocking writes: nothing ever waits."""

    def __init__(self, fd: int, flow: _Flow) -> None:
        self._fd = fd
        self._flow = flow
        mode = os.fstat(fd).st_mode
        self._file = stat.S_ISREG(mode)
        self._backlog: deque[memoryview] = deque()  # what the pipe has not taken yet, in order
        self._owed = 0  # its bytes
        self._watching = False  # the loop waits for the pipe to take more
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._lock = threading.Lock()
        self._closed = False
        self.on_written: Callable[[], None] | None = None  # told when the loop wrote some (``Outbox.drained``)
        if not self._file:
            _widen_pipe(fd, mode)
            os.set_blocking(fd, False)
            if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):  # the reader closing its end shows as readable
                self._loop.add_reader(fd, self._reader_gone)

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._closed:
                return
            if self._file:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view):]
                return
            if not self._backlog:  # what does not fit now waits for the loop
                written = self._put(data)
                if written < 0 or written == len(data):  # (gone: the loop sees it too)
                    return
                rest = memoryview(data)[written:]
            else:
                rest = memoryview(data)
            self._backlog.append(rest)
            self._owed += len(rest)
            if not self._watching:
                self._watching = True
                if threading.get_ident() == self._loop_thread:
                    self._loop.add_writer(self._fd, self._writable)
                else:
                    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to write it
                        self._loop.call_soon_threadsafe(self._watch)

    def _put(self, data: bytes | memoryview) -> int:
        """Under the lock: what of ``data`` the pipe takes now (it does not block), in bytes; -1:
        the reader is gone."""
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError:
            return -1

    def _watch(self) -> None:
        with self._lock:
            if self._watching and not self._closed:
                self._loop.add_writer(self._fd, self._writable)

    def _writable(self) -> None:
        """On the loop: the pipe takes more; what waits goes, in order, as far as it takes it."""
        with self._lock:
            backlog = self._backlog
            while backlog:
                view = backlog[0]
                written = self._put(view)
                if written < 0:  # the reader is gone (``_reader_gone`` ends the session)
                    backlog.clear()
                    self._owed = 0
                    break
                self._owed -= written
                if written < len(view):
                    backlog[0] = view[written:]
                    break
                backlog.popleft()
            if not backlog and self._watching:
                self._watching = False
                self._loop.remove_writer(self._fd)
        if self.on_written is not None:
            self.on_written()

    def _reader_gone(self) -> None:
        """The reader closed its end: nothing more can be answered."""
        self._loop.remove_reader(self._fd)
        with self._lock:
            self._backlog.clear()
            self._owed = 0
        self._flow.connection_lost()

    def owed(self) -> int:
        """Bytes taken and not written yet: the reader has not read them."""
        return self._owed

    async def drain(self, timeout: float) -> None:
        """Until the reader took what waits (or is gone), ``timeout`` seconds at most."""
        deadline = self._loop.time() + timeout
        while self._backlog and not self._flow.lost and self._loop.time() < deadline:
            await asyncio.sleep(0.01)

    def close(self) -> None:
        """On the loop: no more writes (a worker may still finish a read), and the descriptor closed."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._backlog.clear()
            self._owed = 0
            if not self._file:
                self._loop.remove_writer(self._fd)
                self._loop.remove_reader(self._fd)
        os.close(self._fd)


class _Flow:
    """Whether the session reads stdin (``writable``: not while it is held, ``Outbox.hold``) and
    whether its output is gone (``lost``: the client closed it; the session ends)."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()
        self.lost = False  # the client closed our output: nothing more can be answered
        self.done: asyncio.Future[None] | None = None

    def connection_lost(self) -> None:
        """Our output is gone (the client closed it): the session ends, reading paused or not."""
        self.lost = True
        self.writable.set()
        if self.done is not None:
            _finish(self.done)


class _Reader(asyncio.Protocol):
    """Splits stdin into lines; an oversized line is answered and skipped.

    A partial line waits in a buffer that each byte enters once, so a long line
    arriving in small reads costs time linear in its length.
    """

    def __init__(self, conn: Connection, limit: int, done: asyncio.Future[None]) -> None:
        self._conn = conn
        self._limit = limit
        self._done = done
        self._pending = bytearray()
        self._skipping = False

    def data_received(self, data: bytes) -> None:
        if self._skipping or self._pending:
            start = self._finish_line(data)
            data = data[start:] if start >= 0 else b""
        if len(data) > self._limit:
            self._split(data)
        elif data:  # the common block: whole lines (none too large), maybe the start of one more
            lines = data.split(b"\n")
            rest = lines.pop()
            self._conn.feed_lines(lines)
            if rest:
                self._pending += rest

    def _finish_line(self, data: bytes) -> int:
        """The line begun in an earlier block (or skipped as too large) ends in ``data``?  Then
        handle it, and where the rest of ``data`` starts; else -1."""
        end = data.find(b"\n")
        if end < 0:
            if not self._skipping:
                self._pending += data
                if len(self._pending) > self._limit:
                    self._too_large()
                    self._pending.clear()
                    self._skipping = True
            return -1
        if self._skipping:
            self._skipping = False
        else:
            self._pending += data[:end]
            line = bytes(self._pending)
            self._pending.clear()
            self._line(line)
        return end + 1

    def _split(self, data: bytes) -> None:
        """A block bigger than a message may be: each line checked for its size."""
        start = 0
        find, feed, limit = data.find, self._conn.feed, self._limit
        while True:
            end = find(b"\n", start)
            if end < 0:
                break
            if end - start > limit:
                self._too_large()
            elif end > start:
                line = data[start:end]
                if line[0] == 123 or not line.isspace():  # "{" first: no need to look for blank lines
                    feed(line)
            start = end + 1
        if start < len(data):
            if len(data) - start > self._limit:
                self._too_large()
                self._skipping = True
            else:
                self._pending += data[start:]

    def _line(self, line: bytes) -> None:
        if len(line) > self._limit:
            self._too_large()
        elif line and not line.isspace():
            self._conn.feed(line)

    def _too_large(self) -> None:
        self._conn.send(error_response(None, LimitExceeded(
            "max_message_size", self._limit, f"Invalid Request: message larger than {self._limit} bytes",
            code=-32600)))

    def eof_received(self) -> bool:
        if self._pending.strip():
            self._conn.feed(bytes(self._pending))
        self._pending.clear()
        if not self._done.done():
            self._done.set_result(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._done.done():
            self._done.set_result(None)


async def serve_stdio(app: Registry, stdin: Any = None, stdout_fd: int | None = None) -> None:
    """Serve ``app`` on stdin/stdout until EOF or SIGTERM, inside its lifespan (entered before
    anything is read; ``LifespanFailed`` when it raises)."""
    # stdout first: a print() in the lifespan must not reach the protocol stream either
    out_fd = stdout_fd if stdout_fd is not None else _take_stdout()
    async with app._lifespan.running():
        await _serve_stdio(app, stdin, out_fd)


async def _serve_stdio(app: Registry, stdin: Any, out_fd: int) -> None:
    loop = asyncio.get_running_loop()
    limits = app.limits
    server = Server(app, "pipe")
    server.start(ThreadRunner(loop, limits.max_workers, limits.max_queued_jobs))
    flow = _Flow()
    pipe = _Pipe(out_fd, flow)
    conn = server.stream(pipe.write, pipe.owed)
    outbox = conn.outbox
    assert outbox is not None
    pipe.on_written = outbox.drained  # a held session goes on once its reader caught up
    done: asyncio.Future[None] = loop.create_future()
    flow.done = done
    stdin = stdin if stdin is not None else sys.stdin.buffer
    reader = _Reader(conn, app.max_message_size, done)
    read_transport: Any = None
    if _pollable(stdin):
        read_transport, _ = await loop.connect_read_pipe(lambda: reader, stdin)
        # asyncio reads 256 KiB at a time: a buffer that size is mapped and unmapped on every
        # read (three system calls, page faults); one of READ_SIZE stays on the heap
        if isinstance(getattr(read_transport, "max_size", None), int):
            read_transport.max_size = READ_SIZE
        outbox.on_hold = functools.partial(_reading, read_transport, flow)
    else:  # a regular file or /dev/null (nohup, systemd, docker run without -i): epoll refuses them
        outbox.on_hold = functools.partial(_reading, None, flow)
        file_reader = loop.create_task(_read_file(stdin, reader, flow))
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGTERM, _finish, done)
    try:
        await done
        if read_transport is not None:
            read_transport.close()
        # listen streams never finish by themselves: end them first, or the drain below
        # would wait its whole grace period for them
        server.subscriptions.close_listens()
        await conn.drain(0 if flow.lost else SHUTDOWN_GRACE)  # with no output, answers cannot wait
        if read_transport is None:
            file_reader.cancel()
    finally:
        outbox.flush()
        conn.close()
        server.close()
        await pipe.drain(SHUTDOWN_GRACE)
        pipe.close()


def _reading(transport: Any, flow: _Flow, held: bool) -> None:
    """The session is held (stop reading stdin) or released (read again)."""
    if held:
        flow.writable.clear()
        if transport is not None and not transport.is_closing():
            transport.pause_reading()
    else:
        flow.writable.set()
        if transport is not None and not transport.is_closing():
            transport.resume_reading()


def _finish(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


def _widen_pipe(fd: int, mode: int) -> None:
    """Let a pipe hold a whole big reply (Linux: 64 KiB by default), so that it goes out in one
    write rather than a loop iteration per 64 KiB; the system's limit for users is 1 MiB."""
    if sys.platform == "linux" and stat.S_ISFIFO(mode):
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)


def _pollable(stream: Any) -> bool:
    """Can the event loop wait for this stream (a pipe, a socket, a terminal)?"""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def _read_file(stream: Any, reader: _Reader, flow: _Flow) -> None:
    loop = asyncio.get_running_loop()
    while True:
        await flow.writable.wait()
        chunk = await loop.run_in_executor(None, stream.read1 if hasattr(stream, "read1") else stream.read, 65536)
        if not chunk:
            reader.eof_received()
            return
        reader.data_received(chunk)


def _take_stdout() -> int:
    """Keep the real stdout for the protocol; send everything else written there to stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


def run_stdio(app: Registry, target: str | None = None) -> None:
    configure_logging()
    if sys.stdin.isatty():  # started by hand: say why nothing happens, and what to try
        shown = target or (sys.argv[0] if sys.argv[0].endswith(".py") else "FILE")
        print(f"resourcekit: serving {app.name!r} over stdio: waiting for an MCP client on stdin "
              f"(Ctrl-C to stop). To try it by hand: {_command()} dev {shown}", file=sys.stderr)
    try:
        # asyncio's own loop: uvloop would save a sixth of the CPU per read but cost 5 ms of
        # start-up and 2 MiB, which a server that a host starts per session pays every time
        asyncio.run(serve_stdio(app))
    except KeyboardInterrupt:
        pass
    except LifespanFailed as exc:  # its message says it all: one line, not a traceback
        raise SystemExit(f"resourcekit: error: {exc}") from None


def _command() -> str:
    """How to run resourcekit from this shell: its script when on PATH (an activated venv), else this
    interpreter with ``-m`` (a venv that is not activated)."""
    import shutil

    found = shutil.which("resourcekit")
    if found is not None and os.path.dirname(found) == os.path.dirname(sys.executable):
        return "resourcekit"
    return f"{sys.executable} -m resourcekit"


def configure_logging() -> None:
    """Logs go to stderr; the level comes from RESOURCEKIT_LOG_LEVEL (default WARNING)."""
    logger = logging.getLogger("resourcekit")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(os.environ.get("RESOURCEKIT_LOG_LEVEL", "WARNING").upper())
        logger.propagate = False
