"""Real resource servers for the authorization tests: ``resourcekit run --auth-*`` or the fixture script."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.support.http_server import free_port, wait_for_port
from tests.support.process import APPS, command, env, stop_process

AUTH_APP = APPS / "auth_app.py"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
ACCEPT = "application/json, text/event-stream"
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


class ResourceServer:
    """A server process whose audience is its own URL; its log (stderr) readable as ``log``."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, errors: Any) -> None:
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self._errors = errors

    @property
    def log(self) -> str:
        self._errors.flush()
        return Path(self._errors.name).read_text(errors="replace")

    def post(self, body: Any, token: str | None = None, *, session: str | None = None, query: str = "",
             headers: dict[str, str] | None = None) -> httpx.Response:
        sent = {"Accept": ACCEPT, "Content-Type": "application/json", **(headers or {})}
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        if session is not None:
            sent["Mcp-Session-Id"] = session
        return httpx.post(self.url + query, json=body, headers=sent, timeout=10)

    def initialize(self, token: str) -> str:
        response = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}, token)
        assert response.status_code == 200, response.text
        sid = response.headers["mcp-session-id"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, token, session=sid)
        return sid

    def read(self, uri: str, token: str | None, session: str | None = None) -> httpx.Response:
        return self.call("resources/read", {"uri": uri}, token, session=session)

    def call(self, method: str, params: dict[str, Any], token: str | None, *, session: str | None = None,
             rid: int = 1, query: str = "") -> httpx.Response:
        """A handshake-era request in ``session``, or (without one) a stateless 2026-07-28 request."""
        if session is None:
            params = {**params, "_meta": MODERN}
            headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
            if "uri" in params:
                headers["Mcp-Name"] = params["uri"]
            return self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, token,
                             headers=headers, query=query)
        return self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, token, session=session,
                         query=query)


@contextlib.contextmanager
def resource_server(*args: str, script: bool = False, extra_env: dict[str, str] | None = None,
                    target: Path = AUTH_APP) -> Iterator[ResourceServer]:
    """``resourcekit run auth_app.py --transport http --port P`` plus ``args`` (``{url}`` is replaced
    by the server's own endpoint URL); ``script=True``: ``python auth_app.py P *args``."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    filled = [a.replace("{url}", url) for a in args]
    if script:
        argv = [sys.executable, str(target), str(port), *filled]
    else:
        argv = command("run", str(target), "--transport", "http", "--port", str(port), *filled)
    with tempfile.NamedTemporaryFile("w+b", suffix=".log") as errors:
        proc = subprocess.Popen(argv, env={**env(), **(extra_env or {})}, stdout=subprocess.DEVNULL, stderr=errors)
        try:
            try:
                wait_for_port(port, proc)
            except RuntimeError:
                errors.flush()
                raise RuntimeError(Path(errors.name).read_text()) from None
            yield ResourceServer(proc, port, errors)
        finally:
            stop_process(proc)


def challenge(response: httpx.Response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer ...`` header."""
    value = response.headers["www-authenticate"]
    assert value.startswith("Bearer ")
    params = {}
    for part in value[7:].split(", "):
        name, _, quoted = part.partition("=")
        params[name] = quoted.strip('"')
    return params
