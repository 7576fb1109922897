"""``Client(app)``: an in-memory MCP client for your own tests.

    async with Client(app) as client:
        assert await client.read_text("config://settings") == '{"theme":"dark"}'

It speaks the real protocol (every message goes through JSON) without a
subprocess, so tests stay fast.  Pass ``protocol_version="2026-07-28"`` to talk
the stateless revision instead of the handshake.  The app's lifespan runs from ``async with``
to its end (shared with any server already running it in this process), so handlers see
``ctx.state``.  Pass ``principal=Principal("alice",
scopes=["notes:read"])`` to be that caller: resources whose scopes it lacks answer
``InsufficientScope`` and are left out of lists, as over HTTP with OAuth.
"""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, BinaryIO

from .app import App
from .errors import MCPError
from .revisions import (
    LATEST_HANDSHAKE,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
)
from .scopes import Principal
from .transports.memory import MemoryTransport

__all__ = ["Client", "DownloadFailed", "Streamed", "download", "stream_resource"]


class Client:
    def __init__(
        self,
        app: App,
        *,
        protocol_version: str = LATEST_HANDSHAKE,
        capabilities: dict[str, Any] | None = None,
        principal: Principal | None = None,
    ) -> None:
        self.app = app
        self.principal = principal
        self.protocol_version = protocol_version
        self.capabilities = capabilities or {}
        self.modern = protocol_version in MODERN_VERSIONS
        self.notifications: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.initialize_result: dict[str, Any] | None = None
        self._transport: MemoryTransport | None = None
        self._lifespan_entered = False

    async def __aenter__(self) -> Client:
        await self.app._lifespan.enter()  # LifespanFailed when it raises
        self._lifespan_entered = True
        self._transport = MemoryTransport(self.app, self.notifications.put_nowait)
        self._transport.conn.principal = self.principal  # scopes checked as over HTTP with auth
        if not self.modern:
            self.initialize_result = await self.request("initialize", {
                "protocolVersion": self.protocol_version,
                "capabilities": self.capabilities,
                "clientInfo": {"name": "resourcekit-testing", "version": "0"},
            })
            self._transport.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        if self._lifespan_entered:
            self._lifespan_entered = False
            await self.app._lifespan.exit()

    # --- raw ---------------------------------------------------------------------

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request; return its result or raise MCPError with the wire code."""
        if self._transport is None:
            raise RuntimeError("use the Client in 'async with'")
        params = dict(params or {})
        if self.modern:
            meta = dict(params.get("_meta") or {})
            meta.setdefault(META_PROTOCOL_VERSION, self.protocol_version)
            meta.setdefault(META_CLIENT_CAPABILITIES, self.capabilities)
            params["_meta"] = meta
        message = {"jsonrpc": "2.0", "id": self._transport.next_id(), "method": method, "params": params}
        response = await self._transport.request(message)
        if "error" in response:
            error = response["error"]
            raise MCPError(error["message"], error.get("data"), code=error["code"])
        result: dict[str, Any] = response["result"]
        return result

    # --- resources ---------------------------------------------------------------

    async def _walk(self, method: str, key: str, params: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        cursor = None
        while True:
            page_params = dict(params)
            if cursor is not None:
                page_params["cursor"] = cursor
            result = await self.request(method, page_params)
            for item in result[key]:
                yield item
            cursor = result.get("nextCursor")
            if cursor is None:
                return

    async def list_resources(self, **params: Any) -> list[dict[str, Any]]:
        """Every resource, following ``nextCursor`` through all pages."""
        return [r async for r in self._walk("resources/list", "resources", params)]

    async def list_templates(self) -> list[dict[str, Any]]:
        return [t async for t in self._walk("resources/templates/list", "resourceTemplates", {})]

    async def read(self, uri: str) -> list[dict[str, Any]]:
        """The ``contents`` of ``uri``."""
        contents: list[dict[str, Any]] = (await self.request("resources/read", {"uri": uri}))["contents"]
        return contents

    async def read_text(self, uri: str) -> str:
        content = (await self.read(uri))[0]
        if "text" not in content:
            raise DownloadFailed(f"{uri} is binary ({content.get('mimeType')})")
        text: str = content["text"]
        return text

    async def read_bytes(self, uri: str) -> bytes:
        content = (await self.read(uri))[0]
        if "blob" in content:
            return base64.b64decode(content["blob"])
        return str(content["text"]).encode()

    async def complete(
        self, uri_template: str, argument: str, value: str = "", context: dict[str, str] | None = None
    ) -> list[str]:
        params: dict[str, Any] = {
            "ref": {"type": "ref/resource", "uri": uri_template},
            "argument": {"name": argument, "value": value},
        }
        if context:
            params["context"] = {"arguments": context}
        values: list[str] = (await self.request("completion/complete", params))["completion"]["values"]
        return values

    async def subscribe(self, uri: str) -> None:
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        await self.request("resources/unsubscribe", {"uri": uri})

    def listen(self, uris: Sequence[str] = (), list_changed: bool = False, embed: bool = False) -> int:
        """Open a 2026-07-28 ``subscriptions/listen`` stream; returns its id (= subscription id).

        The acknowledgement and every update arrive in ``notifications``; ``cancel(id)`` ends it.
        ``embed``: ask for the new contents inside each update (SEP-3119's ``embedResources``, draft).
        """
        assert self._transport is not None
        rid = self._transport.next_id()
        params: dict[str, Any] = {"notifications": {"resourceSubscriptions": list(uris),
                                                    "resourcesListChanged": list_changed}}
        if embed:
            params["notifications"]["embedResources"] = True
        params["_meta"] = {META_PROTOCOL_VERSION: MODERN_VERSIONS[-1], META_CLIENT_CAPABILITIES: self.capabilities}
        self._transport.notify({"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params})
        return rid

    def cancel(self, request_id: int) -> None:
        """Send ``notifications/cancelled`` for a request (ends a listen stream)."""
        assert self._transport is not None
        self._transport.notify({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                "params": {"requestId": request_id}})

    async def next_notification(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next notification the server sent (waits up to ``timeout`` seconds)."""
        return await asyncio.wait_for(self.notifications.get(), timeout)


# --- resources/stream over HTTP (SEP-2532, experimental) ----------------------------------------


class Streamed:
    """What ``stream_resource`` received: the status (200, 206), the response headers (names in
    lower case), and how many bytes went to ``out``."""

    __slots__ = ("cut", "headers", "size", "status")

    def __init__(self, status: int, headers: dict[str, str], size: int, cut: bool = False) -> None:
        self.status = status
        self.headers = headers
        self.size = size
        self.cut = cut  # the connection ended before the body did

    @property
    def etag(self) -> str | None:
        return self.headers.get("etag")

    @property
    def complete(self) -> bool:
        """Did every byte the response announced arrive (its Content-Length; chunked: its end)?"""
        length = self.headers.get("content-length")
        return not self.cut and (length is None or int(length) == self.size)

    def __repr__(self) -> str:
        return f"Streamed(status={self.status}, size={self.size}, etag={self.etag!r})"


def stream_resource(url: str, uri: str, out: BinaryIO, *, max_stream_size: int | None = None,
                    range: str | None = None, if_range: str | None = None,
                    headers: Mapping[str, str] | None = None, timeout: float = 60.0,
                    chunk: int = 256 * 1024) -> Streamed:
    """``resources/stream`` (SEP-2532) of ``uri`` from the MCP endpoint ``url`` (a running
    ``resourcekit run FILE --transport http``), its bytes written to ``out`` as they arrive.

    One 2026-07-28 request (no session) declaring ``resourceStreaming`` (with ``max_stream_size``
    as its ``maxStreamSize``); ``range`` (``"bytes=100-"``) and ``if_range`` (an ETag) resume a
    download (a range past the end: status 416, nothing written).  A JSON-RPC error is raised as
    ``MCPError``; any other HTTP refusal (4xx, 5xx) as
    ``MCPError`` too, with ``data.status``.  A response cut short (the server's failure after its
    first byte) returns with ``complete`` False.  Standard library only.
    """
    import http.client
    import urllib.parse

    import orjson

    parts = urllib.parse.urlsplit(url)
    https = parts.scheme == "https"
    connection_class = http.client.HTTPSConnection if https else http.client.HTTPConnection
    connection = connection_class(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    streaming: dict[str, Any] = {} if max_stream_size is None else {"maxStreamSize": max_stream_size}
    version = MODERN_VERSIONS[-1]
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "resources/stream", "params": {
        "uri": uri,
        "_meta": {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {"resourceStreaming": streaming}},
    }})
    sent = {"content-type": "application/json", "accept": "application/json, */*",
            "mcp-protocol-version": version, "mcp-method": "resources/stream"}
    if range is not None:
        sent["range"] = range
    if if_range is not None:
        sent["if-range"] = if_range
    sent.update(headers or {})
    try:
        connection.request("POST", parts.path or "/", body=body, headers=sent)
        response = connection.getresponse()
        received = {name.lower(): value for name, value in response.getheaders()}
        kind = received.get("content-type", "")
        if response.status == 416:  # the range starts past the end: Content-Range says where that is
            response.read()
            return Streamed(416, received, 0)
        if response.status >= 400 or kind.startswith("application/json"):
            answer = response.read(1 << 20)
            try:
                error = orjson.loads(answer).get("error")
            except (orjson.JSONDecodeError, AttributeError):
                error = None
            if isinstance(error, dict):
                data = error.get("data")
                raise MCPError(str(error.get("message")), data, code=int(error.get("code", -32603)))
            raise MCPError(f"HTTP {response.status}: {answer[:200]!r}", {"status": response.status})
        size = 0
        cut = False
        while True:
            try:
                piece = response.read1(chunk) if hasattr(response, "read1") else response.read(chunk)
            except http.client.IncompleteRead as exc:
                out.write(exc.partial)
                size += len(exc.partial)
                cut = True
                break
            if not piece:
                break
            out.write(piece)
            size += len(piece)
        return Streamed(response.status, received, size, cut)
    finally:
        connection.close()


class DownloadFailed(Exception):
    """``download`` wrote nothing, or not all (the message says why)."""


def download(url: str, uri: str, output: str | None) -> str:
    """``resourcekit read URL URI --stream -o OUTPUT``: ``stream_resource`` into the file ``output``;
    what was written, in words.  ``DownloadFailed``, saying why, when nothing (or not all) was."""
    if not url.startswith(("http://", "https://")):
        raise DownloadFailed("--stream reads from a running server: give its URL (http://127.0.0.1:8000/mcp), "
                         "not FILE[:ATTR]")
    if not output:
        raise DownloadFailed("--stream needs -o OUT, the file the bytes go to")
    try:
        with open(output, "wb") as out:
            got = stream_resource(url, uri, out)
    except MCPError as exc:
        os.unlink(output)
        raise DownloadFailed(f"{exc.message} (code {exc.code})") from None
    except OSError as exc:
        raise DownloadFailed(f"cannot stream {uri} from {url}: {exc}") from None
    if not got.complete:
        raise DownloadFailed(f"{uri}: the response was cut short after {got.size} bytes ({output} is incomplete)")
    return f"{got.size} bytes of {got.headers.get('content-type', 'unknown type')} written to {output}"
