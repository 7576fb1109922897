"""Who may talk to the endpoint: Host and Origin checks, CORS, the auth hook.

Runs before any MCP work. A request without exactly one well-formed ``Host`` (HTTP/1.1)
gets 400 (RFC 9112 §3.2), a wrong ``Host`` (DNS rebinding) 421, a foreign ``Origin`` 403;
an allowed browser origin gets CORS headers on every response and an answer to its preflight.
"""

from __future__ import annotations

import functools
import inspect
import ipaddress
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from ._headers import Headers, HTTPError, RequestHeaders, Scope, Send

log = logging.getLogger("resourcekit")

AuthHook = Callable[[dict[str, str]], Any]
Authorize = Callable[[RequestHeaders, Scope], Awaitable[Any]]
# RFC 9110 §7.2: uri-host [ ":" port ], where uri-host is an IP-literal or a reg-name (RFC 3986)
_HOST = re.compile(rb"(?:\[[0-9A-Za-z:._~!$&'()*+,;=%-]*\]|[0-9A-Za-z._~!$&'()*+,;=%-]*)(?::[0-9]*)?")


def check_host_and_origin(
    scope: Scope, headers: RequestHeaders, allowed_hosts: frozenset[str] | None, allowed_origins: frozenset[str]
) -> str | None:
    """Refuse DNS rebinding and foreign pages; return an Origin to grant CORS to."""
    raw = single_host(scope)
    host = "" if raw is None else bare_host(raw.decode("latin-1"))
    bound = scope.get("server")
    loopback_bind = bound is not None and is_loopback(str(bound[0]))
    if allowed_hosts is not None:
        if host not in allowed_hosts and not is_loopback(host):
            raise HTTPError(421, f"Host {host!r} is not allowed")
    elif loopback_bind and host and not is_loopback(host):
        raise HTTPError(421, f"Host {host!r} is not allowed for a server bound to loopback")
    origin = headers.opt(b"origin")
    if origin is None:
        return None  # not a browser: nothing to check
    normalized = origin.rstrip("/").lower()
    if normalized in allowed_origins:
        return origin
    if normalized != "null":
        scheme, _, netloc = normalized.partition("://")
        origin_host = bare_host(netloc)
        if scheme in ("http", "https") and is_loopback(origin_host):
            return origin
        # same origin, but only for a host name the operator allowed: with DNS
        # rebinding an attacker's page and Host header name the same foreign host
        if allowed_hosts is not None and origin_host == host:
            return origin
    raise HTTPError(403, f"Origin {origin!r} is not allowed")


def single_host(scope: Scope) -> bytes | None:
    """The request's ``Host``, read from the header lines as they came (a dict of them keeps the
    last of several): 400 for none in HTTP/1.1, for more than one, or for one that is not
    ``host[:port]`` (RFC 9112 §3.2), so that no one of several values can pass the checks."""
    found: bytes | None = None
    for name, value in scope.get("headers", ()):
        if name.lower() == b"host":
            if found is not None:
                raise HTTPError(400, "Bad Request: more than one Host header")
            found = value
    if found is None:
        if scope.get("http_version", "1.1") == "1.1":  # HTTP/1.0 may leave it out
            raise HTTPError(400, "Bad Request: Host header is required")
        return None
    if not _HOST.fullmatch(found.strip(b" \t")):
        raise HTTPError(400, "Bad Request: Host header is not host[:port]")
    return found


async def authorize(auth: AuthHook, headers: RequestHeaders) -> Any:
    """Call the ``auth`` hook (sync or async); it refuses by raising ``HTTPError``.

    Returns the principal: what the hook returned, unless ``None`` or ``True`` (which
    allow without naming anyone, as a hook returning nothing always has).
    """
    outcome = auth(headers.decoded())
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return None if outcome is None or outcome is True else outcome


def gate(auth: Any, app: Any) -> Authorize | None:
    """How a request proves who sends it: an ``OAuthResourceServer`` (``resourcekit.auth``) checks
    the bearer token, a plain hook gets the headers; None: nobody asks."""
    if auth is None:
        if getattr(app, "declared_scopes", None):
            log.warning("%r declares scopes but is served over HTTP without auth=: anyone may read everything "
                        "(see docs/authorization.md)", app)
        return None
    authenticate = getattr(auth, "authenticate", None)
    if authenticate is not None:
        bind = getattr(auth, "bind", None)
        if bind is not None:  # the 401 names the scopes this app's resources need by default
            bind(app)
        return lambda headers, scope: authenticate(headers, scope.get("query_string", b""))
    return lambda headers, scope: authorize(auth, headers)


def well_known(auth: Any, path: str, app: Any) -> bytes | None:
    """The Protected Resource Metadata document, if ``path`` is where ``auth`` publishes it."""
    paths = getattr(auth, "metadata_paths", None)
    return auth.metadata(app) if paths is not None and path in paths else None


@functools.lru_cache(maxsize=256)
@functools.lru_cache(maxsize=256)  # every request's Host header: parsed once per distinct value
def bare_host(netloc: str) -> str:
    """``Host``/netloc → lower-case host without port, brackets or trailing dot."""
    netloc = netloc.strip().lower()
    if not netloc:
        return ""
    try:
        host = urlsplit("//" + netloc).hostname or ""
    except ValueError:
        return netloc
    return host.rstrip(".")


@functools.lru_cache(maxsize=256)
def is_loopback(host: str) -> bool:
    """Is a bare host (no port; brackets optional) a loopback name or address?"""
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def preflight_headers(headers: RequestHeaders) -> Headers:
    requested = headers.text(b"access-control-request-headers")
    return [(b"access-control-allow-methods", b"GET, POST, DELETE"),
            (b"access-control-allow-headers", requested.encode("latin-1")),
            (b"access-control-max-age", b"600")]


def with_cors(send: Send, origin: str) -> Send:
    """Let a browser page at an allowed origin read the response (and the session id)."""
    cors = [(b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-expose-headers", b"mcp-session-id, mcp-protocol-version, www-authenticate"),
            (b"vary", b"origin")]

    async def send_with_cors(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *cors]}
        await send(message)

    return send_with_cors
