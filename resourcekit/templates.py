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

How a URI splits between variables.  Where a value may hold what follows it (``:`` in
``db://{host}:{port}``, ``-`` in ``log://{date}-{level}``, ``/`` in ``{+dir}/{+file}``,
adjacent expressions like ``{a}{b}{c}``), each expression, left to right, takes the
longest value for which the rest of the template can still match: ``db://a:b:c`` gives
host ``a:b`` and port ``c``; ``x://{a}{b}{c}`` against ``x://abcd`` gives ``ab``, ``c``,
``d``.  This is the split a backtracking regex makes, but it is found in time linear in
the URI's length whatever the template: templates where no value can run into what
follows it use their regex (which then never backtracks more than one step), the others
a scanner that first marks, right to left, every position from which the rest of the
template matches, then lets each part take its longest value ending at such a mark.

``match(expand(**v)) == v`` holds except where the URI cannot tell (the ambiguous cases):

* adjacent expressions with no literal between them (``{a}{b}``, ``{a}{.b}``), or a value
  that may hold the literal after it: the first takes all it can (see above);
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
from typing import Any, NamedTuple

from .errors import TemplateSyntaxError

__all__ = ["UriTemplate", "Variable"]


# plain classes, not dataclasses: making a dataclass costs ~1 ms of start-up, for every server


class Variable(NamedTuple):
    """One variable of an expression: its name, operator and modifiers."""

    name: str
    operator: str  # '' '+' '#' '.' '/' ';' '?' '&'
    explode: bool
    prefix: int | None

    @property
    def query(self) -> bool:
        return self.operator in ("?", "&")


class _Op:
    """An operator's expansion rules (RFC 6570 appendix A)."""

    __slots__ = ("first", "ifemp", "named", "reserved", "sep")

    def __init__(self, first: str, sep: str, named: bool, ifemp: str, reserved: bool) -> None:
        self.first = first
        self.sep = sep
        self.named = named
        self.ifemp = ifemp
        self.reserved = reserved


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

# patterns are sources here, compiled on first use by ``_compiled`` (not at import: a server's
# start-up need not pay for the parser of templates it may not have)
_VARNAME = r"(?a)(?:\w|%[0-9A-Fa-f]{2})(?:\.?(?:\w|%[0-9A-Fa-f]{2}))*"
_VARCHAR = r"(?a)\w|%[0-9A-Fa-f]{2}"
_PREFIX = r"[1-9][0-9]{0,3}"
# literals: any ASCII character but CTL, space, " < > \ ^ ` { | } and a stray %.  "'" is
# allowed by RFC 6570 erratum 6937 (verified), which the uritemplate-test vectors follow
_BAD_LITERAL = r"""[\x00-\x20"<>\\^`{|}\x7f]|%(?![0-9A-Fa-f]{2})"""
_UCS_RANGES = (  # ucschar and iprivate
    (0xA0, 0xD7FF), (0xE000, 0xFDCF), (0xFDF0, 0xFFEF), (0x10000, 0x1FFFD), (0x20000, 0x2FFFD),
    (0x30000, 0x3FFFD), (0x40000, 0x4FFFD), (0x50000, 0x5FFFD), (0x60000, 0x6FFFD),
    (0x70000, 0x7FFFD), (0x80000, 0x8FFFD), (0x90000, 0x9FFFD), (0xA0000, 0xAFFFD),
    (0xB0000, 0xBFFFD), (0xC0000, 0xCFFFD), (0xD0000, 0xDFFFD), (0xE1000, 0xEFFFD),
    (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD),
)
_PCT_SPLIT = r"(%[0-9A-Fa-f]{2})"
_PCT_RUN = r"(?:%[0-9A-Fa-f]{2})+"


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
    bad = _compiled(_BAD_LITERAL).search(text)
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
        if not _compiled(_PREFIX).fullmatch(length):
            raise TemplateSyntaxError(template, at + colon + 1, f"prefix length {length!r} must be 1 to 9999")
        prefix = int(length)
    elif spec.endswith("*"):
        name, explode = spec[:-1], True
    if not _compiled(_VARNAME).fullmatch(name):
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
        char = _compiled(_VARCHAR).match(name, i)
        if char is None:
            reason = ("'%' must start a percent-encoded triplet" if name[i] == "%"
                      else f"character {name[i]!r} is not allowed in a variable name")
            raise TemplateSyntaxError(template, at + i, reason)
        after_dot, i = False, char.end()
    raise TemplateSyntaxError(template, at + len(name) - 1, "a variable name cannot end with '.'")


