"""Protected notes: OAuth 2.1 scopes per resource (docs/authorization.md).

Run it against a local authorization server (the tests' small one serves for trying):
    python tests/support/oauth_server.py 9000                       # client "demo", secret "demo-secret"
    resourcekit run cookbook/protected_notes.py --transport http \\
        --auth-issuer http://127.0.0.1:9000 --auth-audience http://127.0.0.1:8000/mcp
Over stdio nothing is checked (the MCP spec leaves stdio to its environment).
"""

from __future__ import annotations

from resourcekit import App, Context, ResourceNotFound

# every resource needs notes:read unless it says otherwise
app = App("protected-notes", version="1.0.0", scopes=["notes:read"])

NOTES = {"groceries": "milk, eggs", "talk": "draft, rehearse"}
DIARY = {"monday": "It rained.", "tuesday": "It rained again."}


@app.resource("notes://about", scopes=[])
def about() -> str:
    """Readable with any valid token."""
    return "Notes for whoever holds notes:read; the diary also needs diary:read."


@app.resource("notes://whoami", scopes=[])
def whoami(ctx: Context) -> dict[str, object]:
    """Who the token says you are."""
    p = ctx.principal
    if p is None:  # stdio
        return {"subject": None}
    return {"subject": p.subject, "client_id": p.client_id, "scopes": sorted(p.scopes)}


@app.template("notes://note/{name}", lister=lambda: [{"name": n} for n in NOTES])
def note(name: str) -> str:
    if name not in NOTES:
        raise ResourceNotFound(f"notes://note/{name}")
    return NOTES[name]


@app.template("diary://{day}", scopes=["notes:read", "diary:read"], lister=lambda: [{"day": d} for d in DIARY])
def diary(day: str) -> str:
    """Both scopes are needed; without them the answer is 403 whether the day exists or not."""
    if day not in DIARY:
        raise ResourceNotFound(f"diary://{day}")
    return DIARY[day]
