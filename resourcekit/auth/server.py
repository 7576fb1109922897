"""``OAuthResourceServer``: the HTTP endpoint as an OAuth 2.1 resource server (MCP authorization).

Every request to the endpoint needs ``Authorization: Bearer <token>``. A JWT is
verified here against the issuer's JWKS (signature with an asymmetric algorithm,
``iss``, ``aud`` naming this server (RFC 8707), ``exp`` and ``nbf``; ``exp``, ``aud``
and ``iss`` must be present, RFC 9068); any other token is asked about at the
introspection endpoint (RFC 7662). A token that passed is remembered until it
expires, so a request with a known token costs one dict lookup.

Refusals follow RFC 6750 and RFC 9728: 401 with ``WWW-Authenticate: Bearer
resource_metadata="…"`` (and ``error="invalid_token"`` when a token was sent,
whatever was wrong with it: the reason goes to the log only); 403
``insufficient_scope`` with the scopes wanted. The Protected Resource Metadata
document is served without authentication at ``/.well-known/oauth-protected-resource``
and its path-suffixed form.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import jwt
import orjson

from ..logs import Repeats
from ..scopes import Principal, normalize_scopes
from ..transports.http._headers import HTTPError
from ._fetch import FetchError, discover, fetch_json
from ._keys import ALGORITHMS, KeySet

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = ["OAuthResourceServer"]

log = logging.getLogger("resourcekit")

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MAX_REMEMBERED = 10_000
INTROSPECTION_TTL = 300.0  # an introspected token is asked about again after this, even if it lives longer
_REQUIRED_CLAIMS = ["exp", "aud", "iss"]


class _Refused(Exception):
    """A token that does not pass; the message is for the log, never for the client."""


class _Caller(Principal):
    """A principal this server authenticated: a 403 names its metadata too."""

    __slots__ = ("_server",)
    _server: OAuthResourceServer

    def challenge(self, scopes: Iterable[str]) -> str:
        server = self._server
        return server.challenge("insufficient_scope", set(scopes) | server.scopes)


class OAuthResourceServer:
    """Accept only access tokens ``issuer`` issued for ``audience`` (this server's canonical URL).

    ``jwks_uri``: the issuer's keys; None: found in its metadata (RFC 8414 / OpenID
    Connect Discovery). ``introspection_url``: where tokens that are not JWTs are
    checked (RFC 7662), authenticating with ``introspection_client`` (client id,
    secret) when given. ``scopes``: what every request must carry. ``leeway``: seconds
    of clock skew allowed for ``exp`` and ``nbf``. ``jwks_refresh_interval``: at most
    one JWKS fetch per this many seconds.
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        jwks_uri: str | None = None,
        introspection_url: str | None = None,
        scopes: Iterable[str] = (),
        introspection_client: tuple[str, str] | None = None,
        leeway: float = 10.0,
        jwks_refresh_interval: float = 30.0,
    ) -> None:
        for name, url in (("issuer", issuer), ("audience", audience), ("jwks_uri", jwks_uri),
                          ("introspection_url", introspection_url)):
            if url is not None:
                _check_url(name, url)
        self.issuer = issuer
        self.audience = audience
        self.jwks_uri = jwks_uri
        self.introspection_url = introspection_url
        self.introspection_client = introspection_client
        self.scopes = normalize_scopes(list(scopes), "OAuthResourceServer") or frozenset()
        self.leeway = leeway
        # the audience as issued: exactly, and without (or with) a trailing slash (RFC 8707 §2)
        bare = audience.rstrip("/")
        self._audiences = [audience, *{bare, bare + "/"} - {audience}]
        parts = urllib.parse.urlsplit(audience)
        suffix = parts.path.rstrip("/")
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{suffix}"
        self.metadata_paths = frozenset({WELL_KNOWN, WELL_KNOWN + suffix})
        self.keys = KeySet(self._jwks_url, jwks_refresh_interval)
        self._known: dict[str, tuple[Principal, float]] = {}  # token -> (principal, until)
        self._refusals = Repeats(log)  # a client sends as many bad tokens as it likes
        self.bind(None)

    def bind(self, app: Registry | None) -> None:
        """Serve ``app``: a 401 names the scopes its resources need unless they say otherwise, with
        the server-wide ones (the least a client should ask for, MCP's scope selection strategy)."""
        basic = self.scopes | (app.scopes if app is not None else frozenset())
        if app is not None:
            self._refusals.interval = app.limits.log_repeat_interval
        self._missing = self._header(self.challenge(None, basic))
        self._invalid = self._header(self.challenge("invalid_token", basic))

    def __repr__(self) -> str:
        return f"OAuthResourceServer(issuer={self.issuer!r}, audience={self.audience!r})"

    def options(self) -> dict[str, Any]:
        """What rebuilds it in another process (``resourcekit run --workers``)."""
        return {"issuer": self.issuer, "audience": self.audience, "jwks_uri": self.jwks_uri,
                "introspection_url": self.introspection_url, "scopes": sorted(self.scopes),
                "introspection_client": self.introspection_client, "leeway": self.leeway,
                "jwks_refresh_interval": self.keys.refresh_interval}

    # --- what clients see -------------------------------------------------------------------

    def challenge(self, error: str | None, scopes: Iterable[str] | None) -> str:
        """A ``WWW-Authenticate`` value (RFC 6750 §3, RFC 9728 §5.1)."""
        params = []
        if error is not None:
            params.append(f'error="{error}"')
        wanted = " ".join(sorted(scopes or ()))
        if wanted:
            params.append(f'scope="{wanted}"')
        params.append(f'resource_metadata="{self.metadata_url}"')
        return "Bearer " + ", ".join(params)

    @staticmethod
    def _header(value: str) -> list[tuple[bytes, bytes]]:
        return [(b"www-authenticate", value.encode("latin-1"))]

    def metadata(self, app: Registry) -> bytes:
        """The Protected Resource Metadata document (RFC 9728 §2)."""
        document = {
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "scopes_supported": sorted(self.scopes | app.declared_scopes),
            "bearer_methods_supported": ["header"],
            "resource_name": app.title or app.name,
        }
        return orjson.dumps(document)

    # --- every request ----------------------------------------------------------------------

    async def authenticate(self, headers: Mapping[bytes, bytes], query: bytes) -> Principal:
        """The caller, or ``HTTPError`` 401/403 with the challenge."""
        value = headers.get(b"authorization")
        if query and b"access_token=" in query:
            self._refusals.warning("auth: refused a request: access token in the query string (RFC 6750 §2.3 "
                                   "is not allowed)")
            raise HTTPError(401, "Unauthorized", self._invalid)
        if value is None or value[:7].lower() != b"bearer ":
            raise HTTPError(401, "Unauthorized", self._missing)
        token = value[7:].strip().decode("latin-1")
        known = self._known.get(token)
        if known is not None and known[1] > time.time():
            principal = known[0]
        else:
            try:
                principal = await self._verify(token)
            except _Refused as exc:
                self._refusals.warning("auth: refused a token: %s", exc)
                raise HTTPError(401, "Unauthorized", self._invalid) from None
        if self.scopes and not self.scopes <= principal.scopes:
            raise HTTPError(403, "Forbidden: insufficient scope",
                            self._header(self.challenge("insufficient_scope", self.scopes)))
        return principal

    async def _verify(self, token: str) -> Principal:
        if not token or len(token) > 16384:
            raise _Refused("empty or oversized token")
        # a JWT is checked here, unless only introspection was configured (it then answers for all)
        if token.count(".") == 2 and (self.jwks_uri is not None or self.introspection_url is None):
            principal, until = await self._verify_jwt(token)
        elif self.introspection_url is not None:
            principal, until = await self._introspect(token)
        else:
            raise _Refused("not a JWT, and no introspection endpoint is configured")
        if len(self._known) >= MAX_REMEMBERED:
            now = time.time()
            self._known = {t: k for t, k in self._known.items() if k[1] > now}
            if len(self._known) >= MAX_REMEMBERED:
                self._known.clear()
        self._known[token] = (principal, until)
        return principal

    async def _jwks_url(self) -> str:
        if self.jwks_uri is None:
            document = await discover(self.issuer)
            url = document.get("jwks_uri")
            if not isinstance(url, str):
                raise FetchError(f"the metadata of {self.issuer} names no jwks_uri")
            self.jwks_uri = url
        return self.jwks_uri

    async def _verify_jwt(self, token: str) -> tuple[Principal, float]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise _Refused(f"malformed JWT: {exc}") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALGORITHMS:
            raise _Refused(f"algorithm {alg!r} is not accepted")
        if kid is not None and not isinstance(kid, str):
            raise _Refused("kid is not a string")
        key = await self.keys.key(kid, alg)
        if key is None:
            raise _Refused(f"no key {kid!r} for {alg} in the issuer's JWKS")
        try:
            claims = jwt.decode(token, key=key.key, algorithms=[alg], audience=self._audiences, issuer=self.issuer,
                                leeway=self.leeway, options={"require": _REQUIRED_CLAIMS})
        except jwt.PyJWTError as exc:
            raise _Refused(str(exc)) from None
        except (ValueError, TypeError) as exc:  # a claim of the wrong type
            raise _Refused(f"malformed claims: {exc}") from None
        return self._principal(claims), float(claims["exp"]) + self.leeway

    async def _introspect(self, token: str) -> tuple[Principal, float]:
        assert self.introspection_url is not None
        try:
            answer = await fetch_json(self.introspection_url, {"token": token, "token_type_hint": "access_token"},
                                      self.introspection_client)
        except FetchError as exc:
            raise _Refused(f"introspection failed: {exc}") from None
        if not isinstance(answer, dict) or answer.get("active") is not True:
            raise _Refused("introspection: the token is not active")
        now = time.time()
        if answer.get("iss", self.issuer) != self.issuer:
            raise _Refused(f"introspection: issued by {answer.get('iss')!r}")
        aud = answer.get("aud")
        if not any(a in self._audiences for a in ([aud] if isinstance(aud, str) else aud or [])):
            raise _Refused(f"introspection: audience {aud!r} is not this server")
        exp, nbf = answer.get("exp"), answer.get("nbf")
        if exp is not None and (not isinstance(exp, (int, float)) or exp + self.leeway <= now):
            raise _Refused("introspection: expired")
        if nbf is not None and (not isinstance(nbf, (int, float)) or nbf - self.leeway > now):
            raise _Refused("introspection: not yet valid")
        until = min(float(exp) + self.leeway if exp is not None else now + 60.0, now + INTROSPECTION_TTL)
        return self._principal(answer), until

    def _principal(self, claims: Mapping[str, Any]) -> Principal:
        scope = claims.get("scope", claims.get("scp", ""))
        scopes = scope.split() if isinstance(scope, str) else [s for s in scope if isinstance(s, str)] \
            if isinstance(scope, list) else []
        client = claims.get("client_id", claims.get("azp", claims.get("appid")))
        client_id = client if isinstance(client, str) else None
        subject = claims.get("sub")
        exp = claims.get("exp")
        caller = _Caller(subject if isinstance(subject, str) else client_id, client_id=client_id, scopes=scopes,
                         claims=dict(claims), issuer=self.issuer,
                         expires_at=float(exp) if isinstance(exp, (int, float)) else None)
        caller._server = self
        return caller


def _check_url(name: str, url: str) -> None:
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
        raise ValueError(f"{name} must be an absolute http(s) URL without a fragment, not {url!r}")
