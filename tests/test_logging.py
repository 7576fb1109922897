"""What a server logs and what it sends as log messages: ``Context.log`` messages precede their
response; the access log writes one line per request at INFO and costs nothing below it."""

from __future__ import annotations

import os
import re
import time

import pytest

from resourcekit import App, Context
from resourcekit.core import HANDSHAKE, Server
from resourcekit.core.plan import plan_for
from resourcekit.extensions import NONE
from tests.support.process import APPS, RawServer
from tests.support.session import answered_in, connected
from tests.support.wire import read_message

pytestmark = pytest.mark.anyio


# --- finding 10: Context.log messages precede their response ---------------------------------------


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_log_messages_precede_the_response(kind: str) -> None:
    app = App("t")

    async def async_handler(ctx: Context) -> str:
        ctx.log("info", "reading")
        return "x"

    def sync_handler(ctx: Context) -> str:
        ctx.log("info", "reading")
        return "x"

    app.resource("a://x")(async_handler if kind == "async" else sync_handler)
    server, conn, out = connected(app)
    try:
        conn.receive({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}})
        out.clear()
        for rid in range(2, 12):
            conn.receive(read_message(rid, "a://x"))
        await answered_in(out, set(range(2, 12)))
        order = ["log" if m.get("method") == "notifications/message" else "answer" for m in out]
        assert order.count("log") == order.count("answer") == 10
        for position, item in enumerate(order):  # each answer is preceded by its own log message
            if item == "answer":
                assert order[:position].count("log") > order[:position].count("answer"), order
    finally:
        server.close()


def _requests_logged(*extra: str, log_env: str | None = None) -> list[str]:
    environment = {"RESOURCEKIT_LOG_LEVEL": log_env} if log_env else {}
    os.environ.update(environment)
    try:
        with RawServer(APPS / "basic_app.py", *extra) as server:
            server.initialize()
            server.request(1, "resources/read", {"uri": "text://hello"})
            server.request(2, "resources/read", {"uri": "nope://x"})
            server.request(3, "resources/read", {"uri": "user://7/profile"})
            server.request(4, "no/such")
            server.close()
            time.sleep(0.1)
            return [line for line in server.stderr.splitlines() if "resourcekit:" in line]
    finally:
        for key in environment:
            del os.environ[key]


# --- logging (issue 12, the first ten minutes) ----------------------------------------------------


def test_info_logs_one_line_per_request():
    lines = _requests_logged(log_env="INFO")
    pattern = r"INFO resourcekit: {} (ok|error .+), \d+\.\d\d ms$"
    assert re.search(pattern.format("initialize:"), lines[0])
    assert re.search(r"INFO resourcekit: resources/read text://hello: ok, \d+\.\d\d ms$", lines[1])
    assert re.search(r"resources/read nope://x: error -32002 Resource not found: nope://x, \d+\.\d\d ms$", lines[2])
    assert re.search(r"resources/read user://7/profile: ok, ", lines[3])
    assert re.search(r"no/such: error -32601 Method not found: no/such, ", lines[4])
    assert len(lines) == 5
    assert len(_requests_logged("--log-level", "info")) == 5
    assert _requests_logged() == []  # WARNING by default: nothing per request


def test_below_info_requests_are_not_even_timed():
    import logging

    logger = logging.getLogger("resourcekit")
    level = logger.level
    try:
        logger.setLevel(logging.WARNING)
        assert not Server(App("quiet")).logged  # no step of any plan is wrapped
        assert plan_for(HANDSHAKE, NONE, False)["ping"] is HANDSHAKE.methods["ping"]
        logger.setLevel(logging.INFO)
        assert Server(App("loud")).logged
        assert plan_for(HANDSHAKE, NONE, True)["ping"] is not HANDSHAKE.methods["ping"]
    finally:
        logger.setLevel(level)
