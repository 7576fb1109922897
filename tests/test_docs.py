"""The documentation site (``mkdocs.yml``, ``docs/``): it builds with ``--strict`` (no broken link,
no page left out of the nav, the generated reference pages present and true to the code), every
Python code block in it and in README.md runs, and its home page renders in a real headless
Chromium (Debian's, driven by Playwright as in test_explorer.py; the screenshot goes to
``$RESOURCEKIT_ARTIFACTS``, and ``docs/site.png`` is a copy of it).

Code blocks run page by page, in the nav's order, each page in a fresh namespace and a fresh
working directory holding the files that earlier pages named (a block with ``title="app.py"`` is
also written as ``app.py``), as a reader following the tutorial would have them. After a page's
blocks, the ``test_*`` functions it defined are called. Markers, HTML comments a reader does not see:

* ``<!-- docs-test: compile (why) -->`` on the line before a block: it needs a network or a running
  server, so it is only compiled;
* ``<!-- docs-test: setup`` ... ``-->``: code run before the page's blocks (names a fragment uses).

A block that includes a cookbook file (``--8<-- "cookbook/x.py"``) is compiled here and run by
the test that names it (tests/test_cookbook.py and the feature tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest
import yaml

from resourcekit.limits import Limits
from tests.support.process import ROOT

DOCS = ROOT / "docs"
CHROMIUM = os.environ.get("RESOURCEKIT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(os.environ.get("RESOURCEKIT_ARTIFACTS") or Path(tempfile.gettempdir()) / "resourcekit-artifacts")

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<lang>[\w+-]*)(?P<attrs>[^`\n]*)$")
SETUP = re.compile(r"^<!-- docs-test: setup\n(?P<code>.*?)^-->$", re.MULTILINE | re.DOTALL)
COMPILE_ONLY = re.compile(r"^\s*<!-- docs-test: compile \(.+\) -->\s*$")
SNIPPET = re.compile(r'^--8<-- "(?P<path>[^"]+)"$')
TITLE = re.compile(r'title="(?P<title>[^"]+)"')


@dataclass
class Block:
    page: str
    line: int
    code: str
    title: str | None = None
    compile_only: bool = False
    snippets: list[str] = field(default_factory=list)


def nav_pages() -> list[str]:
    """The site's pages in the nav's order."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages: list[str] = []

    def walk(items: list[object]) -> None:
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            if isinstance(value, list):
                walk(value)
            else:
                pages.append(str(value))

    walk(config["nav"])
    return pages


def python_blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, ticks = opening["indent"], opening["ticks"]
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == ticks), None)
        assert end is not None, f"{path.name}:{i + 1}: a code block that is never closed"
        if opening["lang"] in ("python", "py"):
            body = [line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1:end]]
            title = TITLE.search(opening["attrs"])
            snippets = [m["path"] for line in body if (m := SNIPPET.match(line.strip()))]
            blocks.append(Block(path.name, i + 2, "\n".join(body) + "\n", title["title"] if title else None,
                                i > 0 and bool(COMPILE_ONLY.match(lines[i - 1])), snippets))
        i = end + 1
    return blocks


PAGES = [*nav_pages(), "../README.md"]


def test_every_page_is_in_the_nav_and_every_marker_is_known() -> None:
    written = {p.name for p in DOCS.glob("*.md")}
    assert written == set(nav_pages()), written ^ set(nav_pages())
    for page in PAGES:
        text = (DOCS / page).read_text()
        for marker in re.findall(r"<!-- docs-test:[^\n]*", text):
            assert marker == "<!-- docs-test: setup" or COMPILE_ONLY.match(marker), (page, marker)


