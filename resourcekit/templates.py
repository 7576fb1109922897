"""Strict RFC 6570 URI templates, compiled once: validation, matching and expansion.

One parse drives everything: a template is scanned once into literals and expressions
(refusing mistakes with their position), then compiled into one regular expression for
``match`` and a list of parts for ``expand``.  ``match`` is then a ``startswith``, one
``fullmatch`` and a few dictionary operations.

Matching accepts what expansion writes, plus the raw forms hand-written URIs use:

* Every path-like expression (``{x} {+x} {#x} {.x} {/x} {;x}``) must be present and each
  of its values is non-empty, so ``x://{a}`` does not match ``x://``.  The exception is
  ``{;x}``, where ``;x`` carries the empty value.
* ``{x}``, ``{.x}``, ``{/x}`` and ``{;x}`` values are unreserved characters and
  percent-encoded triplets, and also the sub-delimiters, ``:`` and ``@``, which expansion
  encodes but hand-written URIs carry raw (``log://2026-01-02T03:04:05``); never ``/``,
  ``?`` or ``#``.  A value never holds its expression's separator when the expression has
  several variables or explodes (``,`` for ``{x,y}``, ``.`` for ``{.x*}``, ``;`` always
  for ``{;x}``); a lone ``{.x}`` may hold ``.`` (``{.ext}`` of ``a.tar.gz`` is ``tar.gz``).
* ``{+x}`` and ``{#x}`` values may also hold reserved characters such as ``/``; ``{+x}``
  never ``#``, and neither holds ``?`` when the template has query expressions.
* ``:n`` matches at most ``n`` characters (a percent-encoded UTF-8 character counts once).
* Query expressions (``{?x,y}``, ``{&x}``) read the query string as a whole: parameters
  come in any order, each may be absent (its key is then missing from the result),
  unknown parameters are ignored, and a URI without a query string matches.  A repeated
  parameter keeps its last value; an exploded one (``{?x*}``) collects them all.  A
  template without query expressions matches no query string.
* URIs are ASCII: non-ASCII text, in literals and values alike, is percent-encoded (as
  expansion writes it).  Values come back percent-decoded (UTF-8); exploded variables as
  ``list[str]``, all others as ``str``.

``match(expand(**v)) == v`` holds except where the URI cannot tell (the ambiguous cases):

* adjacent expressions with no literal between them (``{a}{b}``, ``{a}{.b}``): the first
  takes all it can;
* empty strings, lists and maps: ``{x}``, ``{.x}``, ``{/x}`` expand ``""`` to nothing or
  a bare prefix, and RFC 6570 treats empty lists and maps as undefined;
* ``{+x}``/``{#x}`` values holding ``%XX`` (kept raw, then decoded) or ``#`` (``{+x}``),
  or ``,`` in a multi-variable or exploded one; ``.`` in values of ``{.x,y}``/``{.x*}``;
* lists in non-exploded variables come back as one comma-joined string, and maps never
  come back as maps (``{x*}`` gives ``["k=v", ...]``, ``{?x*}`` only collects ``x=``);
* a value longer than its prefix ``:n`` comes back truncated.

Variables named twice (``{/var:1,var}``) are valid RFC 6570 and expand; ``duplicates``
lists them with their position and ``App`` refuses them, since a variable is a parameter.

``specificity`` sorts the most specific template first (smaller is more specific): more
literal characters; then fewer ``{+x}``/``{#x}`` catch-alls; fewer exploded variables;
fewer path variables; fewer of them without a prefix ``:n``; then *more* query variables
(they never stop a URI from matching but capture more of it); then the longer literal
prefix.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from .errors import TemplateSyntaxError

__all__ = ["UriTemplate", "Variable"]


@dataclass(frozen=True, slots=True)
class Variable:
    """One variable of an expression: its name, operator and modifiers."""

    name: str
    operator: str  # '' '+' '#' '.' '/' ';' '?' '&'
    explode: bool
    prefix: int | None

    @property
    def query(self) -> bool:
        return self.operator in ("?", "&")


@dataclass(frozen=True, slots=True)
class _Op:
    """An operator's expansion rules (RFC 6570 appendix A)."""

    first: str
    sep: str
    named: bool
    ifemp: str
    reserved: bool


