"""``resources/list`` and ``resources/templates/list``, and the Resource objects they show.

Concrete resources come first, in registration order; then the instances
each lister yields, template by template.  A cursor is keyset-based
(``r:<last seq>`` or ``l:<template seq>:<offset>``), so it stays valid when
resources come and go.

Beside the standard list: ``resources/list {uri}`` pages the children of a
listable resource (SEP-2093), ``resources/list {filter}`` keeps the objects
whose ``kind``, ``mimeType`` and ``uriPrefix`` match (seed 000); clients that
opted in get the fields ``optin.FIELDS`` names on every listed object.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidParams, ResourceNotFound
from ..handler import Handler, iter_lister_page
from ..optin import OptIn
from ..pagination import decode_cursor, encode_cursor
from ..versions import META_VERSION
from ._base import Method, cache_hints, in_worker, uri_param
from .children import children_from, listable, off_loop

if TYPE_CHECKING:
    from ..protocol import Request
    from ..tracking import Tracker

__all__ = ["METHODS", "capabilities", "filter_for", "resource_wire", "seed_fields"]

FILTER_KEYS = ("kind", "mimeType", "uriPrefix")
_INSTANCE_FIELDS = ("name", "title", "description", "mimeType", "size", "annotations", "icons")
_CHILD_FIELDS = _INSTANCE_FIELDS

Keep = Callable[[dict[str, Any], "str | None"], bool]
Filter = Callable[[dict[str, Any], Handler], bool]
Decorate = Callable[[dict[str, Any], Handler], None]


# --- Resource objects -------------------------------------------------------------------------


def resource_wire(handler: Handler, versions: Mapping[str, str], uri: str | None = None,
                  extra: Mapping[str, Any] | None = None, decorate: Decorate | None = None) -> dict[str, Any]:
    """A Resource object for ``uri`` (a concrete handler's own URI by default).

    ``versions``: the tracker's ``versions`` for a concrete handler, its
    ``instance_versions`` for a template.  The common case is shared rather than
    copied: listing 100,000 resources is one dict lookup each.  Callers that change
    the object take a copy (``fresh_resource``).
    """
    if handler.template is None and decorate is None and not handler.meta:
        version = versions.get(handler.uri)
        if version is None:
            return handler.wire
        return {**handler.wire, "_meta": {META_VERSION: version}}
    wire = dict(handler.wire)
    if handler.template is not None:
        del wire["uriTemplate"]
        wire["uri"] = uri
        wire["name"] = uri
    if extra:
        for key in _INSTANCE_FIELDS:
            if key in extra:
                wire[key] = extra[key]
    meta = dict(handler.meta) if handler.meta else {}
    version = versions.get(wire["uri"])
    if version is not None:
        meta[META_VERSION] = version
    if decorate is not None:
        decorate(wire, handler)
    if meta:
        wire["_meta"] = meta
    return wire


def fresh_resource(handler: Handler, tracker: Tracker | None, uri: str) -> dict[str, Any]:
    """A Resource object for ``uri`` that the caller may change."""
    if tracker is None:
        return dict(resource_wire(handler, {}, uri if handler.template is not None else None))
    if handler.template is None:
        return dict(resource_wire(handler, tracker.versions))
    return dict(resource_wire(handler, tracker.instance_versions, uri))


def capabilities(is_listable: bool, subscribe: bool = True) -> dict[str, bool]:
    """SEP-2093's per-resource capabilities."""
    return {"list": is_listable, "subscribe": subscribe}


def seed_fields(wire: dict[str, Any], handler: Handler | None, tracker: Tracker,
                item: Mapping[str, Any] | None = None) -> None:
    """Seed 000's ``kind``, ``version`` and ``metadata`` (an item's own, else its handler's)."""
    kind = item.get("kind") if item is not None else None
    metadata = item.get("metadata") if item is not None else None
    if handler is not None:
        kind = kind if kind is not None else handler.kind
        metadata = metadata if metadata is not None else handler.metadata
    if kind is not None:
        wire["kind"] = kind
    version = tracker.version(wire["uri"])
    if version is not None:
        wire["version"] = version
    if metadata:
        wire["metadata"] = dict(metadata)


def _resource_decorator(req: Request, opt: OptIn) -> Decorate | None:
    """Extra fields for the Resources of one page (None: standard objects)."""
    if not opt.any:
        return None
    sep, seed = opt.sep_2093, opt.resources_get
    precise = sep and off_loop()  # template instances are listed by listers, in a worker
    conn, tracker = req.conn, req.conn.app.tracker

    def decorate(wire: dict[str, Any], handler: Handler) -> None:
        if sep:
            is_listable = handler.children is not None
            if is_listable and precise and handler.template is not None:
                match = conn.app.router.match(wire["uri"])
                is_listable = match is not None and listable(conn, match.handler, match.kwargs, strict=False)
            wire["capabilities"] = capabilities(is_listable)
        if seed:
            seed_fields(wire, handler, tracker)

    return decorate


def _template_fields(wire: dict[str, Any], handler: Handler, opt: OptIn) -> None:
    if opt.sep_2093:
        wire["capabilities"] = capabilities(handler.children is not None)  # upper bound for instances
    if opt.resources_get:
        if handler.kind is not None:
            wire["kind"] = handler.kind
        if handler.metadata:
            wire["metadata"] = dict(handler.metadata)


# --- resources/list ---------------------------------------------------------------------------


def list_resources(req: Request) -> Any:
    if "uri" in req.params:  # SEP-2093: the children of a listable resource
        return _in_worker(req, _children_page)
    if "filter" in req.params:  # seed 000
        keep = filter_for(req.params["filter"])  # a bad filter is answered at once
        return _in_worker(req, lambda r: _resources_page(r, lambda wire, handler: keep(wire, handler.kind)))
    if req.conn.app.listed_templates:  # listers may do I/O (a database, a directory)
        return _in_worker(req, _resources_page)
    return cache_hints(req, _resources_page(req))


def _in_worker(req: Request, page: Callable[[Request], dict[str, Any]]) -> Any:
    return in_worker(req, lambda: cache_hints(req, page(req)))


def _resources_page(req: Request, keep: Filter | None = None) -> dict[str, Any]:
    app = req.conn.app
    limit = app.page_size
    tracker = app.tracker
    versions = tracker.versions
    kind, numbers = ("r", [0])
    cursor = req.params.get("cursor")
    if cursor is not None:
        kind, numbers = decode_cursor(cursor, ("r", "l"))
    out: list[dict[str, Any]] = []
    decorate = _resource_decorator(req, req.optin)
    if kind == "r":
        after = numbers[0]
        while len(out) < limit:
            page, more = app.resources.page(after, limit - len(out))
            for seq, handler in page:
                after = seq
                wire = resource_wire(handler, versions, decorate=decorate)
                if keep is None or keep(wire, handler):
                    out.append(wire)
            if not more:
                break
        else:
            return _page(out, encode_cursor("r", after))
        if not app.listed_templates:
            return _page(out, None)
        kind, numbers = "l", [0, 0]
    # lister phase: numbers = [template seq whose instances we are in, offset]
    tseq, offset = numbers[0], numbers[1] if len(numbers) > 1 else 0
    versions = tracker.instance_versions
    current = _template_at(req, tseq)
    while len(out) < limit:
        if current is None:
            page_t, _ = app.listed_templates.page(tseq, 1)
            if not page_t:
                return _page(out, None)
            tseq, current = page_t[0]
            offset = 0
        want = limit - len(out)
        items = list(iter_lister_page(current, offset, want))
        more = len(items) > want
        for item in items[:want]:
            offset += 1
            wire = _instance_wire(current, item, versions, decorate)
            if keep is None or keep(wire, current):
                out.append(wire)
        if not more:
            current = None
    return _page(out, encode_cursor("l", tseq, offset) if current is not None or _more_templates(req, tseq) else None)


def _more_templates(req: Request, tseq: int) -> bool:
    page, _ = req.conn.app.listed_templates.page(tseq, 1)
    return bool(page)


def _template_at(req: Request, tseq: int) -> Handler | None:
    if tseq == 0:
        return None
    page, _ = req.conn.app.listed_templates.page(tseq - 1, 1)
    if page and page[0][0] == tseq:
        return page[0][1]
    return None  # removed between pages: continue with the next template


def _instance_wire(handler: Handler, item: Any, versions: Mapping[str, str],
                   decorate: Decorate | None) -> dict[str, Any]:
    if isinstance(item, str):
        return resource_wire(handler, versions, item, decorate=decorate)
    if not isinstance(item, Mapping):
        raise TypeError(f"lister of {handler.uri!r} yielded {type(item).__name__}, not a dict or str")
    uri = handler.instance_uri(item)
    return resource_wire(handler, versions, uri, item, decorate)


def _page(resources: list[dict[str, Any]], next_cursor: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {"resources": resources}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


# --- resources/list {filter} (seed 000) -------------------------------------------------------


def filter_for(spec: Any) -> Keep:
    """A predicate ``keep(resource, kind)`` from a seed-000 ``filter``; -32602 for bad ones."""
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

    def keep(wire: dict[str, Any], resource_kind: str | None) -> bool:
        return ((kind is None or resource_kind == kind)
                and (mime is None or wire.get("mimeType") == mime)
                and (prefix is None or str(wire["uri"]).startswith(prefix)))

    return keep


# --- resources/list {uri} (SEP-2093 children) -------------------------------------------------


def _cursor_tag(uri: str) -> int:
    return zlib.crc32(uri.encode("utf-8", "surrogatepass"))


def _not_listable(uri: str) -> InvalidParams:
    return InvalidParams(f"Invalid params: {uri} is not listable", {"uri": uri})


def last_segment(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[-1] or uri


def _children_page(req: Request) -> dict[str, Any]:
    """One page of a listable resource's direct children (in a worker)."""
    uri = uri_param(req)
    keep = filter_for(req.params["filter"]) if "filter" in req.params else None
    offset = 0
    cursor = req.params.get("cursor")
    if cursor is not None:
        numbers = decode_cursor(cursor, ("c",))[1]
        if len(numbers) != 2 or numbers[1] != _cursor_tag(uri):
            raise InvalidParams("Invalid cursor", {"cursor": cursor})
        offset = numbers[0]
    conn = req.conn
    match = conn.app.router.match(uri)
    if match is None:
        raise ResourceNotFound(uri)
    handler = match.handler
    if handler.children is None:
        raise _not_listable(uri)
    limit = conn.app.page_size
    children = children_from(conn, handler, match.kwargs, offset, limit + 1)
    if children is None:
        raise _not_listable(uri)
    opt = req.optin
    out: list[dict[str, Any]] = []
    result: dict[str, Any] = {"resources": out}
    for position, item in children:
        wire, kind = _child_wire(req, item, opt, keep is not None)
        if keep is not None and not keep(wire, kind):
            continue
        if len(out) == limit:
            result["nextCursor"] = encode_cursor("c", position, _cursor_tag(uri))
            break
        out.append(wire)
    return result


def _child_wire(req: Request, item: Any, opt: OptIn, filtering: bool) -> tuple[dict[str, Any], str | None]:
    """One listed child, and its kind (for a filter)."""
    if isinstance(item, str):
        wire: dict[str, Any] = {"uri": item}
        given: Mapping[str, Any] = {}
    elif isinstance(item, Mapping) and isinstance(item.get("uri"), str):
        given = item
        wire = {"uri": item["uri"]}
        wire.update((k, item[k]) for k in _CHILD_FIELDS if k in item)
    else:
        raise TypeError(f"children must yield URIs or dicts with a 'uri', not {item!r}")
    uri = wire["uri"]
    wire.setdefault("name", last_segment(uri))
    conn = req.conn
    match = conn.app.router.match(uri) if opt.any or filtering else None
    handler = match.handler if match is not None else None
    if opt.sep_2093:
        caps = given.get("capabilities")
        if not isinstance(caps, Mapping):
            is_listable = match is not None and listable(conn, match.handler, match.kwargs, strict=False)
            caps = capabilities(is_listable, match is not None)
        wire["capabilities"] = dict(caps)
    tracker = conn.app.tracker
    if opt.resources_get:
        seed_fields(wire, handler, tracker, given)
    version = tracker.version(uri)
    if version is not None:
        wire["_meta"] = {META_VERSION: version}
    kind = given.get("kind")
    if kind is None and handler is not None:
        kind = handler.kind
    return wire, kind


# --- resources/templates/list -----------------------------------------------------------------


def list_templates(req: Request) -> dict[str, Any]:
    app = req.conn.app
    after = 0
    cursor = req.params.get("cursor")
    if cursor is not None:
        after = decode_cursor(cursor, ("t",))[1][0]
    page, more = app.templates.page(after, app.page_size)
    out = []
    opt = req.optin
    for _, handler in page:
        wire = dict(handler.wire)
        if handler.meta:
            wire["_meta"] = dict(handler.meta)
        if opt.any:
            _template_fields(wire, handler, opt)
        out.append(wire)
    result: dict[str, Any] = {"resourceTemplates": out}
    if more:
        result["nextCursor"] = encode_cursor("t", page[-1][0])
    return cache_hints(req, result)


METHODS: dict[str, Method] = {
    "resources/list": list_resources,
    "resources/templates/list": list_templates,
}
