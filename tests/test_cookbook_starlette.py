"""cookbook/starlette_mount.py served by uvicorn, read through the official mcp client in both eras."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.http_server import free_port, wait_for_port
from tests.support.process import ROOT, env

pytestmark = pytest.mark.anyio


@pytest.fixture
def served() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "cookbook.starlette_mount:web", "--port", str(port),
                             "--log-level", "warning", "--timeout-graceful-shutdown", "5"],
                            cwd=ROOT, env=env(), stderr=subprocess.PIPE)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}", proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()


async def test_mounted_app_serves_mcp_beside_other_routes(served):
    base_url, proc = served
    assert httpx.get(f"{base_url}/health", timeout=10).json() == {"ok": True, "resources": 1, "sessions": 0}
    async with streamable_http_client(f"{base_url}/api/mcp") as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        assert [str(r.uri) for r in (await session.list_resources()).resources] == ["inventory://stock"]
        assert (await session.read_resource("inventory://stock/pears")).contents[0].text == "pears: 3"
        assert httpx.get(f"{base_url}/health", timeout=10).json()["sessions"] == 1
    async with Client(f"{base_url}/api/mcp", mode="2026-07-28") as client:
        assert (await client.read_resource("inventory://stock")).contents[0].text == '{"apples":12,"pears":3}'
    # the configured origin gets CORS headers; a foreign one is refused
    preflight = httpx.options(f"{base_url}/api/mcp", timeout=10, headers={
        "origin": "https://dashboard.example.com", "access-control-request-method": "POST"})
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "https://dashboard.example.com"
    assert httpx.post(f"{base_url}/api/mcp", content=b"{}", timeout=10,
                      headers={"origin": "https://evil.example.com"}).status_code == 403
    proc.send_signal(signal.SIGTERM)  # the lifespan shutdown runs and the server exits cleanly
    assert proc.wait(10) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()
