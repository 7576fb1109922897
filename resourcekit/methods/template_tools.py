"""Each template as a typed, read-only tool (``App(resource_tools=True)``), beside ``list_resources``
and ``read_resource`` (``methods.tools`` serves them all).

A model that only calls tools should not have to build a URI by hand: every template (but those
declared ``tool=False``) is a tool named after it (``tool="name"``, else the template's ``name``,
its function's by default) whose ``inputSchema`` has one property per variable, typed as
``_meta["io.resourcekit/variables"]`` describes it (``methods.variables``): path variables
required, query variables optional, nothing else allowed.  A call's arguments are checked against
that schema and spelled into the URI with the variable's own convertor (a value the template
would not match is the argument's error, named), then the URI is expanded (RFC 6570) and read as
``resources/read`` reads it.  A handler annotated to return a TypedDict, a dataclass or a pydantic
model also gets an ``outputSchema`` (``resourcekit.schemas``), and its results ``structuredContent``.

The table is worked out once per set of templates (the router's ``generation``) and checked at
start-up: a name MCP does not allow, or one two tools share, is a ``ToolNameError`` naming the
functions involved.
"""

from __future__ import annotations

import inspect
import weakref
from typing import TYPE_CHECKING, Any

from ..declaration import BAD_TOOL_NAME, tool_name_allowed
from ..errors import ToolNameError, defined_at
from ..schemas import output_schema
from .variables import variables_meta

if TYPE_CHECKING:
    from .._convert import Convertor
    from ..declaration import Handler
    from ..registry import Registry

__all__ = ["BUILT_IN", "READ_ONLY", "ArgumentError", "TemplateTool", "ToolTable", "tool_table"]

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
BUILT_IN = ("list_resources", "read_resource")
_NOT_SCHEMA = ("required", "completion")  # variables_meta's keys that are no JSON Schema keyword
_KINDS = {"integer": "an integer", "number": "a number", "boolean": "true or false", "string": "a string",
          "array": "an array"}
_FORMATS = {"date": "a date such as 2026-11-28", "date-time": "a date and time such as 2026-11-28T09:30:00",
            "uuid": "a UUID", "decimal": "a decimal number, as a string"}


class ArgumentError(ValueError):
    """A tool call's arguments do not fit its schema: the message names the argument."""


class TemplateTool:
    """One template's tool: its listed object and what a call needs."""

    __slots__ = ("handler", "name", "properties", "required", "structured", "wire")

    def __init__(self, handler: Handler, name: str) -> None:
        assert handler.template is not None
        self.handler = handler
        self.name = name
        meta = variables_meta(handler)
        self.properties: dict[str, dict[str, Any]] = {
            v.name: {k: x for k, x in meta.get(v.name, {"type": "string"}).items() if k not in _NOT_SCHEMA}
            for v in handler.template.variables
        }
        self.required = tuple(v.name for v in handler.template.variables if not v.query)
        wire = handler.wire
        input_schema: dict[str, Any] = {"type": "object", "properties": self.properties,
                                        "additionalProperties": False}
        if self.required:
            input_schema["required"] = list(self.required)
        description = wire.get("description")
        pattern = (f"Reads the resource at the URI template {handler.uri} (RFC 6570): each argument fills "
                   "the variable of its name.")
        self.wire: dict[str, Any] = {"name": name}
        annotations = dict(READ_ONLY)
        if wire.get("title"):
            self.wire["title"] = annotations["title"] = wire["title"]
        self.wire["description"] = f"{description}\n\n{pattern}" if description else pattern
        self.wire["inputSchema"] = input_schema
        output = output_schema(_return_annotation(handler))
        self.structured = output is not None
        if output is not None:
            self.wire["outputSchema"] = output
        self.wire["annotations"] = annotations

    def uri(self, arguments: dict[str, Any]) -> str:
        """The URI the arguments name; ArgumentError (naming the argument) when they do not fit."""
        unknown = [name for name in arguments if name not in self.properties]
        if unknown:
            takes = ", ".join(self.properties) or "no arguments"
            raise ArgumentError(f"unknown argument {unknown[0]!r}: {self.name} takes {takes}")
        handler = self.handler
        assert handler.template is not None
        values: dict[str, Any] = {}
        for name, schema in self.properties.items():
            value = arguments.get(name)
            if value is None:
                if name in self.required:
                    raise ArgumentError(f"argument {name!r} is required: {_expected(schema)}")
                continue
            param = handler.sig.params.get(name)
            if param is not None:
                values[name] = _spell(name, value, param.convertor, schema)
        uri: str = handler.template.expand(**values)
        return uri


