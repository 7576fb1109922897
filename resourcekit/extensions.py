"""Extensions from the seed documents, served beside the standard methods.

A standard client sees none of this.  The new methods exist for everyone (a
standard client never calls them), and extra fields on standard objects appear
only for a client that opted in, by naming the extension in
``capabilities.experimental`` of ``initialize`` (handshake era) or in
``capabilities.experimental`` / ``capabilities.extensions`` of the
``io.modelcontextprotocol/clientCapabilities`` ``_meta`` of a 2026-07-28
request.  Without an opt-in, ``resources/list``, ``resources/templates/list``
and ``resources/read`` answer byte for byte as they would without this module.

SEP-2093, opt-in key ``"io.resourcekit/sep-2093"``
    * ``resources/metadata {uri}`` → ``{resource}``: the Resource without its
      content, with ``capabilities``; for a template instance the template's
      metadata with the concrete ``uri`` (and ``name``); the version, once the
      resource was read, in ``_meta["io.resourcekit/version"]``.  Open to all.
    * ``resources/list {uri, cursor?}`` → the direct children of a listable
      resource, paginated like any list (opaque cursor, tied to that ``uri``;
      a bad cursor is -32602).  Open to all.
    * opted-in clients get ``capabilities: {list, subscribe}`` on every listed
      Resource and ResourceTemplate (a template's is an upper bound for its
      instances: ``list`` is true when it has ``children=``), on listed
      children, and on read contents, which also carry the Resource's metadata
      (``name``, ``title``, ``description``, ``annotations``, ``icons``) and
      their own ``size`` (SEP-2093 §1).
    * multi-content reads (§5): contents of the requested URI are format
      alternatives and carry its metadata; contents with other URIs are
      children (named after their URI or the resource serving them) and are
      only legitimate when the resource is listable.  A non-listable resource
      whose handler returns other URIs is served without ``capabilities`` (the
      spec's backwards-compatible form) and a warning is logged once.

Seed 000 (``resources/get``), opt-in key ``"io.resourcekit/resources-get"``
    * ``resources/get {uri, version?}`` → ``{resource, contents}`` where
      ``contents`` is ``{uri, contentType, content | blob}`` (a list when the
      handler returns several).  If ``version`` equals the current version the
      answer is the error ``NotModified``: code **-32003**, message
      ``"Not modified"``, ``data: {uri, version}``.  Open to all.
    * ``resources/list {filter}`` (also with ``uri``): ``filter`` is an object
      whose keys must all match: ``kind`` (exact), ``mimeType`` (exact) and
      ``uriPrefix`` (``uri.startswith``), each a string.  An unknown key is
      -32602 with ``data: {filter: <key>, supported: [...]}``.  Open to all.
    * opted-in clients get ``kind`` (the ``kind=`` option), ``version`` (the
      content hash, once known) and ``metadata`` (the ``metadata=`` option) on
      listed Resources (templates: ``kind`` and ``metadata``), and
    * ``notifications/resources/content_changed {resource}`` (the Resource with
      its new ``version``), sent exactly when ``notifications/resources/updated``
      is, to the opted-in subscribers of that URI: a handshake session that
      opted in at ``initialize``, or a 2026-07-28 ``subscriptions/listen``
      stream whose request opted in.

Declaring a listable resource: ``children=fn`` on ``@app.resource(...)`` or
``@app.template(...)``.

* ``fn`` receives the same typed keyword arguments as the handler (the
  template variables, never a Context; it may leave out ones it does not
  need).  It may be sync (run in a worker thread) or async.
* It returns ``None`` when this instance is not listable (a file under a
  directory template), else an iterable (or async iterable) of children, each
  a URI string or a dict with ``"uri"`` and optional Resource fields:
  ``name`` (default: the last URI segment), ``title``, ``description``,
  ``mimeType``, ``size``, ``annotations``, ``icons``, plus ``capabilities``
  (shown to SEP-2093 clients), ``kind`` and ``metadata`` (shown to seed-000
  clients; by default those of the resource serving the child's URI).
* Raise ``ResourceNotFound(uri)`` for an instance that does not exist.
* If it also takes ``offset`` and ``limit`` (not template variables) it is
  asked for one page at a time: return at most ``limit`` children starting at
  ``offset``; otherwise its iterable is sliced (return a lazy one).
* Whether an instance is listable is found by calling ``fn`` without
  iterating its result (for SEP-2093 clients: ``resources/metadata``, reads,
  listed template instances and listed children), so keep the ``None`` check
  cheap and the iterable lazy.  A generator function cannot return ``None``:
  every instance counts as listable.  A concrete resource with ``children=``
  is shown as listable in list pages without a call.

Errors: an unknown URI is resource-not-found (-32002 in the handshake era,
-32602 in 2026-07-28, ``data.uri``); ``resources/list {uri}`` on a resource
that is not listable is -32602 ``"<uri> is not listable"`` with ``data.uri``.

Filesystem (template ``file:///{+path}``) and database shapes::

    def entries(path: str):
        p = ROOT / path
        if not p.is_dir():
            return None                       # a file: not listable
        return ({"uri": f"file:///{c.relative_to(ROOT)}", "size": c.stat().st_size}
                for c in p.iterdir())

    @app.template("file:///{+path}", children=entries)
    def file(path: str) -> Path: ...

    @app.template("db://{table}", children=lambda table: (f"db://{table}/{r}" for r in rowids(table)))
    def table(table: str) -> dict: ...
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .errors import InvalidParams, NotModified, ResourceNotFound

if TYPE_CHECKING:
    from .handler import Handler
    from .protocol import Connection, Request
    from .tracking import Tracker

__all__ = ["CONTENT_CHANGED", "FILTER_KEYS", "METHODS", "RESOURCES_GET", "SEP_2093"]

log = logging.getLogger("resourcekit")

SEP_2093 = "io.resourcekit/sep-2093"
RESOURCES_GET = "io.resourcekit/resources-get"
CONTENT_CHANGED = "notifications/resources/content_changed"
FILTER_KEYS = ("kind", "mimeType", "uriPrefix")
_CHILD_FIELDS = ("name", "title", "description", "mimeType", "size", "annotations", "icons")
_OWN_FIELDS = ("name", "title", "description", "annotations", "icons")
_ASYNC_BATCH = 64

Keep = Callable[[dict[str, Any], "str | None"], bool]


def _uri(req: Request) -> str:
    uri = req.params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise InvalidParams("Invalid params: 'uri' must be a non-empty string", {"param": "uri"})
    return uri


def _not_listable(uri: str) -> InvalidParams:
    return InvalidParams(f"Invalid params: {uri} is not listable", {"uri": uri})


def _last_segment(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[-1] or uri


def _capabilities(listable: bool, subscribe: bool = True) -> dict[str, bool]:
    return {"list": listable, "subscribe": subscribe}


# --- calling children functions -----------------------------------------------------------


class _Shape:
    """How to call one handler's ``children`` function (found once per handler)."""

    __slots__ = ("accepts", "generator", "paged")

    def __init__(self, handler: Handler) -> None:
        fn = handler.children
        variables = set(handler.sig.params)
        params: Mapping[str, inspect.Parameter] | None
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = None
        if params is None or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            self.accepts: frozenset[str] | None = None  # pass every variable
        else:
            self.accepts = frozenset(params)
        self.paged = (params is not None and "offset" in params and "limit" in params
                      and "offset" not in variables and "limit" not in variables)
        self.generator = inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)


