"""Two templates whose tools would share a name: resource_tools start-up fails naming both."""

from __future__ import annotations

from resourcekit import App

app = App("clash")


@app.template("a://{x}", tool="lookup")
def first(x: str) -> str:
    return x


@app.template("b://{x}")
def lookup(x: str) -> str:
    return x
