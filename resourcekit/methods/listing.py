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

import logging
import zlib
from collections.abc import Callable, Iterator, Mapping
from itertools import chain, islice
from typing import TYPE_CHECKING, Any

from ..declaration import Handler, iter_lister_page
from ..errors import InvalidParams
from ..extensions import OptIn
from ..limits import put_bounded
from ..pagination import decode_cursor, encode_cursor
from ..revisions import META_VERSION
from ..scopes import may_read
from ._base import Method, cache_hints, in_worker, keyset_after, readable, uri_param
from .children import children_from, listable
from .variables import META_VARIABLES, variables_meta
from .wire import (
    INSTANCE_FIELDS,
    Decorate,
    capabilities,
    last_segment,
    resource_decorator,
    resource_wire,
    resource_wires,
    seed_fields,
    template_fields,
)

if TYPE_CHECKING:
    from ._base import RequestView as Request

__all__ = ["METHODS", "children_page", "filter_for", "resources_page"]

log = logging.getLogger("resourcekit")

FILTER_KEYS = ("kind", "mimeType", "uriPrefix")
_CHILD_FIELDS = INSTANCE_FIELDS

Keep = Callable[[dict[str, Any], "str | None"], bool]
Filter = Callable[[dict[str, Any], Handler], bool]


# --- resources/list ---------------------------------------------------------------------------


def list_resources(req: Request) -> Any:
    if "uri" in req.params:  # SEP-2093: the children of a listable resource
        return _in_worker(req, _children_page)
    readable = None if req.principal is None else _readable(req)  # only what the token may read
    if "filter" in req.params:  # seed 000
        keep = filter_for(req.params["filter"])  # a bad filter is answered at once
        return _in_worker(req, lambda r: _resources_page(r, lambda wire, handler: keep(wire, handler.kind)
                                                         and (readable is None or readable(wire, handler))))
    if req.conn.app.listed_templates:  # listers may do I/O (a database, a directory)
        return _in_worker(req, lambda r: _resources_page(r, readable))
    return cache_hints(req, _resources_page(req, readable))


def _readable(req: Request) -> Filter:
    principal, app = req.principal, req.conn.app
    return lambda wire, handler: may_read(principal, app, handler)


def _in_worker(req: Request, page: Callable[[Request], dict[str, Any]]) -> Any:
    return in_worker(req, lambda: cache_hints(req, page(req)))


def resources_page(req: Request, cursor: Any) -> dict[str, Any]:
    """One page of the plain list from ``cursor`` (the ``list_resources`` tool's walk)."""
    return _resources_page(req, None if req.principal is None else _readable(req), cursor)


def _resources_page(req: Request, keep: Filter | None = None, cursor: Any = None) -> dict[str, Any]:
    app = req.conn.app
    limit = app.page_size
    tracker = app.tracker
    versions = tracker.versions
    kind, numbers = ("r", [0])
    if cursor is None:
        cursor = req.params.get("cursor")
    if cursor is not None:
        kind, numbers = decode_cursor(cursor, ("r", "l"))
    out: list[dict[str, Any]] = []
    decorate = resource_decorator(req, req.optin)
    budget = app.limits.page_scan_budget  # items one page may examine: a filter cannot spin
    scanned = 0
    if kind == "r":
        after = numbers[0]
        if keep is None and decorate is None:  # the plain list (100,000 resources in 100 pages): one slice
            handlers, after, full = app.resources.slice(after, min(limit, budget))
            out, scanned = resource_wires(handlers, versions), len(handlers)
        else:
            out, after, scanned, full = _kept_resources(req, after, limit, budget, keep, decorate)
        if full:  # the page is full, or its scan budget spent: the walk resumes after ``after``
            return _page(out, encode_cursor("r", after))
        if not app.listed_templates:
            return _page(out, None)
        kind, numbers = "l", [0, 0]
    # lister phase: numbers = [template seq whose instances we are in, offset]
    tseq, offset = numbers[0], numbers[1] if len(numbers) > 1 else 0
    versions = tracker.instance_versions
    current = _template_at(req, tseq)
    while len(out) < limit and scanned < budget:
        if current is None:
            page_t, _ = app.listed_templates.page(tseq, 1)
            if not page_t:
                return _page(out, None)
            tseq, current = page_t[0]
            offset = 0
        want = min(limit - len(out), budget - scanned)
        items, more = _lister_page(current, offset, want)
        scanned += len(items)
        for item in items:
            offset += 1
            instance = _instance_wire(current, item, versions, decorate)
            if instance is not None and (keep is None or keep(instance, current)):
                out.append(instance)
        if not more:
            current = None
    return _page(out, encode_cursor("l", tseq, offset) if current is not None or _more_templates(req, tseq) else None)


