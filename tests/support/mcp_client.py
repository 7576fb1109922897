"""The official ``mcp`` client, connected to a real ``resourcekit run`` subprocess."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.process import ROOT, env


@asynccontextmanager
async def stdio_session(
    target: str | Path,
    *,
    initialize: bool = True,
    message_handler: Callable[[Any], Any] | None = None,
    cwd: str | Path | None = None,
    extra_env: dict[str, str] | None = None,
    extra_args: list[str] | None = None,
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "resourcekit", "run", str(target), *(extra_args or [])],
        env={"PYTHONPATH": env()["PYTHONPATH"], **(extra_env or {})},
        cwd=str(cwd or ROOT),
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            kwargs: dict[str, Any] = {}
            if message_handler is not None:
                kwargs["message_handler"] = message_handler
            async with ClientSession(read, write, **kwargs) as session:
                if initialize:
                    await session.initialize()
                yield session


@asynccontextmanager
async def http_session(url: str, *, initialize: bool = True) -> AsyncIterator[ClientSession]:
    """The official client over Streamable HTTP at ``url``; ``initialize=False``: no handshake (a
    2026-07-28 client, which calls ``discover`` itself)."""
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        if initialize:
            await session.initialize()
        yield session


async def all_resources(session: ClientSession) -> list[Any]:
    return await _all(session.list_resources, "resources")


async def all_tools(session: ClientSession) -> list[Any]:
    """Every page of ``tools/list``."""
    return await _all(session.list_tools, "tools")


async def _all(list_page: Any, field: str) -> list[Any]:
    from mcp_types import PaginatedRequestParams

    out: list[Any] = []
    cursor = None
    pages = 0
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        result = await list_page(params=params)
        pages += 1
        out.extend(getattr(result, field))
        cursor = result.next_cursor
        if cursor is None:
            return out
        assert pages < 10_000
