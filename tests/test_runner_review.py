"""Second review of the worker threads (``_runner``) and the short read paths: each test fails on
the code before its fix."""

from __future__ import annotations

import asyncio
import queue
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from resourcekit.errors import LimitExceeded
from tests.test_fastread import read
from tests.test_fastread_lines import StdioServer

pytestmark = pytest.mark.anyio


async def test_a_worker_storing_its_take_late_does_not_leave_a_job_counted_as_waiting() -> None:
    # worker A takes job 1 and is held between numbering its take and storing it; worker B takes
    # job 2 meanwhile and stores 2; A then stores 1. The queue is empty, but 2 - 1 jobs looked
    # waiting for ever: with max_queued_jobs 1 every later job was refused "Server busy"
    from resourcekit._runner import ThreadRunner

    loop = asyncio.get_running_loop()
    runner = ThreadRunner(loop, max_workers=2, max_queued=2)
    b_stored = threading.Event()

    class Takes:
        def __init__(self) -> None:
            self.n = 0
            self.lock = threading.Lock()

        def __next__(self) -> int:
            with self.lock:
                self.n += 1
                n = self.n
            if n == 1:
                b_stored.wait(5)  # A's number is stored after B's
            return n

    runner._takes = Takes()  # type: ignore[assignment]
    try:
        first = asyncio.ensure_future(runner.call(lambda: "a"))
        for _ in range(200):  # A holds job 1: no worker waits, so job 2 gets a thread of its own
            if runner._threads and not runner._waiting and runner._jobs.empty():
                break
            await asyncio.sleep(0.005)
        try:
            assert await runner.call(b_stored.set) is None
            assert await first == "a"
            assert runner._jobs.empty()
            runner._max_queued = 1
            assert await runner.call(lambda: "c") == "c"  # nothing waits: room for one
        except LimitExceeded as exc:
            pytest.fail(f"refused with an empty queue: {exc}")
    finally:
        b_stored.set()
        runner.close()


UNENCODABLE_ERRORS_APP = """
from resourcekit import App, Context, MCPError
from resourcekit.errors import InvalidParams
app = App("fast")
app.resource("text://a")(lambda: "hello")

@app.resource("sur://message")
def message() -> str:
    raise InvalidParams("Invalid params: no file named \\udcff")  # a name os.listdir could give

@app.resource("sur://data")
def data() -> str:
    raise MCPError("Internal error", {"file": "\\udcff"})

@app.resource("sur://general")
def general(ctx: Context) -> str:
    raise InvalidParams("Invalid params: no file named \\udcff")
"""


def test_an_error_json_cannot_carry_is_answered_over_stdio_on_either_path(tmp_path: Path) -> None:
    # a handler's error with a lone surrogate in its message or data: the reply could not be encoded,
    # the read was never answered (a traceback on stderr); HTTP answers it -32603 with its id
    with StdioServer(tmp_path, UNENCODABLE_ERRORS_APP) as server:
        answers: queue.Queue[Any] = queue.Queue()
        stdout = server.proc.stdout
        assert stdout is not None
        threading.Thread(target=lambda: [answers.put(orjson.loads(line)) for line in stdout], daemon=True).start()
        for rid, uri in enumerate(("sur://message", "sur://data", "sur://general", "text://a"), 1):
            server.send(read(rid, uri))
            try:
                got = answers.get(timeout=5)
            except queue.Empty:
                pytest.fail(f"{uri} was never answered")
            assert got["id"] == rid
            if uri == "text://a":  # and the server goes on serving
                assert got["result"]["contents"][0]["text"] == "hello"
            else:
                assert got["error"] == {"code": -32603,
                                        "message": "Internal error: the result could not be encoded as JSON"}


async def test_a_callback_that_raises_leaves_no_other_result_waiting(caplog: pytest.LogCaptureFixture) -> None:
    # two results taken by one wake-up: the first's callback raised, and the second waited in the
    # deque until some later job woke the loop (for ever on an idle server)
    from resourcekit._runner import ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=2)
    got: list[Any] = []

    def boom(ok: bool, value: Any) -> None:
        raise RuntimeError("a callback's bug")

    try:
        runner.submit(lambda: 1, boom)
        runner.submit(lambda: 2, lambda ok, value: got.append(value))
        for _ in range(500):  # the loop busy meanwhile: both results wait for one wake-up
            if len(runner._done) == 2:
                break
            threading.Event().wait(0.002)
        assert len(runner._done) == 2
        for _ in range(100):
            if got:
                break
            await asyncio.sleep(0.01)
        assert got == [2]
        assert "a callback's bug" in caplog.text
    finally:
        runner.close()


async def test_a_cancelled_completion_queued_behind_a_busy_worker_never_runs_its_completer() -> None:
    # README: "a cancelled request's job never runs"; a completer's job (``runner.call``) ran anyway
    from resourcekit import App
    from tests.test_hardening import answered, core
    from tests.test_hardening import read as read_message

    app = App("t", max_workers=1)
    release = threading.Event()
    calls: list[str] = []
    app.resource("slow://x")(lambda: release.wait(5) and "done")
    app.template("item://{n}", complete={"n": lambda value: calls.append(value) or ["1"]})(lambda n: n)
    server, conn, out = core(app)
    try:
        conn.receive(read_message(1, "slow://x"))
        conn.receive({"jsonrpc": "2.0", "id": 2, "method": "completion/complete", "params": {
            "ref": {"type": "ref/resource", "uri": "item://{n}"}, "argument": {"name": "n", "value": "x"}}})
        await asyncio.sleep(0.05)  # queued behind the only worker
        conn.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        release.set()
        await answered(out, {1})
        await asyncio.sleep(0.1)
        assert calls == [] and all(m.get("id") != 2 for m in out)
    finally:
        release.set()
        server.close()


