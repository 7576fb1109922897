"""The method tables: one function per JSON-RPC method, per era.

A method takes the ``Request`` and returns a result dict (answered at once), an
awaitable (run as a task), or ``PENDING`` (it arranged to answer later, e.g.
from a worker thread).  It raises ``MCPError`` for anything the client got wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import extensions, listing
from .contents import combined_version, to_contents
from .context import LEVEL_RANK, LEVELS, Context
from .errors import InvalidParams, ResourceNotFound
from .versions import HANDSHAKE_VERSIONS, LATEST_HANDSHAKE, META_VERSION, MODERN_VERSIONS

if TYPE_CHECKING:
    from .handler import Completer, Handler
    from .protocol import Connection, Request

__all__ = ["HANDSHAKE_METHODS", "LEVEL_RANK", "MODERN_METHODS", "NOTIFICATIONS", "ON_CANCEL", "PENDING"]

PENDING: Any = object()
MAX_COMPLETIONS = 100


def _str_param(req: Request, name: str) -> str:
    value = req.params.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"Invalid params: '{name}' must be a non-empty string", {"param": name})
    return value


def _cache_hints(req: Request, result: dict[str, Any], handler: Handler | None = None) -> dict[str, Any]:
    if req.modern:
        app = req.conn.app
        ttl = handler.ttl_ms if handler is not None and handler.ttl_ms is not None else app.ttl_ms
        scope = handler.cache_scope if handler is not None and handler.cache_scope else app.cache_scope
        result["ttlMs"] = ttl
        result["cacheScope"] = scope
    return result


# --- lifecycle -------------------------------------------------------------------


def initialize(req: Request) -> dict[str, Any]:
    conn = req.conn
    requested = req.params.get("protocolVersion")
    version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE
    caps = req.params.get("capabilities")
    conn.protocol_version = version
    conn.client_capabilities = caps if type(caps) is dict else {}
    info = req.params.get("clientInfo")
    conn.client_info = info if type(info) is dict else {}
    req.version = version
    server = conn.server
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": server.capabilities(version),
        "serverInfo": server.server_info,
    }
    if conn.app.instructions:
        result["instructions"] = conn.app.instructions
    return result


def ping(req: Request) -> dict[str, Any]:
    return {}


def set_level(req: Request) -> dict[str, Any]:
    level = req.params.get("level")
    if level not in LEVEL_RANK:
        raise InvalidParams(f"Invalid params: level must be one of {list(LEVELS)}", {"level": level})
    req.conn.log_level = level
    return {}


def discover(req: Request) -> dict[str, Any]:
    server = req.conn.server
    result: dict[str, Any] = {
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": server.capabilities(req.version or MODERN_VERSIONS[-1]),
    }
    if server.app.instructions:
        result["instructions"] = server.app.instructions
    return _cache_hints(req, result)


# --- resources -------------------------------------------------------------------


def read(req: Request) -> Any:
    uri = _str_param(req, "uri")
    if req.conn.wants(extensions.SEP_2093, req):  # contents that carry Resource metadata
        return extensions.read(req, uri)
    return serve(req, uri, read_result)


def serve(req: Request, uri: str, build: Callable[[Request, Handler, str, Any], dict[str, Any]]) -> Any:
    """Call the handler of ``uri`` and answer ``build(req, handler, uri, value)``.

    Async handlers run as a task on the loop; sync ones, and ``build`` (encoding and
    hashing) with them, in a worker thread.
    """
    match = req.conn.app.router.match(uri)
    if match is None:
        raise ResourceNotFound(uri)
    handler = match.handler
    kwargs = match.kwargs
    if handler.sig.context_param is not None:
        kwargs[handler.sig.context_param] = _context(req, uri, match.raw)
    if handler.sig.is_async:
        return _serve_async(req, handler, uri, kwargs, build)
    fn = handler.fn
    req.conn.server.runner.submit(lambda: build(req, handler, uri, fn(**kwargs)), req.complete)
    return PENDING


async def _serve_async(
    req: Request,
    handler: Handler,
    uri: str,
    kwargs: dict[str, Any],
    build: Callable[[Request, Handler, str, Any], dict[str, Any]],
) -> Any:
    return build(req, handler, uri, await handler.fn(**kwargs))


def read_result(req: Request, handler: Handler, uri: str, value: Any) -> dict[str, Any]:
    contents = to_contents(uri, value, handler.mime_type)
    req.conn.app.tracker.observe(uri, combined_version(contents))
    wire = [c.to_wire(META_VERSION) for c in contents]
    return _cache_hints(req, {"contents": wire}, handler)


def _context(req: Request, uri: str, raw: dict[str, Any]) -> Context:
    conn = req.conn
    loop = conn.server.loop

    def emit(message: dict[str, Any]) -> None:
        # handlers may log from worker threads; the reply channel belongs to the loop
        loop.call_soon_threadsafe(req.notify, message)

    return Context(
        conn.app, uri, params=raw, request_id=req.id, protocol_version=req.version,
        meta=req.meta, log_level=req.log_level, emit=emit,
    )


def list_resources(req: Request) -> Any:
    if "uri" in req.params:  # SEP-2093: the children of a listable resource
        return _maybe_in_thread(req, extensions.list_children, True)
    if "filter" in req.params:  # seed 000
        extensions.filter_for(req.params["filter"])  # a bad filter is answered at once
        return _maybe_in_thread(req, extensions.list_filtered, True)
    return _maybe_in_thread(req, listing.list_resources, req.conn.app.listed_templates)


def list_templates(req: Request) -> dict[str, Any]:
    return _cache_hints(req, listing.list_templates(req))


def _maybe_in_thread(req: Request, fn: Callable[[Request], dict[str, Any]], needs_thread: Any) -> Any:
    """Listers may do I/O (a database, a directory): run pages that call them in a worker."""
    if not needs_thread:
        return _cache_hints(req, fn(req))
    req.conn.server.runner.submit(lambda: _cache_hints(req, fn(req)), req.complete)
    return PENDING


# --- completion -------------------------------------------------------------------


async def complete(req: Request) -> dict[str, Any]:
    ref = req.params.get("ref")
    argument = req.params.get("argument")
    if type(ref) is not dict or type(argument) is not dict:
        raise InvalidParams("Invalid params: 'ref' and 'argument' must be objects")
    name, value = argument.get("name"), argument.get("value", "")
    if not isinstance(name, str) or not isinstance(value, str):
        raise InvalidParams("Invalid params: argument needs a string 'name' and 'value'")
    context = req.params.get("context")
    resolved = context.get("arguments") if type(context) is dict else None
    resolved = resolved if type(resolved) is dict else {}
    values: list[str] = []
    if ref.get("type") == "ref/resource":
        uri = ref.get("uri")
        router = req.conn.app.router
        handler = router.templates.get(uri) if isinstance(uri, str) else None
        completer = handler.completers.get(name) if handler is not None else None
        if completer is not None:
            values = await _call_completer(req, completer, value, resolved)
    elif ref.get("type") != "ref/prompt":
        raise InvalidParams("Invalid params: ref.type must be 'ref/resource' or 'ref/prompt'")
    completion: dict[str, Any] = {"values": values[:MAX_COMPLETIONS], "total": len(values),
                                  "hasMore": len(values) > MAX_COMPLETIONS}
    return {"completion": completion}


async def _call_completer(req: Request, completer: Completer, value: str, resolved: dict[str, Any]) -> list[str]:
    args = (value, resolved) if completer.with_context else (value,)
    fn = completer.fn
    if completer.is_async:
        out = await fn(*args)
    else:
        out = await req.conn.server.runner.call(lambda: list(fn(*args)))
    return [str(v.value) if hasattr(v, "value") else str(v) for v in out]



# --- subscriptions -------------------------------------------------------------------


def _uris(req: Request) -> list[str]:
    """``uri``, or seed 000's ``uris`` list."""
    uris = req.params.get("uris")
    if uris is None:
        return [_str_param(req, "uri")]
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) and u for u in uris):
        raise InvalidParams("Invalid params: 'uris' must be a non-empty list of URIs", {"param": "uris"})
    return uris


