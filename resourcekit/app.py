"""The App: the facade users hold.  It declares through the registry it is, and serves."""

from __future__ import annotations

import atexit
import contextlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import decorator_without_uri
from .registry import Registry
from .transports import http
from .transports.stdio import run_stdio

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .registry import ResourceOptions, TemplateOptions
    from .transports.http.asgi import ASGIApp
    from .watching import Watcher

__all__ = ["App", "default_app", "resource", "template"]

F = TypeVar("F", bound=Callable[..., Any])


class App(Registry):
    """A set of MCP resources and templates, served by ``run()`` or ``asgi``.

    ``page_size`` bounds every list page; ``max_message_size`` bounds one
    incoming message in bytes; ``ttl_ms`` and ``cache_scope`` are the caching
    hints of 2026-07-28 results unless a resource says otherwise.  ``lifespan``: an async context
    manager factory (called with the App if it takes a parameter), entered as ``@app.lifespan`` is.
    """

    _asgi: ASGIApp | None = None
    _served = False  # run() called or asgi taken: what _hint_if_nothing_served looks for

    # --- the lifespan ------------------------------------------------------------

    def lifespan(self, fn: F) -> F:
        """Declare the app's lifespan: an async generator function that sets up, yields the app
        state once, and tears down (it may take the App as its one parameter).

        Every serving process enters it before its first answer and exits it at shutdown; what it
        yields is ``ctx.state`` in handlers, and ``app.state`` while it runs.  Raises
        ``LifespanDefinitionError`` unless ``fn`` is an async generator function with one ``yield``.
        """
        self._lifespan.declare(fn)
        return fn

    def running(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """``async with app.running() as state:`` enters the lifespan (unless it already runs in this
        process) and exits it at the end: what a host's lifespan does for an app mounted where
        lifespan events are not forwarded.  Raises ``LifespanFailed`` when the lifespan raises."""
        return self._lifespan.running()

    # --- watchers ---------------------------------------------------------------

    def watch(self, uri_or_template: str, *, grace: float | None = None) -> Callable[[F], F]:
        """Declare a watcher: an async function run as one task per URI that ``uri_or_template``
        matches, exactly while that URI has subscribers, which reports changes with
        ``app.notify_changed(uri)``.

        Its parameters are the template's variables (typed as a template's), plus an optional
        ``Context``.  It is cancelled ``grace`` seconds (default 2) after the last subscriber
        leaves; one that raises is logged and started again.  On Redis one worker runs it.
        Definition mistakes raise at decoration: ``MissingParameterError``,
        ``UnknownParameterError``, ``QueryDefaultError`` or ``WatcherDefinitionError``.
        """
        if not isinstance(uri_or_template, str):
            raise decorator_without_uri("watch", uri_or_template)

        def decorator(fn: F) -> F:
            self.add_watcher(fn, uri_or_template, grace=grace)
            return fn
        return decorator

    def add_watcher(self, fn: Callable[..., Any], uri_or_template: str, *, grace: float | None = None) -> Watcher:
        """Register ``fn`` as the watcher of ``uri_or_template`` (what ``@app.watch`` does)."""
        from .watching import Watcher

        return self.tracker.watchers.declare(Watcher(fn, uri_or_template, grace))

    # --- serving ---------------------------------------------------------------

    def run(
        self,
        transport: str = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        **options: Any,
    ) -> None:
        """Serve until the client goes away (stdio) or the process is stopped (http)."""
        self._served = True
        if transport == "stdio":
            run_stdio(self)
        elif transport == "http":
            http.run_http(self, host=host, port=port, **options)
        else:
            raise ValueError(f"unknown transport {transport!r}; use 'stdio' or 'http'")

    @property
    def asgi(self) -> ASGIApp:
        """This app as a plain ASGI application serving MCP at ``/mcp`` (built once).

        For other options (allowed origins, auth hook, limits) build
        ``resourcekit.http.ASGIApp(app, ...)`` yourself.
        """
        if self._asgi is None:
            from .transports.http.asgi import ASGIApp  # the HTTP modules load on first use

            self._served = True
            self._asgi = ASGIApp(self)
        return self._asgi

    def __repr__(self) -> str:
        return f"App({self.name!r}, {len(self.resources)} resources, {len(self.templates)} templates)"


default_app = App("resourcekit")


def resource(uri: str, **options: Unpack[ResourceOptions]) -> Callable[[F], F]:
    """``@resource(uri)`` on the module's default App (for scripts without an App)."""
    return default_app.resource(uri, **options)


def template(uri_template: str, **options: Unpack[TemplateOptions]) -> Callable[[F], F]:
    """``@template(uri_template)`` on the module's default App."""
    return default_app.template(uri_template, **options)


def _hint_if_nothing_served() -> None:
    """At the exit of ``python app.py``: if the file declared resources and nothing served them (no
    ``app.run()``, no client, no ASGI server), say how to serve them, once, on stderr.  Nothing for a
    module run otherwise (``resourcekit run``, an import, a test), nor after a traceback."""
    main = sys.modules.get("__main__")
    path = sys.argv[0] if sys.argv else ""  # the script (its __file__ is gone by now)
    if (main is None or not path.endswith(".py") or main.__name__ != "__main__" or sys.flags.interactive
            or getattr(sys, "last_value", None) is not None):
        return
    apps = [(name, value) for name, value in vars(main).items() if isinstance(value, App)]
    if not apps and (len(default_app.resources) or len(default_app.templates)):
        apps = [("", default_app)]  # declared with resourcekit.resource / resourcekit.template
    for name, app in apps:
        declared = len(app.resources) + len(app.templates)
        if not declared or app._served or (app._tracker is not None and app._tracker.served):  # a client was
            continue
        way = f'end it with `if __name__ == "__main__": {name}.run()` to serve over stdio, or ' if name else ""
        print(f"resourcekit: {path} declared {declared} resource{'s' if declared != 1 else ''} and served "
              f"nothing: {way}start it with `resourcekit run {path}`", file=sys.stderr)
        return


atexit.register(_hint_if_nothing_served)
