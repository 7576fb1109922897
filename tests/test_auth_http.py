"""OAuth 2.1 resource-server authorization over raw HTTP, against a real authorization server
(in this process) and real ``resourcekit run --transport http --auth-*`` processes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import time

import httpx
import jwt
import orjson
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from tests.support.auth import AUTH_APP, challenge, resource_server
from tests.support.oauth_server import AuthorizationServer, SigningKey
from tests.support.process import COOKBOOK, command, env

READ = "resources/read"



@pytest.fixture(scope="module")
def server(auth_server):
    # no --auth-jwks: the keys are found through the authorization server's metadata
    with resource_server("--auth-issuer", auth_server.issuer, "--auth-audience", "{url}") as rs:
        yield rs


def token(auth_server, server, scopes="notes:read", **kwargs):
    return auth_server.mint(server.url, scopes, **kwargs)


# --- metadata and the 401 challenge ---------------------------------------------------------------


def test_protected_resource_metadata_is_public_at_both_well_known_paths(auth_server, server):
    root = f"http://127.0.0.1:{server.port}"
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        response = httpx.get(root + path)
        assert response.status_code == 200, path
        document = response.json()
        assert document["resource"] == server.url
        assert document["authorization_servers"] == [auth_server.issuer]
        assert document["bearer_methods_supported"] == ["header"]
        assert document["scopes_supported"] == ["notes:read", "secret", "vault"]
    assert httpx.get(root + "/.well-known/oauth-protected-resource/other").status_code == 404


def test_no_token_is_401_with_the_metadata_url_and_no_error(server):
    response = server.read("notes://list", None)
    assert response.status_code == 401
    # scope: what the App's resources need unless they say otherwise (where a client starts)
    assert challenge(response) == {
        "scope": "notes:read",
        "resource_metadata": f"http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource/mcp"}
    # another scheme is no bearer token either
    basic = server.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Authorization": "Basic eDp5"})
    assert basic.status_code == 401 and "error" not in challenge(basic)


def _bad_tokens(auth_server, server):
    now = int(time.time())
    foreign = SigningKey(auth_server.keys[0].kid)  # same kid, another key: a wrong signature
    attacker = SigningKey("attacker-key")
    yield "garbage", "not-a-token"
    yield "garbage JWT", "aaa.bbb.ccc"
    yield "expired", token(auth_server, server, lifetime=-120)
    yield "not yet valid", token(auth_server, server, nbf=now + 600)
    yield "wrong signature", token(auth_server, server, key=foreign)
    yield "wrong issuer", token(auth_server, server, iss="http://127.0.0.1:1/elsewhere")
    yield "wrong audience", auth_server.mint("http://127.0.0.1:1/mcp", "notes:read")
    yield "audience list without us", auth_server.mint(["http://a.example/mcp", "http://b.example"], "notes:read")
    yield "no exp", token(auth_server, server, drop=("exp",))
    yield "no aud", auth_server.mint(None, "notes:read")
    yield "unknown kid", token(auth_server, server, key=attacker)
    yield "jku to the attacker's keys", token(auth_server, server, key=attacker,
                                               headers={"jku": f"{auth_server.root}/attacker-jwks"})
    public_pem = auth_server.keys[0].private.public_key().public_bytes(
        encoding=Encoding.PEM, format=PublicFormat.SubjectPublicKeyInfo)
    claims = jwt.decode(token(auth_server, server), options={"verify_signature": False})
    header_kid = {"kid": auth_server.keys[0].kid}
    yield "HS256 signed with the public key", _hs256(claims, public_pem, header_kid)
    yield "alg none", _unsigned(claims, header_kid)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hs256(claims, secret, headers):
    """Algorithm confusion: HMAC keyed with the issuer's public key."""
    signing = _b64(json.dumps({"alg": "HS256", "typ": "JWT", **headers}).encode()) + "." + \
        _b64(json.dumps(claims).encode())
    return signing + "." + _b64(hmac.new(secret, signing.encode(), hashlib.sha256).digest())


def _unsigned(claims, headers):
    return _b64(json.dumps({"alg": "none", **headers}).encode()) + "." + _b64(json.dumps(claims).encode()) + "."


