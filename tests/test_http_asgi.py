"""The ASGI app in-process (httpx.ASGITransport, or driven as a server drives it): auth hook, CORS on
every response to an allowed page, Host and Origin verdicts that follow the settings, lifespan,
helpers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from resourcekit import App
from resourcekit.http import ASGIApp, HTTPError
from resourcekit.transports.http._gate import bare_host, is_loopback
from resourcekit.transports.http._headers import accepts, decode_header
from tests.support.asgi import ACCEPT, Call, session, sid_of
from tests.support.wire import modern_meta, read_message, request

pytestmark = pytest.mark.anyio

app = App("asgi-units")


@app.resource("text://hi")
def hi() -> str:
    return "hi"


READ = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                     "params": {"uri": "text://hi", "_meta": modern_meta()}})
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
           "mcp-protocol-version": "2026-07-28", "mcp-method": "resources/read", "mcp-name": "text://hi"}


class Served:
    """An ASGIApp behind httpx, as if bound to ``bind``."""

    def __init__(self, asgi: ASGIApp, bind: str = "127.0.0.1") -> None:
        self.asgi = asgi
        self.bind = bind

    async def request(self, method: str = "POST", content: bytes | None = READ, **headers: str) -> httpx.Response:
        async def app_as_bound(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await self.asgi({**scope, "server": (self.bind, 8000)}, receive, send)

        transport = httpx.ASGITransport(app=app_as_bound)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost:8000") as client:
            merged = {**HEADERS, **{k.replace("_", "-"): v for k, v in headers.items()}}
            return await client.request(method, "/mcp", content=content, headers=merged)


@pytest.fixture
async def served() -> AsyncIterator[Any]:
    created: list[ASGIApp] = []

    def make(bind: str = "127.0.0.1", **options: Any) -> Served:
        asgi = ASGIApp(app, **options)
        created.append(asgi)
        return Served(asgi, bind)

    yield make
    for asgi in created:
        asgi.close()


async def test_auth_hook_sync_and_async(served):
    seen: list[dict[str, str]] = []

    def check(headers: dict[str, str]) -> None:
        seen.append(headers)
        if headers.get("authorization") != "Bearer right":
            raise HTTPError(401, "missing or wrong token", [(b"www-authenticate", b"Bearer")])

    server = served(auth=check)
    refused = await server.request(Authorization="Bearer wrong")
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert refused.json() == {"jsonrpc": "2.0", "id": None,
                              "error": {"code": -32600, "message": "missing or wrong token"}}
    allowed = await server.request(Authorization="Bearer right")
    assert allowed.status_code == 200 and allowed.json()["result"]["contents"][0]["text"] == "hi"
    assert seen[-1]["mcp-method"] == "resources/read"  # lower-cased names, decoded values

    async def forbid(headers: dict[str, str]) -> None:
        raise HTTPError(403, "not for you")

    assert (await served(auth=forbid).request()).status_code == 403


async def test_unexpected_errors_are_500_without_details(served):
    def broken(headers: dict[str, str]) -> None:
        raise RuntimeError("secret internal detail")

    response = await served(auth=broken).request()
    assert response.status_code == 500
    assert response.json()["error"]["code"] == -32603
    assert "secret" not in response.text and "Traceback" not in response.text


async def test_cors_for_allowed_and_loopback_origins(served):
    server = served(allowed_origins=["https://app.example.com"])
    response = await server.request(Origin="https://app.example.com")
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "mcp-session-id" in response.headers["access-control-expose-headers"]
    preflight = await server.request("OPTIONS", None, Origin="https://app.example.com",
                                     Access_Control_Request_Method="POST",
                                     Access_Control_Request_Headers="content-type, mcp-method")
    assert preflight.status_code == 204
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert preflight.headers["access-control-allow-headers"] == "content-type, mcp-method"
    assert (await server.request("OPTIONS", None, Origin="https://evil.example.com")).status_code == 403
    assert (await server.request(Origin="http://localhost:5173")).status_code == 200
    assert (await server.request(Origin="null")).status_code == 403
    assert "access-control-allow-origin" not in (await server.request()).headers  # no Origin: not a browser


async def test_hosts_and_rebinding_on_a_public_interface(served):
    # bound to all interfaces without allowed_hosts: Host cannot be checked, Origin still is
    public = served(bind="0.0.0.0")
    assert (await public.request(Host="mcp.example.com")).status_code == 200
    rebinding = await public.request(Host="evil.example.com", Origin="http://evil.example.com")
    assert rebinding.status_code == 403  # same host and origin, but nobody vouched for that name
    named = served(bind="0.0.0.0", allowed_hosts=["mcp.example.com"])
    assert (await named.request(Host="mcp.example.com:8000", Origin="https://mcp.example.com")).status_code == 200
    assert (await named.request(Host="evil.example.com")).status_code == 421
    assert (await named.request(Host="localhost:8000")).status_code == 200
    loopback = served()
    assert (await loopback.request(Host="[::1]:8000")).status_code == 200
    assert (await loopback.request(Host="127.0.0.2")).status_code == 200
    assert (await loopback.request(Host="localhost.evil.com")).status_code == 421
    ipv6 = served(bind="::1")
    assert (await ipv6.request(Host="[::1]:8000")).status_code == 200
    assert (await ipv6.request(Host="evil.example.com")).status_code == 421


async def test_host_and_origin_verdicts_are_remembered_but_follow_the_settings(served):
    # the verdict for a (Host, Origin, bound address) is kept, refusals are decided anew each time,
    # and changing allowed_hosts or allowed_origins afterwards takes effect at once
    server = served(bind="0.0.0.0", allowed_hosts=["mcp.example.com"])
    for _ in range(3):
        assert (await server.request(Host="mcp.example.com")).status_code == 200
        assert (await server.request(Host="other.example.com")).status_code == 421
        assert (await server.request(Host="mcp.example.com", Origin="https://app.example.com")).status_code == 403
    server.asgi.allowed_hosts = frozenset({"other.example.com"})
    assert (await server.request(Host="mcp.example.com")).status_code == 421
    assert (await server.request(Host="other.example.com")).status_code == 200
    server.asgi.allowed_origins = frozenset({"https://app.example.com"})
    granted = await server.request(Host="other.example.com", Origin="https://app.example.com")
    assert granted.status_code == 200 and granted.headers["access-control-allow-origin"] == "https://app.example.com"
    # set later, as given to the constructor: normalized alike (case, a trailing slash, a Host's port)
    server.asgi.allowed_origins = ["HTTPS://App.Example.com/"]
    server.asgi.allowed_hosts = ["Other.Example.com:8443"]
    assert server.asgi.allowed_origins == {"https://app.example.com"} and server.asgi.allowed_hosts == {
        "other.example.com"}
    assert (await server.request(Host="other.example.com", Origin="https://app.example.com")).status_code == 200
    # an ASGI server may give its address as a list: checked, just not remembered
    listed = Served(server.asgi, "127.0.0.1")
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": READ, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "root_path": "", "server": ["127.0.0.1", 8000],
             "headers": [(k.encode(), v.encode()) for k, v in {**HEADERS, "host": "evil.example.com"}.items()]}
    await listed.asgi(scope, receive, send)
    assert sent[0]["status"] == 421


PAGE = "https://app.example.com"


async def test_headers_seen_before_still_get_every_refusal_and_cors(served):
    """A session's plain reads with headers allowed before: other Content-Type, Accept, Host and
    Origin values are still judged (415, 406, 421, 403); a page allowed later gets CORS headers on
    its first read and on the next (its verdict kept); no longer allowed, it is refused again, and
    a read without Origin never gets CORS headers."""
    asgi = served().asgi
    headers = await session(asgi)

    async def read(rid: int, *extra: tuple[str, str]) -> Call:
        return await Call(asgi, body=read_message(rid, "text://hi"), headers=[*headers, *extra]).done()

    assert (await read(1)).status == 200
    assert (await read(2, ("content-type", "text/plain"))).status == 415
    assert (await read(3, ("accept", "text/html"))).status == 406
    assert (await read(4, ("host", "evil.example.com"))).status == 421
    assert (await read(5, ("origin", "https://evil.example.com"))).status == 403
    asgi.allowed_origins = frozenset({PAGE})
    for rid in (6, 7):  # judged, then as kept
        allowed = await read(rid, ("origin", PAGE))
        assert allowed.status == 200 and allowed.header(b"access-control-allow-origin") == PAGE.encode()
        assert allowed.json()["result"]["contents"][0]["text"] == "hi"
    asgi.allowed_origins = frozenset()
    assert (await read(8, ("origin", PAGE))).status == 403
    assert (await read(9)).header(b"access-control-allow-origin") is None


async def test_a_verdict_judged_before_the_allowed_origins_changed_is_not_kept(served):
    """A POST whose Origin was allowed, held in the auth hook while the allowed origins change: it
    is served (it came before the change), but its verdict is not kept for the next POSTs from that
    page, which are judged under the new setting (403, no CORS headers)."""
    hold = asyncio.Event()

    async def auth(headers: dict[str, str]) -> None:
        if headers.get("x-hold"):
            await hold.wait()

    asgi = served(allowed_origins=[PAGE], auth=auth).asgi
    headers = await session(asgi)
    held = Call(asgi, body=read_message(1, "text://hi"), headers=[*headers, ("origin", PAGE), ("x-hold", "1")])
    await asyncio.sleep(0.05)  # judged (allowed), waiting for the hook
    assert not held.sent
    asgi.allowed_origins = frozenset()  # the page is no longer allowed
    hold.set()
    assert (await held.done()).status == 200
    refused = await Call(asgi, body=read_message(2, "text://hi"), headers=[*headers, ("origin", PAGE)]).done()
    assert refused.status == 403 and refused.header(b"access-control-allow-origin") is None


async def test_an_allowed_page_can_read_every_refusal(served):
    """CORS headers on every response to an allowed origin, refusals included (a page whose session
    expired must see the 404 to initialize again; without them it sees a network error); a foreign
    page's refusal has none."""
    asgi = served(allowed_origins=[PAGE]).asgi
    headers = await session(asgi)
    sid = sid_of(headers)
    unknown = [ACCEPT, ("mcp-session-id", "no-such-session"), ("origin", PAGE)]
    refusals = [
        await Call(asgi, body=read_message(1, "text://hi"), headers=unknown).done(),  # 404
        await Call(asgi, body=request(2, "resources/list"), headers=unknown).done(),  # 404
        await Call(asgi, body=read_message(3, "text://hi"), headers=[*headers, ("origin", PAGE),
                                                                     ("content-type", "text/plain")]).done(),  # 415
        await Call(asgi, "DELETE", headers=unknown).done(),  # 404
        await Call(asgi, "GET", headers=[("accept", "text/html"), ("mcp-session-id", sid), ("origin", PAGE)]).done(),
    ]
    assert [r.status for r in refusals] == [404, 404, 415, 404, 406]
    assert all(r.header(b"access-control-allow-origin") == PAGE.encode() for r in refusals)
    foreign = await Call(asgi, body=read_message(4, "text://hi"),
                         headers=[*headers, ("origin", "https://evil.example.com")]).done()
    assert foreign.status == 403 and foreign.header(b"access-control-allow-origin") is None


