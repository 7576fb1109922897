"""cookbook/starlette_mount.py served by uvicorn, read through the official mcp client."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import ROOT, env
from tests.http_server import free_port

pytestmark = pytest.mark.anyio


@pytest.fixture
def base_url():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "cookbook.starlette_mount:web", "--port", str(port),
                             "--log-level", "warning"], cwd=ROOT, env=env(), stderr=subprocess.PIPE)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()


async def test_mounted_app_serves_mcp_beside_other_routes(base_url):
    assert httpx.get(f"{base_url}/health", timeout=10).json() == {"ok": True, "resources": 1}
    async with streamable_http_client(f"{base_url}/api/mcp") as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        assert [str(r.uri) for r in (await session.list_resources()).resources] == ["inventory://stock"]
        assert (await session.read_resource("inventory://stock/pears")).contents[0].text == "pears: 3"
