"""Convertors between URI strings and typed parameter values.

A convertor is chosen once, from a parameter's annotation, and has both
directions (``parse`` for matching, ``format`` for expanding), so that
``expand`` and ``match`` round-trip.  ``parse`` raises ``ValueError`` on bad
input, which the router reads as "this template does not match".
"""

from __future__ import annotations

import enum
import functools
import re
import sys
import threading
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, Literal, get_args, get_origin

__all__ = ["Convertor", "convertor_for"]

# ASCII digits only: int(), float(), Decimal() and the date and UUID parsers also read
# other scripts' digits (Arabic-Indic one is 1), which would give one resource two URIs
_NUMBER_SOURCE = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


@functools.cache
def _number() -> re.Pattern[str]:
    """A decimal number, compiled on first use (not at import: start-up need not pay for it)."""
    return re.compile(_NUMBER_SOURCE)


# Decimal("1e999999999") is finite, but int() or quantize() of it exhausts memory
_DECIMAL_EXPONENT = 1000
_DECIMAL_DIGITS = 400
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


class Convertor:
    __slots__ = ("choices", "format", "is_list", "optional", "parse", "type")

    def __init__(
        self,
        type_: Any,
        parse: Callable[[Any], Any],
        format: Callable[[Any], Any] = str,
        *,
        choices: tuple[str, ...] = (),
        is_list: bool = False,
        optional: bool = False,
    ) -> None:
        self.type = type_
        self.parse = parse
        self.format = format
        self.choices = choices  # known values, used for automatic completion
        self.is_list = is_list
        self.optional = optional


def _parse_bool(value: str) -> bool:
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def _format_bool(value: bool) -> str:
    return "true" if value else "false"


def _parse_int(value: str) -> int:
    # int() accepts "_" separators and surrounding blanks; a URI segment should not.
    if not value or not value.isascii() or not (value.isdigit() or (value[0] in "+-" and value[1:].isdigit())):
        raise ValueError(f"not an integer: {value!r}")
    return int(value)


def _parse_float(value: str) -> float:
    if not _number().fullmatch(value):
        raise ValueError(f"not a number: {value!r}")
    result = float(value)
    if result != result or result in (float("inf"), float("-inf")):
        raise ValueError(f"not a finite number: {value!r}")
    return result


