"""A fixture app whose content changes when the test asks (by reading control:// URIs)."""

from __future__ import annotations

from resourcekit import App

app = App("tracking")
state = {"counter": 0, "added": 0}


@app.resource("counter://value")
def counter() -> str:
    return f"counter={state['counter']}"


@app.template("counter://{name}/value")
def named(name: str) -> str:
    return f"{name}={state['counter']}"


@app.resource("static://same")
def same() -> str:
    return "never changes"


@app.resource("control://bump")
def bump() -> str:
    state["counter"] += 1
    app.notify_changed("counter://value")
    app.notify_changed("counter://x/value")
    return str(state["counter"])


@app.resource("control://touch")
def touch() -> str:
    for _ in range(1000):
        app.notify_changed("static://same")
    return "touched"


@app.resource("control://add")
def add() -> str:
    state["added"] += 1
    n = state["added"]
    app.resource(f"added://{n}")(lambda: f"added {n}")
    return f"added://{n}"