def subscribe(req: Request) -> dict[str, Any]:
    app = req.conn.app
    uris = _uris(req)
    for uri in uris:
        if app.router.match(uri) is None:
            raise ResourceNotFound(uri)
    for uri in uris:
        app.tracker.subscribe(req.conn, uri)
    return {}


def unsubscribe(req: Request) -> dict[str, Any]:
    for uri in _uris(req):
        req.conn.app.tracker.unsubscribe(req.conn, uri)
    return {}


def listen(req: Request) -> Any:
    return req.conn.app.tracker.listen(req)


def _end_listen(req: Request) -> None:
    req.conn.app.tracker.end_listen(req)


# --- notifications from the client ------------------------------------------------------


def _initialized(conn: Connection, params: dict[str, Any]) -> None:
    conn.initialized = True


def _cancelled(conn: Connection, params: dict[str, Any]) -> None:
    rid = params.get("requestId")
    if isinstance(rid, (str, int)):
        conn.cancel(rid)


COMMON: dict[str, Callable[[Request], Any]] = {
    "resources/list": list_resources,
    "resources/templates/list": list_templates,
    "resources/read": read,
    "completion/complete": complete,
}
HANDSHAKE_METHODS: dict[str, Callable[[Request], Any]] = {
    **COMMON,
    "initialize": initialize,
    "ping": ping,
    "logging/setLevel": set_level,
    "resources/subscribe": subscribe,
    "resources/unsubscribe": unsubscribe,
}
MODERN_METHODS: dict[str, Callable[[Request], Any]] = {
    **COMMON,
    "server/discover": discover,
    "subscriptions/listen": listen,
}
NOTIFICATIONS: dict[str, Callable[[Connection, dict[str, Any]], None]] = {
    "notifications/initialized": _initialized,
    "notifications/cancelled": _cancelled,
}
ON_CANCEL: dict[str, Callable[[Request], None]] = {"subscriptions/listen": _end_listen}


def install_extensions() -> None:
    HANDSHAKE_METHODS.update(extensions.METHODS)
    MODERN_METHODS.update(extensions.METHODS)
    extensions.install()


install_extensions()
