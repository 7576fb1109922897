"""``run_http``: serve an App with uvicorn and httptools (the ``http`` extra), optionally reloading."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import orjson

from ..stdio import configure_logging
from .asgi import ASGIApp

if TYPE_CHECKING:
    from ...registry import Registry

SHUTDOWN_GRACE = 5  # seconds uvicorn waits for open responses when stopping
RELOAD_FACTORY = "resourcekit._loader:reload_factory"  # named, not imported: the loader sits above
WORKER_FACTORY = "resourcekit._loader:worker_factory"


def run_http(app: Registry | None, *, host: str = "127.0.0.1", port: int = 8000, reload_target: str | None = None,
             reload_dir: str | None = None, target: str | None = None, workers: int = 1,
             limits: dict[str, Any] | None = None, metrics: bool = False,
             wrap: Callable[[ASGIApp], Any] | None = None, reload_factory: str = RELOAD_FACTORY,
             redis_wait: float = 0.0, **options: Any) -> None:
    """Serve with uvicorn (the ``http`` extra) until SIGINT/SIGTERM; logs go to stderr.

    ``options`` go to ``ASGIApp``. ``reload_target`` (``FILE[:ATTR]``) restarts the server
    whenever a file in ``reload_dir`` changes (``resourcekit run --reload``); each fresh
    process loads it with ``RELOAD_FACTORY``. ``workers`` > 1 starts that many processes
    (uvicorn's supervisor) that each load ``target`` with ``WORKER_FACTORY``; they share
    their state through ``options["redis"]``. ``metrics``: serve ``GET /metrics`` (Prometheus
    text, the ``otel`` extra) on the same listener; one process only. ``wrap`` serves
    ``wrap(ASGIApp(...))`` instead (``resourcekit dev``: the explorer page around the
    endpoint), ``reload_factory`` names the factory of each reloaded process. With
    ``options["redis"]``, Redis must answer before serving starts (else ``SystemExit`` naming it), at
    once or within ``redis_wait`` seconds (``resourcekit run --redis-wait``).
    """
    try:
        import uvicorn

        from ._uvicorn import BoundedHeadersProtocol
    except ImportError:
        raise SystemExit("resourcekit: error: HTTP needs uvicorn and httptools: pip install 'resourcekit[http]'") \
            from None

    configure_logging()
    check_port(host, port)  # before "serving": uvicorn would only say so after it
    if options.get("redis"):
        check_redis(options["redis"], redis_wait)
    level = os.environ.get("RESOURCEKIT_LOG_LEVEL", "warning").lower()
    # uvicorn's access line is INFO: below that level it is dropped, but only after its client
    # address and quoted path were formatted, on every response; off unless it would show
    access_log = level in ("trace", "debug", "info")
    shown = f"[{host}]" if ":" in host else host
    if options.get("redis"):  # for processes that load the app themselves (reloader, workers)
        os.environ["RESOURCEKIT_REDIS_URL"] = options["redis"]
        os.environ["RESOURCEKIT_REDIS_PREFIX"] = options.get("redis_prefix", "resourcekit:")
    auth = options.get("auth")
    if auth is not None and (workers > 1 or reload_target is not None):  # each process builds its own
        if not callable(getattr(auth, "options", None)):
            raise ValueError("several workers or --reload rebuild auth in each process: only an "
                             "OAuthResourceServer can be passed on (an auth hook cannot)")
        os.environ["RESOURCEKIT_AUTH"] = orjson.dumps(auth.options()).decode()
    if workers > 1:
        if target is None or not options.get("redis"):
            raise ValueError("several workers need a target FILE[:ATTR] and a Redis URL (resourcekit run --workers)")
        os.environ["RESOURCEKIT_TARGET"] = target
        os.environ["RESOURCEKIT_LIMITS"] = orjson.dumps(limits or {}).decode()
        print(f"resourcekit: serving {target} at http://{shown}:{port}/mcp with {workers} workers", file=sys.stderr)
        uvicorn.run(WORKER_FACTORY, factory=True, workers=workers, host=host, port=port, log_level=level,
                    lifespan="on", timeout_graceful_shutdown=SHUTDOWN_GRACE, proxy_headers=False,
                    date_header=False, server_header=False, http=BoundedHeadersProtocol, access_log=access_log)
        return
    if reload_target is not None:
        assert reload_dir is not None
        os.environ["RESOURCEKIT_TARGET"] = reload_target
        print(f"resourcekit: serving {reload_target} at http://{shown}:{port}/mcp, reloading on changes "
              f"in {reload_dir}", file=sys.stderr)
        uvicorn.run(reload_factory, factory=True, reload=True, reload_dirs=[reload_dir], host=host, port=port,
                    log_level=level, timeout_graceful_shutdown=SHUTDOWN_GRACE, http=BoundedHeadersProtocol,
                    access_log=access_log)
        return
    assert app is not None
    asgi = ASGIApp(app, **options)
    served: Any = asgi
    if metrics:
        from ._metrics import MetricsEndpoint  # the otel extra: loaded only when asked for

        try:
            served = MetricsEndpoint(asgi)
        except ImportError as exc:
            raise SystemExit(f"resourcekit: error: {exc}") from None

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            # uvicorn waits for open responses before it sends lifespan.shutdown: end the
            # long-lived streams (GET, listen) now so that stopping takes no time
            asgi.close_soon()
            super().handle_exit(sig, frame)

    # no proxy-header rewriting (nothing here trusts a proxy by default) and no Date/Server
    # headers: together they cost more per request than MCP's own work; header sections
    # bounded in size and time (Limits.max_header_bytes, header_timeout)
    config = uvicorn.Config(served if wrap is None else wrap(asgi), host=host, port=port, log_level=level,
                            lifespan="on",
                            timeout_graceful_shutdown=SHUTDOWN_GRACE, proxy_headers=False,
                            date_header=False, server_header=False, http=BoundedHeadersProtocol,
                            access_log=access_log)
    print(f"resourcekit: serving {app.name!r} at http://{shown}:{port}{asgi.path}", file=sys.stderr)
    with contextlib.suppress(KeyboardInterrupt):
        _Server(config).run()  # a failed start-up (the lifespan raised) exits with status 3


def check_port(host: str, port: int) -> None:
    """SystemExit with one clear line if ``host:port`` cannot be bound (in use, not an address here)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind(address)
    except OSError as exc:
        reason = "is already in use (pick another with --port)" if exc.errno == errno.EADDRINUSE else \
            f"cannot be bound: {exc.strerror or exc}"
        raise SystemExit(f"resourcekit: error: port {port} on {host} {reason}") from None


def check_redis(url: str, wait: float) -> None:
    """SystemExit with one clear line if Redis at ``url`` does not answer (within ``wait`` seconds):
    a mistyped URL would otherwise serve 503 until someone looked."""
    try:
        from ...scaleout.broker import check_reachable
    except ImportError:
        raise SystemExit("resourcekit: error: --redis needs redis-py: pip install 'resourcekit[redis]'") from None
    try:
        check_reachable(url)
        return
    except ConnectionError as exc:
        if wait <= 0:
            raise SystemExit(f"resourcekit: error: {exc}: start it or correct the URL (or give it time to start "
                             "with --redis-wait SECONDS)") from None
        print(f"resourcekit: {exc}: waiting up to {wait:g} s for it", file=sys.stderr)
    try:
        check_reachable(url, wait)
    except ConnectionError as exc:
        raise SystemExit(f"resourcekit: error: {exc} after waiting {wait:g} s") from None
