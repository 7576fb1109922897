"""Load an App from ``FILE[:ATTR]``: shared by the CLI and the HTTP reloader."""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from types import ModuleType
from typing import TYPE_CHECKING, Any

import orjson

from ._frozen import frozen_after
from .app import App, default_app
from .transports.stdio import configure_logging

if TYPE_CHECKING:
    from .transports.http.asgi import ASGIApp

__all__ = ["CLIError", "Unloadable", "apply_limits", "find_app", "load_app", "reload_factory", "split_target",
           "worker_factory"]

CONVENTIONAL_NAMES = ("app", "server", "mcp")
RESOURCE_TOOLS_ENV = "RESOURCEKIT_RESOURCE_TOOLS"  # "1": every app loaded here serves its resources as tools


class CLIError(Exception):
    """One line for stderr, then exit status 1."""


def load_app(target: str) -> App:
    """Import ``FILE[:ATTR]`` or ``package.module[:ATTR]`` and find its App.

    A file inside a package (its directory has ``__init__.py``) is imported under its dotted
    name, from the directory above the top package, so its relative imports work.
    """
    path, attr = split_target(target)
    if os.path.isfile(path):
        root, dotted = package_root(os.path.abspath(path))
        shown = path
    elif _is_module_name(path):
        root, dotted, shown = os.getcwd(), path, path  # as uvicorn: the current directory is importable
    else:
        raise CLIError(f"no such file: {path}")
    if root not in sys.path:
        sys.path.insert(0, root)  # so the app can import its sibling modules (or its package)
    # an app declaring 100,000 resources makes millions of long-lived objects: the GC is paused
    # while they are made, and they are frozen (``_frozen``)
    try:
        with frozen_after():
            module = _import(path, dotted)
            app = find_app(vars(module), attr, shown)
            # its listing index, made in one step from the declarations (Registry.resources) while
            # the GC is paused and frozen with them, rather than by the first list
            app.resources  # noqa: B018
    except SystemExit:
        raise
    except CLIError:
        raise
    except BaseException as exc:
        raise CLIError(import_failure(shown, exc)) from exc
    if os.environ.get(RESOURCE_TOOLS_ENV) == "1":
        app.resource_tools = True
    if app.resource_tools:  # a template tool's name is checked at start-up: said here in one line
        from .errors import DefinitionError
        from .methods.template_tools import tool_table

        try:
            tool_table(app)
        except DefinitionError as exc:
            raise CLIError(f"{shown}: {exc}") from None
    return app


def package_root(path: str) -> tuple[str, str]:
    """(the directory to import from, the dotted module name) of a Python file."""
    directory, filename = os.path.split(path)
    parts = [] if filename == "__init__.py" else [os.path.splitext(filename)[0]]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
    if directory == os.path.dirname(path) or not all(part.isidentifier() for part in parts):
        return os.path.dirname(path), ""  # not in a package: loaded from its file
    return directory, ".".join(parts)


def _is_module_name(text: str) -> bool:
    return not text.endswith(".py") and all(part.isidentifier() for part in text.split("."))


def _import(path: str, dotted: str) -> ModuleType:
    if dotted:
        try:
            return importlib.import_module(dotted)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (dotted == exc.name or dotted.startswith(exc.name + ".")):
                raise CLIError(f"no such file or module: {dotted} (looked in {sys.path[0]})") from None
            raise
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def import_failure(shown: str, exc: BaseException) -> str:
    """Where importing the app failed, with the app's part of the traceback (not resourcekit's or importlib's)."""
    report = traceback.TracebackException.from_exception(exc)
    ours = os.path.dirname(os.path.abspath(__file__)) + os.sep
    report.stack = traceback.StackSummary.from_list(
        [frame for frame in report.stack if not frame.filename.startswith(("<frozen", ours))])
    where = ""
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f" at {exc.filename}:{exc.lineno}"
    elif report.stack:
        last = report.stack[-1]
        where = f" at {last.filename}:{last.lineno}"
    # the "Type: message" line: a SyntaxError's comes after its source line and caret, any other's first
    # (its message may go on: a TemplateSyntaxError's shows the template and a caret under the fault)
    lines = "".join(report.format_exception_only()).strip().splitlines()
    summary = lines[-1] if isinstance(exc, SyntaxError) else lines[0]
    return f"importing {shown} failed{where}: {summary}\n" + "".join(report.format(chain=False)).rstrip()


