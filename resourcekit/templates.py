"""Strict RFC 6570 URI templates, compiled once: validation, matching and expansion.

The ``uritemplate`` package expands (it passes the public test vectors) but neither
matches nor validates; this module adds both.  A template is scanned once into
literals and expressions, checked, and compiled into one regular expression for the
path-like part plus a small table for the query part, so ``match`` is a single
``fullmatch`` and a few dictionary operations.

Matching rules (documented for users in README.md):

* ``{x}`` matches one or more unreserved or percent-encoded characters (never ``/``,
  ``?`` or ``#``); an empty value is not matched, so ``x://{a}`` never matches ``x://``.
* ``{+x}`` and ``{#x}`` may contain reserved characters such as ``/`` but not ``?``
  (that starts the query) and, for ``{+x}``, not ``#``.
* ``{.x}``, ``{/x}``, ``{;x}`` match their prefixed forms; with ``*`` a list of values.
* ``{?x,y}`` and ``{&x}`` match query parameters in any order; each may be absent (then
  the key is missing from the result), unknown parameters are ignored, and a URI with
  no query string matches a template whose query variables are all absent.
* ``:n`` matches at most ``n`` characters (a percent-encoded triplet counts as one).
* Values are percent-decoded.  Exploded variables give ``list[str]``.
* Ambiguous expansions do not round-trip: adjacent variables with no literal between
  them (``{a}{b}``), empty values, and values that contain an expression's own
  separator (``,`` in a multi-variable ``{a,b}``).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote

from uritemplate import URITemplate as _Expander

from .errors import TemplateSyntaxError

__all__ = ["UriTemplate", "Variable"]

_OPERATORS = "+#./;?&"
_RESERVED_OPERATORS = "=,!@|"
_VARNAME = re.compile(r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*")
_FORBIDDEN_LITERAL = set(' "<>\\^`|}')
_HEX = set("0123456789abcdefABCDEF")

_PCT = r"%[0-9A-Fa-f]{2}"
_UNRESERVED = r"A-Za-z0-9\-._~"
_RESERVED_NO_QUERY = r":/\[\]@!$&'()*+,;="
_RESERVED_SAFE = ":/?#[]@!$&'()*+,;="
_PCHAR_EXTRA = r":@!$&'()*+,;="


class Variable:
    """One variable of an expression: its name, operator and modifiers."""

    __slots__ = ("explode", "name", "operator", "prefix")

    def __init__(self, name: str, operator: str, explode: bool, prefix: int | None) -> None:
        self.name = name
        self.operator = operator
        self.explode = explode
        self.prefix = prefix

    @property
    def query(self) -> bool:
        return self.operator in ("?", "&")

    def __repr__(self) -> str:
        modifier = "*" if self.explode else f":{self.prefix}" if self.prefix else ""
        return f"Variable({self.operator}{self.name}{modifier})"


class _Expression:
    __slots__ = ("operator", "position", "variables")

    def __init__(self, operator: str, variables: list[Variable], position: int) -> None:
        self.operator = operator
        self.variables = variables
        self.position = position


def _parse(template: str, duplicates: list[tuple[str, int]]) -> list[str | _Expression]:
    parts: list[str | _Expression] = []
    literal: list[str] = []
    i, n = 0, len(template)
    seen: dict[str, list[tuple[str, int]]] = {"": duplicates}
    while i < n:
        char = template[i]
        if char == "{":
            end = template.find("}", i + 1)
            nested = template.find("{", i + 1)
            if end < 0 or (0 <= nested < end):
                raise TemplateSyntaxError(template, i, "unclosed expression '{'")
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(_parse_expression(template, i, template[i + 1 : end], seen))
            i = end + 1
            continue
        if char in _FORBIDDEN_LITERAL or ord(char) < 0x21 or ord(char) == 0x7F:
            reason = "unmatched '}'" if char == "}" else f"character {char!r} is not allowed in a URI template"
            raise TemplateSyntaxError(template, i, reason)
        if char == "%" and not (len(template[i + 1 : i + 3]) == 2 and set(template[i + 1 : i + 3]) <= _HEX):
            raise TemplateSyntaxError(template, i, "'%' must start a percent-encoded triplet")
        literal.append(char)
        i += 1
    if literal:
        parts.append("".join(literal))
    return parts


def _parse_expression(template: str, start: int, body: str, seen: dict[str, Any]) -> _Expression:
    if not body:
        raise TemplateSyntaxError(template, start, "empty expression '{}'")
    operator = ""
    offset = start + 1
    if body[0] in _OPERATORS:
        operator, body, offset = body[0], body[1:], offset + 1
    elif body[0] in _RESERVED_OPERATORS:
        raise TemplateSyntaxError(template, start + 1, f"operator {body[0]!r} is reserved by RFC 6570")
    if not body:
        raise TemplateSyntaxError(template, offset, "expression has no variable")
    variables: list[Variable] = []
    for spec in body.split(","):
        name, explode, prefix = spec, False, None
        if spec.endswith("*"):
            name, explode = spec[:-1], True
        elif ":" in spec:
            name, _, length = spec.partition(":")
            if not length.isdigit() or not (length.isascii()) or length[0] == "0" or len(length) > 4:
                raise TemplateSyntaxError(
                    template, offset + len(name), f"prefix length {length!r} must be 1 to 9999"
                )
            prefix = int(length)
        if not _VARNAME.fullmatch(name):
            raise TemplateSyntaxError(template, offset, f"invalid variable name {name!r}")
        if name in seen:  # RFC 6570 allows it (``{/var:1,var}``); App refuses it
            seen[""].append((name, offset))
        seen[name] = True
        variables.append(Variable(name, operator, explode, prefix))
        offset += len(spec) + 1
    return _Expression(operator, variables, start)


def _value_pattern(operator: str, prefix: int | None, *, exclude: str = "") -> str:
    if operator in ("+", "#"):
        allowed = _UNRESERVED + _RESERVED_NO_QUERY + ("#" if operator == "#" else "")
    else:
        # expansion percent-encodes these, but URIs written by hand carry them raw
        # (``2026-01-02T03:04:05``): accept any path character but "/"
        allowed = _UNRESERVED + _PCHAR_EXTRA
    for char in exclude:
        allowed = allowed.replace(re.escape(char), "").replace(char, "")
    unit = f"(?:[{allowed}]|{_PCT})"
    return f"{unit}{{1,{prefix}}}" if prefix else f"{unit}+"


_FIRST = {"": "", "+": "", "#": "#", ".": r"\.", "/": "/", ";": ";"}
_SEP = {"": ",", "+": ",", "#": ",", ".": r"\.", "/": "/", ";": ";"}


class UriTemplate:
    """A validated, compiled RFC 6570 template. Build once; ``match`` and ``expand`` are pure."""

    __slots__ = (
        "_expander", "_fast", "_groups", "_query", "_regex", "_source", "canonical", "duplicates",
        "literal_prefix", "names", "specificity", "template", "variables",
    )

    def __init__(self, template: str) -> None:
        if not isinstance(template, str):
            raise TypeError("a URI template is a string")
        self.template = template
        duplicates: list[tuple[str, int]] = []
        parts = _parse(template, duplicates)
        #: variables named twice, with the position of the repetition (valid RFC 6570,
        #: refused by ``App.template`` since each variable is one parameter)
        self.duplicates = tuple(duplicates)
        self.variables: tuple[Variable, ...] = tuple(
            v for p in parts if isinstance(p, _Expression) for v in p.variables
        )
        self.names = tuple(v.name for v in self.variables)
        first_expression = next((i for i, p in enumerate(parts) if isinstance(p, _Expression)), len(parts))
        self.literal_prefix = "".join(p for p in parts[:first_expression] if isinstance(p, str))
        self._groups: list[tuple[str, Variable]] = []  # regex group -> variable
        self._query: dict[str, Variable] = {}
        regex: list[str] = []
        query_started = False
        for part in parts[first_expression:] if first_expression < len(parts) else []:
            if isinstance(part, str):
                if query_started:
                    # a literal after the query would never be seen by the query parser
                    raise TemplateSyntaxError(template, template.find(part), "literal text after a query expression")
                regex.append(re.escape(part))
            elif part.operator in ("?", "&"):
                query_started = True
                for variable in part.variables:
                    self._query[variable.name] = variable
            else:
                if query_started:
                    raise TemplateSyntaxError(template, part.position, "expression after a query expression")
                regex.append(self._compile_expression(part))
        literal_query = any(isinstance(p, str) and "?" in p for p in parts)
        # the query string (if any) is parsed separately: any order, absent or extra keys
        lead = "[?&]" if literal_query else r"\?"
        regex.append(f"(?:{lead}(?P<_q>[^#]*))?")
        # the literal prefix is checked with startswith, so templates that differ only
        # in it (``t1://item/{id}``, ``t2://item/{id}``...) share one compiled regex,
        # compiled on first use: start-up with 100,000 templates stays cheap
        self._source = "".join(regex)
        self._regex: re.Pattern[str] | None = None
        self._expander: _Expander | None = None
        # the common shape (literals and plain ``{x}``/``{+x}``) expands without the
        # uritemplate package: listing a million template instances expands a million URIs
        self._fast: list[tuple[str, str, str]] | None = None
        if template.isascii() and all(
            isinstance(p, str) or (p.operator in ("", "+") and len(p.variables) == 1
                                   and not p.variables[0].explode and p.variables[0].prefix is None)
            for p in parts
        ):
            self._fast = [(p, "", "") if isinstance(p, str) else ("", p.variables[0].name, p.operator)
                          for p in parts]
        literal_chars = sum(len(p) for p in parts if isinstance(p, str))
        catch_all = sum(1 for v in self.variables if v.operator in ("+", "#"))
        exploded = sum(1 for v in self.variables if v.explode)
        path_vars = sum(1 for v in self.variables if not v.query)
        self.specificity = (-literal_chars, catch_all, exploded, path_vars, len(self._query), -len(self.literal_prefix))
        counter = iter(range(len(self.variables)))
        canonical: list[str] = []
        for part in parts:
            if isinstance(part, str):
                canonical.append(part)
            else:
                specs = []
                for v in part.variables:
                    # query variables are identified by name on the wire; path ones by position
                    name = v.name if v.query else f"_{next(counter)}"
                    specs.append(name + ("*" if v.explode else f":{v.prefix}" if v.prefix else ""))
                canonical.append("{" + part.operator + ",".join(specs) + "}")
        self.canonical = "".join(canonical)

    def _compile_expression(self, expression: _Expression) -> str:
        op = expression.operator
        pieces: list[str] = []
        for index, variable in enumerate(expression.variables):
            group = f"v{len(self._groups)}"
            self._groups.append((group, variable))
            lead = _FIRST[op] if index == 0 else _SEP[op]
            if op == ";":
                exclude = ";,"
                value = _value_pattern(op, variable.prefix, exclude=exclude)
                name = re.escape(variable.name)
                if variable.explode:
                    item = f"{name}(?:=(?:{value}))?"
                    pieces.append(f";(?P<{group}>{item}(?:;{item})*)")
                else:
                    pieces.append(f";{name}(?:=(?P<{group}>{value}))?")
                continue
            exclude = {"": ",", "+": ",", "#": ",", ".": ".,", "/": "/,"}[op] if (
                len(expression.variables) > 1 or variable.explode) else {"": "", "+": "", "#": "", ".": ".",
                                                                          "/": "/"}[op]
            value = _value_pattern(op, variable.prefix, exclude=exclude)
            if variable.explode:
                sep = _SEP[op]
                pieces.append(f"{lead}(?P<{group}>{value}(?:{sep}{value})*)")
            else:
                pieces.append(f"{lead}(?P<{group}>{value})")
        return "".join(pieces)

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The variables of ``uri`` (percent-decoded), or None if it does not match."""
        prefix = self.literal_prefix
        if not uri.startswith(prefix):
            return None
        regex = self._regex
        if regex is None:
            regex = self._regex = _compiled(self._source)
        found = regex.fullmatch(uri, len(prefix))
        if found is None:
            return None
        values: dict[str, str | list[str]] = {}
        for group, variable in self._groups:
            raw = found.group(group)
            if raw is None:
                if variable.operator == ";" and f";{variable.name}" in uri:
                    values[variable.name] = ""
                continue
            if variable.explode:
                values[variable.name] = _split_explode(raw, variable)
            else:
                values[variable.name] = unquote(raw)
        query = found.group("_q")
        if query and self._query:
            for pair in query.split("&"):
                key, has_value, raw = pair.partition("=")
                qvar = self._query.get(unquote(key))
                if qvar is None:
                    continue  # unknown query parameters are ignored
                value = unquote(raw) if has_value else ""
                if qvar.explode:
                    existing = values.setdefault(qvar.name, [])
                    assert isinstance(existing, list)
                    existing.append(value)
                elif qvar.prefix is not None and len(value) > qvar.prefix:
                    return None
                else:
                    values[qvar.name] = value
        return values

    def expand(self, **values: Any) -> str:
        """RFC 6570 expansion (undefined variables are omitted)."""
        if self._fast is not None:
            out = []
            for literal, name, operator in self._fast:
                if not name:
                    out.append(literal)
                    continue
                value = values.get(name)
                if value is None:
                    continue
                if not isinstance(value, (str, int)) or isinstance(value, bool):
                    break  # lists, maps, booleans: the general path
                text = str(value)
                if operator == "+":
                    if "%" in text:
                        break  # reserved expansion keeps pct-triplets: the general path
                    out.append(quote(text, safe=_RESERVED_SAFE))
                else:
                    out.append(quote(text, safe=""))
            else:
                return "".join(out)
        if self._expander is None:
            self._expander = _Expander(_encode_literals(self.template))
        for variable in self.variables:
            if variable.prefix is not None and isinstance(values.get(variable.name), (list, tuple, dict)):
                raise ValueError(f"prefix modifier of {variable.name!r} applies to strings, not to a list or map")
        result: str = self._expander.expand(values)
        return result

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UriTemplate) and other.template == self.template

    def __hash__(self) -> int:
        return hash(self.template)

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def __str__(self) -> str:
        return self.template


_COMPILED: dict[str, re.Pattern[str]] = {}


def _encode_literals(template: str) -> str:
    """Percent-encode non-ASCII literal characters, as expansion must (``café`` → ``caf%C3%A9``)."""
    if template.isascii():
        return template
    out, depth = [], 0
    for char in template:
        depth += char == "{"
        out.append(quote(char, safe="") if depth == 0 and not char.isascii() else char)
        depth -= char == "}"
    return "".join(out)


def _compiled(source: str) -> re.Pattern[str]:
    regex = _COMPILED.get(source)
    if regex is None:
        regex = _COMPILED[source] = re.compile(source, re.DOTALL)
    return regex


def _split_explode(raw: str, variable: Variable) -> list[str]:
    op = variable.operator
    if op == ";":
        return [unquote(item.partition("=")[2]) for item in raw.split(";")]
    sep = {"": ",", "+": ",", "#": ",", ".": ".", "/": "/"}[op]
    return [unquote(item) for item in raw.split(sep)]
