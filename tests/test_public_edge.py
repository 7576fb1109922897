"""The public edge: docs and the cookbook import only public modules, and the old import paths
users may have written still work for one release, each with a DeprecationWarning naming the new one."""

from __future__ import annotations

import ast
import importlib
import re
import sys

import pytest

from tests.support.process import ROOT

#: the public modules (resourcekit/__init__.py's docstring and docs/api.md say the same)
PUBLIC = {
    "resourcekit", "resourcekit.testing", "resourcekit.http", "resourcekit.auth", "resourcekit.contents",
    "resourcekit.logs", "resourcekit.telemetry",
}

FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def imported_modules(source: str) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            modules.update(f"{node.module}.{a.name}" for a in node.names if node.module == "resourcekit"
                           and a.name[:1].islower() and importlib.util.find_spec(f"resourcekit.{a.name}"))
        elif isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
    return {m for m in modules if m == "resourcekit" or m.startswith("resourcekit.")}


def sources() -> list[tuple[str, str]]:
    found = [(p.relative_to(ROOT).as_posix(), p.read_text()) for p in sorted((ROOT / "cookbook").glob("*.py"))]
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for i, block in enumerate(FENCE.findall(page.read_text())):
            found.append((f"{page.relative_to(ROOT).as_posix()} block {i + 1}", block))
    return found


def test_docs_and_cookbook_import_only_public_modules() -> None:
    internal = {where: sorted(imported_modules(code) - PUBLIC) for where, code in sources()}
    assert {k: v for k, v in internal.items() if v} == {}
    assert len(internal) > 20  # the cookbook's files and the docs' blocks were read


def test_the_public_names_docs_use_are_documented() -> None:
    api = (ROOT / "docs" / "api.md").read_text()
    for name in ("resourcekit.http.ASGIApp", "resourcekit.http.HTTPError", "resourcekit.testing.Client",
                 "resourcekit.auth.OAuthResourceServer", "resourcekit.contents.dump_json",
                 "resourcekit.contents.guess_mime_type", "resourcekit.contents.is_textual", "resourcekit.logs.Repeats"):
        assert f"::: {name}" in api, name
        module, _, attr = name.rpartition(".")
        assert attr in importlib.import_module(module).__all__, name


OLD_PATHS = [
    ("resourcekit.optin", "OptIn", "resourcekit.extensions"),
    ("resourcekit.versions", "META_VERSION", "resourcekit.revisions"),
    ("resourcekit.handler", "Handler", "resourcekit.declaration"),
    ("resourcekit.protocol", "Server", "resourcekit.core"),
    ("resourcekit.protocol", "Connection", "resourcekit.core"),
    ("resourcekit.sampling", "presampler", "resourcekit.telemetry.sampling"),
    ("resourcekit.causes", "caused", "resourcekit.telemetry.causes"),
    ("resourcekit.telemetry", "Traced", "resourcekit.telemetry.spans"),
    ("resourcekit.telemetry", "probe", "resourcekit.telemetry.spans"),
    ("resourcekit.transports.http", "ASGIApp", "resourcekit.http"),
    ("resourcekit.transports.http", "HTTPError", "resourcekit.http"),
]


@pytest.mark.parametrize(("old", "name", "new"), OLD_PATHS)
def test_old_import_paths_warn_and_work(old: str, name: str, new: str) -> None:
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)


def test_from_import_of_an_old_path_warns() -> None:
    sys.modules.pop("resourcekit.optin", None)
    with pytest.warns(DeprecationWarning, match="resourcekit.extensions"):
        from resourcekit.optin import SEP_2093
    assert SEP_2093 == "io.resourcekit/sep-2093"


def test_the_public_names_stay_quiet() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from resourcekit.http import ASGIApp, HTTPError  # noqa: F401
        from resourcekit.skills import SkillCatalog  # noqa: F401
        from resourcekit.telemetry import use_meter_provider  # noqa: F401
        from resourcekit.transports.http import run_http  # noqa: F401
