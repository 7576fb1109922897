"""Extensions from the seed documents, served beside the standard methods.

A standard client sees none of this: the new methods are only called by clients
that know them, and extra fields on listed or read objects appear only for
clients that opt in, under ``capabilities.experimental`` (or, in 2026-07-28,
``capabilities.extensions``):

``"io.resourcekit/sep-2093"`` — SEP-2093 (resource capabilities and metadata):
    * every listed Resource carries ``capabilities: {list, subscribe}``
      (templates: an upper bound), and each read content the Resource metadata
      (name, title, description, annotations, size, capabilities);
    * ``resources/metadata {uri}`` → ``{resource}``: metadata without content
      (open to every client);
    * ``resources/list {uri}`` → the direct children of a listable resource,
      paginated like any list (open to every client).

``"io.resourcekit/resources-get"`` — the variant protocol of seed 000:
    * listed Resources carry ``kind``, ``version`` (the content hash, once
      known) and ``metadata``;
    * ``resources/get {uri, version?}`` → ``{resource, contents}``; when
      ``version`` is still current the answer is the error ``NotModified``
      (code -32003, ``data: {uri, version}``) (open to every client);
    * ``resources/list {filter}`` with the keys ``kind``, ``mimeType`` and
      ``uriPrefix`` (all must match; an unknown key is -32602);
    * ``notifications/resources/content_changed {resource}`` to subscribed
      sessions, exactly when ``notifications/resources/updated`` is sent.

Declaring a listable resource: ``children=fn`` on ``@app.resource`` or
``@app.template``.  ``fn`` gets the handler's typed template variables (no
Context), sync or async, and returns ``None`` when this instance is not
listable (a file under a directory template) or an iterable of children, each a
URI string or a dict with ``"uri"`` and optional Resource fields (``name``,
``title``, ``description``, ``mimeType``, ``size``, ``annotations``, ``icons``,
``capabilities``).  A ``children`` function that also takes ``offset`` and
``limit`` is asked for one page at a time (so deep pages of a huge container stay
cheap); otherwise its iterable is sliced.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any

from .errors import InvalidParams, NotModified, ResourceNotFound
from .versions import META_VERSION

if TYPE_CHECKING:
    from .handler import Handler
    from .protocol import Connection, Request
    from .tracking import Tracker

__all__ = ["METHODS", "RESOURCES_GET", "SEP_2093"]

SEP_2093 = "io.resourcekit/sep-2093"
RESOURCES_GET = "io.resourcekit/resources-get"
FILTER_KEYS = ("kind", "mimeType", "uriPrefix")
DIRECTORY = "inode/directory"
_RESOURCE_FIELDS = ("name", "title", "description", "mimeType", "size", "annotations", "icons", "capabilities")


def _uri(req: Request) -> str:
    uri = req.params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise InvalidParams("Invalid params: 'uri' must be a non-empty string", {"param": "uri"})
    return uri


def _resolve(req: Request, uri: str) -> tuple[Handler, dict[str, Any]]:
    match = req.conn.app.router.match(uri)
    if match is None:
        raise ResourceNotFound(uri)
    return match.handler, match.kwargs


def capabilities(handler: Handler) -> dict[str, bool]:
    return {"list": handler.children is not None, "subscribe": True}


def metadata_wire(handler: Handler, uri: str, req: Request, *, seed_fields: bool = False) -> dict[str, Any]:
    """The full Resource object for ``uri`` served by ``handler``."""
    from .listing import resource_wire

    wire = resource_wire(handler, req, uri if handler.template is not None else None)
    wire["capabilities"] = capabilities(handler)
    if seed_fields:
        _add_seed_fields(wire, handler, req)
    return wire


def _add_seed_fields(wire: dict[str, Any], handler: Handler, req: Request) -> None:
    if handler.kind is not None:
        wire["kind"] = handler.kind
    version = req.conn.app.tracker.version(wire["uri"])
    if version is not None:
        wire["version"] = version
    if handler.metadata:
        wire["metadata"] = dict(handler.metadata)


# --- decorating standard objects for clients that opted in ------------------------------

Decorate = Callable[[dict[str, Any], "Handler", "Request"], None]


def resource_decorator(req: Request) -> Decorate | None:
    sep, seed = req.conn.wants(SEP_2093, req), req.conn.wants(RESOURCES_GET, req)
    if not (sep or seed):
        return None

    def decorate(wire: dict[str, Any], handler: Handler, req: Request) -> None:
        if sep:
            wire.setdefault("capabilities", capabilities(handler))
        if seed:
            _add_seed_fields(wire, handler, req)

    return decorate


def template_decorator(req: Request) -> Decorate | None:
    sep, seed = req.conn.wants(SEP_2093, req), req.conn.wants(RESOURCES_GET, req)
    if not (sep or seed):
        return None

    def decorate(wire: dict[str, Any], handler: Handler, req: Request) -> None:
        if sep:
            wire["capabilities"] = capabilities(handler)  # an upper bound for every instance
        if seed:
            if handler.kind is not None:
                wire["kind"] = handler.kind
            if handler.metadata:
                wire["metadata"] = dict(handler.metadata)

    return decorate


def decorate_read(req: Request, handler: Handler, uri: str, contents: list[dict[str, Any]]) -> None:
    """SEP-2093: contents extend Resource, so each carries the resource's metadata."""
    if not req.conn.wants(SEP_2093, req):
        return
    own = dict(handler.wire)
    own.pop("uriTemplate", None)
    own.pop("mimeType", None)  # each content has its own
    for content in contents:
        if content["uri"] == uri:
            for key in ("name", "title", "description", "annotations", "icons"):
                if key in own:
                    content.setdefault(key, own[key])
            if handler.template is not None:
                content["name"] = uri
            content["capabilities"] = capabilities(handler)
        else:
            content.setdefault("name", content["uri"].rstrip("/").rsplit("/", 1)[-1] or content["uri"])
        content.setdefault("size", _content_size(content))


