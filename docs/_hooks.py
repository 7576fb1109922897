"""MkDocs hooks: the reference pages that the code writes, so that they cannot drift from it.

A page asks for a generated part with an HTML comment on a line of its own:

* ``<!-- generated: cli -->``: every ``resourcekit`` command, from the CLI's own argparse parsers;
* ``<!-- generated: limits -->``: the ``Limits`` record (field, default, run flag, what it bounds).
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- generated: (\w+) -->$", re.MULTILINE)
USAGE_WIDTH = 96


def on_page_markdown(markdown: str, **_: Any) -> str:
    return MARKER.sub(lambda match: GENERATORS[match.group(1)](), markdown)


# --- the command line ----------------------------------------------------------------------------


def cli_reference() -> str:
    from resourcekit.cli import _parser

    top = _parser()
    parts = [_usage(top), ""]
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    about = {choice.dest: choice.help for choice in commands._choices_actions}
    for name, parser in commands.choices.items():
        parts += [f"## `resourcekit {name}`", "", f"{_sentence(about.get(name) or '')}", "", _usage(parser), ""]
        # argparse's two default groups (positional arguments, options) as one table, then the named groups
        groups: list[tuple[str, list[argparse.Action]]] = [("", [])]
        for group in parser._action_groups:
            if group.title in ("positional arguments", "options"):
                groups[0][1].extend(group._group_actions)
            else:
                groups.append((f"**{group.title}**" + (f": {group.description}" if group.description else ""),
                               group._group_actions))
        for title, actions in groups:
            rows = [_row(a) for a in actions if a.help is not argparse.SUPPRESS and "-h" not in a.option_strings]
            if rows:
                parts += ([title, ""] if title else []) + ["| argument | default | what it does |", "|---|---|---|",
                                                           *rows, ""]
    return "\n".join(parts)


def _usage(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=USAGE_WIDTH)
    return "```text\n" + parser.format_usage().strip() + "\n```"


def _row(action: argparse.Action) -> str:
    value = "{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.metavar or action.dest.upper()
    if not action.option_strings:
        name = value
    elif action.nargs == 0:
        name = ", ".join(action.option_strings)
    else:
        name = ", ".join(action.option_strings) + " " + value
    default = action.default
    shown = "" if default in (None, False, [], argparse.SUPPRESS) or action.nargs == 0 else f"`{default}`"
    return f"| `{name}` | {shown} | {_cell(action.help or '')} |"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("." if text and not text.endswith(".") else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# --- the limits ----------------------------------------------------------------------------------


def limits_table() -> str:
    from resourcekit.cli import _parser
    from resourcekit.limits import Limits

    run = _parser("run")._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    flags = {action.dest: action.option_strings[0] for action in run._actions if action.option_strings}
    about = _field_comments()
    rows = ["| limit | default | flag | what it bounds, and the outcome for the client |", "|---|---|---|---|"]
    for name, value in Limits()._asdict().items():
        flag = f"`{flags[name]}`" if name in flags else "—"
        rows.append(f"| `{name}` | {_amount(name, value)} | {flag} | {_cell(about.get(name, ''))} |")
    return "\n".join(rows)


def _field_comments() -> dict[str, str]:
    """The ``#:`` comments above each field of the record, as written in resourcekit/limits.py."""
    source = (ROOT / "resourcekit" / "limits.py").read_text()
    lines = source.splitlines()
    record = next(node for node in ast.parse(source).body if isinstance(node, ast.ClassDef) and node.name == "_Fields")
    comments: dict[str, str] = {}
    for node in record.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above: list[str] = []
            line = node.lineno - 2
            while line >= 0 and lines[line].strip().startswith("#:"):
                above.insert(0, lines[line].strip()[2:].strip())
                line -= 1
            comments[node.target.id] = " ".join(above)
    return comments


def _amount(name: str, value: float) -> str:
    if name.endswith(("_timeout", "_lifetime")):
        return f"{value:g} s"
    if name.endswith(("_size", "_bytes")) and value >= 1024 and name != "page_size":
        for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
            if value % size == 0:
                return f"{value // size:g} {unit}"
    return f"{value:,}"


GENERATORS = {"cli": cli_reference, "limits": limits_table}
