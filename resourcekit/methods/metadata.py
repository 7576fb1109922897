"""``resources/metadata {uri}`` (SEP-2093): a resource's Resource object, with its ``capabilities``,
without reading its content.  Loaded when a client first asks (``methods.on_first_use``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import Method, cache_hints, in_worker, readable, uri_param
from .children import listable
from .wire import capabilities, fresh_resource, seed_fields

if TYPE_CHECKING:
    from ._base import RequestView as Request

__all__ = ["METHODS"]


def metadata(req: Request) -> Any:
    """``resources/metadata {uri}`` → ``{resource}``, without reading the content."""
    uri = uri_param(req)
    match = readable(req, uri)
    handler = match.handler
    seed = req.optin.resources_get
    tracker = req.conn.app.tracker

    def build(is_listable: bool) -> dict[str, Any]:
        wire = fresh_resource(handler, tracker, uri)
        wire["capabilities"] = capabilities(is_listable, req.conn.app.subscribe)
        if seed:
            seed_fields(wire, handler, tracker)
        return cache_hints(req, {"resource": wire}, handler)

    if handler.children is None:
        return build(False)
    return in_worker(req, lambda: build(listable(req.conn, handler, match.kwargs, strict=True)))


METHODS: dict[str, Method] = {"resources/metadata": metadata}