# --- matching --------------------------------------------------------------------------

# how match() reads a group
_SCALAR, _NAMED, _LIST, _NAMED_LIST, _QUERY = range(5)
_PCT = "%[0-9A-Fa-f]{2}"
# one character under a prefix ':n': a UTF-8 sequence of triplets counts once
_PCT_CHAR = "%[0-7][0-9A-Fa-f]|%[C-Fc-f][0-9A-Fa-f](?:%[89ABab][0-9A-Fa-f]){1,3}"
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_HEX = "0123456789ABCDEFabcdef"
_ASCII = frozenset(map(chr, range(128)))
_NOT_ASCII = r"[^\x00-\x7f]"


@functools.cache
def _value_chars(operator: str, without_sep: bool, has_query: bool, in_query: bool) -> str:
    """The characters a value holds raw, besides percent-encoded triplets."""
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
    return _ALNUM + "".join(sorted(allowed))


@functools.cache
def _value_regex(chars: str, prefix: int | None) -> str:
    """The pattern of one non-empty value (no groups)."""
    cls = "A-Za-z0-9" + "".join(re.escape(c) for c in chars[len(_ALNUM) :])
    if prefix is None:
        # ``(?:[chars]|%XX)+`` unrolled: one way to read each character, half the time.  The
        # first character is consumed, not looked ahead at: a lookahead lets the value be
        # empty whenever what follows it could start one (``x://{a}:{b}`` matched ``x://:b``)
        return f"(?:[{cls}]|{_PCT})[{cls}]*(?:{_PCT}[{cls}]*)*"
    return f"(?:[{cls}]|{_PCT_CHAR}){{1,{prefix}}}"


# Linear matching for templates where a value could also take what follows it
# (``{a}:{b}`` with ':' allowed in a).  A backtracking regex tries every split there,
# which costs O(n^k) on a URI that fails.  The scanner finds the regex's own answer
# in two passes instead: right to left, the set of positions from which the rest of
# the template matches (one big-int bitset per part: bit ``end - i`` is position i);
# then left to right, each part takes the longest value that ends in the next part's
# set.  That is the split the regex returns, because every part, like its regex,
# prefers a longer value to a shorter one.  Runs of a character class are filled with
# one addition: a carry walks left through a run of ones from each place a value may end.


def _fill(run: int, ends: int) -> int:
    """The bits of ``run`` from each bit of ``ends`` leftwards to the end of its run of ones."""
    return (((run + ends) ^ run) | ends) & run


@functools.cache
def _table(chars: str, negate: bool = False) -> bytes:
    inside, outside = (b"0", b"1") if negate else (b"1", b"0")
    return b"".join(inside if chr(c) in chars else outside for c in range(256))