def test_every_bad_token_is_the_same_401_and_the_reason_is_only_in_the_log(auth_server, server):
    expected = None
    for why, bad in _bad_tokens(auth_server, server):
        for era_session in (None, "stateful"):
            if era_session is None:
                response = server.read("notes://list", bad)
            else:
                response = server.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                   "clientInfo": {"name": "x", "version": "0"}}}, bad)
            assert response.status_code == 401, why
            params = challenge(response)
            assert params["error"] == "invalid_token", why
            assert set(params) == {"error", "scope", "resource_metadata"}, why
            body = response.json()
            assert body["error"]["message"] == "Unauthorized", why
            expected = expected or response.content
            assert response.content == expected, why  # the body says nothing of what failed
    assert auth_server.count("/attacker-jwks") == 0  # jku is never followed
    log = server.log
    for reason in ("Signature has expired", "not yet valid", "Signature verification failed", "Invalid issuer",
                   "Audience doesn't match", '"exp" claim', '"aud" claim', "no key 'attacker-key'",
                   "algorithm 'HS256' is not accepted", "algorithm 'none' is not accepted"):
        assert reason in log, reason


def test_a_token_in_the_query_string_is_refused_even_a_valid_one(auth_server, server):
    good = token(auth_server, server)
    response = server.call(READ, {"uri": "notes://list"}, good, query=f"?access_token={good}")
    assert response.status_code == 401 and challenge(response)["error"] == "invalid_token"
    assert "query string" in server.log


# --- a valid token, and scopes --------------------------------------------------------------------


def test_a_valid_token_reads_in_both_eras_and_the_handler_sees_the_principal(auth_server, server):
    good = token(auth_server, server, "notes:read extra", subject="alice", client_id="app-1")
    stateless = server.read("notes://list", good)
    assert stateless.status_code == 200 and stateless.json()["result"]["contents"][0]["text"] == "groceries, taxes"
    sid = server.initialize(good)
    me = server.read("whoami://me", good, session=sid)
    assert orjson.loads(me.json()["result"]["contents"][0]["text"]) == {
        "subject": "alice", "client_id": "app-1", "scopes": ["extra", "notes:read"], "iss": auth_server.issuer}


def _ran(server, tok):
    return orjson.loads(server.read("debug://ran", tok).json()["result"]["contents"][0]["text"])


def test_missing_scopes_are_403_insufficient_scope_and_the_handler_never_runs(auth_server, server):
    reader = token(auth_server, server, "notes:read")
    before = _ran(server, reader)
    sid = server.initialize(reader)
    for session in (None, sid):
        response = server.read("notes://secret", reader, session)
        assert response.status_code == 403
        params = challenge(response)
        assert params["error"] == "insufficient_scope" and params["scope"] == "notes:read secret"
        assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
        assert response.json()["error"]["data"] == {"uri": "notes://secret", "scopes": ["notes:read", "secret"]}
    # scopes=[a, b] needs both: "secret" alone is not enough
    only_secret = token(auth_server, server, "secret")
    assert server.read("notes://secret", only_secret).status_code == 403
    # with both, it is read
    both = token(auth_server, server, "notes:read secret")
    assert server.read("notes://secret", both).json()["result"]["contents"][0]["text"] == "the cake is a lie"
    assert _ran(server, reader)["secret"] == before["secret"] + 1


def test_a_protected_template_answers_the_same_whether_the_instance_exists_or_not(auth_server, server):
    reader = token(auth_server, server, "notes:read")
    before = _ran(server, reader)
    present, absent = server.read("vault://gold", reader), server.read("vault://nothing-here", reader)
    assert present.status_code == absent.status_code == 403
    assert challenge(present) == challenge(absent)
    assert present.json()["error"]["code"] == absent.json()["error"]["code"]
    assert _ran(server, reader)["vault"] == before["vault"]
    allowed = token(auth_server, server, "vault")
    assert server.read("vault://gold", allowed).json()["result"]["contents"][0]["text"] == "42 bars"
    assert server.read("vault://nothing-here", allowed).json()["error"]["code"] == -32602  # now: not found