def use_resource_tools() -> None:
    """``--resource-tools``: apps loaded from now on, here and in child processes, serve resources as tools."""
    os.environ[RESOURCE_TOOLS_ENV] = "1"


def split_target(target: str) -> tuple[str, str | None]:
    """``FILE[:ATTR]`` → (file, attribute or None)."""
    # "C:\\x.py" has a drive colon; only a colon after the file name names an attribute
    head, sep, tail = target.rpartition(":")
    if sep and head and tail.isidentifier() and not os.path.isfile(target):
        return head, tail
    return target, None


def find_app(namespace: dict[str, Any], attr: str | None, path: str) -> App:
    if attr is not None:
        found = namespace.get(attr)
        if not isinstance(found, App):
            raise CLIError(f"{path} has no App named {attr!r}")
        return found
    for name in CONVENTIONAL_NAMES:
        if isinstance(namespace.get(name), App):
            return namespace[name]  # type: ignore[no-any-return]
    apps = {id(v): v for v in namespace.values() if isinstance(v, App)}
    if len(apps) == 1:
        return next(iter(apps.values()))
    if len(apps) > 1:
        raise CLIError(f"{path} defines several Apps; name one as {path}:NAME")
    if len(default_app.resources) or len(default_app.templates):
        return default_app
    raise CLIError(f"{path} defines no App and registers no resources")


def apply_limits(app: App, limits: dict[str, Any]) -> App:
    """The app with the limits given on the command line (the others as the app set them)."""
    try:
        app.limits = app.limits.replace(**limits)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    app.router.max_uri_length = app.limits.max_uri_length  # the router copied it at construction
    return app


def _redis_options() -> dict[str, Any]:
    """What the parent process passed on: the Redis settings, and the OAuth settings (``run --auth-*``)."""
    url = os.environ.get("RESOURCEKIT_REDIS_URL")
    options: dict[str, Any] = {}
    if url:
        options.update(redis=url, redis_prefix=os.environ.get("RESOURCEKIT_REDIS_PREFIX", "resourcekit:"))
    auth = os.environ.get("RESOURCEKIT_AUTH")
    if auth:
        from .auth import OAuthResourceServer  # the auth extra, only when authorization was asked for

        settings = orjson.loads(auth)
        client = settings.pop("introspection_client", None)
        options["auth"] = OAuthResourceServer(**settings, introspection_client=tuple(client) if client else None)
    return options


def reload_factory() -> ASGIApp | Unloadable:
    """The app uvicorn's reloader builds in each fresh worker process (``run --reload``).

    When the app does not load (a syntax error while it is being edited), the error is said once, as
    ``resourcekit run`` says it at start-up, and every request is answered 503 until a change to the
    file brings the next reload: raising here would print uvicorn's and multiprocessing's tracebacks
    and leave requests waiting on a socket nobody accepts on.
    """
    configure_logging()
    try:
        app = load_app(os.environ["RESOURCEKIT_TARGET"])
    except CLIError as exc:
        message = str(exc)
        print(f"resourcekit: error: {message}\nresourcekit: answering 503 until the app loads again "
              "(saving a change reloads it)", file=sys.stderr)
        return Unloadable(message.splitlines()[0])
    from .transports.http.asgi import ASGIApp

    return ASGIApp(app, **_redis_options())


class Unloadable:
    """The ASGI app served while the app does not load (``run --reload``): 503, saying why, to everything."""

    def __init__(self, reason: str) -> None:
        self.body = f"resourcekit: the app does not load: {reason}\n".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})  # lifespan.startup / .shutdown
                if message["type"] == "lifespan.shutdown":
                    return
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 503, "headers": [
            (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(self.body)).encode()),
            (b"retry-after", b"1")]})
        await send({"type": "http.response.body", "body": self.body})


def worker_factory() -> ASGIApp:
    """The app each of uvicorn's worker processes builds (``run --workers N``): the target, the
    limits (JSON) and the Redis settings come in environment variables the parent set."""
    configure_logging()
    app = load_app(os.environ["RESOURCEKIT_TARGET"])
    apply_limits(app, orjson.loads(os.environ.get("RESOURCEKIT_LIMITS", "{}")))
    from .transports.http.asgi import ASGIApp

    return ASGIApp(app, **_redis_options())
