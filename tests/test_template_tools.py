"""A typed tool per template (``App(resource_tools=True)``): the official client over stdio and HTTP,
both eras; the schema of every kind of variable, reads as resources/read reads, errors the model can
act on, structuredContent, and names checked at start-up."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from typing import Any

import jsonschema
import mcp_types as types
import pytest
from mcp.client.session import ClientSession

from resourcekit import App, DefinitionError, Principal, ToolNameError
from resourcekit.testing import Client
from tests.support.http_server import http_server_process
from tests.support.mcp_client import http_session, stdio_session
from tests.support.process import APPS, cli

pytestmark = pytest.mark.anyio
APP = APPS / "template_tools_app.py"
BOOK = str(uuid.UUID(int=2))

SHELF_SCHEMA = {
    "type": "object",
    "properties": {
        "shelf": {"type": "string", "enum": ["fiction", "science"]},  # an Enum
        "size": {"type": "string", "enum": ["s", "l"]},  # a Literal
        "n": {"type": "integer", "description": "the position on the shelf"},  # an int, Annotated
        "since": {"type": "string", "format": "date"},  # a date, a query variable
        "tags": {"type": "array", "items": {"type": "string"}},  # an exploded list
        "limit": {"type": "integer", "default": 10},  # a query variable with a default
    },
    "required": ["shelf", "size", "n"],
    "additionalProperties": False,
}


async def check(session: ClientSession) -> None:
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert sorted(tools) == ["cover", "get_book", "list_resources", "read_resource", "shelf"]  # secret: tool=False
    shelf = tools["shelf"]
    assert shelf.input_schema == SHELF_SCHEMA
    assert shelf.description is not None and shelf.description.startswith("One book on a shelf.")
    assert "shelf://{shelf}/{size}/{n}{?since,tags*,limit}" in shelf.description
    assert tools["get_book"].input_schema["properties"] == {"book_id": {"type": "string", "format": "uuid"}}
    assert tools["get_book"].title == "A book"
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
    assert shelf.output_schema is None and tools["cover"].output_schema is None

    # a call reads the expanded URI: the same content as resources/read of it
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("shelf", {"shelf": "science", "size": "l", "n": 3}, "shelf://science/l/3"),
        ("shelf", {"shelf": "fiction", "size": "s", "n": 1, "since": "2026-11-28", "tags": ["a", "b c"], "limit": 2},
         "shelf://fiction/s/1?since=2026-11-28&tags=a&tags=b%20c&limit=2"),
        ("get_book", {"book_id": BOOK}, f"book://{BOOK}"),
    ]
    for name, arguments, uri in cases:
        called = await session.call_tool(name, arguments)
        read = (await session.read_resource(uri)).contents[0]
        assert not called.is_error and called.content[0].type == "text"
        assert called.content[0].text == read.text, (name, arguments)
    assert (await session.call_tool("shelf", {"shelf": "fiction", "size": "s", "n": 1, "tags": ["a", "b c"]})
            ).content[0].text == "fiction/s/1 since=None tags=a,b c limit=10"
    image = (await session.call_tool("cover", {"book_id": 7})).content
    assert isinstance(image[0], types.ImageContent) and base64.b64decode(image[0].data).startswith(b"\x89PNG")

    # a TypedDict return: structuredContent that fits the declared outputSchema
    book = await session.call_tool("get_book", {"book_id": BOOK})
    output = tools["get_book"].output_schema
    assert output == {"type": "object", "required": ["id", "title", "pages"],
                      "properties": {"id": {"type": "string"}, "title": {"type": "string"},
                                     "pages": {"type": "integer"}}}
    assert book.structured_content == {"id": BOOK, "title": "Book 2", "pages": 102}
    jsonschema.validate(book.structured_content, output)

    # what the model got wrong comes back as the tool's error, naming the argument
    wrong: list[tuple[str, dict[str, Any], str]] = [
        ("shelf", {"shelf": "poetry", "size": "s", "n": 1}, "argument 'shelf' must be one of 'fiction', 'science'"),
        ("shelf", {"shelf": "fiction", "size": "xl", "n": 1}, "argument 'size' must be one of 's', 'l'"),
        ("shelf", {"shelf": "fiction", "size": "s", "n": "three"}, "argument 'n' must be an integer, not 'three'"),
        ("shelf", {"shelf": "fiction", "size": "s"}, "argument 'n' is required"),
        ("shelf", {"shelf": "fiction", "size": "s", "n": 1, "since": "yesterday"}, "argument 'since' must be a date"),
        ("shelf", {"shelf": "fiction", "size": "s", "n": 1, "tags": "a"}, "argument 'tags' must be an array"),
        ("shelf", {"shelf": "fiction", "size": "s", "n": 1, "colour": "red"}, "unknown argument 'colour'"),
        ("get_book", {"book_id": "not-a-uuid"}, "argument 'book_id' must be a UUID"),
        ("get_book", {"book_id": str(uuid.UUID(int=99))}, f"Resource not found: book://{uuid.UUID(int=99)}"),
    ]
    for name, arguments, message in wrong:
        result = await session.call_tool(name, arguments)
        assert result.is_error and result.content[0].text.startswith(message), (arguments, result.content)


async def test_template_tools_over_stdio_in_both_eras() -> None:
    async with stdio_session(APP) as session:
        await check(session)
    async with stdio_session(APP, initialize=False) as session:
        await session.discover()
        await check(session)


async def test_template_tools_over_http_in_both_eras() -> None:
    with http_server_process(APP) as url:
        async with http_session(url) as session:
            await check(session)
        async with http_session(url, initialize=False) as session:
            await session.discover()
            await check(session)


# --- names, checked at start-up -------------------------------------------------------------------


def test_a_clash_fails_start_up_naming_both_functions() -> None:
    done = cli("run", str(APPS / "tool_clash_app.py"), "--resource-tools", input="")
    assert done.returncode == 1
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("resourcekit: error:") and "tool 'lookup'" in error
    assert "first()" in error and "lookup()" in error and "tool_clash_app.py" in error
    # without --resource-tools the same app serves: the names matter only where tools are served
    assert cli("list", str(APPS / "tool_clash_app.py")).returncode == 0


def _app(declare: Callable[[App], None]) -> App:
    app = App("names", resource_tools=True)
    declare(app)
    return app


@pytest.mark.parametrize(("declare", "functions"), [
    (lambda app: app.template("r://{uri}")(lambda uri: uri), ("template 'r://{uri}'",)),  # <lambda>: no name
    (lambda app: app.template("r://{uri}", name="read_resource")(lambda uri: uri),
     ("the built-in read_resource tool", "template 'r://{uri}'")),
    (lambda app: (app.template("a://{x}", name="same")(lambda x: x), app.template("b://{x}", tool="same")(lambda x: x)),
     ("template 'a://{x}'", "template 'b://{x}'")),
])
async def test_start_up_refuses_names_mcp_does_not_allow_or_two_tools_share(
    declare: Callable[[App], None], functions: tuple[str, ...]
) -> None:
    app = _app(declare)
    with pytest.raises(ToolNameError) as info:
        async with Client(app):
            pass
    assert len(info.value.functions) == len(functions)
    for function, named in zip(info.value.functions, functions, strict=True):
        assert named in function and function in str(info.value)
    app.resource_tools = False  # the names are only checked where tools are served
    async with Client(app) as client:
        assert await client.list_templates()


def test_tool_option_is_checked_at_decoration() -> None:
    app = App("options")
    with pytest.raises(ToolNameError, match="'has space'"):
        app.template("a://{x}", tool="has space")(lambda x: x)
    with pytest.raises(DefinitionError, match="must be a tool name or False"):
        app.template("a://{x}", tool=3)(lambda x: x)  # type: ignore[typeddict-item]
    with pytest.raises(DefinitionError, match="tool= is a template option"):
        app.resource("a://x", tool="x")(lambda: "x")  # type: ignore[call-arg]


async def test_tools_follow_the_templates_and_scopes_hide_them() -> None:
    app = App("live", resource_tools=True)
    app.template("one://{x}")(lambda x: x)
    app.template("two://{x}", scopes=["admin"], name="two")(lambda x: x)

    def named(result: dict[str, Any]) -> list[str]:
        return [tool["name"] for tool in result["tools"]][2:]

    with pytest.raises(ToolNameError):  # the first template's tool has no name MCP allows: <lambda>
        async with Client(app):
            pass
    app.remove("one://{x}")
    app.template("one://{x}", name="one")(lambda x: x)
    async with Client(app, principal=Principal("ada", scopes=["reader"])) as reader:
        assert named(await reader.request("tools/list")) == ["one"]  # two needs admin: not shown
    async with Client(app) as client:
        assert named(await client.request("tools/list")) == ["two", "one"]  # registration order
        app.remove("two://{x}")
        assert named(await client.request("tools/list")) == ["one"]
        app.template("three://{x}", name="three")(lambda x: x)
        assert named(await client.request("tools/list")) == ["one", "three"]
        called = await client.request("tools/call", {"name": "three", "arguments": {"x": "hi"}})
        assert called == {"content": [{"type": "text", "text": "hi"}]}


async def test_tools_list_is_paged_by_a_cursor_that_templates_coming_and_going_do_not_move() -> None:
    app = App("paged", resource_tools=True, page_size=4)
    for i in range(9):
        app.template(f"t{i}://{{x}}", name=f"t{i}")(lambda x: x)
    async with Client(app) as client:
        first = await client.request("tools/list")
        assert [t["name"] for t in first["tools"]] == ["list_resources", "read_resource", "t0", "t1"]
        app.remove("t0://{x}")  # gone before the next page: the pages after it are unchanged
        names, cursor = [], first["nextCursor"]
        while cursor:
            page = await client.request("tools/list", {"cursor": cursor})
            assert len(page["tools"]) <= 4
            names += [t["name"] for t in page["tools"]]
            cursor = page.get("nextCursor")
        assert names == [f"t{i}" for i in range(2, 9)]
        with pytest.raises(Exception, match="cursor"):
            await client.request("tools/list", {"cursor": "not-a-cursor"})