async def test_post_bodies_in_pieces_and_refusals_in_order(served):
    server = served()
    asgi = server.asgi

    async def post(messages: list[dict[str, Any]], **extra: str) -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop(0)
            await asyncio.Event().wait()  # a client that stays: nothing more comes
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        headers = {**HEADERS, "host": "127.0.0.1:8000", **extra}
        scope = {"type": "http", "method": "POST", "path": "/mcp", "root_path": "", "server": ("127.0.0.1", 8000),
                 "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}
        await asgi(scope, receive, send)
        return sent

    halves = [{"type": "http.request", "body": READ[:10], "more_body": True},
              {"type": "http.request", "body": READ[10:], "more_body": False}]
    answered = await post(halves)
    assert answered[0]["status"] == 200 and b'"text":"hi"' in answered[1]["body"]
    gone = await post([{"type": "http.disconnect"}])
    assert gone[0]["status"] == 400 and b"Client disconnected" in gone[1]["body"]
    assert (await post([], **{"content-length": "1e3"}))[0]["status"] == 400
    assert (await post([], **{"content-length": str(10**9)}))[0]["status"] == 413
    assert (await post([], **{"content-length": "9" * 5000}))[0]["status"] == 413  # (int() takes 4,300 digits)
    # 415 before 406, both before the body is read
    assert (await post([], **{"content-type": "text/plain", "accept": "image/png"}))[0]["status"] == 415
    assert (await post([], accept="image/png"))[0]["status"] == 406
    # a handshake-era body without a session, and a modern header on a batch
    plain = orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "text://hi"}})
    lost = await post([{"type": "http.request", "body": plain}], **{"mcp-protocol-version": "2025-11-25"})
    assert lost[0]["status"] == 400 and b"Mcp-Session-Id" in lost[1]["body"]
    batch = await post([{"type": "http.request", "body": b"[" + plain + b"]"}])
    assert batch[0]["status"] == 400 and b"single JSON-RPC message" in batch[1]["body"]
    # an id that cannot be a key (fuzzing found it): a JSON-RPC error, not a 500
    listed = orjson.loads(READ)
    listed["id"] = [1]
    odd = await post([{"type": "http.request", "body": orjson.dumps(listed)}])
    assert odd[0]["status"] == 400 and orjson.loads(odd[1]["body"])["error"]["code"] == -32600


