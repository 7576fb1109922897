"""``resources/read``, and the read an extension adds: ``resources/get`` (seed 000); the
``Context`` a handler receives.

Async handlers run as a task on the loop; sync ones, with the encoding and hashing
of what they return, in a worker thread.  Every successful read records the
version (content hash) it served, shown in listings.

For a SEP-2093 client, contents extend Resource (§1): each content of the
requested URI carries its Resource's metadata, ``size`` and ``capabilities``;
contents with other URIs are children (§5), only legitimate when the resource
is listable: a non-listable resource returning them is served without
``capabilities`` (the spec's backwards-compatible form) and a warning is
logged once.

Seed 000's ``resources/get {uri, version?}`` answers ``{resource, contents}``;
a ``version`` that is still current is the error ``NotModified`` (-32003).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from orjson import dumps

from .._jobs import Call
from ..contents import TEXT_MIME, Content, combined_version, text_version, to_contents
from ..context import Context
from ..errors import InvalidParams, LimitExceeded, NotModified, ResourceNotFound
from ..extensions import FIELDS, SEP_2093
from ..revisions import META_VERSION
from ..scopes import check_read
from ._base import PENDING, Method, cache_hints, readable, uri_param
from .children import listable
from .wire import capabilities, fresh_resource, last_segment, seed_fields

if TYPE_CHECKING:
    from .._jobs import Callback
    from ..declaration import Handler
    from ..eras import Era
    from ..extensions import OptIn
    from ._base import RequestView as Request
    from ._base import SessionView as Connection

__all__ = ["METHODS", "TAILS", "compile_read", "read_reply", "read_result", "serve", "served", "text_tail"]

log = logging.getLogger("resourcekit")

Build = Callable[["Request", "Handler", str, Any], dict[str, Any]]
ReplyOf = Callable[["Request", "Handler", str, Any], bytes]
BuildListable = Callable[["Request", "Handler", str, Any, bool], dict[str, Any]]

_OWN_FIELDS = tuple(f for f in FIELDS[SEP_2093]["content"] if f not in ("capabilities", "size"))


# --- the core of every read -------------------------------------------------------------------


def serve(req: Request, uri: str | None = None, reply_of: ReplyOf | None = None, done: Callback | None = None) -> Any:
    """Call the handler of ``uri`` and answer with ``reply_of(req, handler, uri, value)``, the
    encoded reply: made where the handler ran (a sync handler's worker, in the session's lane),
    and handed on from there when the session's reply takes it from any thread and no ``Context``
    may send log messages ahead of it; else from the loop, after them.  ``done(ok, value)``: where a
    sync handler's failure (or its reply, if not handed on from the worker) goes, on the loop
    (default: the request's answer).  ``serve(req)`` is a handshake-era ``resources/read``."""
    conn = req.conn
    router = conn.router
    # the parameter's, checked once nothing serves it: what the router knows is a valid URI
    target: str = req.params.get("uri", "") if uri is None else uri
    try:
        handler = router.exact.get(target)  # the most frequent: a declared URI, no match record
        # then a template URI read before (its match as it is), else the router's work
        match = None if handler is not None else router.shared.get(target) or (
            router.unshared(target) if target else None)
    except TypeError:  # (unhashable, or no str: no URI)
        if type(target) is str:
            raise
        handler = match = None
    if handler is None:
        if match is None:
            if uri is None:
                uri_param(req)  # the parameter's error, if it has one
            raise ResourceNotFound(target)
        handler, kwargs = match.handler, match.kwargs
    else:
        kwargs = _NO_ARGUMENTS
    reply_of = reply_of or read_reply
    sig = handler.sig
    if sig.context_param is not None:
        if match is None:  # a resource's: the Context is its one argument
            kwargs = {}
        kwargs[sig.context_param] = _context(req, target, {} if match is None else match.raw)
        req.sink = None  # its log messages go out first, from the loop: so does its reply
    if req.principal is not None:  # HTTP with auth: the token must carry the resource's scopes
        check_read(req.principal, conn.app, handler, target)
    if sig.is_async:
        return _serve_async(req, handler, target, kwargs, reply_of)
    req.handler = handler
    req.kwargs = kwargs
    req.uri = target
    req.reply_of = reply_of
    req.lane = conn.lane
    conn.runner.submit(req if done is None else Call(req.run, done, req.lane))
    return PENDING


_NO_ARGUMENTS: dict[str, Any] = {}  # a resource's handler takes none (never changed: only passed on)


async def _serve_async(req: Request, handler: Handler, uri: str, kwargs: dict[str, Any], reply_of: ReplyOf) -> Any:
    try:
        return reply_of(req, handler, uri, await handler.fn(**kwargs))
    except ResourceNotFound:
        req.conn.app.router.forget(uri)
        raise


def encoded(build: Build) -> ReplyOf:
    """A reply maker from a result maker: the result, encoded by the request."""

    def reply_of(req: Request, handler: Handler, uri: str, value: Any) -> bytes:
        return req.encode(build(req, handler, uri, value))

    return reply_of


def _context(req: Request, uri: str, raw: dict[str, Any]) -> Context:
    conn = req.conn
    server = conn.server

    def emit(message: dict[str, Any]) -> None:
        # a log message goes out before the response: directly on the loop, and from a
        # worker through the runner, whose deliveries keep the worker's order
        if server.on_loop():
            req.notify(message)
        else:
            server.runner.post(req.notify, message)

    return Context(
        conn.app, uri, params=raw, request_id=req.id, protocol_version=req.version,
        meta=req.meta, log_level=req.log_level, emit=emit, principal=req.principal,
    )


def _serve_listable(req: Request, uri: str, build: BuildListable, *, need_listable: bool) -> Any:
    """``serve``, telling ``build`` whether the resource is listable.

    The children function is only asked when the answer is shown (``need_listable``),
    in a worker thread, before the handler runs.
    """
    match = readable(req, uri)  # the scopes checked before children= runs
    handler = match.handler
    if not need_listable or handler.children is None:
        return serve(req, uri, lambda r, h, u, v: r.encode(build(r, h, u, v, False)))

    async def checked() -> Any:
        is_listable = await req.conn.server.runner.call(
            lambda: listable(req.conn, handler, match.kwargs, strict=False), req.conn.lane)
        outcome = serve(req, uri, lambda r, h, u, v: r.encode(build(r, h, u, v, is_listable and h is handler)))
        return outcome if outcome is PENDING else await outcome

    return checked()


# --- resources/read ---------------------------------------------------------------------------


def read_modern(req: Request) -> Any:
    """``resources/read`` in the 2026-07-28 era: the result carries cache hints."""
    return serve(req, None, modern_reply)


def read_sep_2093(req: Request) -> Any:
    """``resources/read`` for a SEP-2093 client: contents that carry Resource metadata."""
    return _serve_listable(req, uri_param(req), _read_result_sep_2093, need_listable=True)


def compile_read(era: Era, optin: OptIn) -> Method:
    """The read of a profile: a SEP-2093 client's contents carry metadata, nobody else's do."""
    if optin.sep_2093:
        return read_sep_2093
    return read_modern if era.stateless else serve


def read_result(req: Request, handler: Handler, uri: str, value: Any) -> dict[str, Any]:
    if type(value) is str:  # the most common read, without Content records (to_wire's shape)
        mime = handler.mime_type or TEXT_MIME
        if len(value) * 4 > req.conn.limits.max_read_size:  # maybe too large: measured
            _bounded(req, uri, value)
        version = text_version(value, mime)
        wire = [{"uri": uri, "mimeType": mime, "text": value, "_meta": {META_VERSION: version}}]
    else:
        contents = _bounded_contents(req, uri, value, handler.mime_type)
        version = combined_version(contents)
        wire = [c.to_wire(META_VERSION) for c in contents]
    served(req.conn, uri, version)
    result = {"contents": wire}
    return cache_hints(req, result, handler) if req.modern else result


def _bounded(req: Request, uri: str, value: Any) -> None:
    """``value`` may be answered by a read: nothing bigger than ``Limits.max_read_size`` (a file is
    measured before it is read, a text only when it may be that big)."""
    limit = req.conn.limits.max_read_size
    if isinstance(value, os.PathLike):  # a pathlib.Path (pathlib itself is not imported to serve)
        size = os.stat(value).st_size
    elif type(value) is str:
        size = len(value.encode("utf-8", "surrogatepass"))
    else:
        return
    if size > limit:
        _too_large(uri, size, limit)


def _bounded_contents(req: Request, uri: str, value: Any, mime_type: str | None) -> list[Content]:
    """``to_contents``, within ``Limits.max_read_size``."""
    _bounded(req, uri, value)
    contents = to_contents(uri, value, mime_type)
    size = sum(c.size for c in contents)
    if size > req.conn.limits.max_read_size:
        _too_large(uri, size, req.conn.limits.max_read_size)
    return contents


def _too_large(uri: str, size: int, limit: int) -> NoReturn:
    raise LimitExceeded("max_read_size", limit, f"Resource too large to read: {uri[:200]} is {size} bytes, "
                        f"over max_read_size ({limit}); resources/stream serves it if it is streamable",
                        code=-32603)


def read_reply(req: Request, handler: Handler, uri: str, value: Any) -> bytes:
    """A handshake-era read's whole reply to the handler's ``value``, as one JSON line: a short
    text's from its remembered tail (``text_tail``: only its id is encoded when the URI served the
    same text before), anything else its result encoded."""
    known = TAILS.get(uri)
    if known is not None and type(value) is str and known[0] == value and known[1] is handler:
        _, _, tail, version = known  # (== on the same str: no compare)
    elif type(value) is str and len(value) <= TAIL_TEXT:
        try:
            tail, version = text_tail(uri, handler, value)
        except TypeError:  # JSON cannot carry the text: answered as any result that cannot be
            return req.encode(read_result(req, handler, uri, value))
    else:
        return req.encode(read_result(req, handler, uri, value))
    served(req.conn, uri, version)
    return HEAD + dumps(req.id) + tail


def modern_reply(req: Request, handler: Handler, uri: str, value: Any) -> bytes:
    """A 2026-07-28 read's whole reply, as ``read_reply``'s: a short text's from its remembered
    tail (``MODERN_TAILS``), which depends as well on what the cache hints and the server's
    decoration are made of (the server, the handler's and the app's hints, fixed once declared, and
    whether a token makes the answer private), anything else its result encoded."""
    conn = req.conn
    private = req.principal is not None
    known = MODERN_TAILS.get(uri)
    if (known is not None and type(value) is str and known[0] == value and known[1] is handler
            and known[2] is conn.server and known[3] is private):
        served(conn, uri, known[5])
        return HEAD + dumps(req.id) + known[4]
    result = read_result(req, handler, uri, value)
    data = req.encode(result)
    if type(value) is str and len(value) <= TAIL_TEXT:
        head = len(HEAD) + len(dumps(req.id))
        if data.startswith(_RESULT, head):  # a result (not the error of a text JSON cannot carry)
            version = result["contents"][0]["_meta"][META_VERSION]  # (read_result's: one text content)
            _remember(MODERN_TAILS, uri, (value, handler, conn.server, private, data[head:], version))
    return data


def served(conn: Connection, uri: str, version: str) -> None:
    """What a read records (from any thread): the version the tracker shows, and the session's
    ``seen``, where a subscription would start; each left alone when it holds that already."""
    tracker = conn.tracker
    if tracker.versions.get(uri) is not version and tracker.instance_versions.get(uri) is not version:
        tracker.observe(uri, version)
    if not conn.stateless:  # put_bounded, inlined (hot path)
        seen = conn.seen
        if seen.get(uri) is not version:
            if len(seen) >= conn.seen_max and uri not in seen:
                seen.clear()
            seen[uri] = version


HEAD = b'{"jsonrpc":"2.0","id":'  # a reply's bytes before its id
_RESULT = b',"result":'
TAIL_TEXT = 256  # characters: short texts' replies are remembered, by URI (those of read_result)
_TAIL_URI = 256
_TAIL_SIZE = 4096  # URIs (as many as the router caches); the table starts over when full
# uri -> (text, the handler that returned it, the reply's bytes after its id, version)
TAILS: dict[str, tuple[str, Handler, bytes, str]] = {}
# the same for 2026-07-28 reads: uri -> (text, handler, server, private, bytes after the id, version)
MODERN_TAILS: dict[str, tuple[str, Handler, object, bool, bytes, str]] = {}


def _remember(table: dict[str, Any], uri: str, entry: Any) -> None:
    """``table[uri] = entry`` for a URI of at most ``_TAIL_URI`` characters; a full table starts over."""
    if len(uri) <= _TAIL_URI:
        if len(table) >= _TAIL_SIZE and uri not in table:
            table.clear()
        table[uri] = entry


def text_tail(uri: str, handler: Handler, text: str) -> tuple[bytes, str]:
    """The bytes of a read's reply after its id, and the version, for a short text ``handler``
    returned; remembered in ``TAILS``.  They are a function of the URI, the mimeType and the text
    (the version is their hash): the bytes ``read_result`` would give.  Workers may run this at
    once: the table's reads and writes are single dict operations."""
    mime = handler.mime_type or TEXT_MIME
    version = text_version(text, mime)
    tail = _RESULT + dumps({"contents": [{"uri": uri, "mimeType": mime, "text": text,
                                          "_meta": {META_VERSION: version}}]}) + b"}\n"
    _remember(TAILS, uri, (text, handler, tail, version))
    return tail, version


def _read_result_sep_2093(req: Request, handler: Handler, uri: str, value: Any, is_listable: bool) -> dict[str, Any]:
    result = read_result(req, handler, uri, value)
    _decorate_contents(req, handler, uri, result["contents"], is_listable)
    return result


def _decorate_contents(req: Request, handler: Handler, uri: str, contents: list[dict[str, Any]],
                       is_listable: bool) -> None:
    """Give each content of a read its Resource metadata, following SEP-2093's multi-content rules."""
    foreign = any(c["uri"] != uri for c in contents)
    if foreign and not is_listable and not handler.remembered("warned_foreign"):
        handler.remember("warned_foreign", True)
        log.warning("%s returned contents for other URIs but is not listable: SEP-2093 clients get them "
                    "without capabilities; declare children= or return only %s", handler.uri, uri)
    show_caps = is_listable or not foreign
    own = fresh_resource(handler, None, uri)
    router = req.conn.app.router
    for content in contents:
        if content["uri"] == uri:  # this resource, in one of its formats
            for key in _OWN_FIELDS:
                if key in own:
                    content.setdefault(key, own[key])
            if show_caps:
                content["capabilities"] = capabilities(is_listable, req.conn.app.subscribe)
        else:  # a child: its own metadata if some resource serves it (no capabilities: unknown)
            match = router.match(content["uri"])
            if match is not None:
                theirs = fresh_resource(match.handler, None, content["uri"])
                for key in _OWN_FIELDS:
                    if key in theirs:
                        content.setdefault(key, theirs[key])
            content.setdefault("name", last_segment(content["uri"]))
        content.setdefault("size", _content_size(content))


def _content_size(content: Mapping[str, Any]) -> int:
    if "text" in content:
        return len(str(content["text"]).encode("utf-8", "surrogatepass"))
    blob = str(content.get("blob", ""))
    return len(blob) * 3 // 4 - blob[-2:].count("=")


# --- resources/get (seed 000) -----------------------------------------------------------------


def get(req: Request) -> Any:
    """``{resource, contents}`` in one call, with a conditional ``version``."""
    uri = uri_param(req)
    known = req.params.get("version")
    if known is not None and not isinstance(known, str):
        raise InvalidParams("Invalid params: 'version' must be a string", {"param": "version"})
    sep = req.optin.sep_2093

    def build(req: Request, handler: Handler, uri: str, value: Any, is_listable: bool) -> dict[str, Any]:
        contents = _bounded_contents(req, uri, value, handler.mime_type)
        version = combined_version(contents)
        tracker = req.conn.app.tracker
        served(req.conn, uri, version)
        if known == version:
            raise NotModified(uri, version)
        resource = fresh_resource(handler, tracker, uri)
        if sep:
            resource["capabilities"] = capabilities(is_listable, req.conn.app.subscribe)
        seed_fields(resource, handler, tracker)
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

    return _serve_listable(req, uri, build, need_listable=sep)


METHODS: dict[str, Method] = {
    "resources/read": serve,  # compiled per profile: compile_read
    "resources/get": get,
}