_OPS = {
    "": _Op("", ",", False, "", False),
    "+": _Op("", ",", False, "", True),
    "#": _Op("#", ",", False, "", True),
    ".": _Op(".", ".", False, "", False),
    "/": _Op("/", "/", False, "", False),
    ";": _Op(";", ";", True, "", False),
    "?": _Op("?", "&", True, "=", False),
    "&": _Op("&", "&", True, "=", False),
}
_RESERVED_OPERATORS = "=,!@|"  # op-reserve: kept for future extensions of RFC 6570
_RESERVED = ":/?#[]@!$&'()*+,;="
_PCHAR_DELIMS = ":@!$&'()*+,;="

_VARNAME = re.compile(r"(?:\w|%[0-9A-Fa-f]{2})(?:\.?(?:\w|%[0-9A-Fa-f]{2}))*", re.ASCII)
_VARCHAR = re.compile(r"\w|%[0-9A-Fa-f]{2}", re.ASCII)
_PREFIX = re.compile(r"[1-9][0-9]{0,3}")
# literals: any ASCII character but CTL, space, " < > \ ^ ` { | } and a stray %.  "'" is
# allowed by RFC 6570 erratum 6937 (verified), which the uritemplate-test vectors follow
_BAD_LITERAL = re.compile(r"""[\x00-\x20"<>\\^`{|}\x7f]|%(?![0-9A-Fa-f]{2})""")
_UCS_RANGES = (  # ucschar and iprivate
    (0xA0, 0xD7FF), (0xE000, 0xFDCF), (0xFDF0, 0xFFEF), (0x10000, 0x1FFFD), (0x20000, 0x2FFFD),
    (0x30000, 0x3FFFD), (0x40000, 0x4FFFD), (0x50000, 0x5FFFD), (0x60000, 0x6FFFD),
    (0x70000, 0x7FFFD), (0x80000, 0x8FFFD), (0x90000, 0x9FFFD), (0xA0000, 0xAFFFD),
    (0xB0000, 0xBFFFD), (0xC0000, 0xCFFFD), (0xD0000, 0xDFFFD), (0xE1000, 0xEFFFD),
    (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD),
)
_PCT_SPLIT = re.compile(r"(%[0-9A-Fa-f]{2})")


class _Expression:
    __slots__ = ("op", "operator", "position", "positions", "variables")

    def __init__(self, operator: str, variables: tuple[Variable, ...], position: int,
                 positions: tuple[int, ...]) -> None:
        self.operator = operator
        self.op = _OPS[operator]
        self.variables = variables
        self.position = position
        self.positions = positions  # where each variable's name starts


# --- parsing ---------------------------------------------------------------------------


def _parse(template: str) -> tuple[list[str | _Expression], list[int]]:
    """Literals (percent-encoded, as expansion writes them) and expressions, with positions."""
    parts: list[str | _Expression] = []
    positions: list[int] = []
    i, n = 0, len(template)
    while i < n:
        start = template.find("{", i)
        if start < 0:
            start = n
        if start > i:
            parts.append(_literal(template, i, start))
            positions.append(i)
        if start == n:
            break
        end = template.find("}", start + 1)
        if end < 0 or template.find("{", start + 1, end) >= 0:
            raise TemplateSyntaxError(template, start, "unclosed expression '{'")
        parts.append(_expression(template, start, end))
        positions.append(start)
        i = end + 1
    return parts, positions


def _literal(template: str, start: int, end: int) -> str:
    text = template[start:end]
    bad = _BAD_LITERAL.search(text)
    if bad is not None:
        char, at = bad.group(), start + bad.start()
        if char == "}":
            raise TemplateSyntaxError(template, at, "unmatched '}'")
        if char == "%":
            raise TemplateSyntaxError(template, at, "'%' must start a percent-encoded triplet")
        raise TemplateSyntaxError(template, at, f"character {char!r} is not allowed in a URI template")
    if text.isascii():
        return text  # every ASCII character left is allowed in a URI as it is
    for offset, char in enumerate(text):
        code = ord(char)
        if code > 0x7F and not any(low <= code <= high for low, high in _UCS_RANGES):
            raise TemplateSyntaxError(template, start + offset, f"character {char!r} is not allowed in a URI template")
    return _encode(text, reserved=True)