def _kept_resources(req: Request, after: int, limit: int, budget: int, keep: Filter | None,
                    decorate: Decorate | None) -> tuple[list[dict[str, Any]], int, int, bool]:
    """The Resources after ``after`` that ``keep`` keeps: (them, the last seq examined, how many
    were examined, whether the page filled or spent its budget before the resources ran out)."""
    app = req.conn.app
    versions = app.tracker.versions
    out: list[dict[str, Any]] = []
    scanned = 0
    while len(out) < limit and scanned < budget:
        page, more = app.resources.page(after, min(limit - len(out), budget - scanned))
        scanned += len(page)
        for seq, handler in page:
            after = seq
            wire = resource_wire(handler, versions, decorate=decorate)
            if keep is None or keep(wire, handler):
                out.append(wire)
        if not more:
            return out, after, scanned, False
    return out, after, scanned, True


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


def _lister_page(handler: Handler, offset: int, want: int) -> tuple[list[Any], bool]:
    """``want`` items of a lister from ``offset``, and whether more follow.

    A paged lister is asked for the page.  A plain iterable is not walked from its
    start again for the next page: its iterator waits, parked under the offset the
    next cursor names (a bounded number of them, oldest dropped).
    """
    if handler.lister_paged:
        items = list(iter_lister_page(handler, offset, want))
        return items[:want], len(items) > want
    iterator = _PARKED.pop((handler, offset), None)
    if iterator is None:
        iterator = islice(handler.lister(), offset, None)
    items = list(islice(iterator, want + 1))
    if len(items) <= want:
        return items, False
    put_bounded(_PARKED, (handler, offset + want), chain(items[want:], iterator), MAX_PARKED)
    return items[:want], True


_PARKED: dict[tuple[Handler, int], Iterator[Any]] = {}
MAX_PARKED = 64


def _instance_wire(handler: Handler, item: Any, versions: Mapping[str, str],
                   decorate: Decorate | None) -> dict[str, Any] | None:
    """The listed instance, or None (logged) when the lister's item does not make a URI."""
    if isinstance(item, str):
        return resource_wire(handler, versions, item, decorate=decorate)
    try:
        if not isinstance(item, Mapping):
            raise TypeError(f"yielded {type(item).__name__}, not a dict or str")
        uri = handler.instance_uri(item)
    except (TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        log.warning("lister of %s: item %.200r left out of the list: %s", handler.uri, item, exc)
        return None
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


def _children_page(req: Request) -> dict[str, Any]:
    uri = uri_param(req)
    return children_page(req, uri, filter_for(req.params["filter"]) if "filter" in req.params else None)


def children_page(req: Request, uri: str, keep: Keep | None = None) -> dict[str, Any]:
    """One page of a listable resource's direct children (in a worker; also resources/directory/read)."""
    offset = 0
    cursor = req.params.get("cursor")
    if cursor is not None:
        numbers = decode_cursor(cursor, ("c",))[1]
        if len(numbers) != 2 or numbers[1] != _cursor_tag(uri):
            raise InvalidParams("Invalid cursor", {"cursor": cursor})
        offset = numbers[0]
    conn = req.conn
    match = readable(req, uri)
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
    budget = conn.app.limits.page_scan_budget  # an endless children generator cannot spin
    for scanned, (position, item) in enumerate(children):
        if len(out) == limit or scanned == budget:
            result["nextCursor"] = encode_cursor("c", position, _cursor_tag(uri))
            break
        wire, kind = _child_wire(req, item, opt, keep is not None)
        if req.principal is not None and not _child_readable(req, wire["uri"]):
            continue
        if keep is None or keep(wire, kind):
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
            caps = capabilities(is_listable, match is not None and conn.app.subscribe)
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


def _child_readable(req: Request, uri: str) -> bool:
    """A child some declaration serves is shown when the principal may read it."""
    match = req.conn.app.router.match(uri)
    return match is None or may_read(req.principal, req.conn.app, match.handler)


# --- resources/templates/list -----------------------------------------------------------------


def list_templates(req: Request) -> dict[str, Any]:
    app = req.conn.app
    page, more = app.templates.page(keyset_after(req, "t"), app.page_size)
    out = []
    opt = req.optin
    principal = req.principal
    for _, handler in page:
        if principal is not None and not may_read(principal, app, handler):
            continue
        wire = dict(handler.wire)
        meta = dict(handler.meta) if handler.meta else {}
        meta.setdefault(META_VARIABLES, variables_meta(handler))  # what a form needs to ask for each variable
        wire["_meta"] = meta
        if opt.any:
            template_fields(wire, handler, opt, app.subscribe)
        out.append(wire)
    result: dict[str, Any] = {"resourceTemplates": out}
    if more:
        result["nextCursor"] = encode_cursor("t", page[-1][0])
    return cache_hints(req, result)


METHODS: dict[str, Method] = {
    "resources/list": list_resources,
    "resources/templates/list": list_templates,
}
