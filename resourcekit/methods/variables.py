"""What a template's variables take, in ``_meta["io.resourcekit/variables"]`` of ``resources/templates/list``.

The spec's ResourceTemplate says nothing about its variables beyond their names in the
URI template, so a form (the explorer's, any client's) could only offer text boxes.
Each variable gets a small JSON-Schema-like description worked out once from the
handler's signature: ``type`` (string, integer, number, boolean, array), ``format``
(date, date-time, uuid, decimal), ``enum`` (Enum and Literal choices), ``default``,
``required``, ``description`` (``Annotated[T, "..."]``) and ``completion`` (true when
``completion/complete`` has suggestions for it).
"""

from __future__ import annotations

import inspect
import sys
from typing import TYPE_CHECKING, Any, get_args

if TYPE_CHECKING:
    from .._convert import Convertor
    from ..declaration import Handler

__all__ = ["META_VARIABLES", "variables_meta"]

META_VARIABLES = "io.resourcekit/variables"

_SCALARS: dict[Any, dict[str, str]] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
}
# the standard library's value types, looked up only in modules already imported (an annotation
# naming one comes from a module that imported it): (module, class, schema)
_STDLIB = (("decimal", "Decimal", {"type": "string", "format": "decimal"}),
           ("uuid", "UUID", {"type": "string", "format": "uuid"}),
           ("datetime", "datetime", {"type": "string", "format": "date-time"}),  # before date: it is one
           ("datetime", "date", {"type": "string", "format": "date"}))


def _scalar(kind: Any) -> dict[str, Any]:
    if isinstance(kind, type):
        for base, schema in _SCALARS.items():
            if issubclass(kind, base):
                return dict(schema)
        for module, name, schema in _STDLIB:
            loaded = sys.modules.get(module)
            if loaded is not None and issubclass(kind, getattr(loaded, name)):
                return dict(schema)
    return {"type": "string"}


def _schema(convertor: Convertor) -> dict[str, Any]:
    if convertor.is_list:
        args = get_args(convertor.type)
        items: dict[str, Any] = {"type": "string"} if convertor.choices else _scalar(args[0] if args else str)
        if convertor.choices:
            items["enum"] = list(convertor.choices)
        return {"type": "array", "items": items}
    schema: dict[str, Any] = {"type": "string"} if convertor.choices else _scalar(convertor.type)
    if convertor.choices and convertor.choices != ("true", "false"):
        schema["enum"] = list(convertor.choices)
    elif convertor.choices:
        schema = {"type": "boolean"}
    return schema


def _default(convertor: Convertor, value: Any) -> Any:
    """A default as the form shows it: JSON numbers and booleans as they are, others in their URI spelling."""
    if isinstance(value, (bool, int, float)):
        return value
    try:
        return convertor.format(value)
    except Exception:  # a default the convertor cannot spell: leave it out
        return None


def variables_meta(handler: Handler) -> dict[str, Any]:
    """``{variable: schema}`` for a template (worked out on first use, then remembered)."""
    found: dict[str, Any] | None = handler.remembered("variables_meta")
    if found is not None:
        return found
    found = {}
    names = handler.template.names if handler.template is not None else ()
    completers = handler.completers
    for name in names:
        param = handler.sig.params.get(name)
        if param is None:
            continue
        schema = _schema(param.convertor)
        if param.required:
            schema["required"] = True
        elif param.default is not inspect.Parameter.empty and param.default is not None:
            default = _default(param.convertor, param.default)
            if default is not None:
                schema["default"] = default
        if param.description:
            schema["description"] = param.description
        if name in completers:
            schema["completion"] = True
        found[name] = schema
    handler.remember("variables_meta", found)
    return found
