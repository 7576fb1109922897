"""Each cookbook example, run with ``resourcekit run`` over stdio and driven by the official mcp client."""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError as ClientError

from tests.support.mcp_client import all_resources, stdio_session
from tests.support.process import COOKBOOK, command, env

pytestmark = pytest.mark.anyio

NOT_FOUND = -32002
POLL = {"RESOURCEKIT_POLL": "0.2"}
WAIT = 20  # seconds: generous, for a loaded two-core machine


class Updates:
    """A message_handler collecting ``notifications/resources/*`` as (method, uri)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str | None]] = []
        self._event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if isinstance(method, str) and method.startswith("notifications/resources/"):
            uri = getattr(getattr(root, "params", None), "uri", None)
            self.items.append((method, None if uri is None else str(uri)))
            self._event.set()

    async def wait_for(self, method: str, uri: str | None = None) -> None:
        with anyio.fail_after(WAIT):
            while (method, uri) not in self.items:
                self._event = anyio.Event()
                await self._event.wait()

    def updated(self, uri: str) -> int:
        return self.items.count(("notifications/resources/updated", uri))


class ChildrenParams(types.PaginatedRequestParams):
    uri: str


class ListChildrenRequest(types.Request[ChildrenParams, Literal["resources/list"]]):
    """``resources/list`` with a ``uri``: the direct children of a listable resource (SEP-2093)."""

    method: Literal["resources/list"] = "resources/list"
    params: ChildrenParams


async def children(session: Any, uri: str) -> list[Any]:
    out: list[Any] = []
    cursor = None
    while True:
        request = ListChildrenRequest(params=ChildrenParams(uri=uri, cursor=cursor))
        result = await session.send_request(request, types.ListResourcesResult)
        out.extend(result.resources)
        cursor = result.next_cursor
        if cursor is None:
            return out


async def read_one(session: Any, uri: str) -> Any:
    result = await session.read_resource(uri)
    assert len(result.contents) == 1
    return result.contents[0]


async def assert_not_found(session: Any, *uris: str) -> None:
    for uri in uris:
        with pytest.raises(ClientError) as info:
            await session.read_resource(uri)
        assert info.value.error.code == NOT_FOUND, uri


def by_uri(resources: list[Any]) -> dict[str, Any]:
    uris = [str(r.uri) for r in resources]
    assert len(uris) == len(set(uris)), "a page repeated a resource"
    return {str(r.uri): r for r in resources}


# --- notes ------------------------------------------------------------------------------


async def test_notes_list_read_query_and_completion():
    async with stdio_session(COOKBOOK / "notes.py") as session:
        listed = by_uri(await all_resources(session))
        assert list(listed) == ["config://settings", "notes://index", "images://pixel.png", "notes://1", "notes://2"]
        assert listed["images://pixel.png"].mime_type == "image/png"
        settings = await read_one(session, "config://settings")
        assert json.loads(settings.text) == {"theme": "dark", "language": "en"}
        index = await read_one(session, "notes://index")
        assert index.mime_type == "text/markdown" and "- [2](notes://2)" in index.text
        pixel = await read_one(session, "images://pixel.png")
        assert base64.b64decode(pixel.blob).startswith(b"\x89PNG")
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["notes://{note_id}{?rev,tone}"]
        assert (await read_one(session, "notes://2")).text == "Draft the talk, then rehearse it"
        assert (await read_one(session, "notes://2?rev=0")).text == "Draft the talk"
        assert (await read_one(session, "notes://1?tone=shout")).text == "BUY MILK"
        await assert_not_found(session, "notes://3", "notes://1?rev=5", "notes://x")
        ref = types.ResourceTemplateReference(type="ref/resource", uri="notes://{note_id}{?rev,tone}")
        assert (await session.complete(ref, {"name": "note_id", "value": ""})).completion.values == ["1", "2"]
        assert (await session.complete(ref, {"name": "tone", "value": "s"})).completion.values == ["shout"]


# --- filesystem -------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "docs" / "a.txt").write_text("hello\n")
    (root / "docs" / "deep" / "notes.md").write_text("# Notes\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (root / "README").write_text("no extension, still text\n")
    (root / "raw").write_bytes(b"\x00\xff\x00")
    (root / "with space.txt").write_text("spaced\n")
    (tmp_path / "secret.txt").write_text("outside the root\n")
    (root / "leak").symlink_to(tmp_path / "secret.txt")
    (root / "up").symlink_to(tmp_path)
    (root / "alias").symlink_to(root / "docs")
    return root.resolve()


async def test_filesystem_lists_and_reads_text_and_binary(tree: Path):
    base = tree.as_uri()
    async with stdio_session(COOKBOOK / "filesystem.py", extra_env={"RESOURCEKIT_ROOT": str(tree)}) as session:
        listed = by_uri(await all_resources(session))
        assert f"{base}/leak" not in listed and f"{base}/up" not in listed  # they leave the root
        assert listed[base].mime_type == "inode/directory"
        assert listed[f"{base}/docs"].mime_type == "inode/directory"
        a_txt = listed[f"{base}/docs/a.txt"]
        assert a_txt.mime_type == "text/plain" and a_txt.size == 6
        assert a_txt.annotations is not None and a_txt.annotations.last_modified
        assert listed[f"{base}/docs/deep/notes.md"].mime_type == "text/markdown"
        assert listed[f"{base}/logo.png"].size == 264
        assert f"{base}/with%20space.txt" in listed

        assert (await read_one(session, f"{base}/docs/a.txt")).text == "hello\n"
        assert (await read_one(session, f"{base}/with%20space.txt")).text == "spaced\n"
        assert (await read_one(session, f"{base}/alias/a.txt")).text == "hello\n"  # a symlink inside the root
        logo = await read_one(session, f"{base}/logo.png")
        assert logo.mime_type == "image/png"
        assert base64.b64decode(logo.blob) == (tree / "logo.png").read_bytes()
        readme = await read_one(session, f"{base}/README")
        assert readme.mime_type == "text/plain" and readme.text.startswith("no extension")
        raw = await read_one(session, f"{base}/raw")
        assert base64.b64decode(raw.blob) == b"\x00\xff\x00"
        docs = await read_one(session, f"{base}/docs")
        assert docs.mime_type == "inode/directory" and docs.text.split("\n") == ["a.txt", "deep/"]


async def test_filesystem_refuses_everything_outside_its_root(tree: Path):
    base = tree.as_uri()
    async with stdio_session(COOKBOOK / "filesystem.py", extra_env={"RESOURCEKIT_ROOT": str(tree)}) as session:
        await assert_not_found(
            session,
            f"{base}/../secret.txt",
            f"{base}/docs/../../secret.txt",
            f"{base}/%2e%2e/secret.txt",
            f"{base}/%2E%2E%2Fsecret.txt",
            f"{base}/docs%2f..%2f..%2fsecret.txt",
            f"{base}/docs/%2e%2e/%2e%2e/secret.txt",
            f"{base}/docs/./a.txt",
            f"{base}//etc/passwd",
            f"{base}/%2fetc%2fpasswd",
            f"{base}/docs/a.txt%00.png",
            "file:///etc/passwd",
            f"{base}/leak",
            f"{base}/up/secret.txt",
            f"{base}/missing.txt",
        )


async def test_filesystem_skips_version_control_and_virtual_environments(tree: Path):
    (tree / ".git" / "objects").mkdir(parents=True)
    (tree / ".git" / "config").write_text("[core]\n")
    (tree / "myenv" / "lib").mkdir(parents=True)  # a virtual environment by its pyvenv.cfg, not its name
    (tree / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tree / "myenv" / "lib" / "site.py").write_text("x = 1\n")
    (tree / ".venv").mkdir()
    (tree / ".venv" / "x.txt").write_text("x\n")
    base = tree.as_uri()
    async with stdio_session(COOKBOOK / "filesystem.py", extra_env={"RESOURCEKIT_ROOT": str(tree)}) as session:
        listed = by_uri(await all_resources(session))
        assert f"{base}/docs/a.txt" in listed
        assert not [uri for uri in listed if "/.git" in uri or "/myenv" in uri or "/.venv" in uri]
        assert (await read_one(session, base)).text.split("\n") == [
            "README", "alias/", "docs/", "logo.png", "raw", "with space.txt"]
        await assert_not_found(session, f"{base}/.git/config", f"{base}/myenv/lib/site.py", f"{base}/myenv",
                               f"{base}/.venv/x.txt")
    async with stdio_session(COOKBOOK / "filesystem.py",
                             extra_env={"RESOURCEKIT_ROOT": str(tree), "RESOURCEKIT_SKIP": "docs"}) as session:
        assert (await read_one(session, f"{base}/.git/config")).text == "[core]\n"  # the default list replaced
        await assert_not_found(session, f"{base}/docs/a.txt")


async def test_filesystem_polls_changes_to_subscribers(tree: Path):
    base = tree.as_uri()
    updates = Updates()
    config = {"RESOURCEKIT_ROOT": str(tree), **POLL}
    async with stdio_session(COOKBOOK / "filesystem.py", message_handler=updates, extra_env=config) as session:
        await session.subscribe_resource(f"{base}/docs/a.txt")
        await session.subscribe_resource(f"{base}/docs")
        await anyio.sleep(0.5)  # a few polls of unchanged content: nothing to tell
        assert updates.items == []
        with (tree / "docs" / "a.txt").open("a") as f:
            f.write("more\n")
        await updates.wait_for("notifications/resources/updated", f"{base}/docs/a.txt")
        (tree / "docs" / "b.txt").write_text("new\n")
        await updates.wait_for("notifications/resources/updated", f"{base}/docs")
        assert (await read_one(session, f"{base}/docs/a.txt")).text == "hello\nmore\n"


async def test_filesystem_directories_are_listable(tree: Path):
    base = tree.as_uri()
    async with stdio_session(COOKBOOK / "filesystem.py", extra_env={"RESOURCEKIT_ROOT": str(tree)}) as session:
        top = by_uri(await children(session, base))
        assert set(top) == {f"{base}/{n}" for n in ("README", "alias", "docs", "logo.png", "raw", "with%20space.txt")}
        assert top[f"{base}/docs"].mime_type == "inode/directory"
        assert top[f"{base}/logo.png"].size == 264
        docs = by_uri(await children(session, f"{base}/docs"))
        assert list(docs) == [f"{base}/docs/a.txt", f"{base}/docs/deep"]
        assert docs[f"{base}/docs/a.txt"].annotations.last_modified
        with pytest.raises(ClientError) as info:
            await children(session, f"{base}/docs/a.txt")
        assert info.value.error.code == -32602  # a file is not listable


# --- sqlite -----------------------------------------------------------------------------


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    subprocess.run([sys.executable, str(COOKBOOK / "sqlite.py"), str(path), "2500"], check=True, env=env())
    return path


async def test_sqlite_schema_tables_rows_and_paging(database: Path):
    async with stdio_session(COOKBOOK / "sqlite.py", extra_env={"RESOURCEKIT_DB": str(database)}) as session:
        first = await session.list_resources()
        assert len(first.resources) == 1000 and first.next_cursor
        uris = list(by_uri(await all_resources(session)))  # 2,509 resources over three pages
        assert uris[:3] == ["db://schema", "db://events", "db://products"]
        assert uris[3:] == [f"db://events/{n}" for n in range(1, 2501)] + [f"db://products/{n}" for n in (1, 2, 3)]

        schema = json.loads((await read_one(session, "db://schema")).text)
        assert [t["name"] for t in schema["tables"]] == ["events", "products"]
        assert [c["name"] for c in schema["tables"][1]["columns"]] == ["id", "name", "price", "image"]
        products = json.loads((await read_one(session, "db://products")).text)
        assert products["rows"] == 3
        tea = await read_one(session, "db://products/1")
        assert tea.mime_type == "application/json"
        row = json.loads(tea.text)
        assert row["name"] == "tea" and row["price"] == 3.5
        assert base64.b64decode(row["image"]) == b"\x89PNG\r\n"
        assert json.loads((await read_one(session, "db://events/2500")).text)["payload"] == "event 2499"

        await assert_not_found(
            session,
            "db://products/4",
            "db://products/one",
            "db://products/1%20OR%201=1",
            "db://nope/1",
            'db://products"%20--/1',
            "db://products%22%3B%20DROP%20TABLE%20products%3B%20--/1",
            "db://sqlite_master/1",
        )
        assert json.loads((await read_one(session, "db://products")).text)["rows"] == 3
        ref = types.ResourceTemplateReference(type="ref/resource", uri="db://{table}/{rowid}")
        assert (await session.complete(ref, {"name": "table", "value": "pr"})).completion.values == ["products"]


async def test_sqlite_write_helpers_and_outside_writes_reach_subscribers(database: Path):
    updates = Updates()
    config = {"RESOURCEKIT_DB": str(database), **POLL}
    writer = Path(__file__).parent / "support" / "cookbook_sqlite_writer.py"
    async with stdio_session(writer, message_handler=updates, extra_env=config) as session:
        await session.subscribe_resource("db://products/2")
        await session.subscribe_resource("db://products/3")
        await anyio.sleep(0.5)
        assert updates.items == []
        # through the example's helper: notify_changed, at once
        assert (await read_one(session, "test://update/products/2?name=espresso")).text == "updated"
        await updates.wait_for("notifications/resources/updated", "db://products/2")
        assert json.loads((await read_one(session, "db://products/2")).text)["name"] == "espresso"
        added = (await read_one(session, "test://insert/products?name=scone")).text
        assert added == "db://products/4"
        await updates.wait_for("notifications/resources/list_changed")
        assert json.loads((await read_one(session, added)).text)["name"] == "scone"
        # another program writes: the row's watcher notices (PRAGMA data_version)
        with sqlite3.connect(database) as conn:
            conn.execute("UPDATE products SET price = 9 WHERE rowid = 3")
        await updates.wait_for("notifications/resources/updated", "db://products/3")
        assert updates.updated("db://products/2") == 1


def test_sqlite_makes_its_demo_database_when_serving_starts_never_at_import(tmp_path: Path):
    config = {k: v for k, v in env().items() if k != "RESOURCEKIT_DB"}
    config["TMPDIR"] = str(tmp_path)  # where the demo database goes
    demo = tmp_path / "resourcekit-demo.sqlite"
    imported = subprocess.run([sys.executable, "-c", f"import runpy; runpy.run_path({str(COOKBOOK / 'sqlite.py')!r})"],
                              env=config, capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
    assert not demo.exists()
    read = subprocess.run(command("read", str(COOKBOOK / "sqlite.py"), "db://schema"), env=config,
                          capture_output=True, text=True, timeout=60)
    assert read.returncode == 0, read.stderr
    assert demo.exists() and '"products"' in read.stdout


def test_filesystem_without_its_root_stops_at_start_up_saying_so(tmp_path: Path):
    missing = tmp_path / "nowhere"
    done = subprocess.run(command("read", str(COOKBOOK / "filesystem.py"), missing.as_uri()),
                          env={**env(), "RESOURCEKIT_ROOT": str(missing)}, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"RESOURCEKIT_ROOT {missing} is not a directory" in done.stderr


async def test_sqlite_tables_are_listable(database: Path):
    async with stdio_session(COOKBOOK / "sqlite.py", extra_env={"RESOURCEKIT_DB": str(database)}) as session:
        rows = await children(session, "db://products")
        assert [str(r.uri) for r in rows] == ["db://products/1", "db://products/2", "db://products/3"]
        events = await children(session, "db://events")
        assert len(events) == 2500 and str(events[-1].uri) == "db://events/2500"


# --- git --------------------------------------------------------------------------------


def run_git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=Ada", "-c", "user.email=ada@example.com",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    (repo / "src").mkdir()
    (repo / "README.md").write_text("# Project\n")
    (repo / "src" / "app.py").write_text("print('hi')\n")
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x01\x02")
    run_git(repo, "add", ".")
    run_git(repo, "commit", "-q", "-m", "first")
    run_git(repo, "tag", "v1")
    (repo / "README.md").write_text("# Project\n\nSecond version.\n")
    run_git(repo, "commit", "-q", "-am", "second")
    run_git(repo, "branch", "feature/x")
    return repo


async def test_git_refs_commits_and_files(repo: Path):
    main = run_git(repo, "rev-parse", "main")
    first = run_git(repo, "rev-parse", "v1")
    async with stdio_session(COOKBOOK / "git.py", extra_env={"RESOURCEKIT_REPO": str(repo)}) as session:
        listed = by_uri(await all_resources(session))
        assert {"git://refs", "git://HEAD", "git://main", "git://v1", "git://feature%2Fx"} <= set(listed)
        assert {"git://HEAD/README.md", "git://HEAD/src/app.py", "git://HEAD/logo.png"} <= set(listed)
        assert listed["git://HEAD/logo.png"].size == 11

        refs = json.loads((await read_one(session, "git://refs")).text)
        assert refs["head"] == {"commit": main, "ref": "refs/heads/main"}
        assert {r["short"]: r["commit"] for r in refs["refs"]} == {"feature/x": main, "main": main, "v1": first}

        commit = await read_one(session, "git://main")
        assert commit.meta["git/oid"] == main
        info = json.loads(commit.text)
        assert info["message"] == "second\n" and info["author"]["name"] == "Ada"
        assert info["parents"] == [{"commit": first, "uri": f"git://{first}"}]

        readme = await read_one(session, "git://main/README.md")
        assert readme.mime_type == "text/markdown" and readme.text.endswith("Second version.\n")
        assert readme.meta["git/oid"] == run_git(repo, "rev-parse", "main:README.md")
        old = await read_one(session, f"git://{first}/README.md")
        assert old.text == "# Project\n" and old.meta["git/oid"] == run_git(repo, "rev-parse", "v1:README.md")
        assert (await read_one(session, "git://v1/README.md")).text == "# Project\n"
        assert (await read_one(session, "git://HEAD~1/README.md")).text == "# Project\n"
        assert (await read_one(session, "git://feature%2Fx/src/app.py")).text == "print('hi')\n"
        logo = await read_one(session, "git://main/logo.png")
        assert logo.mime_type == "image/png" and base64.b64decode(logo.blob) == (repo / "logo.png").read_bytes()
        src = await read_one(session, "git://main/src")
        assert src.mime_type == "inode/directory" and src.text == "app.py"


async def test_git_refuses_option_injection_and_traversal(repo: Path, tmp_path: Path):
    target = tmp_path / "pwned"
    async with stdio_session(COOKBOOK / "git.py", extra_env={"RESOURCEKIT_REPO": str(repo)}) as session:
        await assert_not_found(
            session,
            f"git://--output={target}",
            f"git://--output=%2F{str(target).lstrip('/').replace('/', '%2F')}/README.md",
            "git://-h",
            "git://%2Dh",
            "git://%2D%2Doutput=x/README.md",
            "git://-p/README.md",
            "git://main/../README.md",
            "git://main/%2e%2e/README.md",
            "git://main//README.md",
            "git://main/-h",
            "git://main/nope.txt",
            "git://nope/README.md",
            "git://main%0Aorigin/README.md",
        )
    assert not target.exists()


async def test_git_new_commits_reach_subscribers(repo: Path):
    updates = Updates()
    config = {"RESOURCEKIT_REPO": str(repo), **POLL}
    async with stdio_session(COOKBOOK / "git.py", message_handler=updates, extra_env=config) as session:
        await session.subscribe_resource("git://main/README.md")
        await session.subscribe_resource("git://main/src/app.py")
        await anyio.sleep(0.5)
        assert updates.items == []
        (repo / "README.md").write_text("# Project\n\nThird version.\n")
        run_git(repo, "commit", "-q", "-am", "third")
        await updates.wait_for("notifications/resources/updated", "git://main/README.md")
        readme = await read_one(session, "git://main/README.md")
        assert readme.meta["git/oid"] == run_git(repo, "rev-parse", "main:README.md")
        await anyio.sleep(0.5)
        assert updates.updated("git://main/src/app.py") == 0  # same blob: nothing to tell


async def test_git_commits_and_trees_are_listable(repo: Path):
    async with stdio_session(COOKBOOK / "git.py", extra_env={"RESOURCEKIT_REPO": str(repo)}) as session:
        top = by_uri(await children(session, "git://main"))
        assert list(top) == ["git://main/README.md", "git://main/logo.png", "git://main/src"]
        assert top["git://main/src"].mime_type == "inode/directory"
        assert [str(r.uri) for r in await children(session, "git://main/src")] == ["git://main/src/app.py"]
        with pytest.raises(ClientError) as info:
            await children(session, "git://main/README.md")
        assert info.value.error.code == -32602  # a file is not listable


# --- logs -------------------------------------------------------------------------------


async def test_logs_tail_and_growth(tmp_path: Path):
    log = tmp_path / "app.log"
    log.write_text("".join(f"line {n}\n" for n in range(1, 101)))
    updates = Updates()
    config = {"RESOURCEKIT_LOG": str(log), **POLL}
    async with stdio_session(COOKBOOK / "logs.py", message_handler=updates, extra_env=config) as session:
        assert [str(r.uri) for r in await all_resources(session)] == ["log://app"]
        header, *lines = (await read_one(session, "log://app")).text.splitlines()
        assert header.startswith("==> app.log") and lines == [f"line {n}" for n in range(81, 101)]
        three = (await read_one(session, "log://app?lines=3")).text
        assert three.splitlines()[1:] == ["line 98", "line 99", "line 100"]
        await assert_not_found(session, "log://app?lines=0", "log://app?lines=many", "log://other")

        await session.subscribe_resource("log://app")
        await session.subscribe_resource("log://app?lines=1")
        await anyio.sleep(0.5)
        assert updates.items == []
        with log.open("a") as f:
            f.write("line 101\n")
        await updates.wait_for("notifications/resources/updated", "log://app")
        await updates.wait_for("notifications/resources/updated", "log://app?lines=1")
        assert (await read_one(session, "log://app?lines=1")).text.endswith("\nline 101\n")
        with log.open("a") as f:  # the same line again: the tail's lines read the same, the log grew
            f.write("line 101\n")
        with anyio.fail_after(WAIT):
            while updates.updated("log://app?lines=1") < 2:
                await anyio.sleep(0.05)
