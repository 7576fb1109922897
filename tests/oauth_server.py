"""A small but real OAuth 2.1 authorization server for the tests, served over HTTP in a thread.

It publishes RFC 8414 metadata and a JWKS, issues access tokens through the
``client_credentials`` grant (RFC 8707 ``resource`` becomes ``aud``; JWTs per RFC 9068,
or opaque tokens for clients configured so), answers RFC 7662 introspection for the
resource server, and rotates its signing keys on demand. ``mint`` signs arbitrary
tokens (expired, wrong audience, foreign keys...) for the failure cases.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
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


class Client:
    def __init__(self, secret: str, scopes: set[str], opaque: bool = False) -> None:
        self.secret = secret
        self.scopes = scopes
        self.opaque = opaque


class AuthorizationServer:
    """``with AuthorizationServer() as auth_server:`` serves at ``auth_server.issuer``."""

    def __init__(self, path: str = "", port: int = 0) -> None:
        self.path = path
        self.keys = [SigningKey("key-1")]
        self.clients: dict[str, Client] = {}
        self.opaque: dict[str, dict[str, Any]] = {}  # opaque token -> introspection answer
        self.hits: dict[str, int] = {}
        self.requests: list[str] = []
        self.resource_server = ("rs", "rs-secret")  # what the MCP server introspects with
        self.lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._http.daemon_threads = True
        self.issuer = f"http://127.0.0.1:{self._http.server_address[1]}{path}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

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
        self.clients[client_id] = Client(secret, scopes, opaque)
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
                    subject: str = "alice", client_id: str = "test-client", **fields: Any) -> str:
        token = secrets.token_urlsafe(24)
        now = int(time.time())
        answer = {"active": active, "iss": self.issuer, "aud": audience, "sub": subject, "client_id": client_id,
                  "scope": scopes, "exp": now + int(lifetime), "iat": now, "token_type": "Bearer"}
        answer.update(fields)
        self.opaque[token] = answer
        return token

    def _grant(self, form: dict[str, str], auth: str | None) -> tuple[int, dict[str, Any]]:
        client_id, secret = _client_auth(form, auth)
        client = self.clients.get(client_id or "")
        if client is None or not secrets.compare_digest(client.secret, secret or ""):
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") != "client_credentials":
            return 400, {"error": "unsupported_grant_type"}
        wanted = set(form.get("scope", "").split()) or client.scopes
        if not wanted <= client.scopes:
            return 400, {"error": "invalid_scope"}
        resource = form.get("resource")
        if not resource:
            return 400, {"error": "invalid_target"}
        scope = " ".join(sorted(wanted))
        if client.opaque:
            token = self.mint_opaque(resource, scope, subject=client_id or "", client_id=client_id or "")
        else:
            token = self.mint(resource, scope, subject=client_id or "", client_id=client_id or "")
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": 300, "scope": scope}

    def _introspect(self, form: dict[str, str], auth: str | None) -> tuple[int, dict[str, Any]]:
        client_id, secret = _client_auth(form, auth)
        if (client_id, secret) != self.resource_server:
            return 401, {"error": "invalid_client"}
        answer = self.opaque.get(form.get("token", ""))
        if answer is None or not answer["active"] or answer["exp"] < time.time():
            return 200, {"active": False}
        return 200, answer

    def count(self, path: str) -> int:
        with self.lock:
            return self.hits.get(path, 0)


def _client_auth(form: dict[str, str], auth: str | None) -> tuple[str | None, str | None]:
    if auth and auth.lower().startswith("basic "):
        pair = base64.b64decode(auth[6:]).decode()
        client_id, _, secret = pair.partition(":")
        return urllib.parse.unquote(client_id), urllib.parse.unquote(secret)
    return form.get("client_id"), form.get("client_secret")


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
            form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
            auth = self.headers.get("Authorization")
            if path == f"{server.path}/token":
                self._answer(*server._grant(form, auth))
            elif path == f"{server.path}/introspect":
                self._answer(*server._introspect(form, auth))
            else:
                self._answer(404, {"error": "not_found"})

    return Handler



if __name__ == "__main__":  # python tests/oauth_server.py PORT: try a protected server by hand
    import sys

    server = AuthorizationServer(port=int(sys.argv[1]) if len(sys.argv) > 1 else 9000)
    server.register("demo", {"notes:read", "diary:read"}, secret="demo-secret")
    print(f"authorization server at {server.issuer}: client 'demo', secret 'demo-secret', "
          "scopes notes:read diary:read", file=sys.stderr)
    server._http.serve_forever()
