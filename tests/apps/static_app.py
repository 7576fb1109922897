"""Data that never changes, on a serverless host: App(subscribe=False, list_changed=False).
Reading control://add declares one more resource at run time (a listing that still changes)."""

from __future__ import annotations

from resourcekit import App

app = App("static", subscribe=False, list_changed=False)


@app.resource("config://app")
def config() -> str:
    return "static"


@app.template("doc://{name}")
def doc(name: str) -> str:
    return f"doc {name}"


@app.resource("control://add")
def add() -> str:
    app.resource("config://added")(lambda: "added")
    return "added"