@pytest.mark.parametrize("page", PAGES)
def test_code_blocks_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the files that the pages before this one named, as a reader has them by now
    for earlier in PAGES[:PAGES.index(page)]:
        for block in python_blocks(DOCS / earlier):
            if block.title and block.title.endswith(".py"):
                (tmp_path / block.title).write_text(block.code)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [name for name in sys.modules if (tmp_path / f"{name}.py").exists() or name == "app"]:
        monkeypatch.delitem(sys.modules, name)

    text = (DOCS / page).read_text()
    namespace: dict[str, object] = {"__name__": "docs_example"}
    for setup in SETUP.finditer(text):
        exec(compile(setup["code"], f"{page} (setup)", "exec"), namespace)
    blocks = python_blocks(DOCS / page)
    for block in blocks:
        where = f"{page}:{block.line}"
        if block.snippets:
            for included in block.snippets:
                source = (ROOT / included).read_text()
                compile(source, included, "exec")
                name = Path(included).name
                assert any(name in test.read_text() for test in (ROOT / "tests").glob("test_*.py")), \
                    f"{where}: {included} is not run by any test"
            continue
        code = compile(block.code, where, "exec")
        if block.title and block.title.endswith(".py"):
            (tmp_path / block.title).write_text(block.code)
        if not block.compile_only:
            exec(code, namespace)
    for name, value in list(namespace.items()):
        if name.startswith("test_") and inspect.isfunction(value):
            if inspect.iscoroutinefunction(value):
                asyncio.run(value())
            else:
                value()


# --- the site ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_site_builds_strictly_with_every_page(site: Path) -> None:
    for page in nav_pages():
        built = site / ("index.html" if page == "index.md" else page.removesuffix(".md") + "/index.html")
        assert built.is_file(), page


def test_generated_reference_pages_follow_the_code(site: Path) -> None:
    from resourcekit.cli import _COMMANDS

    cli = (site / "cli" / "index.html").read_text()
    for command in _COMMANDS:
        assert f"resourcekit {command}" in cli, command
    assert "--max-uri-length" in cli and "--auth-issuer" in cli

    limits = (site / "limits" / "index.html").read_text()
    for name in Limits._fields:
        assert f"<code>{name}</code>" in limits, name
    assert "4 MiB" in limits and "-32602 before any template is tried" in limits

    api = (site / "api" / "index.html").read_text()
    for member in ("App.resource", "App.template", "App.notify_changed", "App.run", "App.add_resource"):
        assert f'id="resourcekit.{member}"' in api, member  # inherited from Registry, shown on App


@contextlib.contextmanager
def served(directory: Path) -> Iterator[str]:
    handler = partial(QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def test_home_page_renders_in_a_browser(site: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install chromium (or set RESOURCEKIT_CHROMIUM)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with served(site) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 820})
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.goto(url)
            expect(page.locator("article h1")).to_contain_text("resourcekit")
            nav = page.locator("nav.md-nav--primary")
            for section in ("Tutorial", "How-to guides", "Reference", "Explanation"):
                expect(nav.get_by_text(section, exact=True).first).to_be_attached()
            page.screenshot(path=str(ARTIFACTS / "site-home.png"))
            # the search index is built and answers
            page.locator("label.md-search__icon, .md-search__input").first.click()
            page.keyboard.type("notify_changed")
            expect(page.locator(".md-search-result__item").first).to_be_visible(timeout=10_000)
        finally:
            browser.close()
    assert not errors, errors
    assert (DOCS / "site.png").is_file()  # the committed copy of the screenshot


# --- the front page and the benchmark results ----------------------------------------------------


def test_readme_is_a_front_page_whose_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 12 * 1024
    # .ci/run runs the block after this marker: the marker and a command that installs dev and runs pytest
    command = readme.split("<!-- test-command -->\n```bash\n", 1)[1].split("\n", 1)[0]
    assert ".venv/bin/pip install -q -e '.[dev]'" in command and command.endswith("-m pytest")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target


def test_benchmark_results_stay_short_and_name_each_cpu() -> None:
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    assert len(results.splitlines()) <= 300
    assert "Intel(R) Xeon(R)" in results and "AMD EPYC" in results
