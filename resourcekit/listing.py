"""``resources/list`` and ``resources/templates/list`` pages.

Concrete resources come first, in registration order; then the instances
each lister yields, template by template.  A cursor is keyset-based
(``r:<last seq>`` or ``l:<template seq>:<offset>``), so a page costs O(page)
whatever the list's size, and stays valid when resources come and go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .handler import Handler, iter_lister_page
from .pagination import decode_cursor, encode_cursor
from .versions import META_VERSION

if TYPE_CHECKING:
    from .protocol import Request

__all__ = ["list_resources", "list_templates", "resource_wire"]

_INSTANCE_FIELDS = ("name", "title", "description", "mimeType", "size", "annotations", "icons")

Filter = Callable[[dict[str, Any], "Handler"], bool]


Decorate = Callable[[dict[str, Any], Handler, "Request"], None]


def resource_wire(handler: Handler, req: Request | None, uri: str | None = None,
                  extra: Mapping[str, Any] | None = None, decorate: Decorate | None = None) -> dict[str, Any]:
    """A Resource object for ``uri`` (a concrete handler's own URI by default)."""
    versions = req.conn.app.tracker._observed if req is not None else {}
    if handler.template is None and decorate is None and not handler.meta:
        # the common case, shared rather than copied: listing 100,000 resources is one dict lookup each
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
    if decorate is not None and req is not None:
        decorate(wire, handler, req)
    if meta:
        wire["_meta"] = meta
    return wire


# Extensions register here, per kind of listed object, a function that returns what to add
# to each object of one page for this client (None when the client did not opt in).
_DECORATORS: dict[str, Callable[[Request], Decorate | None]] = {}


def page_decorator(kind: str, req: Request) -> Decorate | None:
    factory = _DECORATORS.get(kind)
    return factory(req) if factory is not None else None


def list_resources(req: Request, filter: Filter | None = None) -> dict[str, Any]:
    app = req.conn.app
    limit = app.page_size
    kind, numbers = ("r", [0])
    cursor = req.params.get("cursor")
    if cursor is not None:
        kind, numbers = decode_cursor(cursor, ("r", "l"))
    out: list[dict[str, Any]] = []
    decorate = page_decorator("resource", req)
    if kind == "r":
        after = numbers[0]
        while len(out) < limit:
            page, more = app.resources.page(after, limit - len(out))
            for seq, handler in page:
                after = seq
                wire = resource_wire(handler, req, decorate=decorate)
                if filter is None or filter(wire, handler):
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
            wire = _instance_wire(current, item, req, decorate)
            if filter is None or filter(wire, current):
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


def _instance_wire(handler: Handler, item: Any, req: Request, decorate: Decorate | None) -> dict[str, Any]:
    if isinstance(item, str):
        return resource_wire(handler, req, item, decorate=decorate)
    if not isinstance(item, Mapping):
        raise TypeError(f"lister of {handler.uri!r} yielded {type(item).__name__}, not a dict or str")
    uri = handler.instance_uri(item)
    return resource_wire(handler, req, uri, item, decorate)


def list_templates(req: Request) -> dict[str, Any]:
    app = req.conn.app
    after = 0
    cursor = req.params.get("cursor")
    if cursor is not None:
        after = decode_cursor(cursor, ("t",))[1][0]
    page, more = app.templates.page(after, app.page_size)
    out = []
    decorate = page_decorator("template", req)
    for _, handler in page:
        wire = dict(handler.wire)
        if handler.meta:
            wire["_meta"] = dict(handler.meta)
        if decorate is not None:
            decorate(wire, handler, req)
        out.append(wire)
    result: dict[str, Any] = {"resourceTemplates": out}
    if more:
        result["nextCursor"] = encode_cursor("t", page[-1][0])
    return result


def _page(resources: list[dict[str, Any]], next_cursor: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {"resources": resources}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result