def _content_size(content: Mapping[str, Any]) -> int:
    if "text" in content:
        return len(str(content["text"]).encode("utf-8", "surrogatepass"))
    blob = str(content.get("blob", ""))
    return len(blob) * 3 // 4 - blob[-2:].count("=")


# --- methods ---------------------------------------------------------------------------


def resources_metadata(req: Request) -> dict[str, Any]:
    uri = _uri(req)
    handler, _ = _resolve(req, uri)
    return {"resource": metadata_wire(handler, uri, req, seed_fields=req.conn.wants(RESOURCES_GET, req))}


def list_children(req: Request) -> dict[str, Any]:
    """``resources/list {uri}``: one page of a listable resource's direct children (runs in a worker)."""
    from .pagination import decode_cursor, encode_cursor

    uri = _uri(req)
    handler, kwargs = _resolve(req, uri)
    if handler.children is None:
        raise InvalidParams(f"Invalid params: {uri} is not listable", {"uri": uri})
    offset = 0
    cursor = req.params.get("cursor")
    if cursor is not None:
        offset = decode_cursor(cursor, ("c",))[1][0]
    limit = req.conn.app.page_size
    paged = _is_paged(handler.children)
    if paged:  # children(..., offset, limit): one page per call, O(page) at any depth
        children = _call(req.conn, handler.children, {**kwargs, "offset": offset, "limit": limit + 1})
    else:
        children = _call(req.conn, handler.children, kwargs)
    if children is None:
        raise InvalidParams(f"Invalid params: {uri} is not listable", {"uri": uri})
    page = list(islice(children, limit + 1)) if paged else list(islice(children, offset, offset + limit + 1))
    opted_in = req.conn.wants(SEP_2093, req)
    resources = [_child_wire(req, item, opted_in) for item in page[:limit]]
    result: dict[str, Any] = {"resources": resources}
    if len(page) > limit:
        result["nextCursor"] = encode_cursor("c", offset + limit)
    return result


def _child_wire(req: Request, item: Any, opted_in: bool) -> dict[str, Any]:
    if isinstance(item, str):
        wire: dict[str, Any] = {"uri": item}
    elif isinstance(item, Mapping) and isinstance(item.get("uri"), str):
        wire = {"uri": item["uri"]}
        wire.update((k, item[k]) for k in _RESOURCE_FIELDS if k in item)
    else:
        raise TypeError(f"children must yield URIs or dicts with a 'uri', not {item!r}")
    wire.setdefault("name", wire["uri"].rstrip("/").rsplit("/", 1)[-1] or wire["uri"])
    caps = wire.pop("capabilities", None)
    if opted_in:
        if caps is None:
            match = req.conn.app.router.match(wire["uri"])
            listable = match is not None and match.handler.children is not None
            # a directory template serves files too: only containers say they list
            caps = {"list": listable and wire.get("mimeType") in (None, DIRECTORY), "subscribe": match is not None}
        wire["capabilities"] = caps
    version = req.conn.app.tracker.version(wire["uri"])
    if version is not None:
        wire["_meta"] = {META_VERSION: version}
    return wire


