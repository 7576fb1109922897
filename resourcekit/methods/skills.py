"""Agent Skills (SEP-2640): ``skills/list``, ``skills/get`` and ``resources/directory/read``.

The entries come ready-made from the app's ``SkillCatalog`` (``resourcekit.skills``):
a page is a slice of them, digests included, with no file touched.
``resources/directory/read`` is not skill-specific: a directory of the skill
namespace is answered from the catalog's tree, any other URI as the children of a
resource declared listable with ``children=`` (the same pages as SEP-2093's
``resources/list {uri}``).  Whatever is not a directory is -32602 in both eras.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidParams, ResourceNotFound
from ..pagination import decode_cursor, encode_cursor
from ..scopes import check_read, may_read
from ._base import Method, cache_hints, in_worker, keyset_after, uri_param
from .listing import children_page
from .wire import resource_decorator, resource_wire

if TYPE_CHECKING:
    from ._base import RequestView as Request

__all__ = ["METHODS"]

DIRECTORY_MIME = "inode/directory"


def list_skills(req: Request) -> dict[str, Any]:
    app = req.conn.app
    after = keyset_after(req, "s")
    catalog = app.skills
    result: dict[str, Any] = {"skills": []}
    if catalog is not None:
        page, more = catalog.index.page(after, app.page_size)
        entries = catalog.entries
        # an entry is one item: a skill's resources are never split across pages
        result["skills"] = [entries[uri] for _, uri in page if uri in entries and _shown(req, uri)]
        if more:
            result["nextCursor"] = encode_cursor("s", page[-1][0])
    return cache_hints(req, result)


def _shown(req: Request, uri: str) -> bool:
    """A skill is listed when the principal may read its SKILL.md."""
    if req.principal is None:
        return True
    handler = req.conn.app.router.exact.get(uri)
    return handler is None or may_read(req.principal, req.conn.app, handler)


def get_skill(req: Request) -> dict[str, Any]:
    uri = uri_param(req)
    catalog = req.conn.app.skills
    entry = catalog.entries.get(uri) if catalog is not None else None
    if entry is None:
        raise InvalidParams(f"Invalid params: {uri} is not a skill served here", {"uri": uri})
    handler = req.conn.app.router.exact.get(uri)
    if handler is not None:
        check_read(req.principal, req.conn.app, handler, uri)
    return cache_hints(req, {"skill": entry})  # as resources/read results carry them


def read_directory(req: Request) -> Any:
    uri = uri_param(req)
    catalog = req.conn.app.skills
    if catalog is not None:
        children = catalog.dirs.get(uri)
        if children is not None:
            return cache_hints(req, _skill_directory_page(req, uri, children))
        listing = catalog.dynamic_directory(uri)  # a generated skill's: its function tells
        if listing is not None:
            return in_worker(req, lambda: cache_hints(req, _dynamic_page(req, uri, listing)))
    return in_worker(req, lambda: cache_hints(req, _listable_page(req, uri)))


def _listable_page(req: Request, uri: str) -> dict[str, Any]:
    try:
        return children_page(req, uri)
    except ResourceNotFound:
        raise InvalidParams(f"Invalid params: {uri} is not a directory", {"uri": uri}) from None


def _dynamic_page(req: Request, uri: str, listing: Callable[[], tuple[tuple[str, str, bool], ...]]) -> dict[str, Any]:
    try:
        return _skill_directory_page(req, uri, listing())
    except ResourceNotFound:
        raise InvalidParams(f"Invalid params: {uri} is not a directory", {"uri": uri}) from None


def _skill_directory_page(req: Request, uri: str, children: tuple[tuple[str, str, bool], ...]) -> dict[str, Any]:
    app = req.conn.app
    tag = zlib.crc32(uri.encode("utf-8", "surrogatepass"))
    offset = 0
    cursor = req.params.get("cursor")
    if cursor is not None:
        numbers = decode_cursor(cursor, ("d",))[1]
        if len(numbers) != 2 or numbers[1] != tag:
            raise InvalidParams("Invalid cursor", {"cursor": cursor})
        offset = numbers[0]
    end = offset + app.page_size
    decorate = resource_decorator(req, req.optin)
    versions = app.tracker.versions
    exact = app.router.exact
    out: list[dict[str, Any]] = []
    for name, child, is_dir in children[offset:end]:
        if is_dir:
            out.append({"uri": child, "name": name, "mimeType": DIRECTORY_MIME})
            continue
        handler = exact.get(child)
        if handler is None:  # a generated skill's file: its template serves it
            match = app.router.match(child)
            handler = match.handler if match is not None else None
        if handler is None or not may_read(req.principal, app, handler):
            continue
        if handler.template is None:
            out.append(resource_wire(handler, versions, decorate=decorate))
        else:
            out.append(resource_wire(handler, app.tracker.instance_versions, child, {"name": name},
                                     decorate=decorate))
    result: dict[str, Any] = {"resources": out}
    if end < len(children):
        result["nextCursor"] = encode_cursor("d", end, tag)
    return result


METHODS: dict[str, Method] = {
    "skills/list": list_skills,
    "skills/get": get_skill,
    "resources/directory/read": read_directory,
}