def test_subscribe_and_listen_need_the_scopes_too(auth_server, server):
    reader = token(auth_server, server, "notes:read")
    sid = server.initialize(reader)
    subscribe = server.call("resources/subscribe", {"uri": "notes://secret"}, reader, session=sid)
    assert subscribe.status_code == 403 and challenge(subscribe)["scope"] == "notes:read secret"
    assert server.call("resources/subscribe", {"uri": "notes://list"}, reader, session=sid).json()["result"] == {}
    listen = server.call("subscriptions/listen", {"notifications": {"resourceSubscriptions": ["vault://gold"]}},
                         reader)
    assert listen.status_code == 403 and challenge(listen)["scope"] == "vault"


def test_listings_and_completion_show_only_what_the_token_may_read(auth_server, server):
    def listed(tok):
        resources = server.call("resources/list", {}, tok).json()["result"]["resources"]
        templates = server.call("resources/templates/list", {}, tok).json()["result"]["resourceTemplates"]
        return {r["uri"] for r in resources}, {t["uriTemplate"] for t in templates}

    public = {"notes://public", "debug://ran", "whoami://me", "open://a"}
    assert listed(token(auth_server, server, "")) == (public, {"open://{name}"})
    assert listed(token(auth_server, server, "notes:read")) == (public | {"notes://list"}, {"open://{name}"})
    everything = listed(token(auth_server, server, "notes:read secret vault"))
    assert everything == (public | {"notes://list", "notes://secret", "vault://gold", "vault://silver"},
                          {"open://{name}", "vault://{name}"})
    ref = {"ref": {"type": "ref/resource", "uri": "vault://{name}"}, "argument": {"name": "name", "value": "g"}}
    hidden = server.call("completion/complete", ref, token(auth_server, server, "notes:read"))
    assert hidden.json()["result"]["completion"]["values"] == []
    shown = server.call("completion/complete", ref, token(auth_server, server, "vault"))
    assert shown.json()["result"]["completion"]["values"] == ["gold"]


# --- sessions belong to their principal ------------------------------------------------------------


def test_a_session_is_bound_to_its_principal_and_survives_a_step_up(auth_server, server):
    alice = token(auth_server, server, "notes:read", subject="alice")
    sid = server.initialize(alice)
    bob = token(auth_server, server, "notes:read secret", subject="bob")
    assert server.read("notes://list", bob, session=sid).status_code == 404
    # alice asks her authorization server for more (step-up): a new token, the same session
    stepped_up = token(auth_server, server, "notes:read secret", subject="alice")
    response = server.read("notes://secret", stepped_up, session=sid)
    assert response.status_code == 200 and response.json()["result"]["contents"][0]["text"] == "the cake is a lie"
    assert server.read("notes://secret", alice, session=sid).status_code == 403


