"""Small apps built in-process that several test modules serve."""

from __future__ import annotations

from resourcekit import App


def counter_app(**options: object) -> tuple[App, dict[str, str]]:
    """``cfg://x`` and ``item://{n}{?rev}`` showing ``state["value"]`` (change it to change them)."""
    app = App("t", **options)  # type: ignore[arg-type]
    state = {"value": "v1"}
    app.resource("cfg://x")(lambda: state["value"])
    app.template("item://{n}{?rev}")(lambda n, rev="": f"{n}:{state['value']}")
    return app, state
