"""``resourcekit dev``: the explorer page in a real headless Chromium (Debian's ``chromium``), driven
by Playwright with that executable, against a real ``resourcekit dev`` process serving
``tests/apps/explorer_app.py`` (2,500 resources and more). Each test does what a person does
on the page; screenshots are saved to ``$RESOURCEKIT_ARTIFACTS`` (default: a temporary
directory, printed at the end of the run)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.http_server import free_port, wait_for_port
from tests.support.process import APPS, COOKBOOK, command, env, stop_process
from tests.support.wire import modern_meta

APP = APPS / "explorer_app.py"
CHROMIUM = os.environ.get("RESOURCEKIT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(os.environ.get("RESOURCEKIT_ARTIFACTS") or Path(tempfile.gettempdir()) / "resourcekit-artifacts")
TOTAL = 2510  # 2,500 items, seven more resources, three listed users


@contextlib.contextmanager
def dev_server(target: Path, *extra: str, extra_env: dict[str, str] | None = None,
               open_browser: bool = False) -> Iterator[str]:
    """A real ``resourcekit dev TARGET --no-open --port P`` process; yields the page's URL."""
    port = free_port()
    flags = () if open_browser else ("--no-open",)
    proc = subprocess.Popen(command("dev", str(target), *flags, "--port", str(port), *extra),
                            env={**env(), **(extra_env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/"
    finally:
        stop_process(proc, 15)
        if proc.stderr:
            proc.stderr.close()


@pytest.fixture(scope="module")
def status_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("explorer") / "status.txt"
    path.write_text("status: first")
    return path


@pytest.fixture(scope="module")
def url(status_file: Path) -> Iterator[str]:
    with dev_server(APP, extra_env={"EXPLORER_STATUS_FILE": str(status_file)}) as page_url:
        yield page_url


@pytest.fixture(scope="module")
def browser(request: pytest.FixtureRequest) -> Iterator[Browser]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install chromium (or set RESOURCEKIT_CHROMIUM)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # past pytest's output capture, onto the terminal
            reporter.write_line(f"\nexplorer screenshots: {ARTIFACTS}")


@pytest.fixture
def page(browser: Browser, url: str) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1360, "height": 820})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    # console errors include Content-Security-Policy violations and failed loads
    opened.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    opened.goto(url)
    expect(opened.locator("#status")).to_have_attribute("data-state", "connected", timeout=15_000)
    yield opened
    context.close()
    assert not errors, errors  # no uncaught exception in the page's script, nothing the policy refused


def shot(page: Page, name: str) -> Path:
    path = ARTIFACTS / f"explorer-{name}.png"
    page.screenshot(path=str(path))
    return path


def protocol_entries(page: Page, method: str) -> Any:
    return page.locator(f'#protocol-log .msg.in[data-method="{method}"]')


# --- the page and the process -------------------------------------------------------------------


def test_page_is_served_with_a_strict_policy_beside_the_endpoint(url: str) -> None:
    page = httpx.get(url, timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy and "script-src 'self'" in policy
    for asset, kind in (("app.js", "text/javascript"), ("style.css", "text/css")):
        answer = httpx.get(url + asset, timeout=10)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith(kind)
        assert b"http://" not in answer.content.replace(b"http://127.0.0.1", b"")  # nothing from elsewhere
    assert httpx.get(url + "nothing.js", timeout=10).status_code == 404
    # the endpoint is still the endpoint, with its own checks: another site's page may not call it
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    refused = httpx.post(url + "mcp", json=ping, timeout=10, headers={
        "accept": "application/json, text/event-stream", "origin": "https://evil.example"})
    assert refused.status_code == 403


def test_a_port_in_use_is_reported(url: str) -> None:
    port = url.rsplit(":", 1)[1].strip("/")
    done = subprocess.run(command("dev", str(APP), "--no-open", "--port", port), env=env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr


def test_the_browser_is_opened_once_serving(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    opener = tmp_path / "opener.sh"
    opener.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    opener.chmod(0o755)
    with dev_server(APP, extra_env={"BROWSER": str(opener)}, open_browser=True) as page_url:
        deadline = time.monotonic() + 20
        while not opened.exists() or not opened.read_text().strip():
            assert time.monotonic() < deadline, "the browser was not opened"
            time.sleep(0.1)
        assert opened.read_text().strip() == page_url


# --- in the browser ----------------------------------------------------------------------------------


def test_every_page_is_reachable_and_clicking_a_resource_reads_it(page: Page) -> None:
    page.click("#view-mode [data-mode=flat]")
    expect(page.locator("#list .item").first).to_be_visible()
    shot(page, "list")
    last = page.locator('#list .item[data-uri="users://3"]')  # lister instances come after all resources
    deadline = time.monotonic() + 30
    while last.count() == 0:  # scrolling to the end loads the next page
        assert time.monotonic() < deadline, page.inner_text("#list-footer")
        page.eval_on_selector("#list", "el => { el.scrollTop = el.scrollHeight; }")
        page.wait_for_timeout(100)
    expect(page.locator("#list-footer")).to_contain_text("all pages loaded")
    expect(page.locator("#resource-count")).to_have_text(f"{TOTAL:,}")
    item = page.locator('#list .item[data-uri="data://items/2499"]')
    item.scroll_into_view_if_needed()
    item.click()
    expect(page.locator("#contents")).to_contain_text("line two of item 2499")
    expect(page.locator("#contents .line")).to_have_count(2)  # text with line numbers
    expect(page.locator("#meta")).to_contain_text("text/plain")
    shot(page, "text")


def test_contents_are_shown_by_type(page: Page) -> None:
    page.fill("#search", "config")  # searching loads the pages it needs
    page.locator('.item[data-uri="config://settings"]').click()
    expect(page.locator("#contents .json-key").first).to_contain_text('"theme"')
    page.locator("#contents details.json-node summary").nth(1).click()  # folding a JSON object
    expect(page.locator("#contents .json-node").nth(1)).not_to_have_attribute("open", "")
    page.fill("#search", "readme")
    page.locator('.item[data-uri="docs://readme.md"]').click()
    expect(page.locator("#contents .markdown h1")).to_have_text("Explorer demo")
    expect(page.locator("#contents .markdown strong")).to_have_text("bold")
    expect(page.locator("#contents .markdown pre")).to_contain_text("<b>not bold</b>")  # escaped, not HTML
    assert page.locator("#contents .markdown b").count() == 0
    page.fill("#search", "logo")
    page.locator('.item[data-uri="image://logo.png"]').click()
    image = page.locator("#contents .image img")
    expect(image).to_be_visible()
    assert image.evaluate("img => img.complete && img.naturalWidth") == 48
    expect(page.locator("#meta")).to_contain_text("audience")  # annotations in the metadata panel
    shot(page, "image")
    page.fill("#search", "archive")
    page.locator('.item[data-uri="blob://archive.bin"]').click()
    download = page.locator("#contents .download a")
    expect(download).to_have_attribute("download", "archive.bin")
    expect(page.locator("#contents .download")).to_contain_text("2.0 KB")


def test_the_rough_edges_a_new_user_found(page: Page) -> None:
    # the era selector and the message log's button no longer share a label
    expect(page.locator("label.era-switch")).to_contain_text("Era")
    expect(page.locator("#toggle-protocol")).to_contain_text("Messages")
    # no empty details column before a selection
    expect(page.locator("#meta")).to_be_hidden()
    page.fill("#search", "config")
    page.locator('.item[data-uri="config://settings"]').click()
    expect(page.locator("#meta")).to_be_visible()
    # JSON opens one level deeper: three levels open, the fourth folded
    level2 = page.locator("#contents details.json-node", has=page.locator(".json-key", has_text='"level2"')).last
    expect(level2).to_have_attribute("open", "")
    level3 = page.locator("#contents details.json-node", has=page.locator(".json-key", has_text='"level3"')).last
    expect(level3).not_to_have_attribute("open", "")
    # completion for an int variable with a completer
    page.fill("#search", "")
    page.click(".tab[data-tab=templates]")
    page.locator('.item[data-template="rooms://{floor}"]').click()
    expect(page.locator("#var-floor")).to_have_attribute("type", "number")
    page.locator("#var-floor").press_sequentially("1", delay=50)
    expect(page.locator(".suggestions .suggestion")).to_have_count(3)  # 10, 11, 12
    # a plain resource whose value the template's types reject is not shown as its instance
    page.locator('.item[data-template="users://{user_id}"]').click()
    load = page.locator(".hint button", has_text="Load all pages")
    if load.count():
        load.click()
    expect(page.locator(".instances-box h3")).to_have_text("Listed instances (3)")
    expect(page.locator('.instances-box .item[data-uri="users://me"]')).to_have_count(0)


def test_a_listable_resource_is_navigated_as_a_directory(page: Page) -> None:
    page.fill("#search", "folder")
    page.locator('.item[data-uri="folder://"]').click()
    entry = page.locator('#directory .item[data-uri="folder://b.txt"]')
    expect(entry).to_be_visible()
    # without skills served, the page lists children through SEP-2093 (resources/list {uri}),
    # never through the skills extension's resources/directory/read, which is not declared
    expect(protocol_entries(page, "resources/list")).not_to_have_count(0)
    expect(protocol_entries(page, "resources/directory/read")).to_have_count(0)
    entry.click()
    expect(page.locator("#contents")).to_contain_text("file b")


def test_the_template_form_completes_and_reads_an_instance(page: Page) -> None:
    page.click(".tab[data-tab=templates]")
    page.locator('.item[data-template^="weather://"]').click()
    expect(page.locator("#var-days")).to_have_attribute("type", "number")  # typed inputs
    expect(page.locator("#var-start")).to_have_attribute("type", "date")
    expect(page.locator("#var-unit option")).to_have_count(3)  # default, metric, imperial
    page.locator("#var-city").press_sequentially("Be", delay=50)
    suggestion = page.locator(".suggestions .suggestion", has_text="Berlin")
    expect(suggestion).to_be_visible()
    expect(page.locator(".suggestions .suggestion")).to_have_count(2)  # Berlin, Bern
    shot(page, "completion")
    suggestion.click()
    expect(page.locator("#var-city")).to_have_value("Berlin")
    page.fill("#var-days", "2")
    page.select_option("#var-unit", "imperial")
    page.fill("#var-start", "2026-07-28")
    expect(page.locator("#template-preview")).to_have_text(
        "weather://Berlin/forecast?days=2&unit=imperial&start=2026-07-28")
    page.click("#template-read")
    expect(page.locator("#contents")).to_contain_text('"imperial"')
    expect(page.locator("#contents")).to_contain_text('"Berlin"')
    page.click("#toggle-protocol")
    expect(protocol_entries(page, "completion/complete").first).to_be_visible()
    shot(page, "template")


def test_skills_are_navigated_as_directories(browser: Browser) -> None:
    with dev_server(COOKBOOK / "skills_app.py") as page_url:
        context = browser.new_context(viewport={"width": 1360, "height": 820})
        page = context.new_page()
        page.goto(page_url)
        page.click("#skills-tab")  # shown because the server declares the skills extension
        page.locator('.item[data-skill="skill://acme/billing/refunds/SKILL.md"]').click()
        examples = page.locator('#directory .item[data-uri="skill://acme/billing/refunds/examples"]')
        expect(examples).to_be_visible()
        examples.click()
        expect(page.locator(".crumbs")).to_contain_text("acme / billing / refunds / examples")
        page.locator('#directory .item[data-uri="skill://acme/billing/refunds/examples/email.md"]').click()
        expect(page.locator("#contents .markdown")).to_be_visible()
        expect(page.locator("#current-uri")).to_have_text("skill://acme/billing/refunds/examples/email.md")
        shot(page, "skills")
        context.close()


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_a_subscribed_resource_refreshes_by_itself(page: Page, status_file: Path, era: str) -> None:
    status_file.write_text("status: first")
    if page.input_value("#era") != era:
        page.select_option("#era", era)
        expect(page.locator("#status")).to_have_attribute("data-state", "connected", timeout=15_000)
    expect(page.locator("#server-info")).to_contain_text("explorer-demo")  # named in either era
    page.click("#toggle-protocol")
    page.fill("#search", "live")
    page.locator('.item[data-uri="live://status"]').click()
    expect(page.locator("#contents")).to_contain_text("status: first")
    page.click("#subscribe")
    if era == "2025-11-25":
        expect(protocol_entries(page, "resources/subscribe")).to_have_count(1)
    else:
        acknowledged = protocol_entries(page, "notifications/subscriptions/acknowledged")
        expect(acknowledged.filter(has_text="live://status")).to_have_count(1)
    expect(page.locator("#subscribe")).to_have_attribute("aria-pressed", "true")
    time.sleep(0.3)  # past the poll that takes the subscription's starting version
    status_file.write_text(f"status: second ({era})")
    started = time.monotonic()
    expect(page.locator("#contents")).to_contain_text(f"status: second ({era})", timeout=3_000)
    elapsed = time.monotonic() - started
    assert elapsed < 3
    expect(protocol_entries(page, "notifications/resources/updated").first).to_be_attached()
    shot(page, f"live-{era}")
    print(f"live update shown {elapsed:.2f} s after the change ({era})")


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_the_list_refreshes_when_it_changes(page: Page, url: str, era: str) -> None:
    if page.input_value("#era") != era:
        page.select_option("#era", era)
        expect(page.locator("#status")).to_have_attribute("data-state", "connected", timeout=15_000)
    page.fill("#search", "added://")
    name = f"during-{era}"
    expect(page.locator("#list-footer")).to_contain_text("all pages loaded")
    if era == "2026-07-28":  # only an acknowledged listen stream hears of the change (a session would queue it)
        expect(protocol_entries(page, "notifications/subscriptions/acknowledged").first).to_be_attached()
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": f"control://add/{name}",
            "_meta": modern_meta()}}
    answer = httpx.post(url + "mcp", json=body, timeout=10, headers={
        "accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
        "mcp-method": "resources/read", "mcp-name": f"control://add/{name}"})
    assert answer.json()["result"]["contents"][0]["text"] == "added", answer.text
    expect(page.locator(f'.item[data-uri="added://{name}"]')).to_be_visible(timeout=5_000)


RELOADING_APP = '''
from resourcekit import App

app = App("reloading")


@app.resource("note://first")
def first() -> str:
    return "first"
'''


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_the_page_reconnects_after_a_reload(browser: Browser, tmp_path: Path, era: str) -> None:
    source = tmp_path / "reloading_app.py"
    source.write_text(RELOADING_APP)
    with dev_server(source, "--reload") as page_url:
        context = browser.new_context(viewport={"width": 1200, "height": 700})
        page = context.new_page()
        page.goto(page_url)
        expect(page.locator("#status")).to_have_attribute("data-state", "connected", timeout=15_000)
        if era != "2025-11-25":
            page.select_option("#era", era)
            expect(protocol_entries(page, "server/discover")).not_to_have_count(0)  # now stateless
            expect(page.locator("#status")).to_have_attribute("data-state", "connected", timeout=15_000)
        expect(page.locator("#server-info")).to_contain_text("reloading")
        page.click("#view-mode [data-mode=flat]")
        page.click("#toggle-protocol")
        page.locator('#list .item[data-uri="note://first"]').click()
        expect(page.locator("#contents")).to_contain_text("first")
        page.click("#subscribe")
        subscribed = (protocol_entries(page, "resources/subscribe") if era == "2025-11-25" else
                      protocol_entries(page, "notifications/subscriptions/acknowledged").filter(has_text="note://first"))
        expect(subscribed).to_have_count(1)
        time.sleep(0.3)  # a different modification time for the stat-based watcher
        source.write_text(RELOADING_APP.replace('"first"', '"first, edited"') +
                          '\n\n@app.resource("note://second")\ndef second() -> str:\n    return "second"\n')
        expect(page.locator('#list .item[data-uri="note://second"]')).to_be_visible(timeout=30_000)
        expect(page.locator("#status")).to_have_attribute("data-state", "connected")
        # the view was read again, and the new session subscribed again
        expect(page.locator("#contents")).to_contain_text("first, edited")
        expect(subscribed).to_have_count(2)
        expect(page.locator("#subscribe")).to_have_attribute("aria-pressed", "true")
        shot(page, f"reconnected-{era}")
        page.locator('#list .item[data-uri="note://second"]').click()
        expect(page.locator("#contents")).to_contain_text("second")
        context.close()


STREAMING_APP = '''
from resourcekit import App, Limits

app = App("streaming", limits=Limits(max_read_size=64 * 1024))


@app.resource("files://big.bin", streamable=True, mime_type="application/octet-stream")
def big() -> bytes:
    """A megabyte: too large for resources/read here, streamed whole."""
    return bytes(range(256)) * 4096
'''


def test_a_streamable_resource_downloads_through_resources_stream(browser: Browser, tmp_path: Path) -> None:
    source = tmp_path / "streaming_app.py"
    source.write_text(STREAMING_APP)
    with dev_server(source) as page_url:
        context = browser.new_context(viewport={"width": 1200, "height": 700}, accept_downloads=True)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(page_url)
        expect(page.locator("#status")).to_have_attribute("data-state", "connected", timeout=15_000)
        page.click("#view-mode [data-mode=flat]")
        page.locator('#list .item[data-uri="files://big.bin"]').click()
        expect(page.locator("#contents")).to_contain_text("max_read_size")  # resources/read refuses it
        with page.expect_download() as download:
            page.click("#stream-download")
        assert download.value.suggested_filename == "big.bin"
        assert Path(download.value.path()).read_bytes() == bytes(range(256)) * 4096
        expect(page.locator(".toast")).to_contain_text("streamed")
        shot(page, "streamed-download")
        context.close()
        assert not errors, errors
