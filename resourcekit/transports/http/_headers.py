"""What a request's headers say, and what status and body a refusal gets.

Accept negotiation, the 2026-07-28 mirrored-header checks (``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name`` must equal the body), the mapping from a JSON-RPC answer
to an HTTP status, and the plain (non-SSE) responses.
"""

from __future__ import annotations

import base64
import binascii
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import orjson

from ...core import Connection, error_response
from ...errors import HeaderMismatch, InsufficientScope, InvalidParams, InvalidRequest, MCPError, unencodable
from ...revisions import HANDSHAKE_VERSIONS, META_PROTOCOL_VERSION, MODERN_VERSIONS

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"
ALLOW = [(b"allow", b"GET, POST, DELETE, OPTIONS")]
JSON = b"application/json"
JSON_TYPE = (b"content-type", JSON)
# MCP-Protocol-Version values as they come (ASCII): compared without decoding
HANDSHAKE_HEADERS = frozenset(v.encode() for v in HANDSHAKE_VERSIONS)
MODERN_HEADERS = frozenset(v.encode() for v in MODERN_VERSIONS)
# JSON-RPC errors about the HTTP request itself rather than the resource asked for
_NAMED = {"resources/read": "uri", "tools/call": "name"}  # methods whose Mcp-Name mirrors a param
_BAD_REQUEST_CODES = frozenset({-32700, -32600, -32020, -32021, -32022})


class HTTPError(Exception):
    """Raise from an ``auth`` hook (or anywhere in this package) to answer with a status."""

    def __init__(self, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers)


class RequestHeaders(dict[bytes, bytes]):
    """Request headers as ASGI gives them (names lower-cased); values decoded on demand."""

    __slots__ = ()

    def text(self, name: bytes, default: str = "") -> str:
        value = self.get(name)
        return default if value is None else value.decode("latin-1")

    def opt(self, name: bytes) -> str | None:
        value = self.get(name)
        return None if value is None else value.decode("latin-1")

    def decoded(self) -> dict[str, str]:
        return {k.decode("latin-1"): v.decode("latin-1") for k, v in self.items()}


@functools.lru_cache(maxsize=64)
def accepts(accept: str) -> tuple[bool, bool]:
    """(JSON acceptable, SSE acceptable) from an Accept header; none means anything."""
    if not accept.strip():
        return True, True
    json_ok = sse_ok = False
    for part in accept.lower().split(","):
        media, *parameters = part.split(";")
        media = media.strip()
        if any(_is_zero_q(p) for p in parameters):
            continue  # q=0: explicitly not acceptable
        if media in ("application/json", "application/*", "*/*"):
            json_ok = True
        if media in ("text/event-stream", "text/*", "*/*"):
            sse_ok = True
    return json_ok, sse_ok


@functools.lru_cache(maxsize=64)
def post_accepts(content_type: bytes | None, accept: bytes | None) -> tuple[bool, bool]:
    """A POST's Content-Type must be JSON (else 415) and its Accept list JSON or SSE (else 406);
    ``accepts`` of it. Cached by the raw values: clients send the same few."""
    if content_type is None or not content_type.decode("latin-1").lower().startswith("application/json"):
        raise HTTPError(415, "Content-Type must be application/json")
    accepted = accepts("" if accept is None else accept.decode("latin-1"))
    if not (accepted[0] or accepted[1]):
        raise HTTPError(406, "Accept must list application/json and text/event-stream")
    return accepted


def _is_zero_q(parameter: str) -> bool:
    name, _, value = parameter.partition("=")
    if name.strip() != "q":
        return False
    try:
        return float(value) == 0
    except ValueError:
        return False


def check_modern_headers(message: Any, headers: Mapping[bytes, bytes]) -> None:
    """2026-07-28: the mirrored headers must be present and equal the body (-32020)."""
    if type(message) is not dict:
        raise InvalidRequest("Invalid Request: 2026-07-28 bodies are a single JSON-RPC message")
    params = message.get("params")
    meta = params.get("_meta") if type(params) is dict else None
    body_version = meta.get(META_PROTOCOL_VERSION) if type(meta) is dict else None
    if body_version is None:
        raise InvalidParams(f"Invalid params: _meta['{META_PROTOCOL_VERSION}'] is required",
                            {"missing": [META_PROTOCOL_VERSION]})
    raw = headers.get(VERSION_HEADER)  # (``opt``, inlined here and below: every request passes)
    if raw is None:
        raise HeaderMismatch("Header mismatch: MCP-Protocol-Version header is required",
                             {"header": "MCP-Protocol-Version"})
    header_version = raw.decode("latin-1")
    if header_version != body_version:
        raise HeaderMismatch("Header mismatch: MCP-Protocol-Version differs from _meta protocolVersion",
                             {"header": "MCP-Protocol-Version", "expected": body_version, "actual": header_version})
    method = message.get("method")
    raw = headers.get(b"mcp-method")
    if raw is None:
        if "id" not in message:
            return  # a notification: the revision defines no header rules for those
        raise HeaderMismatch("Header mismatch: Mcp-Method header is required", {"header": "Mcp-Method"})
    header_method = raw.decode("latin-1")
    if header_method != method:
        raise HeaderMismatch("Header mismatch: Mcp-Method differs from the body's method",
                             {"header": "Mcp-Method", "expected": method, "actual": header_method})
    source = _NAMED.get(method) if type(method) is str and "id" in message else None
    if source is not None:
        raw = headers.get(b"mcp-name")
        if raw is None:
            raise HeaderMismatch("Header mismatch: Mcp-Name header is required", {"header": "Mcp-Name"})
        name = raw.decode("latin-1")
        value = params.get(source) if type(params) is dict else None
        decoded = decode_header(name)
        if decoded != value:
            raise HeaderMismatch(f"Header mismatch: Mcp-Name differs from params.{source}",
                                 {"header": "Mcp-Name", "expected": value, "actual": name})