def _expression(template: str, start: int, end: int) -> _Expression:
    body, at = template[start + 1 : end], start + 1
    if not body:
        raise TemplateSyntaxError(template, start, "empty expression '{}'")
    operator = ""
    if body[0] in _OPS:
        operator, body, at = body[0], body[1:], at + 1
    elif body[0] in _RESERVED_OPERATORS:
        raise TemplateSyntaxError(template, at, f"operator {body[0]!r} is reserved by RFC 6570")
    variables, positions = [], []
    for spec in body.split(","):
        variables.append(_varspec(template, operator, spec, at))
        positions.append(at)
        at += len(spec) + 1
    return _Expression(operator, tuple(variables), start, tuple(positions))


def _varspec(template: str, operator: str, spec: str, at: int) -> Variable:
    name, explode, prefix = spec, False, None
    colon = spec.find(":")
    if colon >= 0:
        name, length = spec[:colon], spec[colon + 1 :]
        star = spec.find("*")
        if star >= 0:
            raise TemplateSyntaxError(template, at + star, "a variable takes a prefix ':n' or an explode '*', not both")
        if not _PREFIX.fullmatch(length):
            raise TemplateSyntaxError(template, at + colon + 1, f"prefix length {length!r} must be 1 to 9999")
        prefix = int(length)
    elif spec.endswith("*"):
        name, explode = spec[:-1], True
    if not _VARNAME.fullmatch(name):
        _refuse_varname(template, name, at)
    return Variable(name, operator, explode, prefix)


def _refuse_varname(template: str, name: str, at: int) -> None:
    """Raise, pointing at the first character that makes ``name`` invalid."""
    if not name:
        raise TemplateSyntaxError(template, at, "missing variable name")
    i, after_dot = 0, True  # a name cannot start with '.'
    while i < len(name):
        if name[i] == ".":
            if after_dot:
                raise TemplateSyntaxError(template, at + i, "'.' must sit between name characters")
            after_dot, i = True, i + 1
            continue
        char = _VARCHAR.match(name, i)
        if char is None:
            reason = ("'%' must start a percent-encoded triplet" if name[i] == "%"
                      else f"character {name[i]!r} is not allowed in a variable name")
            raise TemplateSyntaxError(template, at + i, reason)
        after_dot, i = False, char.end()
    raise TemplateSyntaxError(template, at + len(name) - 1, "a variable name cannot end with '.'")


# --- matching --------------------------------------------------------------------------

# how match() reads a regex group
_SCALAR, _NAMED, _LIST, _NAMED_LIST, _QUERY = range(5)
_PCT = "%[0-9A-Fa-f]{2}"
# one character under a prefix ':n': a UTF-8 sequence of triplets counts once
_PCT_CHAR = "%[0-7][0-9A-Fa-f]|%[C-Fc-f][0-9A-Fa-f](?:%[89ABab][0-9A-Fa-f]){1,3}"


@functools.cache
def _value_regex(operator: str, without_sep: bool, has_query: bool, in_query: bool, prefix: int | None) -> str:
    """The pattern of one non-empty value (no groups)."""
    op = _OPS[operator]
    if op.reserved:
        allowed = set("-._~" + _RESERVED)
        if operator == "+":
            allowed.discard("#")  # starts the fragment
        if has_query:
            allowed.discard("?")  # starts the query the template reads
    else:
        allowed = set("-._~" + _PCHAR_DELIMS)
    if in_query:
        allowed -= {"&", "#"}
    if without_sep:
        allowed.discard(op.sep)
    chars = "A-Za-z0-9" + "".join(re.escape(c) for c in sorted(allowed))
    if prefix is None:
        # ``(?:[chars]|%XX)+`` unrolled: one way to read each character, half the time
        return f"(?=[{chars}]|{_PCT})[{chars}]*(?:{_PCT}[{chars}]*)*"
    return f"(?:[{chars}]|{_PCT_CHAR}){{1,{prefix}}}"