_SHAPES: dict[Handler, _Shape] = {}


def _shape(handler: Handler) -> _Shape:
    shape = _SHAPES.get(handler)
    if shape is None:
        shape = _SHAPES[handler] = _Shape(handler)
    return shape


def _call_children(conn: Connection, handler: Handler, kwargs: Mapping[str, Any], **page: int) -> Any:
    """``handler.children(**kwargs)`` from a worker thread; async results are awaited on the loop."""
    shape = _shape(handler)
    args = dict(kwargs) if shape.accepts is None else {k: v for k, v in kwargs.items() if k in shape.accepts}
    result = handler.children(**args, **page)
    if inspect.isawaitable(result):
        result = asyncio.run_coroutine_threadsafe(_await(result), conn.server.loop).result()
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _iterate(conn: Connection, result: Any) -> Iterator[Any]:
    """A sync iterator over what a children function returned (async iterables pulled in batches)."""
    if hasattr(result, "__aiter__"):
        it = result.__aiter__()

        async def take() -> tuple[list[Any], bool]:
            out: list[Any] = []
            try:
                while len(out) < _ASYNC_BATCH:
                    out.append(await it.__anext__())
            except StopAsyncIteration:
                return out, True
            return out, False

        while True:
            items, done = asyncio.run_coroutine_threadsafe(take(), conn.server.loop).result()
            yield from items
            if done:
                return
    if not isinstance(result, Iterable) or isinstance(result, (str, bytes, Mapping)):
        raise TypeError(f"children must return None or an iterable of children, not {type(result).__name__}")
    yield from result