MAX_DIGITS = 18  # digits of a number in a header: more is beyond any length, offset or count here


def is_digits(text: str) -> bool:
    """ASCII digits only, at most ``MAX_DIGITS`` of them: ``str.isdigit`` also admits superscripts
    (``int`` refuses them) and other scripts' digits, and ``int`` refuses over 4,300 digits."""
    return len(text) <= MAX_DIGITS and text.isascii() and text.isdigit()


def decode_header(value: str) -> str | None:
    """A ``=?base64?...?=`` value decoded (None if malformed); any other value as is."""
    if value.startswith("=?base64?") and value.endswith("?=") and len(value) >= 11:
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
    if not value.isascii() or not value.isprintable():
        return None  # raw non-ASCII or control characters: invalid, never equal
    return value


def status_of(message: Any, conn: Connection) -> int:
    """The HTTP status of a final JSON-RPC message sent as one JSON body."""
    if type(message) is dict and "error" in message:
        error = message["error"]
        code = error.get("code")
        if code == -32601 and conn.stateless:
            return 404
        if code == InsufficientScope.code:
            return 403  # step-up: forbidden_headers tell the client what to ask for
        if code in _BAD_REQUEST_CODES:
            return 400
        data = error.get("data")
        if conn.stateless and code == -32602 and type(data) is dict and "missing" in data:
            return 400  # a required _meta field is missing
    return 200


def forbidden_headers(message: dict[str, Any], principal: Any) -> Headers:
    """RFC 6750's challenge for a 403 ``InsufficientScope``: the scopes the request needs (with
    those the server asks of every request) and, under OAuth, where its metadata is."""
    data = message["error"].get("data") or {}
    scopes = set(data.get("scopes", ()))
    challenge = getattr(principal, "challenge", None)
    if callable(challenge):
        value: str = challenge(scopes)
    else:
        value = f'Bearer error="insufficient_scope", scope="{" ".join(sorted(scopes))}"'
    return [(b"www-authenticate", value.encode("latin-1"))]


# Content-Length headers by body size, shared (tuples: immutable): the sizes a server sends are few
LENGTHS: dict[int, tuple[bytes, bytes]] = {}


def content_length(size: int) -> tuple[bytes, bytes]:
    """The Content-Length header of a body of ``size`` bytes (``LENGTHS.get(size)`` first)."""
    header = (b"content-length", b"%d" % size)
    if len(LENGTHS) < 4096:
        LENGTHS[size] = header
    return header


def error_body(status: int, message: str) -> bytes:
    """A JSON-RPC error without an id, for a refusal at the HTTP level."""
    return orjson.dumps(error_response(None, InvalidRequest(message) if status < 500 else MCPError(message)))


async def respond(send: Send, status: int, body: bytes, headers: Headers | None = None,
                  content_type: bytes = JSON) -> None:
    """A whole response: its start (``start_of``), then ``body``."""
    await send(start_of(status, body, headers, content_type))
    await send({"type": "http.response.body", "body": body})


def start_of(status: int, body: bytes, headers: Headers | None = None, content_type: bytes = JSON) -> dict[str, Any]:
    """The start of a response carrying ``body``: its type and length (a JSON answer's headers
    shared), then ``headers``.  (A plain function: the answer to a POST awaits its sends itself.)"""
    framing: Headers = [JSON_TYPE if content_type is JSON else (b"content-type", content_type)] if body else []
    if status != 204:  # a 204 carries no Content-Length (RFC 9110)
        size = len(body)
        framing.append(LENGTHS.get(size) or content_length(size))
    if headers:
        framing.extend(headers)
    return {"type": "http.response.start", "status": status, "headers": framing}


async def respond_json(send: Send, status: int, message: Any, headers: Headers | None = None) -> None:
    await respond(send, status, orjson.dumps(message), headers)


def check_length(declared: bytes | None, limit: int) -> None:
    """A declared Content-Length: ASCII digits (else 400), at most ``limit`` (else 413)."""
    if declared:
        if not declared.isdigit():  # bytes: ASCII digits only
            raise HTTPError(400, "Content-Length must be ASCII digits")
        if len(declared) > MAX_DIGITS or int(declared) > limit:
            raise HTTPError(413, f"Body larger than {limit} bytes")


async def read_rest(message: dict[str, Any], receive: Receive, limit: int) -> bytes:
    """A request's body from its first ``receive()``d message on, at most ``limit`` bytes (else 413)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        if message["type"] == "http.disconnect":
            raise HTTPError(400, "Client disconnected")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise HTTPError(413, f"Body larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        message = await receive()


def encode(message: Any) -> bytes:
    """A message as JSON (a response the core encoded already passes as it is); a response whose
    result JSON cannot carry (a lone surrogate in a ``str``) becomes the -32603 error with its id
    (logged), so that it is still answered."""
    if type(message) is bytes:  # one JSON line: the body is the JSON
        return message[:-1] if message[-1:] == b"\n" else message
    try:
        return orjson.dumps(message)
    except TypeError as exc:
        logging.getLogger("resourcekit").error("a response could not be encoded", exc_info=exc)
        return orjson.dumps(error_response(message.get("id") if type(message) is dict else None, unencodable()))