class _Compiler:
    """Turns the parts after the literal prefix into a regex source and its group table."""

    def __init__(self, has_query: bool, in_query: bool) -> None:
        self.has_query = has_query
        self.in_query = in_query  # after a literal '?', '&' ends a value
        self.source: list[str] = []
        self.slots: list[tuple[str, int, str]] = []  # (name, how to read it, separator) per group

    def literal(self, text: str) -> None:
        self.source.append(re.escape(text))
        self.in_query = self.in_query or "?" in text

    def expression(self, expression: _Expression) -> None:
        op = expression.op
        several = len(expression.variables) > 1
        sep = re.escape(op.sep)
        for index, variable in enumerate(expression.variables):
            lead = re.escape(op.first if index == 0 else op.sep)
            value = _value_regex(expression.operator, op.named or several or variable.explode,
                                 self.has_query, self.in_query, variable.prefix)
            name = variable.name
            if op.named:
                if variable.explode:
                    item = f"{re.escape(name)}(?:={value})?"
                    self.source.append(f"{lead}({item}(?:{sep}{item})*)")
                    self.slots.append((name, _NAMED_LIST, op.sep))
                else:
                    self.source.append(f"{lead}{re.escape(name)}(?:=({value}))?")
                    self.slots.append((name, _NAMED, op.sep))
            elif variable.explode:
                self.source.append(f"{lead}({value}(?:{sep}{value})*)")
                self.slots.append((name, _LIST, op.sep))
            else:
                self.source.append(f"{lead}({value})")
                self.slots.append((name, _SCALAR, op.sep))

    def query(self, lead: str) -> None:
        self.source.append(f"(?:{lead}([^#]*))?")
        self.slots.append(("", _QUERY, "&"))
        self.has_query = self.in_query = False  # what follows is the fragment


_COMPILED: dict[str, re.Pattern[str]] = {}


def _compiled(source: str) -> re.Pattern[str]:
    # templates differing only in their literal prefix (``t1://item/{id}``,
    # ``t2://item/{id}``, ...) share one pattern, so 10,000 of them compile once
    regex = _COMPILED.get(source)
    if regex is None:
        regex = _COMPILED[source] = re.compile(source)
    return regex


# --- expansion -------------------------------------------------------------------------


