"""Load an App from ``FILE[:ATTR]``: shared by the CLI and the HTTP reloader."""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from typing import Any

import orjson

from .app import App, default_app
from .transports import http

__all__ = ["CLIError", "apply_limits", "find_app", "load_app", "reload_factory", "split_target", "worker_factory"]

CONVENTIONAL_NAMES = ("app", "server", "mcp")


class CLIError(Exception):
    """One line for stderr, then exit status 1."""


def load_app(target: str) -> App:
    """Import ``FILE[:ATTR]`` and find its App."""
    path, attr = split_target(target)
    if not os.path.isfile(path):
        raise CLIError(f"no such file: {path}")
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)  # so the app can import its sibling modules
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # An app declaring 100,000 resources allocates millions of long-lived objects: the
    # cyclic GC would rescan them again and again while they are created. Pause it, then
    # freeze what the import built so later collections skip it.
    gc.disable()
    try:
        spec.loader.exec_module(module)
    except SystemExit:
        raise
    except BaseException as exc:
        raise CLIError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        gc.enable()
        gc.freeze()
    return find_app(vars(module), attr, path)


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


def reload_factory() -> http.ASGIApp:
    """The app uvicorn's reloader builds in each fresh worker process (``run --reload``)."""
    return http.ASGIApp(load_app(os.environ["RESOURCEKIT_TARGET"]), **_redis_options())


def worker_factory() -> http.ASGIApp:
    """The app each of uvicorn's worker processes builds (``run --workers N``): the target, the
    limits (JSON) and the Redis settings come in environment variables the parent set."""
    app = load_app(os.environ["RESOURCEKIT_TARGET"])
    apply_limits(app, orjson.loads(os.environ.get("RESOURCEKIT_LIMITS", "{}")))
    return http.ASGIApp(app, **_redis_options())
