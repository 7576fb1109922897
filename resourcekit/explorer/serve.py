"""``run_dev``: serve the endpoint and the explorer on loopback, reloading on demand, and open a browser."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

from .. import _loader
from ..transports import http
from . import DEFAULT_PORT
from .asgi import Explorer

__all__ = ["DEFAULT_PORT", "HOST", "reload_factory", "run_dev"]

HOST = "127.0.0.1"  # the explorer is for the developer at this machine: never another interface
RELOAD_FACTORY = "resourcekit.explorer.serve:reload_factory"  # each reloaded process builds this


def run_dev(target: str, *, port: int = DEFAULT_PORT, open_browser: bool = True, reload: bool = False) -> None:
    """Serve ``FILE[:ATTR]`` at ``/mcp`` and the explorer at ``/`` until interrupted."""
    http.check_port(HOST, port)  # before anything is printed, served or opened
    url = f"http://{HOST}:{port}/"
    if reload:
        directory = os.path.dirname(os.path.abspath(_loader.split_target(target)[0]))
        print(f"resourcekit: explorer at {url}", file=sys.stderr)
        _open_when_up(url, port, open_browser)
        http.run_http(None, host=HOST, port=port, reload_target=target, reload_dir=directory,
                      reload_factory=RELOAD_FACTORY)
        return
    app = _loader.load_app(target)  # an import error ends here, before anything is served
    print(f"resourcekit: explorer at {url}", file=sys.stderr)
    _open_when_up(url, port, open_browser)
    http.run_http(app, host=HOST, port=port, wrap=Explorer)


def reload_factory() -> Explorer | _loader.Unloadable:
    """The explorer around the app that uvicorn's reloader builds in each fresh process (503 to
    everything while the app does not load)."""
    mcp = _loader.reload_factory()
    return mcp if isinstance(mcp, _loader.Unloadable) else Explorer(mcp)


def _open_when_up(url: str, port: int, wanted: bool) -> None:
    if not wanted:
        return

    def opener() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection((HOST, port), timeout=1).close()
            except OSError:
                time.sleep(0.1)
                continue
            import webbrowser  # here, not at the top: `resourcekit run` (stdio) starts without it

            webbrowser.open(url)
            return

    threading.Thread(target=opener, name="open-browser", daemon=True).start()