def test_health_and_preflight_need_no_token(server):
    root = f"http://127.0.0.1:{server.port}"
    assert httpx.get(root + "/healthz").status_code == 200
    preflight = httpx.options(server.url, headers={"Origin": "http://localhost:3000",
                                                   "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 204


# --- keys rotate; opaque tokens are introspected --------------------------------------------------------


def test_a_rotated_key_is_picked_up_and_unknown_kids_cost_one_fetch_per_interval():
    with AuthorizationServer() as auth_server, resource_server(auth_server.issuer, script=True) as rs:
        attacker = SigningKey("made-up")
        assert rs.read("notes://list", auth_server.mint(rs.url, "notes:read")).status_code == 200
        started = time.monotonic()
        fetched = auth_server.count("/jwks")
        assert fetched == 1
        rotated = auth_server.rotate()
        new = auth_server.mint(rs.url, "notes:read", key=rotated)
        # right after the last fetch an unknown kid waits for the interval (2 s here, 30 s by default) ...
        flood = [auth_server.mint(rs.url, "notes:read", key=attacker, headers={"kid": f"made-up-{i}"})
                 for i in range(20)]
        refused = [rs.read("notes://list", t).status_code for t in [new, *flood]]
        if time.monotonic() - started < 1.5:  # (a loaded machine may have let the interval pass)
            assert refused == [401] * 21 and auth_server.count("/jwks") == fetched
        assert auth_server.count("/jwks") <= fetched + 1
        # ... then the new key is fetched and accepted, without a restart
        deadline = time.monotonic() + 10
        while rs.read("notes://list", new).status_code != 200:
            assert time.monotonic() < deadline, "the rotated key was never accepted"
            time.sleep(0.2)
        # the old key is gone from the JWKS: a token it signs now is refused
        old = auth_server.mint(rs.url, "notes:read", key=SigningKey("key-1"))
        assert rs.read("notes://list", old).status_code == 401
        assert auth_server.count("/jwks") <= fetched + 4


def test_opaque_tokens_are_introspected_once_and_cached_until_expiry():
    credentials = {"RESOURCEKIT_AUTH_CLIENT_ID": "rs", "RESOURCEKIT_AUTH_CLIENT_SECRET": "rs-secret"}
    with AuthorizationServer() as auth_server, \
            resource_server("--auth-issuer", auth_server.issuer, "--auth-audience", "{url}", "--auth-introspection",
                            f"{auth_server.issuer}/introspect", extra_env=credentials) as rs:
        secret = auth_server.register("opaque-client", {"notes:read", "secret"}, opaque=True)
        granted = httpx.post(f"{auth_server.issuer}/token", auth=("opaque-client", secret), data={
            "grant_type": "client_credentials", "resource": rs.url, "scope": "notes:read secret"}).json()
        good = granted["access_token"]
        assert good.count(".") == 0  # opaque: only introspection can tell
        for _ in range(3):
            response = rs.read("notes://secret", good)
            assert response.status_code == 200, response.text
        assert auth_server.count("/introspect") == 1
        scoped = auth_server.mint_opaque(rs.url, "notes:read")
        assert rs.read("notes://secret", scoped).status_code == 403
        for why, bad in (("inactive", auth_server.mint_opaque(rs.url, "notes:read", active=False)),
                         ("other audience", auth_server.mint_opaque("http://127.0.0.1:1/mcp", "notes:read")),
                         ("unknown", "no-such-token")):
            response = rs.read("notes://list", bad)
            assert response.status_code == 401 and challenge(response)["error"] == "invalid_token", why
        assert "not active" in rs.log and "is not this server" in rs.log


# --- the command line ---------------------------------------------------------------------------


def test_auth_flags_are_refused_with_stdio_and_need_issuer_and_audience():
    stdio = subprocess.run(command("run", str(AUTH_APP), "--auth-issuer", "https://as.example"),
                           env=env(), capture_output=True, text=True, timeout=30)
    assert stdio.returncode == 1 and "--auth-issuer only applies to --transport http" in stdio.stderr
    half = subprocess.run(command("run", str(AUTH_APP), "--transport", "http", "--auth-issuer", "https://as.example"),
                          env=env(), capture_output=True, text=True, timeout=30)
    assert half.returncode == 1 and "--auth-audience" in half.stderr
    bad = subprocess.run(command("run", str(AUTH_APP), "--transport", "http", "--auth-issuer", "as.example",
                                 "--auth-audience", "https://mcp.example/mcp"),
                         env=env(), capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1 and "issuer must be an absolute http(s) URL" in bad.stderr


def test_auth_scope_is_required_of_every_request_and_advertised(auth_server):
    with resource_server("--auth-issuer", auth_server.issuer, "--auth-audience", "{url}", "--auth-jwks",
                         f"{auth_server.issuer}/jwks", "--auth-scope", "mcp", "--auth-scope", "notes:read") as rs:
        document = httpx.get(f"http://127.0.0.1:{rs.port}/.well-known/oauth-protected-resource").json()
        assert document["scopes_supported"] == ["mcp", "notes:read", "secret", "vault"]
        missing = rs.read("notes://public", None)
        assert challenge(missing)["scope"] == "mcp notes:read"
        lacking = rs.read("notes://public", auth_server.mint(rs.url, "notes:read"))
        assert lacking.status_code == 403 and challenge(lacking)["scope"] == "mcp notes:read"
        both = auth_server.mint(rs.url, "notes:read mcp")
        assert rs.read("notes://public", both).status_code == 200
        secret = rs.read("notes://secret", both)
        assert secret.status_code == 403 and challenge(secret)["scope"] == "mcp notes:read secret"


def test_the_cookbook_example_with_a_token_from_the_token_endpoint():
    with AuthorizationServer() as auth_server, \
            resource_server("--auth-issuer", auth_server.issuer, "--auth-audience", "{url}",
                            target=COOKBOOK / "protected_notes.py") as rs:
        auth_server.register("demo", {"notes:read", "diary:read"}, secret="demo-secret")

        def grant(scope):
            response = httpx.post(f"{auth_server.issuer}/token", auth=("demo", "demo-secret"), data={
                "grant_type": "client_credentials", "resource": rs.url, "scope": scope})
            assert response.status_code == 200, response.text
            return response.json()["access_token"]

        reader = grant("notes:read")
        assert jwt.get_unverified_header(reader)["typ"] == "at+jwt"  # RFC 9068, from Authlib's generator
        assert jwt.decode(reader, options={"verify_signature": False})["aud"] == rs.url  # RFC 8707 resource
        listed = rs.call("resources/list", {}, reader).json()["result"]
        assert [r["uri"] for r in listed["resources"]] == [
            "notes://about", "notes://whoami", "notes://note/groceries", "notes://note/talk"]
        assert listed["cacheScope"] == "private"
        assert rs.read("notes://note/talk", reader).json()["result"]["contents"][0]["text"] == "draft, rehearse"
        for day in ("monday", "someday"):
            refused = rs.read(f"diary://{day}", reader)
            assert refused.status_code == 403 and challenge(refused)["scope"] == "diary:read notes:read"
        diarist = grant("notes:read diary:read")
        assert rs.read("diary://monday", diarist).json()["result"]["contents"][0]["text"] == "It rained."
        me = orjson.loads(rs.read("notes://whoami", diarist).json()["result"]["contents"][0]["text"])
        assert me == {"subject": "demo", "client_id": "demo", "scopes": ["diary:read", "notes:read"]}


def test_a_forbidden_member_of_a_2025_03_26_batch_is_an_error_inside_the_batch(auth_server, server):
    reader = token(auth_server, server, "notes:read")
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}}}
    sid = server.post(init, reader).headers["mcp-session-id"]
    headers = {"MCP-Protocol-Version": "2025-03-26"}
    server.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, reader, session=sid, headers=headers)
    batch = [{"jsonrpc": "2.0", "id": 1, "method": READ, "params": {"uri": "notes://list"}},
             {"jsonrpc": "2.0", "id": 2, "method": READ, "params": {"uri": "notes://secret"}}]
    response = server.post(batch, reader, session=sid, headers=headers)
    assert response.status_code == 200
    answers = {m["id"]: m for m in response.json()}
    assert answers[1]["result"]["contents"][0]["text"] == "groceries, taxes"
    assert answers[2]["error"]["code"] == -32030


