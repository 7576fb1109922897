"""Set one member of an object inside a JSON (or JSONC) document, editing only that spot.

A host's configuration file is the user's: its other entries, key order, indentation,
line endings (and, in JSONC, comments and trailing commas) must survive our edit.  So
the file is not loaded and dumped again: a small parser records where each object's
members lie, and ``set_member`` splices the new text in there, rendered in the file's
own indentation style.  Everything outside that span stays byte for byte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["JSONEditError", "Member", "set_member"]

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class JSONEditError(ValueError):
    """The document is not JSON (or JSONC, where allowed); the message says where."""


class Member:
    """Where one ``"key": value`` of an object lies in the text."""

    __slots__ = ("key", "key_start", "value_end", "value_start")

    def __init__(self, key: str, key_start: int, value_start: int, value_end: int) -> None:
        self.key, self.key_start, self.value_start, self.value_end = key, key_start, value_start, value_end


class _Object:
    __slots__ = ("close", "members", "open", "value")

    def __init__(self, start: int) -> None:
        self.open = start
        self.close = -1
        self.members: list[Member] = []
        self.value: dict[str, Any] = {}


class _Parser:
    def __init__(self, text: str, comments: bool) -> None:
        self.text = text
        self.comments = comments

    def fail(self, i: int, what: str) -> JSONEditError:
        line = self.text.count("\n", 0, i) + 1
        column = i - (self.text.rfind("\n", 0, i) + 1) + 1
        return JSONEditError(f"{what} at line {line}, column {column}")

    def skip(self, i: int) -> int:
        text, n = self.text, len(self.text)
        while i < n:
            c = text[i]
            if c in " \t\r\n\ufeff":
                i += 1
            elif c == "/" and text.startswith(("//", "/*"), i):
                if not self.comments:
                    raise self.fail(i, "a comment (not allowed in this file's JSON)")
                end = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i + 2)
                if end < 0 and text[i + 1] == "*":
                    raise self.fail(i, "an unclosed comment")
                i = n if end < 0 else end + (1 if text[i + 1] == "/" else 2)
            else:
                break
        return i

    def value(self, i: int, path: Sequence[str], found: list[_Object] | None) -> tuple[Any, int]:
        """The value at ``i`` and the index after it.  ``found`` is given when this value lies on
        the path: an object then records itself there, and passes it on to its member named
        ``path[0]``."""
        text = self.text
        if i >= len(text):
            raise self.fail(i, "unexpected end of the file")
        c = text[i]
        if c == "{":
            return self.object(i, path, found)
        if c == "[":
            items: list[Any] = []
            i = self.skip(i + 1)
            while text[i:i + 1] != "]":
                item, i = self.value(i, (), None)
                items.append(item)
                i = self.after_item(i, "]")
            return items, i + 1
        if c == '"':
            end = self.string_end(i)
            return json.loads(text[i:end]), end
        for word, literal in _LITERALS.items():
            if text.startswith(word, i):
                return literal, i + len(word)
        match = _NUMBER.match(text, i)
        if match is None:
            raise self.fail(i, "expected a value")
        return json.loads(match.group()), match.end()

    def object(self, i: int, path: Sequence[str], found: list[_Object] | None) -> tuple[Any, int]:
        text = self.text
        record = _Object(i)
        i = self.skip(i + 1)
        while text[i:i + 1] != "}":
            if text[i:i + 1] != '"':
                raise self.fail(i, "expected a key in double quotes")
            key_end = self.string_end(i)
            key = json.loads(text[i:key_end])
            colon = self.skip(key_end)
            if text[colon:colon + 1] != ":":
                raise self.fail(colon, "expected ':'")
            start = self.skip(colon + 1)
            on_path = found is not None and bool(path) and path[0] == key
            value, end = self.value(start, path[1:] if on_path else (), found if on_path else None)
            record.value[key] = value
            record.members.append(Member(key, i, start, end))
            i = self.after_item(end, "}")
        record.close = i
        if found is not None:
            found.append(record)
        return record.value, i + 1

    def after_item(self, i: int, close: str) -> int:
        i = self.skip(i)
        c = self.text[i:i + 1]
        if c == ",":
            i = self.skip(i + 1)
            if self.text[i:i + 1] == close and not self.comments:
                raise self.fail(i, "a trailing comma (not allowed in this file's JSON)")
            return i
        if c != close:
            raise self.fail(i, f"expected ',' or '{close}'")
        return i

    def string_end(self, i: int) -> int:
        text, j = self.text, i + 1
        while True:
            j = text.find('"', j)
            if j < 0:
                raise self.fail(i, "an unclosed string")
            backslashes = 0
            while text[j - 1 - backslashes] == "\\":
                backslashes += 1
            if backslashes % 2 == 0:
                return j + 1
            j += 1


def parse(text: str, path: Sequence[str], comments: bool) -> tuple[Any, list[_Object]]:
    """The document's value, and the objects found along ``path`` (outermost first)."""
    parser = _Parser(text, comments)
    start = parser.skip(0)
    if start == len(text):
        return None, []
    found: list[_Object] = []
    value, end = parser.value(start, path, found)
    if parser.skip(end) != len(text):
        raise parser.fail(parser.skip(end), "more after the end of the document")
    found.reverse()  # recorded innermost first (an object ends after those inside it)
    return value, found


