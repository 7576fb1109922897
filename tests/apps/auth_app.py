"""Fixture for the authorization tests: resources and templates with scopes, and who asked.

Every resource needs ``notes:read`` (the App's default) unless it says otherwise.
Run as a script (``python auth_app.py PORT ISSUER [INTROSPECTION_URL]``) it serves through
``app.run("http", auth=OAuthResourceServer(...))`` with a JWKS refresh interval of 2 s.
"""

from __future__ import annotations

import sys

from resourcekit import App, Context, ResourceNotFound

app = App("auth-fixture", scopes=["notes:read"])
ran: dict[str, int] = {"secret": 0, "vault": 0}
VAULT = {"gold": "42 bars", "silver": "7 bars"}


@app.resource("notes://public", scopes=[])
def public() -> str:
    return "anyone with a token"


@app.resource("notes://list")
def notes() -> str:
    return "groceries, taxes"


@app.resource("notes://secret", scopes=["notes:read", "secret"])
def secret() -> str:
    ran["secret"] += 1
    return "the cake is a lie"


@app.resource("debug://ran", scopes=[])
def handlers_ran() -> dict[str, int]:
    return ran


@app.resource("whoami://me", scopes=[])
def whoami(ctx: Context) -> dict[str, object]:
    p = ctx.principal
    return {"subject": p.subject, "client_id": p.client_id, "scopes": sorted(p.scopes), "iss": p.claims.get("iss")}


@app.template("vault://{name}", scopes=["vault"], lister=lambda: [{"name": n} for n in VAULT],
              complete={"name": lambda value: [n for n in VAULT if n.startswith(value)]})
def vault(name: str) -> str:
    ran["vault"] += 1
    if name not in VAULT:
        raise ResourceNotFound(f"vault://{name}")
    return VAULT[name]


@app.template("open://{name}", scopes=[], lister=lambda: [{"name": "a"}])
def open_template(name: str) -> str:
    return name


if __name__ == "__main__":
    from resourcekit.auth import OAuthResourceServer

    port, issuer = int(sys.argv[1]), sys.argv[2]
    introspection = sys.argv[3] if len(sys.argv) > 3 else None
    app.run("http", port=port, auth=OAuthResourceServer(
        issuer=issuer, audience=f"http://127.0.0.1:{port}/mcp", introspection_url=introspection,
        introspection_client=("rs", "rs-secret") if introspection else None, jwks_refresh_interval=2))
