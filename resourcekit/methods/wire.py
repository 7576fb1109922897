"""The Resource objects clients see, and the fields extensions add for clients that opted in.

Shared by listing (pages), reading (``resources/get``, ``resources/metadata``,
SEP-2093 contents) and subscriptions (seed 000's ``content_changed``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..declaration import DEFAULT_OPTIONS, Handler
from ..extensions import OptIn
from ..revisions import META_VERSION
from .children import listable, off_loop

if TYPE_CHECKING:
    from ..tracking import Tracker
    from ._base import RequestView as Request

__all__ = ["capabilities", "fresh_resource", "instance_labels", "last_segment", "resource_wire", "resource_wires",
           "seed_fields"]

INSTANCE_FIELDS = ("name", "title", "description", "mimeType", "size", "annotations", "icons")

Decorate = Callable[[dict[str, Any], Handler], None]


def resource_wire(handler: Handler, versions: Mapping[str, str], uri: str | None = None,
                  extra: Mapping[str, Any] | None = None, decorate: Decorate | None = None) -> dict[str, Any]:
    """A Resource object for ``uri`` (a concrete handler's own URI by default).

    ``versions``: the tracker's ``versions`` for a concrete handler, its
    ``instance_versions`` for a template.  The common case is ``handler.wire`` itself
    (shared when the declaration keeps one): callers that change the object take a copy
    (``fresh_resource``).
    """
    if handler.template is None and decorate is None and not handler.meta:
        version = versions.get(handler.uri)
        if version is None:
            return handler.wire
        return {**handler.wire, "_meta": {META_VERSION: version}}
    wire = handler.own_wire()
    if handler.template is not None:
        del wire["uriTemplate"]
        assert uri is not None
        wire["uri"] = uri
        if extra is None or "name" not in extra or "title" not in extra:
            wire["name"], wire["title"] = instance_labels(handler, uri)
    if extra:
        for key in INSTANCE_FIELDS:
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


def instance_labels(handler: Handler, uri: str) -> tuple[str, str]:
    """A template instance's ``name`` and ``title`` from its variables' values (as its URI spells
    them): ``row:2`` and "Row 2" for ``row://2`` of a template titled "Row" (named ``row``), so hosts
    that show names or titles tell instances apart.  Names are distinct for distinct values: a ','
    or '%' in a value is percent-encoded there."""
    assert handler.template is not None
    matched = handler.template.match(uri) or {}
    values = [(k, ",".join(v) if isinstance(v, list) else v) for k, v in matched.items() if v]
    title = handler.wire.get("title") or handler.name
    if not values:
        return handler.name, title
    name = handler.name + ":" + ",".join(v.replace("%", "%25").replace(",", "%2C") for _, v in values)
    if len(values) == 1:
        return name, f"{title} {values[0][1]}"
    return name, f"{title} ({', '.join(f'{k}: {v}' for k, v in values)})"


def resource_wires(handlers: list[Handler | None], versions: Mapping[str, str]) -> list[dict[str, Any]]:
    """The Resource objects of concrete handlers for clients that opted in to nothing (None: skipped)."""
    # a handler without options nor a version yet (not read since it was declared) is its ``wire``
    return [h.wire if h.options is DEFAULT_OPTIONS and h.uri not in versions else resource_wire(h, versions)
            for h in handlers if h is not None]


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


def resource_decorator(req: Request, opt: OptIn) -> Decorate | None:
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
            wire["capabilities"] = capabilities(is_listable, conn.app.subscribe)
        if seed:
            seed_fields(wire, handler, tracker)

    return decorate


def template_fields(wire: dict[str, Any], handler: Handler, opt: OptIn, subscribe: bool = True) -> None:
    if opt.sep_2093:  # ``list``: an upper bound for instances; ``subscribe``: what the App allows
        wire["capabilities"] = capabilities(handler.children is not None, subscribe)
    if opt.resources_get:
        if handler.kind is not None:
            wire["kind"] = handler.kind
        if handler.metadata:
            wire["metadata"] = dict(handler.metadata)


def last_segment(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[-1] or uri