@pytest.fixture(scope="module")
def tools_server(auth_server):
    with resource_server("--auth-issuer", auth_server.issuer, "--auth-audience", "{url}", "--resource-tools") as rs:
        yield rs


def test_resource_tools_honour_scopes(auth_server, tools_server):
    server = tools_server
    tok = token(auth_server, server)  # notes:read only
    session = server.initialize(tok)
    listed = server.call("tools/call", {"name": "list_resources", "arguments": {}}, tok, session=session)
    shown = listed.json()["result"]["structuredContent"]
    uris = {r["uri"] for r in shown["resources"]}
    assert "notes://list" in uris and "notes://secret" not in uris
    assert all(not t["uriTemplate"].startswith("vault://") for t in shown["resourceTemplates"])
    before = server.call(READ, {"uri": "debug://ran"}, tok, session=session).json()["result"]
    # reading a resource the token may not read: the step-up 403, the handler never runs
    denied = server.call("tools/call", {"name": "read_resource", "arguments": {"uri": "notes://secret"}}, tok,
                         session=session, rid=2)
    assert denied.status_code == 403
    assert challenge(denied)["error"] == "insufficient_scope"
    after = server.call(READ, {"uri": "debug://ran"}, tok, session=session, rid=3).json()["result"]
    assert before["contents"][0]["text"] == after["contents"][0]["text"]
    ok = server.call("tools/call", {"name": "read_resource", "arguments": {"uri": "notes://list"}}, tok,
                     session=session, rid=4)
    assert ok.json()["result"]["content"][0]["text"] == "groceries, taxes"
