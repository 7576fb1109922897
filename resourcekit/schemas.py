"""JSON Schema of what a handler returns, from its return annotation (a template tool's ``outputSchema``).

Only an object has one: a TypedDict, a dataclass, or a pydantic model (whose own
``model_json_schema()`` is used: pydantic is the user's, never a dependency).  Fields are
described from their annotations: str, int, float, bool, None, list/tuple/set, dict, Optional
and unions, Literal, Enum, date/datetime/UUID (strings with a format), Decimal (a number, as
JSON data carries it), nested TypedDicts and dataclasses.  What says nothing checkable
(``Any``, an unknown class) is ``{}``, which every value satisfies.  ``None`` when the
annotation is not an object: the tool then declares no ``outputSchema``.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

__all__ = ["output_schema"]

_UNIONS: tuple[Any, ...] = (typing.Union, getattr(types, "UnionType", typing.Union))
_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    type(None): {"type": "null"},
    None: {"type": "null"},
}
# (module, class, schema), looked up only in modules already imported, as methods.variables does
_STDLIB = (("uuid", "UUID", {"type": "string", "format": "uuid"}),
           ("datetime", "datetime", {"type": "string", "format": "date-time"}),  # before date: it is one
           ("datetime", "date", {"type": "string", "format": "date"}),
           ("decimal", "Decimal", {"type": "number"}))
_MAX_DEPTH = 32  # a self-referencing TypedDict stops here, as {}


def output_schema(annotation: Any) -> dict[str, Any] | None:
    """The JSON Schema of an object-valued return annotation, or None."""
    annotation = _plain(annotation)
    if not isinstance(annotation, type):
        return None
    model_schema = getattr(annotation, "model_json_schema", None)
    if callable(model_schema) and hasattr(annotation, "model_dump"):  # pydantic v2
        schema = model_schema(mode="serialization")
        return schema if isinstance(schema, dict) and schema.get("type") == "object" else None
    if _is_typeddict(annotation) or dataclasses.is_dataclass(annotation):
        return _object(annotation, 0)
    return None


def _plain(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _is_typeddict(cls: type) -> bool:
    return isinstance(getattr(cls, "__required_keys__", None), frozenset)


def _object(cls: type, depth: int) -> dict[str, Any]:
    try:
        hints = get_type_hints(cls, include_extras=True)
    except Exception:  # an annotation that names what cannot be resolved here: fields unchecked
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    if dataclasses.is_dataclass(cls):
        for field in dataclasses.fields(cls):
            properties[field.name] = _schema(hints.get(field.name, Any), depth + 1)
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                required.append(field.name)
    else:
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        for name, hint in hints.items():
            properties[name] = _schema(hint, depth + 1)
            if name in required_keys:
                required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _schema(annotation: Any, depth: int) -> dict[str, Any]:
    if depth > _MAX_DEPTH:
        return {}
    annotation = _plain(annotation)
    origin = get_origin(annotation)
    args = get_args(annotation)
    # typing.Required[...] / NotRequired[...] around a TypedDict's field (required-ness is the class's)
    if origin is not None and getattr(origin, "_name", None) in ("Required", "NotRequired", "ReadOnly"):
        return _schema(args[0], depth)
    if origin in _UNIONS:
        return {"anyOf": [_schema(a, depth + 1) for a in args]}
    if origin is Literal:
        return {"enum": [a.value if isinstance(a, enum.Enum) else a for a in args]}
    if origin in (list, tuple, set, frozenset, Sequence) or annotation in (list, tuple, set):
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            return {"type": "array", "prefixItems": [_schema(a, depth + 1) for a in args],
                    "minItems": len(args), "maxItems": len(args)}
        return {"type": "array", "items": _schema(args[0], depth + 1) if args else {}}
    if origin in (dict, Mapping) or annotation is dict:
        return {"type": "object", "additionalProperties": _schema(args[1], depth + 1) if len(args) == 2 else {}}
    try:
        if annotation in _SCALARS and not isinstance(annotation, bool):
            return dict(_SCALARS[annotation])
    except TypeError:  # unhashable
        return {}
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            return {"enum": [m.value for m in annotation]}
        for base in (bool, int, float, str):  # bool before int: it is one
            if issubclass(annotation, base):
                return dict(_SCALARS[base])
        for module, name, schema in _STDLIB:
            loaded = sys.modules.get(module)
            if loaded is not None and issubclass(annotation, getattr(loaded, name)):
                return dict(schema)
        if _is_typeddict(annotation) or dataclasses.is_dataclass(annotation):
            return _object(annotation, depth)
        model_schema = getattr(annotation, "model_json_schema", None)
        if callable(model_schema) and hasattr(annotation, "model_dump"):
            nested = model_schema(mode="serialization")
            return nested if isinstance(nested, dict) else {}
    return {}
