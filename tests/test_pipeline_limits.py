"""What one client can make the request pipeline hold, and what it cannot take from others:
replies owed to a reader that does not read are bounded (``Limits.max_owed_bytes``), and one
session's slow handlers keep no other session's read waiting (the runner's lanes)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.support.http_server import http_server_process
from tests.support.process import APPS, RawServer
from tests.support.wire import initialize, modern_headers, read_message

APP = APPS / "pipeline_app.py"
MiB = 1 << 20


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.parametrize(("uri", "size", "reads"), [("big://text", MiB, 100), ("mid://text", 200 << 10, 250)])
def test_a_reader_that_stops_reading_holds_the_session_not_the_replies(uri: str, size: int, reads: int) -> None:
    """100 MiB of replies owed once the reader stops reading (1 MiB replies, and 200 KiB ones,
    which a worker does not write one by one): the session is held, not its replies."""
    with RawServer(APP) as server:
        server.initialize()
        server.request(1, "resources/read", {"uri": uri}, timeout=30)  # warm: one reply made
        time.sleep(0.3)
        before = rss_mib(server.proc.pid)
        server.pump_paused = True
        # the pump thread stops taking stdout: from here nothing the server writes is read
        block = b"".join(orjson.dumps({"jsonrpc": "2.0", "id": 10 + i, "method": "resources/read",
                                       "params": {"uri": uri}}) + b"\n" for i in range(reads))
        server.send_raw(block)
        time.sleep(3.0)  # long enough for every read to be made, were the session not held
        grown = rss_mib(server.proc.pid) - before
        server.resume_pump()
        ids = set()
        while len(ids) < reads:
            reply = server.recv(timeout=60)
            assert len(reply["result"]["contents"][0]["text"]) == size
            ids.add(reply["id"])
        assert ids == set(range(10, 10 + reads))
        assert server.request(999, "resources/read", {"uri": "fast://x"})["result"]["contents"][0]["text"] == "fast"
    assert grown < 32, f"the server grew {grown:.0f} MiB while its reader did not read"


def test_a_subscriber_that_does_not_read_is_not_sent_every_change_meanwhile() -> None:
    """100 subscribed URIs (6 KB each) that change 20 times a second, 12 MB/s of updates, for a
    reader that stops reading: once it owes too much, an update waits in the outbox merged with
    the one waiting for its URI; the server stays small and answers once the reader reads."""
    uris = [f"tick://{i}-" + "z" * 6000 for i in range(100)]
    with RawServer(APP) as server:
        server.initialize()
        server.send_raw(b"".join(orjson.dumps({"jsonrpc": "2.0", "id": 10 + i, "method": "resources/subscribe",
                                               "params": {"uri": uri}}) + b"\n" for i, uri in enumerate(uris)))
        answered: set[int] = set()
        while len(answered) < len(uris):
            message = server.recv(timeout=30)
            if "id" in message:
                answered.add(message["id"])
        time.sleep(0.5)
        before = rss_mib(server.proc.pid)
        server.pump_paused = True
        time.sleep(4.0)  # 48 MB of updates, were each one sent
        grown = rss_mib(server.proc.pid) - before
        server.resume_pump()
        server.send({"jsonrpc": "2.0", "id": 999, "method": "ping"})
        told = set()
        while (message := server.recv(timeout=30)).get("id") != 999:
            told.add(message["params"]["uri"])
        assert told == set(uris)
    assert grown < 16, f"the server grew {grown:.0f} MiB while its subscriber did not read"
    assert "Traceback" not in server.stderr


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def open_session(client: httpx.Client, url: str, version: str = "2025-11-25") -> dict[str, str]:
    """A handshake-era session over HTTP: the headers its requests carry."""
    response = client.post(url, headers=HEADERS, json=initialize(version))
    own = {**HEADERS, "mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": version}
    client.post(url, headers=own, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return own


def asked_during(flood: Callable[[], Any], ask: Callable[[], httpx.Response],
                 after: float = 1.0) -> tuple[httpx.Response, float, float]:
    """``flood()`` on a thread and, ``after`` seconds in (every worker is in a slow handler), ``ask()``:
    its response, how long it took, and how long the flood went on after it was answered."""
    flood_done: list[float] = []

    def flooding() -> None:
        flood()
        flood_done.append(time.monotonic())

    thread = threading.Thread(target=flooding)
    thread.start()
    time.sleep(after)
    started = time.monotonic()
    response = ask()
    answered = time.monotonic()
    thread.join(120)
    assert flood_done, "the flood did not end"
    return response, answered - started, flood_done[0] - answered


def test_one_sessions_slow_handlers_keep_no_other_sessions_read_waiting() -> None:
    with http_server_process(APP) as url, httpx.Client(timeout=30) as client:
        def flood() -> None:  # 300 reads of a handler that blocks 300 ms, in one batch
            with httpx.Client(timeout=120) as flooder:
                own = open_session(flooder, url, "2025-03-26")
                batch = [read_message(i, f"slow://{i}") for i in range(1, 301)]
                assert len(flooder.post(url, headers=own, json=batch).json()) == 300

        own = open_session(client, url)
        response, took, flood_left = asked_during(flood, lambda: client.post(url, headers=own,
                                                                            json=read_message(1, "fast://x")))
        assert response.json()["result"]["contents"][0]["text"] == "fast"
    # answered in about one slow read's time, while the flood still had a good part to go
    assert flood_left > 0.5, "the fast read waited for the flood"
    assert took < 1.0


def test_one_sessions_subscribes_keep_no_other_sessions_subscribe_waiting() -> None:
    """A subscription starts from a read of what the resource is now: that read takes its session's
    turn, so 250 subscribes to a handler that blocks 300 ms keep no other session's subscribe
    waiting (they were all in one lane, the runner's shared one, first in first out)."""
    with http_server_process(APP) as url, httpx.Client(timeout=60) as client:
        flooding = open_session(client, url)

        async def flood() -> None:
            async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=250)) as flooder:
                async def one(i: int) -> None:
                    response = await flooder.post(url, headers=flooding, json={
                        "jsonrpc": "2.0", "id": i, "method": "resources/subscribe", "params": {"uri": f"slow://{i}"}})
                    assert response.json()["result"] == {}

                await asyncio.gather(*(one(i) for i in range(1, 251)))

        own = open_session(client, url)
        response, took, flood_left = asked_during(lambda: asyncio.run(flood()), lambda: client.post(
            url, headers=own, json={"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
                                    "params": {"uri": "fast://x"}}), after=0.5)
        assert response.json()["result"] == {}
    # about 2.3 s of slow reads for 32 workers: the subscribe waited 1.4 to 1.8 s behind them
    assert flood_left > 0.5, "the subscribe waited for the flood"
    assert took < 0.5


