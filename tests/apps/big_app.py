"""A resource of 100,000 bytes, for backpressure tests."""

from resourcekit import App

app = App("big")
BIG = "y" * 100_000


@app.resource("big://one")
def big() -> str:
    return BIG