class _Scan:
    """One URI (the part after the literal prefix) as bitsets of its positions."""

    __slots__ = ("end", "full", "masks", "mid", "pct", "raw", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.end = len(text)
        self.full = (1 << (self.end + 1)) - 1
        ascii_text = text if text.isascii() else _compiled(_NOT_ASCII).sub("\x7f", text)
        # one byte more, matched by no value, so that position ``end`` has a bit too
        self.raw = ascii_text.encode("ascii") + b"\x7f"
        self.masks: dict[str, int] = {}
        hexdigit = self.mask(_HEX)
        self.pct = self.mask("%") & (hexdigit << 1) & (hexdigit << 2)  # '%' that starts a triplet
        self.mid = (self.pct >> 1) | (self.pct >> 2)  # inside a triplet: no value ends there

    def mask(self, chars: str) -> int:
        bits = self.masks.get(chars)
        if bits is None:
            bits = self.masks[chars] = int(self.raw.translate(_table(chars)), 2)
        return bits

    def not_hash(self) -> int:
        bits = self.masks.get("")
        if bits is None:
            bits = self.masks[""] = int(self.raw.translate(_table("#", True)), 2)
        return bits

    def string(self, bits: int) -> str:
        """The bitset as a string of '0' and '1' indexed by position."""
        return format(bits & self.full, "b").zfill(self.end + 1)


class _Part:
    """One piece of a compiled template, for the scanner.

    ``starts(scan, after)``: the positions from which this part, then the rest (which
    matches from every position in ``after``), matches.  ``step(scan, at, after)``: the
    end the regex would choose from ``at`` (a position in ``starts``) and the group.
    ``first``: characters that may begin it, ``cont``: characters that may extend it past
    one of its ends, ``nullable``: whether it may be empty.
    """

    __slots__ = ("cont", "first")
    group = True
    nullable = False
    first: frozenset[str]
    cont: frozenset[str]

    def starts(self, scan: _Scan, after: int) -> int:
        raise NotImplementedError

    def step(self, scan: _Scan, at: int, after: int) -> tuple[int, str | None]:
        raise NotImplementedError


class _Literal(_Part):
    __slots__ = ("text",)
    group = False

    def __init__(self, text: str) -> None:
        self.text = text
        self.first = frozenset(text[0])
        self.cont = frozenset()

    def starts(self, scan: _Scan, after: int) -> int:
        text = self.text
        found = scan.mask(text[0])
        for offset in range(1, len(text)):
            found &= scan.mask(text[offset]) << offset
        return found & (after << len(text))

    def step(self, scan: _Scan, at: int, after: int) -> tuple[int, str | None]:
        return at + len(self.text), None


class _Value(_Part):
    """A value without prefix: a run of its characters and triplets."""

    __slots__ = ("chars", "regex")

    def __init__(self, chars: str) -> None:
        self.chars = chars
        self.regex = re.compile(_value_regex(chars, None))
        self.first = self.cont = frozenset(chars + "%")

    def ends(self, scan: _Scan, after: int) -> int:
        return after & ~scan.mid

    def run(self, scan: _Scan) -> int:
        return scan.mask(self.chars) | scan.pct

    def starts(self, scan: _Scan, after: int) -> int:
        run = self.run(scan)
        return _fill(run, (self.ends(scan, after) << 1) & run)

    def step(self, scan: _Scan, at: int, after: int) -> tuple[int, str | None]:
        found = self.regex.match(scan.text, at)
        assert found is not None
        end = scan.string(self.ends(scan, after)).rfind("1", at + 1, found.end() + 1)
        return end, scan.text[at:end]


class _List(_Value):
    """An exploded value: values (without ``sep``) joined by single ``sep``."""

    __slots__ = ("sep",)

    def __init__(self, chars: str, sep: str) -> None:
        super().__init__(chars)
        self.sep = sep
        value = _value_regex(chars, None)
        self.regex = re.compile(f"{value}(?:{re.escape(sep)}{value})*")
        self.cont = self.cont | {sep}

    def ends(self, scan: _Scan, after: int) -> int:
        return after & ~scan.mid & ~(scan.mask(self.sep) >> 1)

    def run(self, scan: _Scan) -> int:
        sep = scan.mask(self.sep)
        return (scan.mask(self.chars) | scan.pct | sep) & ~(sep & (sep >> 1))  # a second sep in a row ends it

    def starts(self, scan: _Scan, after: int) -> int:
        return super().starts(scan, after) & ~scan.mask(self.sep)


class _Prefixed(_Part):
    """A value under a prefix ``:n``: 1 to n characters, a UTF-8 sequence of triplets counting once."""

    __slots__ = ("limit", "runs", "token")

    def __init__(self, chars: str, limit: int) -> None:
        cls = "A-Za-z0-9" + "".join(re.escape(c) for c in chars[len(_ALNUM) :])
        self.token = re.compile(f"[{cls}]|{_PCT_CHAR}")
        self.runs = re.compile(f"(?:[{cls}]|{_PCT_CHAR})+")
        self.limit = limit
        self.first = self.cont = frozenset(chars + "%")

    def starts(self, scan: _Scan, after: int) -> int:
        ends = scan.string(after)
        text, limit = scan.text, self.limit
        found = bytearray(b"0" * (scan.end + 1))
        for run in self.runs.finditer(text):
            heads: list[int] = []
            good: list[bool] = []
            for token in self.token.finditer(text, run.start(), run.end()):
                head, stop = token.span()
                heads.append(head)
                # a sequence of triplets may also end after any of its continuation bytes
                good.append(ends[stop] == "1" or (stop - head > 6 and "1" in ends[head + 6 : stop : 3]))
            nearest = len(heads) + limit  # the first token at or after i that can end the value
            for i in range(len(heads) - 1, -1, -1):
                if good[i]:
                    nearest = i
                if nearest - i < limit:
                    found[heads[i]] = 49  # '1'
        return int(found, 2)

    def step(self, scan: _Scan, at: int, after: int) -> tuple[int, str | None]:
        ends = scan.string(after)
        text, best, head = scan.text, -1, at
        for _ in range(self.limit):
            token = self.token.match(text, head)
            if token is None:
                break
            stop = token.end()
            for end in range(head + 6, stop + 1, 3) if stop - head > 6 else (stop,):
                if ends[end] == "1":
                    best = end
            head = stop
        return best, text[at:best]


class _Assigned(_Part):
    """``(?:=value)?`` after a named variable's name."""

    __slots__ = ("value",)
    nullable = True

    def __init__(self, value: _Value | _Prefixed) -> None:
        self.value = value
        self.first = frozenset("=")
        self.cont = self.first | value.cont

    def starts(self, scan: _Scan, after: int) -> int:
        return after | (scan.mask("=") & (self.value.starts(scan, after) << 1))

    def step(self, scan: _Scan, at: int, after: int) -> tuple[int, str | None]:
        if scan.text.startswith("=", at) and (self.value.starts(scan, after) >> (scan.end - at - 1)) & 1:
            return self.value.step(scan, at + 1, after)
        return at, None


class _NamedList(_Part):
    """``name(?:=value)?`` items joined by ``sep`` (``{;x*}``); neither name nor value holds ``sep``."""

    __slots__ = ("assigned", "name", "sep", "value")

    def __init__(self, name: str, sep: str, value: _Value) -> None:
        self.name = _Literal(name)
        self.sep = sep
        self.value = value
        self.assigned = _Assigned(value)
        self.first = self.name.first
        self.cont = self.assigned.cont | {sep}

    def _items(self, scan: _Scan, after: int) -> int:
        return self.name.starts(scan, self.assigned.starts(scan, after))

    def starts(self, scan: _Scan, after: int) -> int:
        last = self._items(scan, after)
        inner = self._items(scan, scan.mask(self.sep))  # items that end at a separator
        last_s, inner_s = scan.string(last), scan.string(inner)
        text, sep = scan.text, self.sep
        # right to left over the separators: does an item after this one lead to the end?
        chained = bytearray(b"0" * (scan.end + 1))
        upper, upper_ok = -1, False
        here = text.rfind(sep)
        while True:
            if upper_ok:
                chained[here + 1 : upper] = b"1" * (upper - here - 1)
            if here < 0:
                break
            upper_ok = last_s[here + 1] == "1" or (inner_s[here + 1] == "1" and upper_ok)
            upper, here = here, text.rfind(sep, 0, here)
        return last | (inner & int(chained, 2))

    def step(self, scan: _Scan, at: int, after: int) -> tuple[int, str | None]:
        ends, value_ends = scan.string(after), scan.string(after & ~scan.mid)
        text, name, sep = scan.text, self.name.text, self.sep
        regex = self.value.regex
        best, head = -1, at
        while True:  # ends only grow along the items, so the last one found is the longest
            stop = head + len(name)
            if ends[stop] == "1":
                best = stop
            if text.startswith("=", stop) and (found := regex.match(text, stop + 1)) is not None:
                stop = found.end()
                end = value_ends.rfind("1", head + len(name) + 2, stop + 1)
                if end >= 0:
                    best = end
            if not (text.startswith(sep, stop) and text.startswith(name, stop + 1)):
                return best, text[at:best]
            head = stop + 1


class _Query(_Part):
    """``(?:lead([^#]*))?``: the whole query string, read apart later."""

    __slots__ = ("lead", "optional")
    nullable = True

    def __init__(self, lead: str, optional: bool) -> None:
        self.lead = lead
        self.optional = optional  # the lead itself may be missing
        self.first = _ASCII if optional else frozenset(lead)
        self.cont = _ASCII - {"#"}

    def starts(self, scan: _Scan, after: int) -> int:
        free = scan.not_hash()
        content = after | _fill(free, (after << 1) & free)
        found = after | (scan.mask(self.lead) & (content << 1))
        return found | content if self.optional else found

    def step(self, scan: _Scan, at: int, after: int) -> tuple[int, str | None]:
        text, ends = scan.text, scan.string(after)
        stop = text.find("#", at)
        stop = len(text) if stop < 0 else stop
        if at < stop and text[at] in self.lead:
            end = ends.rfind("1", at + 1, stop + 1)
            if end >= 0:
                return end, text[at + 1 : end]
        if self.optional:
            end = ends.rfind("1", at, stop + 1)
            if end >= 0:
                return end, text[at:end]
        return at, None


class _Scanner:
    __slots__ = ("parts",)

    def __init__(self, parts: list[_Part]) -> None:
        self.parts = tuple(parts)

    def groups(self, text: str) -> tuple[str | None, ...] | None:
        """The regex's groups for ``text``, or None where the regex would not match."""
        scan = _Scan(text)
        parts = self.parts
        after = [0] * len(parts) + [1]  # bit 0 is position ``end``
        for index in range(len(parts) - 1, -1, -1):
            after[index] = parts[index].starts(scan, after[index + 1])
        if not after[0] >> scan.end:
            return None
        groups: list[str | None] = []
        at = 0
        for index, part in enumerate(parts):
            at, group = part.step(scan, at, after[index + 1])
            if part.group:
                groups.append(group)
        return tuple(groups)


def _unambiguous(parts: list[_Part]) -> bool:
    """Whether no part can extend into what may follow it: then the regex never backtracks
    more than a character into a value, and is linear."""
    follow: frozenset[str] = frozenset()
    for part in reversed(parts):
        if part.cont & follow:
            return False
        follow = part.first | follow if part.nullable else part.first
    return True


class _Compiler:
    """Turns the parts after the literal prefix into a regex source, its group table and scanner parts."""

    def __init__(self, has_query: bool, in_query: bool) -> None:
        self.has_query = has_query
        self.in_query = in_query  # after a literal '?', '&' ends a value
        self.source: list[str] = []
        self.slots: list[tuple[str, int, str]] = []  # (name, how to read it, separator) per group
        self.parts: list[_Part] = []
        # the names of the groups named after their variable (``match`` then takes the match's own
        # dict); a group that cannot be named so (a repeated name, or no ASCII identifier) counts too
        self.named: set[str] = set()
        self.unnamed = 0

    def literal(self, text: str) -> None:
        self.source.append(re.escape(text))
        self.parts.append(_Literal(text))
        self.in_query = self.in_query or "?" in text

    def expression(self, expression: _Expression) -> None:
        op = expression.op
        several = len(expression.variables) > 1
        sep = re.escape(op.sep)
        for index, variable in enumerate(expression.variables):
            lead = op.first if index == 0 else op.sep
            chars = _value_chars(expression.operator, op.named or several or variable.explode,
                                 self.has_query, self.in_query)
            value = _value_regex(chars, variable.prefix)
            part: _Value | _Prefixed = (_Value(chars) if variable.prefix is None
                                        else _Prefixed(chars, variable.prefix))
            name = variable.name
            if op.named:
                if variable.explode:
                    item = f"{re.escape(name)}(?:={value})?"
                    self.source.append(f"{re.escape(lead)}({item}(?:{sep}{item})*)")
                    self.slots.append((name, _NAMED_LIST, op.sep))
                    self._parts(lead, _NamedList(name, op.sep, _Value(chars)))
                else:
                    self.source.append(f"{re.escape(lead + name)}(?:=({value}))?")
                    self.slots.append((name, _NAMED, op.sep))
                    self._parts(lead + name, _Assigned(part))
            elif variable.explode:
                self.source.append(f"{re.escape(lead)}({value}(?:{sep}{value})*)")
                self.slots.append((name, _LIST, op.sep))
                self._parts(lead, _List(chars, op.sep))
            else:
                self.source.append(f"{re.escape(lead)}({self._group_name(name)}{value})")
                self.slots.append((name, _SCALAR, op.sep))
                self._parts(lead, part)

    def _group_name(self, name: str) -> str:
        """``?P<name>`` for a scalar's group when ``name`` may name it, else nothing."""
        if name.isascii() and name.isidentifier() and name not in self.named:
            self.named.add(name)
            return f"?P<{name}>"
        self.unnamed += 1
        return ""

    def _parts(self, lead: str, part: _Part) -> None:
        if lead:
            self.parts.append(_Literal(lead))
        self.parts.append(part)

    def query(self, lead: str, optional: bool) -> None:
        pattern = re.escape(lead) if len(lead) == 1 else f"[{re.escape(lead)}]"
        self.source.append(f"(?:{pattern}{'?' if optional else ''}([^#]*))?")
        self.slots.append(("", _QUERY, "&"))
        self.parts.append(_Query(lead, optional))
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

# Percent-encoding as ``urllib.parse`` does it (``quote`` of UTF-8, upper-case hex; ``unquote``
# decoding UTF-8 with replacement), without importing it: urllib.parse brings ipaddress, about
# 3 ms of a server's start-up for two functions.
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")


@functools.cache
def _quoter(safe: str) -> tuple[str, ...]:
    """The text of each byte, percent-encoded unless unreserved or in ``safe``."""
    keep = _UNRESERVED | frozenset(safe.encode())
    return tuple(chr(b) if b in keep else f"%{b:02X}" for b in range(256))


def quote(text: str, safe: str = "/") -> str:
    table = _quoter(safe)
    return "".join([table[b] for b in text.encode()])


def _unquote_run(match: re.Match[str]) -> str:
    return bytes.fromhex(match.group().replace("%", "")).decode("utf-8", "replace")


def unquote(text: str) -> str:
    if "%" not in text:
        return text
    return _compiled(_PCT_RUN).sub(_unquote_run, text)



def _encode(text: str, reserved: bool) -> str:
    if not reserved:
        return quote(text, safe="")
    if "%" not in text:
        return quote(text, safe=_RESERVED)
    # reserved expansion copies percent-encoded triplets as they are
    return "".join(
        piece if index % 2 else quote(piece, safe=_RESERVED)
        for index, piece in enumerate(_compiled(_PCT_SPLIT).split(text))
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
        "_named", "_parts", "_plain", "_query", "_regex", "_scanner", "_slots", "canonical", "duplicates",
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
    _scanner: _Scanner | None
    _slots: tuple[tuple[str, int, str], ...]
    _plain: tuple[str, ...] | None
    _named: bool
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
                        compiler.query("?&", optional=True)
                    elif in_query or part.operator == "&" or query_expressions > 1:
                        compiler.query("?&", optional=False)
                    else:
                        compiler.query("?", optional=False)
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
        init(self, "_scanner", None if _unambiguous(compiler.parts) else _Scanner(compiler.parts))
        init(self, "_slots", slots)
        init(self, "_plain", tuple(name for name, _, _ in slots) if plain else None)
        # every group one variable's, named after it: what the regex matched is the values
        init(self, "_named", plain and not compiler.unnamed and self._scanner is None)
        # a query key is compared as written and, failing that, decoded
        init(self, "_query", {**{unquote(k): v for k, v in query.items()}, **query})

    @property
    def scalars(self) -> tuple[str, ...] | None:
        """The variables' names when each matches one string (no lists, no query, no ``;``):
        ``match`` then gives exactly these keys; None otherwise."""
        return self._plain

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The variables of ``uri``, percent-decoded, or None if it does not match."""
        prefix = self.literal_prefix
        if not uri.startswith(prefix):
            return None
        scanner = self._scanner
        groups: tuple[Any, ...] | None
        if scanner is None:
            found = self._regex.fullmatch(uri, len(prefix))
            if found is None:
                return None
            if self._named and "%" not in uri:  # nothing to decode: the match's own dict (a C call)
                return found.groupdict()
            groups = found.groups()
        else:
            groups = scanner.groups(uri[len(prefix) :])
            if groups is None:
                return None
        plain = self._plain
        if plain is not None:
            if "%" not in uri:  # nothing to decode
                return dict(zip(plain, groups, strict=True))
            return {name: unquote(raw) if "%" in raw else raw for name, raw in zip(plain, groups, strict=True)}
        values: dict[str, str | list[str]] = {}
        for (name, kind, sep), raw in zip(self._slots, groups, strict=True):
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
