"""The benchmark resources written with resourcekit's public API.

Run: resourcekit run benchmarks/servers/rk_app.py   (BENCH_WORKLOAD selects the resources)
"""

from __future__ import annotations

import _content as c
import _otel  # noqa: F401  (BENCH_OTEL: the OpenTelemetry set-up, none by default)

from resourcekit import App

app = App("bench")

if c.WORKLOAD == "small":

    @app.resource(c.SMALL_URI)
    def small() -> str:
        return c.SMALL_TEXT

elif c.WORKLOAD == "small-async":

    @app.resource(c.SMALL_URI)
    async def small_async() -> str:
        return c.SMALL_TEXT

elif c.WORKLOAD == "big":
    @app.resource(c.BIG_URI)
    def big() -> str:
        return c.read_big()  # a new str per read, as from a file

elif c.WORKLOAD == "templates":

    def _make_item(i: int):  # type: ignore[no-untyped-def]
        def item(id: str) -> str:
            return c.item_text(i, id)

        return item

    for _i in range(c.N_TEMPLATES):
        app.template(c.template_uri(_i), name=f"tpl{_i}")(_make_item(_i))

elif c.list_size():

    def _make_static(i: int):  # type: ignore[no-untyped-def]
        def static() -> str:
            return c.static_text(i)

        return static

    for _i in range(c.list_size()):
        app.resource(c.static_uri(_i), name=f"r{_i}")(_make_static(_i))