def _is_paged(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "offset" in params and "limit" in params


def _call(conn: Connection, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call a user function from a worker thread; async ones run on the server's loop."""
    result = fn(**kwargs)
    if inspect.isawaitable(result):
        result = asyncio.run_coroutine_threadsafe(_await(result), conn.server.loop).result()
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


def filter_for(spec: Any) -> Callable[[dict[str, Any], Handler], bool]:
    """A predicate from a seed-000 ``filter`` object; -32602 for unknown keys."""
    if not isinstance(spec, Mapping):
        raise InvalidParams("Invalid params: 'filter' must be an object", {"param": "filter"})
    unknown = [k for k in spec if k not in FILTER_KEYS]
    if unknown:
        raise InvalidParams(f"Invalid params: unknown filter key {unknown[0]!r}; use one of {list(FILTER_KEYS)}",
                            {"filter": unknown[0], "supported": list(FILTER_KEYS)})
    for key, value in spec.items():
        if not isinstance(value, str):
            raise InvalidParams(f"Invalid params: filter {key!r} must be a string", {"filter": key})
    kind, mime, prefix = spec.get("kind"), spec.get("mimeType"), spec.get("uriPrefix")

    def keep(wire: dict[str, Any], handler: Handler) -> bool:
        return ((kind is None or handler.kind == kind)
                and (mime is None or wire.get("mimeType") == mime)
                and (prefix is None or str(wire["uri"]).startswith(prefix)))

    return keep


def resources_get(req: Request) -> Any:
    """Seed 000: ``{resource, contents}`` in one call, with a conditional ``version``."""
    from ._methods import serve
    from .contents import combined_version, to_contents

    uri = _uri(req)
    known = req.params.get("version")
    if known is not None and not isinstance(known, str):
        raise InvalidParams("Invalid params: 'version' must be a string", {"param": "version"})

    def build(req: Request, handler: Handler, uri: str, value: Any) -> dict[str, Any]:
        contents = to_contents(uri, value, handler.mime_type)
        version = combined_version(contents)
        req.conn.app.tracker.observe(uri, version)
        if known == version:
            raise NotModified(uri, version)
        resource = metadata_wire(handler, uri, req, seed_fields=True)
        resource["version"] = version
        items = []
        for content in contents:
            item: dict[str, Any] = {"uri": content.uri, "contentType": content.mime_type}
            if content.text is not None:
                item["content"] = content.text
            else:
                item["blob"] = content.to_wire()["blob"]
            items.append(item)
        return {"resource": resource, "contents": items[0] if len(items) == 1 else items}

    return serve(req, uri, build)


def content_changed(tracker: Tracker, uri: str) -> None:
    """Seed 000: tell opted-in subscribers what the resource looks like now."""
    from .protocol import Connection

    subscribers = [s for s in tracker._by_uri.get(uri, ()) if isinstance(s.owner, Connection)
                   and s.owner.wants(RESOURCES_GET)]
    if not subscribers:
        return
    match = tracker.app.router.match(uri)
    if match is None:
        return
    handler = match.handler
    resource = dict(handler.wire)
    resource.pop("uriTemplate", None)
    resource["uri"] = uri
    if handler.template is not None:
        resource["name"] = uri
    if handler.kind is not None:
        resource["kind"] = handler.kind
    version = tracker.version(uri)
    if version is not None:
        resource["version"] = version
    if handler.metadata:
        resource["metadata"] = dict(handler.metadata)
    for sub in subscribers:
        sub.emit({"jsonrpc": "2.0", "method": "notifications/resources/content_changed",
                  "params": {"resource": resource}})


METHODS: dict[str, Callable[[Request], Any]] = {
    "resources/metadata": resources_metadata,
    "resources/get": resources_get,
}


def install() -> None:
    """Hook the decorators into listing and the content_changed notification into tracking."""
    from . import listing, tracking

    listing._DECORATORS["resource"] = resource_decorator
    listing._DECORATORS["template"] = template_decorator
    tracking._ON_UPDATED["content_changed"] = content_changed