def _children_from(
    conn: Connection, handler: Handler, kwargs: Mapping[str, Any], offset: int, chunk: int
) -> Iterator[tuple[int, Any]] | None:
    """(position, child) from ``offset`` on, lazily; None when this instance is not listable."""
    if _shape(handler).paged:
        first = _call_children(conn, handler, kwargs, offset=offset, limit=chunk)
        if first is None:
            return None
        return _paged(conn, handler, kwargs, offset, chunk, first)
    result = _call_children(conn, handler, kwargs)
    if result is None:
        return None
    items = _iterate(conn, result)
    for _ in range(offset):  # a plain iterable is walked from its start
        if next(items, _END) is _END:
            return iter(())
    return enumerate(items, offset)


_END: Any = object()


def _paged(
    conn: Connection, handler: Handler, kwargs: Mapping[str, Any], offset: int, chunk: int, page: Any
) -> Iterator[tuple[int, Any]]:
    while True:
        got = 0
        for item in _iterate(conn, page):
            yield offset, item
            offset += 1
            got += 1
        if got < chunk:
            return
        page = _call_children(conn, handler, kwargs, offset=offset, limit=chunk)
        if page is None:
            return


def _listable(conn: Connection, handler: Handler, kwargs: Mapping[str, Any], *, strict: bool) -> bool:
    """Does this instance list (children returns non-None)?  Worker threads only.

    ``strict``: let the children function's exceptions through (metadata, listing);
    otherwise log them and say "not listable" (a read or a listed object).
    """
    if handler.children is None:
        return False
    shape = _shape(handler)
    if shape.generator:
        return True
    try:
        page = {"offset": 0, "limit": 1} if shape.paged else {}
        return _call_children(conn, handler, kwargs, **page) is not None
    except Exception:
        if strict:
            raise
        log.exception("children of %s failed", handler.uri)
        return False