def _encode(text: str, reserved: bool) -> str:
    if not reserved:
        return quote(text, safe="")
    if "%" not in text:
        return quote(text, safe=_RESERVED)
    # reserved expansion copies percent-encoded triplets as they are
    return "".join(
        piece if index % 2 else quote(piece, safe=_RESERVED)
        for index, piece in enumerate(_PCT_SPLIT.split(text))
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else str(value)


def _expand(expression: _Expression, values: Mapping[str, object]) -> str:
    op = expression.op
    out: list[str] = []
    for variable in expression.variables:
        name = variable.name
        value = values.get(name)
        if value is None:
            continue
        if isinstance(value, (list, tuple, Mapping)):
            if variable.prefix is not None:
                raise ValueError(f"prefix ':{variable.prefix}' of {name!r} applies to strings, not to a list or map")
            keyed = isinstance(value, Mapping)
            items = value.items() if isinstance(value, Mapping) else (("", v) for v in value)
            pairs = [(_encode(_text(k), op.reserved), _encode(_text(v), op.reserved))
                     for k, v in items if v is not None]
            if not pairs:
                continue  # an empty list or map is undefined
            if not variable.explode:
                joined = ",".join(f"{k},{v}" if keyed else v for k, v in pairs)
                out.append(f"{name}={joined}" if op.named else joined)
            elif op.named:
                out.append(op.sep.join(f"{k if keyed else name}{'=' + v if v else op.ifemp}" for k, v in pairs))
            else:
                out.append(op.sep.join(f"{k}={v}" if keyed else v for k, v in pairs))
            continue
        text = _text(value)
        if variable.prefix is not None:
            text = text[: variable.prefix]
        encoded = _encode(text, op.reserved)
        if op.named:
            out.append(f"{name}={encoded}" if encoded else name + op.ifemp)
        else:
            out.append(encoded)
    return op.first + op.sep.join(out) if out else ""


# --- the template ----------------------------------------------------------------------


class UriTemplate:
    """A validated, compiled RFC 6570 template. Immutable; ``match`` and ``expand`` are pure."""

    __slots__ = (
        "_parts", "_plain", "_query", "_regex", "_slots", "canonical", "duplicates",
        "literal_prefix", "names", "specificity", "template", "variables",
    )
    template: str
    variables: tuple[Variable, ...]
    names: tuple[str, ...]
    literal_prefix: str
    specificity: tuple[int, ...]
    canonical: str
    duplicates: tuple[tuple[str, int], ...]
    _parts: tuple[str | _Expression, ...]
    _regex: re.Pattern[str]
    _slots: tuple[tuple[str, int, str], ...]
    _plain: tuple[str, ...] | None
    _query: dict[str, Variable]

    def __init__(self, template: str) -> None:
        if not isinstance(template, str):
            raise TypeError(f"a URI template is a string, not {type(template).__name__}")
        parts, positions = _parse(template)
        expressions = [p for p in parts if isinstance(p, _Expression)]
        variables = tuple(v for e in expressions for v in e.variables)
        seen: set[str] = set()
        duplicates = []
        for expression in expressions:
            for variable, at in zip(expression.variables, expression.positions, strict=True):
                if variable.name in seen:
                    duplicates.append((variable.name, at))
                seen.add(variable.name)

        first = next((i for i, p in enumerate(parts) if isinstance(p, _Expression)), len(parts))
        literal_prefix = "".join(p for p in parts[:first] if isinstance(p, str))
        query = {v.name: v for v in variables if v.query}
        query_expressions = sum(1 for e in expressions if e.variables[0].query)
        in_query = "?" in literal_prefix
        compiler = _Compiler(bool(query), in_query)
        query_done = False
        previous = literal_prefix
        for part, position in zip(parts[first:], positions[first:], strict=True):
            if isinstance(part, str):
                if query_done:
                    raise TemplateSyntaxError(template, position, "a literal after a query expression is unmatchable")
                compiler.literal(part)
                in_query = in_query or "?" in part
            elif part.variables[0].query:
                if not query_done:
                    # after a literal '?' parameters go on with '&' (or follow a bare '?');
                    # ``{?a}{&b}`` starts with '&' when a is undefined
                    if previous.endswith("?"):
                        lead = "[?&]?"
                    elif in_query or part.operator == "&" or query_expressions > 1:
                        lead = "[?&]"
                    else:
                        lead = r"\?"
                    compiler.query(lead)
                    query_done = True
            elif query_done and part.operator != "#":
                raise TemplateSyntaxError(template, position, "only a fragment '{#...}' may follow a query expression")
            else:
                compiler.expression(part)
            previous = part if isinstance(part, str) else ""

        slots = tuple(compiler.slots)
        plain = all(kind == _SCALAR for _, kind, _ in slots)
        init = object.__setattr__  # the instance is frozen from here on
        init(self, "template", template)
        init(self, "variables", variables)
        init(self, "names", tuple(dict.fromkeys(v.name for v in variables)))
        init(self, "literal_prefix", literal_prefix)
        init(self, "duplicates", tuple(duplicates))
        init(self, "specificity", _specificity(parts, variables, literal_prefix))
        init(self, "canonical", _canonical(parts))
        init(self, "_parts", tuple(parts))
        init(self, "_regex", _compiled("".join(compiler.source)))
        init(self, "_slots", slots)
        init(self, "_plain", tuple(name for name, _, _ in slots) if plain else None)
        # a query key is compared as written and, failing that, decoded
        init(self, "_query", {**{unquote(k): v for k, v in query.items()}, **query})

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The variables of ``uri``, percent-decoded, or None if it does not match."""
        prefix = self.literal_prefix
        if not uri.startswith(prefix):
            return None
        found = self._regex.fullmatch(uri, len(prefix))
        if found is None:
            return None
        plain = self._plain
        if plain is not None:
            return {name: unquote(raw) if "%" in raw else raw for name, raw in zip(plain, found.groups(), strict=True)}
        values: dict[str, str | list[str]] = {}
        for (name, kind, sep), raw in zip(self._slots, found.groups(), strict=True):
            if kind == _SCALAR:
                values[name] = unquote(raw) if "%" in raw else raw
            elif kind == _QUERY:
                if raw and not self._match_query(raw, values):
                    return None
            elif kind == _NAMED:
                values[name] = "" if raw is None else unquote(raw)
            elif kind == _LIST:
                values[name] = [unquote(item) for item in raw.split(sep)]
            else:  # _NAMED_LIST: name=value;name;name=value
                values[name] = [unquote(item.partition("=")[2]) for item in raw.split(sep)]
        return values

    def _match_query(self, query: str, values: dict[str, str | list[str]]) -> bool:
        table = self._query
        lists: dict[str, list[str]] = {}
        for pair in query.split("&"):
            key, _, raw = pair.partition("=")
            variable = table.get(key)
            if variable is None and ("%" not in key or (variable := table.get(unquote(key))) is None):
                continue  # a parameter the template does not name
            value = unquote(raw)
            if variable.explode:
                lists.setdefault(variable.name, []).append(value)
            elif variable.prefix is not None and len(value) > variable.prefix:
                return False  # longer than expansion could have written
            else:
                values[variable.name] = value
        values.update(lists)
        return True

    def expand(self, **values: object) -> str:
        """RFC 6570 expansion; undefined variables (absent or None) are left out.

        A value is a string, anything ``str()`` makes one of (numbers), a list or tuple,
        or a mapping.  ValueError for a prefix ``:n`` of a list or map (RFC 6570 does not
        define it).
        """
        return "".join(part if isinstance(part, str) else _expand(part, values) for part in self._parts)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"UriTemplate is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"UriTemplate is immutable: cannot delete {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (UriTemplate, (self.template,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UriTemplate) and other.template == self.template

    def __hash__(self) -> int:
        return hash(self.template)

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def __str__(self) -> str:
        return self.template


def _specificity(parts: list[str | _Expression], variables: tuple[Variable, ...],
                 literal_prefix: str) -> tuple[int, ...]:
    path = [v for v in variables if not v.query]
    return (
        -sum(len(p) for p in parts if isinstance(p, str)),
        sum(1 for v in path if v.operator in ("+", "#")),
        sum(1 for v in path if v.explode),
        len(path),
        sum(1 for v in path if v.prefix is None),
        len(path) - len(variables),
        -len(literal_prefix),
    )


def _canonical(parts: list[str | _Expression]) -> str:
    """The template with positional variables numbered, so equivalent templates compare equal.

    ``;``, ``?`` and ``&`` variables are written in the URI, so they keep their names;
    query parameters match in any order and either way exploded, so they are written
    once, sorted and unexploded.
    """
    out: list[str] = []
    counter = 0
    query: set[str] = set()
    query_at = -1
    in_query = False
    for part in parts:
        if isinstance(part, str):
            out.append(part)
            in_query = in_query or "?" in part
        elif part.variables[0].query:
            if query_at < 0:
                query_at = len(out)
                out.append("{&" if in_query or part.operator == "&" else "{?")
            query.update(v.name + (f":{v.prefix}" if v.prefix else "") for v in part.variables)
        else:
            specs = []
            for variable in part.variables:
                if part.op.named:
                    name = variable.name
                else:
                    name, counter = f"_{counter}", counter + 1
                specs.append(name + ("*" if variable.explode else f":{variable.prefix}" if variable.prefix else ""))
            out.append("{" + part.operator + ",".join(specs) + "}")
    if query_at >= 0:
        out[query_at] += ",".join(sorted(query)) + "}"
    return "".join(out)