def stateless_read(uri: str, rid: int) -> dict[str, Any]:
    """The body and headers of a 2026-07-28 read's POST (``httpx``'s keywords)."""
    return {"json": read_message(rid, uri, modern=True),
            "headers": {**HEADERS, **modern_headers("resources/read", uri)}}


def from_another_address() -> httpx.Client:
    """A client whose connections come from 127.0.0.2: another caller of 2026-07-28 requests."""
    return httpx.Client(timeout=30, transport=httpx.HTTPTransport(local_address="127.0.0.2"))


def stateless_flood(url: str) -> None:
    """250 slow 2026-07-28 reads at once (within one caller's ``max_inflight``), each its own POST,
    from 127.0.0.1."""
    async def flood() -> None:
        async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=250)) as flooder:
            async def one(i: int) -> None:
                response = await flooder.post(url, **stateless_read(f"slow://{i}", i))
                assert response.json()["result"]["contents"][0]["text"] == f"slow {i}"

            await asyncio.gather(*(one(i) for i in range(1, 251)))

    asyncio.run(flood())


def test_a_flood_of_stateless_requests_keeps_no_sessions_read_waiting() -> None:
    """2026-07-28 requests, each a connection of no session, share their caller's lane: 250 slow
    ones at once take their turn with a session's read instead of each being a lane ahead of it."""
    with http_server_process(APP) as url, httpx.Client(timeout=30) as client:
        own = open_session(client, url)
        response, took, flood_left = asked_during(lambda: stateless_flood(url), lambda: client.post(
            url, headers=own, json=read_message(1, "fast://x")))
        assert response.json()["result"]["contents"][0]["text"] == "fast"
    assert flood_left > 0.5, "the session's read waited for the flood"
    assert took < 1.0


