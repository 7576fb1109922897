"""``tools/list`` and ``tools/call``: the resources as read-only tools (``App(resource_tools=True)``).

Many hosts only ever call tools.  For them the server also offers ``list_resources``
(optional ``cursor``: resources and templates as JSON, paged like ``resources/list``),
``read_resource`` (``uri``: text as text content, images as image content, other
binary as an embedded resource) and one typed tool per template (``template_tools``:
its arguments fill the template's variables).  All go through the router, the limits,
the scopes and the errors of ``resources/read`` (``reading.serve``); an error the client
caused (an unknown URI, a URI too long, an argument that does not fit, an ``MCPError`` a
handler raised) is the tool's error result (``isError``, the message ``resources/read``
would give), so the model sees it and can correct itself.  A bug in a handler is logged
and answered -32603, and an unknown tool -32602, as JSON-RPC errors.  With
``resource_tools`` off both methods answer method-not-found.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import InsufficientScope, InvalidParams, MCPError, MethodNotFound
from ..pagination import decode_cursor, encode_cursor
from ..scopes import may_read
from ._base import PENDING, Method, cache_hints, check_uri, in_worker, keyset_after
from .listing import resources_page
from .reading import encoded, read_result, serve
from .template_tools import READ_ONLY, ArgumentError, TemplateTool, tool_table

if TYPE_CHECKING:
    from ..declaration import Handler
    from ._base import RequestView as Request

__all__ = ["METHODS", "TOOLS"]

log = logging.getLogger("resourcekit")

_OBJECTS = {"type": "array", "items": {"type": "object"}}

TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "list_resources",
        "title": "List resources",
        "description": (
            "List the resources this server offers (uri, name, description, mimeType) and its URI templates "
            "(uriTemplate: fill in the {variables} to make a URI). Read one with read_resource. "
            "If the result has nextCursor, call again with that cursor for more."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"cursor": {"type": "string", "description": "nextCursor of the previous call"}},
        },
        "outputSchema": {
            "type": "object",
            "properties": {"resources": _OBJECTS, "resourceTemplates": _OBJECTS, "nextCursor": {"type": "string"}},
            "required": ["resources", "resourceTemplates"],
        },
        "annotations": {"title": "List resources", **READ_ONLY},
    },
    {
        "name": "read_resource",
        "title": "Read a resource",
        "description": ("Read the resource at a URI (from list_resources, or a URI template with its "
                        "variables filled in)."),
        "inputSchema": {
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "the resource's URI"}},
            "required": ["uri"],
        },
        "annotations": {"title": "Read a resource", **READ_ONLY},
    },
)
_SEPARATOR = "~"  # between the two walks' cursors in one tool cursor; cursors are base64url


def _served(req: Request) -> None:
    if not req.conn.app.resource_tools:
        raise MethodNotFound(f"Method not found: {req.method}", {"method": req.method})


def list_tools(req: Request) -> dict[str, Any]:
    """The two built-in tools, then a tool per template in registration order, ``page_size`` of them
    a page (a keyset cursor: templates that come or go meanwhile move no other tool)."""
    _served(req)
    app = req.conn.app
    after = keyset_after(req, "o")
    table = tool_table(app).tools
    start = bisect_right(table, after, key=_seq)
    tools: list[dict[str, Any]] = [] if after else list(TOOLS)
    limit, more = app.page_size, False
    for tool in table[start:]:
        if req.principal is not None and not may_read(req.principal, app, tool.handler):
            continue
        if len(tools) >= limit:
            more = True
            break
        tools.append(tool.wire)
        after = tool.handler.seq
    result: dict[str, Any] = {"tools": tools}
    if more:
        result["nextCursor"] = encode_cursor("o", after)
    return cache_hints(req, result)


def _seq(tool: TemplateTool) -> int:
    return tool.handler.seq


def call_tool(req: Request) -> Any:
    _served(req)
    name = req.params.get("name")
    arguments = req.params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidParams("Invalid params: 'arguments' must be an object", {"param": "arguments"})
    if name == "read_resource":
        uri = arguments.get("uri")
        if not isinstance(uri, str) or not uri:
            return error_result("read_resource needs 'uri': the URI of a resource, as list_resources shows it")
        return _read(req, uri, _read_build)
    if name == "list_resources":
        return _list(req, arguments)
    tool = tool_table(req.conn.app).by_name.get(name) if isinstance(name, str) else None
    if tool is None:
        raise InvalidParams(f"Unknown tool: {name!r}; tools/list names this server's tools", {"tool": name})
    try:
        uri = tool.uri(arguments)
    except ArgumentError as exc:
        return error_result(f"{exc}; {name}'s inputSchema (tools/list) says what each argument takes")
    return _read(req, uri, _structured_build(tool) if tool.structured else _read_build)


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


# --- read_resource and the template tools: a read, as resources/read reads ----------------------


def _read(req: Request, uri: str, build: Callable[[Request, Handler, str, Any], dict[str, Any]]) -> Any:
    try:
        check_uri(req, uri)
        outcome = serve(req, uri, encoded(build), lambda ok, value: _done(req, ok, value))
    except InsufficientScope:
        raise  # not the tool's failure: over HTTP a 403 that tells the client which scopes to ask for
    except MCPError as exc:
        return error_result(exc.message)
    if outcome is PENDING:
        return PENDING

    async def awaited() -> Any:
        try:
            result = await outcome  # the encoded reply
        except MCPError as exc:
            return error_result(exc.message)
        return result

    return awaited()


def _done(req: Request, ok: bool, value: Any) -> None:
    """A sync handler's outcome, from the worker: errors the client caused become the tool's error."""
    if not ok and isinstance(value, MCPError):
        req.respond(error_result(value.message))
    else:
        req.complete(ok, value)


def _read_build(req: Request, handler: Handler, uri: str, value: Any) -> dict[str, Any]:
    contents = read_result(req, handler, uri, value)["contents"]  # versions recorded as for resources/read
    return {"content": [_tool_content(content, uri) for content in contents]}


def _structured_build(tool: TemplateTool) -> Callable[[Request, Handler, str, Any], dict[str, Any]]:
    """A template tool's result with ``structuredContent``: the JSON its handler returned, as read."""

    def build(req: Request, handler: Handler, uri: str, value: Any) -> dict[str, Any]:
        contents = read_result(req, handler, uri, value)["contents"]
        result: dict[str, Any] = {"content": [_tool_content(content, uri) for content in contents]}
        if handler is tool.handler and contents and "text" in contents[0]:  # the URI may name another's
            try:
                structured = orjson.loads(contents[0]["text"])
            except orjson.JSONDecodeError:
                structured = None
            if isinstance(structured, dict):
                result["structuredContent"] = structured
        return result

    return build