def _off_loop() -> bool:
    """True in a worker thread, where calling user code (and blocking) is fine."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


async def _in_worker(req: Request, fn: Callable[[], Any]) -> Any:
    return await req.conn.server.runner.call(fn)


# --- Resource objects -----------------------------------------------------------------------


def _resource(handler: Handler, req: Request | None, uri: str) -> dict[str, Any]:
    """A fresh Resource object for ``uri`` (never the handler's shared one)."""
    from .listing import resource_wire

    return dict(resource_wire(handler, req, uri if handler.template is not None else None))


def _seed_fields(wire: dict[str, Any], handler: Handler | None, tracker: Tracker,
                 item: Mapping[str, Any] | None = None) -> None:
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


# --- decorating standard objects for clients that opted in -----------------------------------

Decorate = Callable[[dict[str, Any], "Handler", "Request"], None]


def resource_decorator(req: Request) -> Decorate | None:
    """Extra fields for the Resources of one ``resources/list`` page (None: standard objects)."""
    sep, seed = req.conn.wants(SEP_2093, req), req.conn.wants(RESOURCES_GET, req)
    if not (sep or seed):
        return None
    precise = sep and _off_loop()  # template instances are listed by listers, in a worker
    conn, tracker = req.conn, req.conn.app.tracker

    def decorate(wire: dict[str, Any], handler: Handler, req: Request) -> None:
        if sep:
            listable = handler.children is not None
            if listable and precise and handler.template is not None:
                match = conn.app.router.match(wire["uri"])
                listable = match is not None and _listable(conn, match.handler, match.kwargs, strict=False)
            wire["capabilities"] = _capabilities(listable)
        if seed:
            _seed_fields(wire, handler, tracker)

    return decorate


def template_decorator(req: Request) -> Decorate | None:
    """Extra fields for a ``resources/templates/list`` page (None: standard objects)."""
    sep, seed = req.conn.wants(SEP_2093, req), req.conn.wants(RESOURCES_GET, req)
    if not (sep or seed):
        return None

    def decorate(wire: dict[str, Any], handler: Handler, req: Request) -> None:
        if sep:
            wire["capabilities"] = _capabilities(handler.children is not None)  # upper bound
        if seed:
            if handler.kind is not None:
                wire["kind"] = handler.kind
            if handler.metadata:
                wire["metadata"] = dict(handler.metadata)

    return decorate


# --- reads -----------------------------------------------------------------------------------

Build = Callable[["Request", "Handler", str, Any, bool], dict[str, Any]]
_WARNED: set[Handler] = set()


def _serve(req: Request, uri: str, build: Build, *, need_listable: bool) -> Any:
    """Serve ``uri`` through the core's ``serve``, telling ``build`` whether it is listable.

    The children function is only asked when the answer is shown (``need_listable``),
    in a worker thread, before the handler runs.
    """
    from ._methods import PENDING, serve

    match = req.conn.app.router.match(uri)
    if match is None:
        raise ResourceNotFound(uri)
    handler = match.handler
    if not need_listable or handler.children is None:
        return serve(req, uri, lambda r, h, u, v: build(r, h, u, v, False))

    async def checked() -> Any:
        listable = await _in_worker(req, lambda: _listable(req.conn, handler, match.kwargs, strict=False))
        outcome = serve(req, uri, lambda r, h, u, v: build(r, h, u, v, listable and h is handler))
        return outcome if outcome is PENDING else await outcome

    return checked()


def read(req: Request, uri: str) -> Any:
    """``resources/read`` for a SEP-2093 client: contents that extend Resource (§1, §5)."""
    return _serve(req, uri, _read_result, need_listable=True)


def _read_result(req: Request, handler: Handler, uri: str, value: Any, listable: bool) -> dict[str, Any]:
    from ._methods import read_result

    result = read_result(req, handler, uri, value)
    decorate_contents(req, handler, uri, result["contents"], listable)
    return result


def decorate_contents(req: Request, handler: Handler, uri: str, contents: list[dict[str, Any]],
                      listable: bool) -> None:
    """Give each content of a read its Resource metadata, following SEP-2093's multi-content rules."""
    foreign = any(c["uri"] != uri for c in contents)
    if foreign and not listable and handler not in _WARNED:
        _WARNED.add(handler)
        log.warning("%s returned contents for other URIs but is not listable: SEP-2093 clients get them "
                    "without capabilities; declare children= or return only %s", handler.uri, uri)
    show_caps = listable or not foreign
    own = _resource(handler, None, uri)
    router = req.conn.app.router
    for content in contents:
        if content["uri"] == uri:  # this resource, in one of its formats
            for key in _OWN_FIELDS:
                if key in own:
                    content.setdefault(key, own[key])
            if show_caps:
                content["capabilities"] = _capabilities(listable)
        else:  # a child: its own metadata if some resource serves it (no capabilities: unknown)
            match = router.match(content["uri"])
            if match is not None:
                theirs = _resource(match.handler, None, content["uri"])
                for key in _OWN_FIELDS:
                    if key in theirs:
                        content.setdefault(key, theirs[key])
            content.setdefault("name", _last_segment(content["uri"]))
        content.setdefault("size", _content_size(content))


def _content_size(content: Mapping[str, Any]) -> int:
    if "text" in content:
        return len(str(content["text"]).encode("utf-8", "surrogatepass"))
    blob = str(content.get("blob", ""))
    return len(blob) * 3 // 4 - blob[-2:].count("=")


# --- SEP-2093 methods -------------------------------------------------------------------------


def resources_metadata(req: Request) -> Any:
    """``resources/metadata {uri}`` → ``{resource}``, without reading the content."""
    from ._methods import PENDING, _cache_hints

    uri = _uri(req)
    match = req.conn.app.router.match(uri)
    if match is None:
        raise ResourceNotFound(uri)
    handler = match.handler
    seed = req.conn.wants(RESOURCES_GET, req)

    def build(listable: bool) -> dict[str, Any]:
        wire = _resource(handler, req, uri)
        wire["capabilities"] = _capabilities(listable)
        if seed:
            _seed_fields(wire, handler, req.conn.app.tracker)
        return _cache_hints(req, {"resource": wire}, handler)

    if handler.children is None:
        return build(False)
    conn = req.conn
    conn.server.runner.submit(lambda: build(_listable(conn, handler, match.kwargs, strict=True)), req.complete)
    return PENDING


def _cursor_tag(uri: str) -> int:
    return zlib.crc32(uri.encode("utf-8", "surrogatepass"))


def list_children(req: Request) -> dict[str, Any]:
    """``resources/list {uri}``: one page of a listable resource's direct children (in a worker)."""
    from .pagination import decode_cursor, encode_cursor

    uri = _uri(req)
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
    children = _children_from(conn, handler, match.kwargs, offset, limit + 1)
    if children is None:
        raise _not_listable(uri)
    sep, seed = conn.wants(SEP_2093, req), conn.wants(RESOURCES_GET, req)
    out: list[dict[str, Any]] = []
    result: dict[str, Any] = {"resources": out}
    for position, item in children:
        wire, kind = _child_wire(req, item, sep, seed, keep is not None)
        if keep is not None and not keep(wire, kind):
            continue
        if len(out) == limit:
            result["nextCursor"] = encode_cursor("c", position, _cursor_tag(uri))
            break
        out.append(wire)
    return result


def _child_wire(req: Request, item: Any, sep: bool, seed: bool, filtering: bool) -> tuple[dict[str, Any], str | None]:
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
    wire.setdefault("name", _last_segment(uri))
    conn = req.conn
    match = conn.app.router.match(uri) if sep or seed or filtering else None
    handler = match.handler if match is not None else None
    if sep:
        caps = given.get("capabilities")
        if not isinstance(caps, Mapping):
            listable = match is not None and _listable(conn, match.handler, match.kwargs, strict=False)
            caps = _capabilities(listable, match is not None)
        wire["capabilities"] = dict(caps)
    if seed:
        _seed_fields(wire, handler, conn.app.tracker, given)
    version = conn.app.tracker.version(uri)
    if version is not None:
        from .versions import META_VERSION

        wire["_meta"] = {META_VERSION: version}
    kind = given.get("kind")
    if kind is None and handler is not None:
        kind = handler.kind
    return wire, kind


# --- seed 000 ----------------------------------------------------------------------------------


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


def list_filtered(req: Request) -> dict[str, Any]:
    """``resources/list {filter}`` (no ``uri``): the standard list, filtered."""
    from .listing import list_resources

    keep = filter_for(req.params["filter"])
    return list_resources(req, lambda wire, handler: keep(wire, handler.kind))


def resources_get(req: Request) -> Any:
    """Seed 000: ``{resource, contents}`` in one call, with a conditional ``version``."""
    from .contents import combined_version, to_contents

    uri = _uri(req)
    known = req.params.get("version")
    if known is not None and not isinstance(known, str):
        raise InvalidParams("Invalid params: 'version' must be a string", {"param": "version"})
    sep = req.conn.wants(SEP_2093, req)

    def build(req: Request, handler: Handler, uri: str, value: Any, listable: bool) -> dict[str, Any]:
        contents = to_contents(uri, value, handler.mime_type)
        version = combined_version(contents)
        req.conn.app.tracker.observe(uri, version)
        if known == version:
            raise NotModified(uri, version)
        resource = _resource(handler, req, uri)
        if sep:
            resource["capabilities"] = _capabilities(listable)
        _seed_fields(resource, handler, req.conn.app.tracker)
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

    return _serve(req, uri, build, need_listable=sep)


def content_changed(tracker: Tracker, uri: str) -> None:
    """Seed 000: tell the opted-in subscribers of ``uri`` what the resource looks like now.

    Called by the tracker right after it sent ``notifications/resources/updated``.
    """
    from .protocol import Connection

    targets = []
    for sub in tracker._by_uri.get(uri, ()):
        owner = sub.owner  # a handshake session, or the request of a 2026-07-28 listen stream
        if owner.conn.wants(RESOURCES_GET, owner) if not isinstance(owner, Connection) else owner.wants(RESOURCES_GET):
            targets.append(sub)
    if not targets:
        return
    match = tracker.app.router.match(uri)
    if match is None:
        return
    resource = _resource(match.handler, None, uri)
    _seed_fields(resource, match.handler, tracker)
    for sub in targets:
        sub.emit({"jsonrpc": "2.0", "method": CONTENT_CHANGED, "params": {"resource": dict(resource)}})


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
