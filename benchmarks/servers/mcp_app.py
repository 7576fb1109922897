"""The benchmark resources written with the official SDK's high-level MCPServer (mcp 2.3.0).

Run: python benchmarks/servers/mcp_app.py   (BENCH_WORKLOAD selects the resources)
Over Streamable HTTP (W5): BENCH_TRANSPORT=http BENCH_PORT=8000 python benchmarks/servers/mcp_app.py
"""

from __future__ import annotations

import os

import _content as c
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench", log_level="WARNING")

if c.WORKLOAD == "small":

    @server.resource(c.SMALL_URI)
    def small() -> str:
        return c.SMALL_TEXT

elif c.WORKLOAD == "big":
    @server.resource(c.BIG_URI)
    def big() -> str:
        return c.read_big()  # a new str per read, as from a file

elif c.WORKLOAD == "templates":

    def _make_item(i: int):  # type: ignore[no-untyped-def]
        def item(id: str) -> str:
            return c.item_text(i, id)

        return item

    for _i in range(c.N_TEMPLATES):
        server.resource(c.template_uri(_i), name=f"tpl{_i}")(_make_item(_i))

elif c.list_size():

    def _make_static(i: int):  # type: ignore[no-untyped-def]
        def static() -> str:
            return c.static_text(i)

        return static

    for _i in range(c.list_size()):
        server.resource(c.static_uri(_i), name=f"r{_i}")(_make_static(_i))

if __name__ == "__main__":
    if os.environ.get("BENCH_TRANSPORT") == "http":  # its defaults: stateful sessions, SSE replies
        server.run("streamable-http", host="127.0.0.1", port=int(os.environ.get("BENCH_PORT", "8000")))
    else:
        server.run("stdio")