def _tool_content(content: dict[str, Any], uri: str) -> dict[str, Any]:
    mime = content.get("mimeType")
    if "text" in content:
        if content["uri"] == uri:
            return {"type": "text", "text": content["text"]}
        return {"type": "resource", "resource": _embedded(content, "text")}  # another URI's: say which
    if mime is not None and mime.startswith("image/"):
        return {"type": "image", "data": content["blob"], "mimeType": mime}
    return {"type": "resource", "resource": _embedded(content, "blob")}


def _embedded(content: dict[str, Any], field: str) -> dict[str, Any]:
    embedded = {"uri": content["uri"], field: content[field]}
    if "mimeType" in content:
        embedded["mimeType"] = content["mimeType"]
    return embedded


# --- list_resources -----------------------------------------------------------------------------


def _list(req: Request, arguments: dict[str, Any]) -> Any:
    cursor = arguments.get("cursor")
    if req.conn.app.listed_templates:  # listers may do I/O (a database, a directory)
        return in_worker(req, lambda: _list_page(req, cursor))
    return _list_page(req, cursor)


def _list_page(req: Request, cursor: Any) -> dict[str, Any]:
    """Resources and templates, both walks a page at a time; the tool cursor carries both positions."""
    try:
        if cursor is None:
            resource_cursor, template_after, resources_done, templates_done = None, 0, False, False
        elif isinstance(cursor, str) and cursor.count(_SEPARATOR) == 1:
            resource_part, template_part = cursor.split(_SEPARATOR)
            resources_done, templates_done = resource_part == "", template_part == ""
            resource_cursor = resource_part or None
            template_after = 0 if templates_done else decode_cursor(template_part, ("t",))[1][0]
        else:
            raise InvalidParams("Invalid cursor", {"cursor": cursor})
        out: dict[str, Any] = {"resources": [], "resourceTemplates": []}
        next_resources = next_templates = ""
        if not resources_done:
            page = resources_page(req, resource_cursor)
            out["resources"] = page["resources"]
            next_resources = page.get("nextCursor", "")
        if not templates_done:
            templates, next_templates = _templates_page(req, template_after)
            out["resourceTemplates"] = templates
    except MCPError as exc:
        return error_result(f"{exc.message}: call list_resources without a cursor to start again")
    if next_resources or next_templates:
        out["nextCursor"] = next_resources + _SEPARATOR + next_templates
    return {"content": [{"type": "text", "text": orjson.dumps(out).decode()}], "structuredContent": out}


def _templates_page(req: Request, after: int) -> tuple[list[dict[str, Any]], str]:
    app = req.conn.app
    page, more = app.templates.page(after, app.page_size)
    out = []
    principal = req.principal
    for _, handler in page:
        if principal is not None and not may_read(principal, app, handler):
            continue  # what the token may not read is not shown
        wire = dict(handler.wire)
        if handler.meta:
            wire["_meta"] = dict(handler.meta)
        out.append(wire)
    return out, encode_cursor("t", page[-1][0]) if more else ""


METHODS: dict[str, Method] = {
    "tools/list": list_tools,
    "tools/call": call_tool,
}
