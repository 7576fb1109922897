"""A small but real OAuth 2.1 authorization server for the tests, built with Authlib and served
over HTTP (the standard library's server) in a thread.

Authlib's ``AuthorizationServer`` issues the access tokens through the ``client_credentials``
grant (RFC 6749 §4.4) as RFC 9068 JWTs (its ``JWTBearerTokenGenerator``; the RFC 8707
``resource`` becomes ``aud``), or as opaque tokens for clients configured so, and answers
RFC 7662 introspection (its ``IntrospectionEndpoint``) for the resource server. Beside it: RFC
8414 metadata, the JWKS, and key rotation on demand. ``mint`` signs arbitrary tokens
(expired, wrong audience, foreign keys...) for the failure cases.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from authlib.oauth2 import AuthorizationServer as AuthlibServer
from authlib.oauth2 import OAuth2Request
from authlib.oauth2.rfc6749 import ClientMixin, TokenMixin, grants
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from joserfc.jwk import KeySet
from jwt.algorithms import ECAlgorithm, RSAAlgorithm


class SigningKey:
    def __init__(self, kid: str, alg: str = "RS256") -> None:
        self.kid = kid
        self.alg = alg
        if alg.startswith("ES"):
            self.private: Any = ec.generate_private_key(ec.SECP256R1())
            self.jwk = json.loads(ECAlgorithm.to_jwk(self.private.public_key()))
        else:
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            self.jwk = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        self.jwk.update(kid=kid, use="sig", alg=alg)
        algorithm = ECAlgorithm if alg.startswith("ES") else RSAAlgorithm
        self.private_jwk = {**json.loads(algorithm.to_jwk(self.private)), "kid": kid, "use": "sig", "alg": alg}


class Client(ClientMixin):
    """A registered client (Authlib's model): client_credentials only, secret by Basic or POST."""

    def __init__(self, client_id: str, secret: str, scopes: set[str], opaque: bool = False) -> None:
        self.client_id = client_id
        self.secret = secret
        self.scopes = scopes
        self.opaque = opaque

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> None:
        return None

    def get_allowed_scope(self, scope: str) -> str:
        return " ".join(sorted(set((scope or "").split()) & self.scopes)) if scope else ""

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return False

    def check_client_secret(self, client_secret: str) -> bool:
        return secrets.compare_digest(self.secret, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return False

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type == "client_credentials"


class Token(TokenMixin):
    """An issued token as the introspection endpoint sees it."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record

    def check_client(self, client: Any) -> bool:
        return bool(client.get_client_id() == self.record["client_id"])

    def get_scope(self) -> str:
        return str(self.record["scope"])

    def get_expires_in(self) -> int:
        return int(self.record["exp"] - self.record["iat"])

    def is_expired(self) -> bool:
        return bool(self.record["exp"] < time.time())

    def is_revoked(self) -> bool:
        return not self.record["active"]


class _Introspection(IntrospectionEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def __init__(self, owner: AuthorizationServer, server: AuthlibServer) -> None:
        super().__init__(server)
        self.owner = owner

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        record = self.owner.tokens.get(token_string)
        return Token(record) if record is not None else None

    def check_permission(self, token: Token, client: Any, request: Any) -> bool:
        return bool(client.get_client_id() == self.owner.resource_server[0])

    def introspect_token(self, token: Token) -> dict[str, Any]:
        record = token.record
        return {"active": True, "iss": self.owner.issuer, "token_type": "Bearer",
                **{k: record[k] for k in ("client_id", "sub", "aud", "scope", "exp", "iat")}}


class _JWTGenerator(JWTBearerTokenGenerator):
    """RFC 9068 tokens signed with the current key; ``aud`` is the request's RFC 8707 resource."""

    def __init__(self, owner: AuthorizationServer) -> None:
        super().__init__(owner.issuer)
        self.owner = owner

    def get_jwks(self) -> KeySet:
        with self.owner.lock:
            return KeySet.import_key_set({"keys": [self.owner.keys[0].private_jwk]})

    def get_audiences(self, client: Any, user: Any, scope: str) -> str:
        return str(_CURRENT.resource)


_CURRENT = threading.local()  # the request being answered (one thread per request)


class _Request(OAuth2Request):
    """A form POST as Authlib reads it (what its framework integrations build)."""

    def __init__(self, method: str, uri: str, form: dict[str, str], headers: Any) -> None:
        super().__init__(method=method, uri=uri, headers=headers)
        self._form = form
        self.payload = BasicOAuth2Payload(form)

    @property
    def args(self) -> dict[str, str]:
        return {}

    @property
    def form(self) -> dict[str, str]:
        return self._form


class AuthorizationServer:
    """``with AuthorizationServer() as auth_server:`` serves at ``auth_server.issuer``."""

    def __init__(self, path: str = "", port: int = 0) -> None:
        self.path = path
        self.keys = [SigningKey("key-1")]
        self.clients: dict[str, Client] = {}
        self.tokens: dict[str, dict[str, Any]] = {}  # every token issued, for introspection
        self.hits: dict[str, int] = {}
        self.requests: list[str] = []
        self.resource_server = ("rs", "rs-secret")  # what the MCP server introspects with
        self.lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._http.daemon_threads = True
        self.issuer = f"http://127.0.0.1:{self._http.server_address[1]}{path}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self.authlib = _authlib_server(self)
        self.register(self.resource_server[0], set(), secret=self.resource_server[1])

    def __enter__(self) -> AuthorizationServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()

    @property
    def root(self) -> str:
        host = urllib.parse.urlsplit(self.issuer)
        return f"{host.scheme}://{host.netloc}"

    @property
    def metadata(self) -> dict[str, Any]:
        base = self.issuer
        return {"issuer": self.issuer, "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token", "jwks_uri": f"{base}/jwks",
                "introspection_endpoint": f"{base}/introspect", "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"]}

    # --- keys ----------------------------------------------------------------------------------

    def rotate(self, keep_old: bool = False, alg: str = "RS256") -> SigningKey:
        """A new signing key (first in the JWKS); the old ones go unless ``keep_old``."""
        key = SigningKey(f"key-{secrets.token_hex(4)}", alg)
        with self.lock:
            self.keys = [key, *self.keys] if keep_old else [key]
        return key

    def jwks(self) -> dict[str, Any]:
        with self.lock:
            return {"keys": [k.jwk for k in self.keys]}

    # --- tokens --------------------------------------------------------------------------------

    def register(self, client_id: str, scopes: set[str], opaque: bool = False, secret: str | None = None) -> str:
        secret = secret or secrets.token_urlsafe(16)
        self.clients[client_id] = Client(client_id, secret, scopes, opaque)
        return secret

    def mint(self, audience: str | list[str] | None, scopes: str = "", *, subject: str = "alice",
             client_id: str = "test-client", lifetime: float = 300, key: SigningKey | None = None,
             headers: dict[str, Any] | None = None, drop: tuple[str, ...] = (), **claims: Any) -> str:
        """A JWT access token (RFC 9068) signed with the current key unless ``key`` is given."""
        now = int(time.time())
        payload: dict[str, Any] = {"iss": self.issuer, "sub": subject, "client_id": client_id, "iat": now,
                                   "exp": now + int(lifetime), "jti": secrets.token_hex(8), "scope": scopes}
        if audience is not None:
            payload["aud"] = audience
        payload.update(claims)
        for name in drop:
            payload.pop(name, None)
        signer = key or self.keys[0]
        return jwt.encode(payload, signer.private, algorithm=signer.alg,
                          headers={"kid": signer.kid, "typ": "at+jwt", **(headers or {})})

    def mint_opaque(self, audience: str, scopes: str = "", *, active: bool = True, lifetime: float = 300,
                    subject: str = "alice", client_id: str = "test-client") -> str:
        """An opaque token only introspection can tell about (as if issued to ``client_id``)."""
        token = secrets.token_urlsafe(24)
        now = int(time.time())
        self.tokens[token] = {"client_id": client_id, "sub": subject, "aud": audience, "scope": scopes,
                              "iat": now, "exp": now + int(lifetime), "active": active}
        return token

    def answer(self, endpoint: str, method: str, url: str, body: bytes, headers: Any) -> Any:
        """Authlib answers the token and introspection endpoints: (status, body, headers)."""
        request = _Request(method, url, dict(urllib.parse.parse_qsl(body.decode())), headers)
        _CURRENT.resource = request.form.get("resource")
        if endpoint == "token":
            if not _CURRENT.resource:
                return 400, {"error": "invalid_target"}, []
            return self.authlib.create_token_response(request)
        return self.authlib.create_endpoint_response(_Introspection.ENDPOINT_NAME, request)

    def count(self, path: str) -> int:
        with self.lock:
            return self.hits.get(path, 0)


def _authlib_server(owner: AuthorizationServer) -> AuthlibServer:
    server = AuthlibServer()
    server.query_client = owner.clients.get  # type: ignore[method-assign]
    server.create_oauth2_request = lambda request: request  # type: ignore[method-assign]
    server.handle_response = lambda status, body, headers: (status, body, headers)  # type: ignore[method-assign]
    server.send_signal = lambda name, *args, **kwargs: None  # type: ignore[method-assign]
    opaque = BearerTokenGenerator(lambda *a, **k: secrets.token_urlsafe(24))
    jwts = _JWTGenerator(owner)

    def generate(grant_type: str, client: Client, user: Any = None, scope: str | None = None,
                 expires_in: int | None = None, include_refresh_token: bool = True) -> dict[str, Any]:
        generator = opaque if client.opaque else jwts
        return generator(grant_type=grant_type, client=client, user=user, scope=scope, expires_in=expires_in,
                         include_refresh_token=False)

    def save_token(token: dict[str, Any], request: Any) -> None:
        now = int(time.time())
        owner.tokens[token["access_token"]] = {
            "client_id": request.client.get_client_id(), "sub": request.client.get_client_id(),
            "aud": _CURRENT.resource, "scope": token.get("scope", ""), "iat": now,
            "exp": now + int(token["expires_in"]), "active": True}

    server.register_token_generator("default", generate)
    server.save_token = save_token  # type: ignore[method-assign]
    server.register_grant(grants.ClientCredentialsGrant)
    server.register_endpoint(_Introspection(owner, server))
    return server


def _handler(server: AuthorizationServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _count(self) -> str:
            path = urllib.parse.urlsplit(self.path).path
            with server.lock:
                server.hits[path] = server.hits.get(path, 0) + 1
                server.requests.append(f"{self.command} {path}")
            return path

        def do_GET(self) -> None:
            path = self._count()
            issuer_path = server.path
            if path in (f"/.well-known/oauth-authorization-server{issuer_path}",
                        f"/.well-known/openid-configuration{issuer_path}"):
                self._answer(200, server.metadata)
            elif path == f"{issuer_path}/jwks":
                self._answer(200, server.jwks())
            else:
                self._answer(404, {"error": "not_found"})

        def do_POST(self) -> None:
            path = self._count()
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            endpoint = {f"{server.path}/token": "token", f"{server.path}/introspect": "introspect"}.get(path)
            if endpoint is None:
                self._answer(404, {"error": "not_found"})
                return
            status, answer, _ = server.answer(endpoint, "POST", server.root + self.path, body, self.headers)
            self._answer(status, answer)

    return Handler



if __name__ == "__main__":  # python tests/support/oauth_server.py PORT: try a protected server by hand
    import sys

    server = AuthorizationServer(port=int(sys.argv[1]) if len(sys.argv) > 1 else 9000)
    server.register("demo", {"notes:read", "diary:read"}, secret="demo-secret")
    print(f"authorization server at {server.issuer}: client 'demo', secret 'demo-secret', "
          "scopes notes:read diary:read", file=sys.stderr)
    server._http.serve_forever()
