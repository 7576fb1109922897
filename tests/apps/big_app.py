"""A resource of 100,000 bytes, for backpressure tests."""

from resourcekit import App, Limits

# few requests in flight: what the server may hold for a client that never reads is small
app = App("big", limits=Limits(max_inflight=32))
BIG = "y" * 100_000


@app.resource("big://one")
def big() -> str:
    return BIG