def _ascii(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse_ascii(value: str) -> Any:
        if not value.isascii():
            raise ValueError(f"not ASCII: {value!r}")
        return parse(value)

    return parse_ascii


def _enum_convertor(cls: type[enum.Enum]) -> Convertor:
    by_value = {str(m.value): m for m in cls}
    by_name = {m.name: m for m in cls}

    def parse(value: str) -> enum.Enum:
        member = by_value.get(value) or by_name.get(value)
        if member is None:
            raise ValueError(f"not one of {list(by_value)}: {value!r}")
        return member

    return Convertor(cls, parse, lambda m: str(m.value), choices=tuple(by_value))


def _literal_convertor(annotation: Any) -> Convertor:
    options = {str(v).lower() if isinstance(v, bool) else str(v): v for v in get_args(annotation)}

    def parse(value: str) -> Any:
        try:
            return options[value]
        except KeyError:
            raise ValueError(f"not one of {list(options)}: {value!r}") from None

    def format(value: Any) -> str:
        return _format_bool(value) if isinstance(value, bool) else str(value)

    return Convertor(annotation, parse, format, choices=tuple(options))


_SIMPLE: dict[Any, Convertor] = {
    str: Convertor(str, str),
    int: Convertor(int, _parse_int),
    float: Convertor(float, _parse_float, repr),
    bool: Convertor(bool, _parse_bool, _format_bool, choices=("true", "false")),
    Any: Convertor(Any, str),
}
_BASES: list[type] = [bool, int, float, str]  # what a subclass converts like (more below, once loaded)


def _uuid_convertors() -> dict[Any, Convertor]:
    import uuid

    return {uuid.UUID: Convertor(uuid.UUID, _ascii(uuid.UUID))}


def _datetime_convertors() -> dict[Any, Convertor]:
    import datetime as dt

    return {dt.datetime: Convertor(dt.datetime, _ascii(dt.datetime.fromisoformat), dt.datetime.isoformat),
            dt.date: Convertor(dt.date, _ascii(dt.date.fromisoformat), dt.date.isoformat)}  # after datetime


def _decimal_convertors() -> dict[Any, Convertor]:
    from decimal import Decimal

    def parse(value: str) -> Decimal:
        if not _number().fullmatch(value):
            raise ValueError(f"not a decimal: {value!r}")
        result = Decimal(value)
        digits, exponent = len(result.as_tuple().digits), result.as_tuple().exponent
        assert isinstance(exponent, int)  # finite: _NUMBER has no "inf" or "nan"
        if digits > _DECIMAL_DIGITS or abs(exponent) > _DECIMAL_EXPONENT or abs(result.adjusted()) > _DECIMAL_EXPONENT:
            raise ValueError(f"decimal out of range: {value!r}")
        return result

    return {Decimal: Convertor(Decimal, parse)}


# The standard library's value types, added once their module is imported: an annotation that
# names uuid.UUID comes from a module that imported uuid, and a server whose handlers name none
# of them does not pay for importing them at start-up.
_PENDING = {"uuid": _uuid_convertors, "datetime": _datetime_convertors, "decimal": _decimal_convertors}


_LOADING = threading.Lock()  # templates may be declared from several threads at once


def _load_imported() -> None:
    with _LOADING:
        for name in [n for n in _PENDING if n in sys.modules]:
            more = _PENDING[name]()
            _SIMPLE.update(more)  # before it leaves _PENDING: a reader that finds _PENDING without it
            _BASES.extend(more)  # then finds its convertors
            del _PENDING[name]
_UNION_TYPES: tuple[Any, ...] = (typing.Union, getattr(types, "UnionType", typing.Union))


def _subclass_convertor(cls: type, base: Convertor) -> Convertor:
    base_parse = base.parse

    def parse(value: str) -> Any:
        return cls(base_parse(value))

    return Convertor(cls, parse, base.format)


def convertor_for(annotation: Any) -> Convertor | None:
    """The convertor for an annotation, or None if it cannot come from a URI."""
    if annotation in _SIMPLE:
        return _SIMPLE[annotation]
    if _PENDING:
        _load_imported()
    if annotation in _SIMPLE:  # again: another thread may have loaded it since the first look
        return _SIMPLE[annotation]
    origin = get_origin(annotation)
    if origin in _UNION_TYPES:
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) != 1:
            return None
        inner = convertor_for(members[0])
        if inner is None:
            return None
        return Convertor(
            inner.type,
            inner.parse,
            inner.format,
            choices=inner.choices,
            is_list=inner.is_list,
            optional=True,
        )
    if origin is Literal:
        return _literal_convertor(annotation)
    if origin in (list, Sequence, tuple) or annotation in (list, tuple):
        args = get_args(annotation)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return None
        item = convertor_for(args[0]) if args else _SIMPLE[str]
        if item is None or item.is_list:
            return None
        item_parse, item_format = item.parse, item.format
        wrap = tuple if origin is tuple or annotation is tuple else list

        def parse(value: Any) -> Any:
            items = value if isinstance(value, list) else value.split(",") if value else []
            return wrap(item_parse(v) for v in items)

        def format(value: Any) -> list[str]:
            return [item_format(v) for v in value]

        return Convertor(annotation, parse, format, choices=item.choices, is_list=True)
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            return _enum_convertor(annotation)
        # str/int subclasses (NewType-like classes) convert like their base
        for base in _BASES:
            if issubclass(annotation, base) and base is not annotation:
                return _subclass_convertor(annotation, _SIMPLE[base])
    newtype_base = getattr(annotation, "__supertype__", None)
    if newtype_base is not None:
        return convertor_for(newtype_base)
    return None