def _indent_unit(text: str, default: str) -> str:
    widths = [len(m.group(1)) for m in re.finditer(r"\n( +)\S", text)]
    if re.search(r"\n\t+\S", text) and not widths:
        return "\t"
    return " " * min(widths) if widths else default


def _line_indent(text: str, i: int) -> str | None:
    """The whitespace before ``i`` on its line, or None if something else comes first there."""
    prefix = text[text.rfind("\n", 0, i) + 1:i]
    return prefix if not prefix.strip() else None


def _render(value: Any, indent: str | None, unit: str, newline: str) -> str:
    if indent is None:  # a one-line object: stay on one line
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", newline + indent)


def set_member(text: str, path: Sequence[str], key: str, value: Any, *, comments: bool = False,
               default_indent: str = "  ") -> tuple[str, Any]:
    """``text`` with ``document[path...][key] = value`` (objects on the path created as needed),
    and the value that was there before (None if none).  JSONEditError if ``text`` is not JSON."""
    document, found = parse(text, path, comments)
    if document is None:  # a new or empty file
        fresh: dict[str, Any] = {key: value}
        for name in reversed(path):
            fresh = {name: fresh}
        return json.dumps(fresh, indent=default_indent, ensure_ascii=False) + "\n", None
    if not isinstance(document, dict):
        raise JSONEditError("the top level is not an object")
    newline = "\r\n" if "\r\n" in text else "\n"
    unit = _indent_unit(text, default_indent)
    target = found[-1]  # the deepest object of the path that exists
    depth = len(found) - 1
    if depth < len(path) and path[depth] in target.value:
        raise JSONEditError(f"'{path[depth]}' is not an object")
    if depth == len(path):
        for member in target.members:
            if member.key == key:  # replace the value, where it is
                old = target.value[key]
                rendered = _render(value, _line_indent(text, member.key_start), unit, newline)
                return text[:member.value_start] + rendered + text[member.value_end:], old
    name, inner = key, value
    if depth < len(path):  # create the missing objects of the path
        inner = {key: value}
        for missing in reversed(path[depth + 1:]):
            inner = {missing: inner}
        name = path[depth]
    if target.members:
        indent = _line_indent(text, target.members[0].key_start)
        added = json.dumps(name, ensure_ascii=False) + ": " + _render(inner, indent, unit, newline)
        end = target.members[-1].value_end
        gap = newline + indent if indent is not None else " "
        return text[:end] + "," + gap + added + text[end:], None
    outer = _line_indent(text, target.open)
    if outer is None:  # "{" follows something on its line: indent from that line's start
        line = text[text.rfind("\n", 0, target.open) + 1:target.open]
        outer = line[:len(line) - len(line.lstrip())]
    if "\n" not in text:
        body = "{" + json.dumps(name, ensure_ascii=False) + ": " + _render(inner, None, unit, newline) + "}"
    else:
        added = json.dumps(name, ensure_ascii=False) + ": " + _render(inner, outer + unit, unit, newline)
        body = "{" + newline + outer + unit + added + newline + outer + "}"
    return text[:target.open] + body + text[target.close + 1:], None