def test_one_callers_flood_of_stateless_requests_keeps_no_other_callers_read_waiting() -> None:
    """The lane of 2026-07-28 requests is their caller's (its token's principal, else its address):
    another address's read takes its turn beside the flood, not after it (it waited 1.4 s)."""
    with http_server_process(APP) as url, from_another_address() as other:
        response, took, flood_left = asked_during(lambda: stateless_flood(url), lambda: other.post(
            url, **stateless_read("fast://x", 1)))
        assert response.json()["result"]["contents"][0]["text"] == "fast"
    assert flood_left > 0.5, "the other caller's read waited for the flood"
    assert took < 1.0


def test_a_stateless_requests_caller_is_its_principal_at_its_address() -> None:
    from resourcekit.scopes import Principal
    from resourcekit.transports.http._post import caller_of

    here = {"client": ("10.0.0.1", 5000)}
    alice, bob = Principal("alice", client_id="c"), Principal("bob", client_id="c")
    assert caller_of(here, None) == caller_of({"client": ("10.0.0.1", 6000)}, None) == "10.0.0.1"  # any port
    assert caller_of(here, alice) == caller_of(here, Principal("alice", client_id="c", scopes=["more"]))
    assert caller_of(here, alice) != caller_of(here, bob)  # two tokens behind one proxy: two lanes
    assert caller_of(here, {"sub": "a hook's dict"}) == "10.0.0.1"  # cannot be a key: the address alone
    assert caller_of(here, object()) == "10.0.0.1"  # hashed as an object: a new caller per request, so none
    assert caller_of({}, None) is None  # an ASGI server that does not say: one lane for all


def test_a_stateless_caller_has_at_most_max_inflight_requests_open() -> None:
    """A 2026-07-28 caller's open requests are bounded as a session's are: past ``max_inflight``,
    -32603 busy naming the limit, while another caller is served, and the caller again once one
    ended (each async handler's request held a task and a connection, without a bound)."""
    with http_server_process(APP, "--max-inflight", "4") as url, from_another_address() as other:
        async def run() -> tuple[list[Any], Any, Any, Any]:
            async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=8)) as client:
                waiting = [asyncio.ensure_future(client.post(url, **stateless_read(f"wait://{i}", i)))
                           for i in range(1, 5)]
                await asyncio.sleep(1.0)  # the four are open, their handlers waiting
                refused = (await client.post(url, **stateless_read("fast://x", 5))).json()
                elsewhere = await asyncio.to_thread(lambda: other.post(url, **stateless_read("fast://x", 1)).json())
                answered = [(await reply).json() for reply in waiting]
                again = (await client.post(url, **stateless_read("fast://x", 6))).json()
                return answered, refused, elsewhere, again

        answered, refused, elsewhere, again = asyncio.run(run())
    assert [a["result"]["contents"][0]["text"] for a in answered] == [f"waited {i}" for i in range(1, 5)]
    assert refused["error"]["code"] == -32603 and refused["error"]["data"] == {"limit": "max_inflight", "max": 4}
    assert elsewhere["result"]["contents"][0]["text"] == "fast"
    assert again["result"]["contents"][0]["text"] == "fast"