async def test_closed_app_refuses_and_restarts(served):
    server = served()
    assert (await server.request()).status_code == 200
    server.asgi.close()
    closed = await server.request()
    assert closed.status_code == 503 and "retry-after" in closed.headers
    server.asgi.start()
    assert (await server.request()).status_code == 200


async def test_lifespan_and_websocket_scopes():
    asgi = ASGIApp(app)
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asgi({"type": "lifespan"}, receive, send)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert asgi.closed and asgi._server is None
    sent.clear()
    await asgi({"type": "websocket", "path": "/mcp"}, receive, send)
    assert sent[0]["type"] == "websocket.close"
    async with asgi.lifespan():
        assert not asgi.closed and asgi._server is not None
    assert asgi.closed


async def test_app_asgi_is_built_once():
    assert app.asgi is app.asgi and isinstance(app.asgi, ASGIApp) and app.asgi.path == "/mcp"


def test_accept_header_parsing():
    assert accepts("application/json, text/event-stream") == (True, True)
    assert accepts("") == (True, True)
    assert accepts("*/*") == (True, True)
    assert accepts("application/json") == (True, False)
    assert accepts("text/event-stream;q=0.5") == (False, True)
    assert accepts("application/json;q=0, text/*") == (False, True)
    assert accepts("text/html") == (False, False)


def test_header_values_and_hosts():
    assert decode_header("=?base64?aXRlbTovLzU=?=") == "item://5"
    assert decode_header("=?base64?SGVsbG8sIOS4lueVjA==?=") == "Hello, 世界"
    assert decode_header("=?base64?%%%?=") is None
    assert decode_header("café") is None  # raw non-ASCII must be base64-wrapped
    assert decode_header("file:///a b") == "file:///a b"
    assert bare_host("LOCALHOST:8000") == "localhost"
    assert bare_host("[::1]:9") == "::1"
    assert bare_host("example.com.") == "example.com"
    assert is_loopback("127.9.9.9") and is_loopback("[::1]") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1") and not is_loopback("localhost.evil")
