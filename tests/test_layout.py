"""The layout stays a map: arrows point down (import-linter), no import cycle even among type-only
imports, and each module holds one role.

Size judges roles, not line counts alone.  A module holds one role; past 400 lines of behaviour a
role has usually turned out to be two, and the module is split by role (what each part is for),
never by size (a "part two", a "fast" copy).  What counts:

- every line but a ``typing.Protocol`` class: an interface a module owns so that the layer above
  satisfies it (``methods._base.RequestView``, ``tracking.Watched``) is a declaration of what the
  module needs, not behaviour, and must not push the module to split;
- the reviewed exceptions below (``ONE_ROLE``): a module over the cap whose one role cannot be
  divided without two modules knowing the same rule.  Each names its role and why; adding one is
  a design decision for review, not a way to make this test pass.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp

from tests.support.process import ROOT

MAX_LINES = 400
#: modules over the cap that hold one role, with the reason (reviewed: issue 28)
ONE_ROLE = {
    "resourcekit/templates.py": "RFC 6570 in one place: parse, match and expand share one grammar "
                                "(levels 1-4, every operator, explode, prefix); split, each half would re-derive it",
}


def test_import_arrows_point_down() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_import_contract_is_a_design() -> None:
    """At most 8 tiers, and the type-only imports count: an arrow a type checker follows is an arrow."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: the dev extra's tomli
        import tomli as tomllib
    linter = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert linter["exclude_type_checking_imports"] is False
    (contract,) = linter["contracts"]
    assert len(contract["layers"]) <= 8, contract["layers"]


def import_cycles() -> list[list[str]]:
    """The strongly connected components of more than one module in resourcekit's import graph,
    counting every import: at module level, in a function, and under ``TYPE_CHECKING``."""
    graph = grimp.build_graph("resourcekit", exclude_type_checking_imports=False, cache_dir=None)
    modules = sorted(graph.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.find_modules_directly_imported_by(v)):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in modules:
        if module not in index:
            visit(module)
    return found


def test_no_import_cycle_even_counting_type_checking_imports() -> None:
    assert import_cycles() == []


def behaviour_lines(source: str) -> int:
    """A module's lines less its ``typing.Protocol`` classes: an interface a module owns so that
    the layer above satisfies it (``methods._base``'s ``RequestView``) is a declaration, not
    behaviour, and must not push the module to split."""
    tree = ast.parse(source)
    interfaces = sum(
        node.end_lineno - node.lineno + 1  # type: ignore[operator]
        for node in tree.body
        if isinstance(node, ast.ClassDef) and any(ast.unparse(base).endswith("Protocol") for base in node.bases)
    )
    return len(source.splitlines()) - interfaces


def test_no_module_over_400_lines() -> None:
    long = {
        path.relative_to(ROOT).as_posix(): n
        for path in (ROOT / "resourcekit").rglob("*.py")
        if path.relative_to(ROOT).as_posix() not in ONE_ROLE and (n := behaviour_lines(path.read_text())) > MAX_LINES
    }
    assert not long, long


def test_the_exceptions_are_still_exceptions() -> None:
    """An exception the module no longer needs is removed from the list, so the list stays reviewed."""
    for name in ONE_ROLE:
        assert behaviour_lines((ROOT / name).read_text()) > MAX_LINES, name
