"""An app with a lifespan that notes its entry and exit in $LIFESPAN_LOG (tests/test_lifespan.py);
with $LIFESPAN_FAIL set, it raises that message at start-up."""

import os

from resourcekit import App, Context

app = App("lifespan-demo")


def note(event: str) -> None:
    path = os.environ.get("LIFESPAN_LOG")
    if path:
        with open(path, "a") as log:
            log.write(f"{event} {os.getpid()}\n")


@app.lifespan
async def connect():
    failure = os.environ.get("LIFESPAN_FAIL")
    if failure:
        raise RuntimeError(failure)
    note("enter")
    yield {"greeting": "hello from the lifespan"}
    note("exit")  # after the yield, not in a finally: shutting down is a normal end


@app.resource("state://greeting")
def greeting(ctx: Context) -> str:
    return ctx.state["greeting"]


@app.template("state://echo/{word}", lister=lambda: [{"word": w} for w in sorted(app.state or {})])
async def echo(word: str, ctx: Context) -> str:
    return f"{word}: {ctx.state.get(word, '?')}"