async def test_an_initialize_whose_body_comes_after_the_shutdown_began_gets_503_and_starts_nothing() -> None:
    # SIGTERM closes the endpoint at once (``close_soon``) while uvicorn still serves open requests:
    # a POST whose headers came before and body after built a new Server (its reaper task, its
    # workers) and answered 200 with a session of a server shutting down
    from resourcekit import App
    from resourcekit.transports.http import ASGIApp
    from tests.test_http_fastpost import INIT, JSON_AND_SSE

    asgi = ASGIApp(App("t", telemetry=False))
    asgi.start()
    body_ready = asyncio.Event()
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        await body_ready.wait()
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "root_path": "", "query_string": b"",
             "scheme": "http", "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5555),
             "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                         (b"accept", JSON_AND_SSE.encode())]}
    posting = asyncio.ensure_future(asgi(scope, receive, send))
    await asyncio.sleep(0.05)  # admitted, waiting for its body
    asgi.close()
    body_ready.set()
    await asyncio.wait_for(posting, 5)
    try:
        assert sent[0]["status"] == 503 and (b"retry-after", b"5") in sent[0]["headers"]
        assert asgi._server is None and not asgi.sessions
    finally:
        asgi.close()


async def test_a_timed_read_cancelled_while_its_worker_answers_records_one_duration(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a sampled-out read on the stdio short path, cancelled (its duration recorded "cancelled", as the
    # general path records it) between its worker's look at its id and the pop: the worker recorded
    # a second duration, a success, which the general path never does for a cancelled request
    from resourcekit import App, telemetry
    from tests.test_fastread import answered
    from tests.test_fastread_lines import block_session

    app = App("t", telemetry=False)
    app.resource("text://a")(lambda: "hello")
    server, conn, out = block_session(app)
    recorded: list[tuple[Any, Any]] = []
    monkeypatch.setattr(telemetry, "ON", True)
    monkeypatch.setattr(telemetry, "dropped_root", lambda: 1)  # every read sampled out: timed
    monkeypatch.setattr(telemetry, "timed", lambda c, method, started, code=None: recorded.append((method, code)))
    conn.traced = True

    class Meanwhile(dict[Any, Any]):
        def get(self, key: Any, default: Any = None) -> Any:
            found = super().get(key, default)
            if key == 2 and found is not None and threading.current_thread() is not threading.main_thread():
                conn.cancel(2)  # what the loop thread may do between the worker's two steps
            return found

    conn.inflight = Meanwhile()
    try:
        conn.feed_lines([read(1, "text://a"), read(2, "text://a"), read(3, "text://a")])
        conn.end_of_input()
        assert {1, 3} <= set(await answered(out, {1, 3}))
        await asyncio.sleep(0.05)
        assert sorted(recorded, key=repr) == sorted([("resources/read", None), ("resources/read", "cancelled"),
                                                     ("resources/read", None)], key=repr)
    finally:
        conn.inflight.clear()
        server.close()


async def test_a_job_taken_before_its_worker_says_so_still_lets_the_next_one_get_a_thread() -> None:
    # Python 3.13's SimpleQueue hands a job to a waiting worker inside ``put``: the queue looks
    # empty while that worker still counts as idle. Here the one worker is stuck in a slow job and
    # still counts as idle (as if it had not said so yet) when a fast job comes: the queue is
    # empty, one worker looks idle, and the fast job was never watched: it waited for the slow one
    import time

    from resourcekit._runner import ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=4)
    release = threading.Event()
    slow = asyncio.ensure_future(runner.call(lambda: release.wait(5)))
    try:
        for _ in range(200):  # the worker took the slow job
            if runner._taken == 1 and not runner._waiting:
                break
            await asyncio.sleep(0.005)
        runner._waiting.append(None)  # ... but has not said so yet
        fast = asyncio.ensure_future(runner.call(lambda: "fast"))
        await asyncio.sleep(0.03)
        runner._waiting.pop()  # now it has
        started = time.monotonic()
        assert await asyncio.wait_for(fast, 2.0) == "fast"
        assert time.monotonic() - started < 1.0 and len(runner._threads) == 2
    finally:
        release.set()
        await slow
        runner.close()


async def test_a_fast_job_behind_two_slow_ones_submitted_together_gets_a_thread() -> None:
    # one idle worker; slow, slow, fast in one loop iteration: the stall check started one thread
    # and stopped looking, that thread took the second slow job, and the fast one waited for a
    # slow one to end
    import time

    from resourcekit._runner import ThreadRunner

    runner = ThreadRunner(asyncio.get_running_loop(), max_workers=4)
    await runner.call(lambda: None)  # one worker, idle
    await asyncio.sleep(0.05)
    release = threading.Event()
    started = time.monotonic()
    slow = [asyncio.ensure_future(runner.call(lambda: release.wait(5))) for _ in range(2)]
    fast = asyncio.ensure_future(runner.call(lambda: "fast"))
    try:
        assert await asyncio.wait_for(fast, 2.0) == "fast"
        assert time.monotonic() - started < 1.0 and len(runner._threads) == 3
    finally:
        release.set()
        await asyncio.gather(*slow)
        runner.close()