class ToolTable:
    """The template tools of one set of templates, in registration order."""

    __slots__ = ("by_name", "generation", "tools")

    def __init__(self, generation: int, tools: list[TemplateTool]) -> None:
        self.generation = generation
        self.tools = tools
        self.by_name = {tool.name: tool for tool in tools}


_TABLES: weakref.WeakKeyDictionary[Registry, ToolTable] = weakref.WeakKeyDictionary()


def tool_table(app: Registry) -> ToolTable:
    """The app's template tools (worked out again only when templates came or went); ToolNameError
    when two share a name, or one has a name MCP does not allow."""
    generation = app.router.generation
    table = _TABLES.get(app)
    if table is not None and table.generation == generation:
        return table
    tools: list[TemplateTool] = []
    taken: dict[str, Handler | None] = dict.fromkeys(BUILT_IN)
    for handler in list(app.templates):
        if handler.tool is False:
            continue
        name = handler.tool if isinstance(handler.tool, str) else handler.name
        if not tool_name_allowed(name):
            raise ToolNameError(name, (_who(handler),), f"{BAD_TOOL_NAME}; name it with tool=\"...\" on "
                                "@app.template, or leave it out with tool=False")
        if name in taken:
            other = taken[name]
            first = f"the built-in {name} tool" if other is None else _who(other)
            raise ToolNameError(name, (first, _who(handler)), "two tools cannot share a name; give one another "
                                "with tool=\"...\" on @app.template, or leave it out with tool=False")
        taken[name] = handler
        tools.append(TemplateTool(handler, name))
    table = _TABLES[app] = ToolTable(generation, tools)
    return table


def _who(handler: Handler) -> str:
    return f"{defined_at(handler.fn)} (template {handler.uri!r})"


def _return_annotation(handler: Handler) -> Any:
    try:
        return inspect.signature(handler.fn, eval_str=True).return_annotation
    except Exception:  # a name the annotation reads is not importable here: no outputSchema
        return None


def _expected(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(map(repr, schema["enum"]))
    return _FORMATS.get(schema.get("format", ""), "") or _KINDS.get(schema.get("type", "string"), "a string")


def _spell(name: str, value: Any, convertor: Convertor, schema: dict[str, Any]) -> Any:
    """``value`` as the URI spells it, checked by the variable's convertor (as a match would be)."""
    if schema.get("type") == "array":
        if not isinstance(value, list):
            raise ArgumentError(f"argument {name!r} must be an array, not {_shown(value)}")
        item_schema = schema.get("items", {})
        spelled: Any = [_scalar(name, item, item_schema) for item in value]
    else:
        spelled = _scalar(name, value, schema)
    try:
        return convertor.format(convertor.parse(spelled))
    except (ValueError, TypeError, ArithmeticError):
        raise ArgumentError(f"argument {name!r} must be {_expected(schema.get('items', schema))}, "
                            f"not {_shown(value)}") from None


def _scalar(name: str, value: Any, schema: dict[str, Any]) -> str:
    kind = schema.get("type", "string")
    if kind == "boolean" and isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bool):
        pass  # a JSON boolean is no number
    elif kind == "integer" and isinstance(value, int):
        return str(value)
    elif kind == "number" and isinstance(value, (int, float)):
        return repr(value)
    elif kind == "string" and isinstance(value, str):
        return value
    raise ArgumentError(f"argument {name!r} must be {_expected(schema)}, not {_shown(value)}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
