"""Agent Skills (SEP-2640) in memory: loading, skills/list, skills/get, directories, security, changes."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from resourcekit import App, MCPError
from resourcekit.errors import DefinitionError
from resourcekit.skills import SkillError
from resourcekit.testing import Client
from tests.apps.ext_app import app as ext_app
from tests.support.process import COOKBOOK, env
from tests.support.session import error_of

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"
SKILLS = COOKBOOK / "skills"
EXTENSION = "io.modelcontextprotocol/skills"


@pytest.fixture(params=["2025-11-25", MODERN])
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def cookbook_app(**options: Any) -> App:
    app = App("skills", **options)
    app.add_skills(SKILLS, poll=None)
    return app


def skill_md(name: str, description: str = "Does things.", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


async def walk(client: Client, method: str, key: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = await client.request(method, {**(params or {}), **({"cursor": cursor} if cursor else {})})
        out.extend(page[key])
        cursor = page.get("nextCursor")
        if cursor is None:
            return out


def digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


# --- skills/list and skills/get ---------------------------------------------------------------


async def test_list_entries_frontmatter_verbatim_and_complete_digests(version: str) -> None:
    async with Client(cookbook_app(), protocol_version=version) as client:
        result = await client.request("skills/list")
        entries = {e["uri"]: e for e in result["skills"]}
        assert list(entries) == ["skill://acme/billing/refunds/SKILL.md", "skill://git-workflow/SKILL.md",
                                 "skill://pdf-processing/SKILL.md"]
        assert ("ttlMs" in result and result["cacheScope"] == "private") == (version == MODERN)
        pdf = entries["skill://pdf-processing/SKILL.md"]
        assert pdf["frontmatter"] == {
            "name": "pdf-processing",
            "description": "Extract text and tables from PDF files, fill PDF forms, and assemble invoices "
                           "from templates.",
            "license": "Apache-2.0", "compatibility": "Needs Python 3.10+ with pypdf installed.",
            "metadata": {"version": "2.1.0", "owner": "documents-team", "released": "2026-03-01"},
        }
        refunds = entries["skill://acme/billing/refunds/SKILL.md"]["frontmatter"]
        assert refunds["metadata"]["approvals"] == [{"role": "support-lead", "above": 500},
                                                    {"role": "finance", "above": 5000}]
        files = sorted(p for p in (SKILLS / "pdf-processing").rglob("*") if p.is_file())
        assert pdf["resources"][0]["uri"] == pdf["uri"]  # SKILL.md first
        assert sorted(r["uri"] for r in pdf["resources"]) == sorted(
            "skill://pdf-processing/" + p.relative_to(SKILLS / "pdf-processing").as_posix() for p in files)
        for res in pdf["resources"]:
            path = SKILLS / res["uri"].removeprefix("skill://")
            assert res == {"uri": res["uri"], "digest": digest(path), "size": path.stat().st_size}
        got = await client.request("skills/get", {"uri": "skill://pdf-processing/SKILL.md"})
        assert got["skill"] == pdf and "nextCursor" not in got


async def test_get_refuses_what_is_not_a_served_skill(version: str) -> None:
    async with Client(cookbook_app(), protocol_version=version) as client:
        for uri in ("skill://nope/SKILL.md", "skill://pdf-processing/references/FORMS.md", "skill://pdf-processing",
                    "skill://pdf-processing/SKILL.md/", "file:///etc/passwd"):
            error = await error_of(client, "skills/get", {"uri": uri})
            assert error.code == -32602 and error.data == {"uri": uri}
        assert (await error_of(client, "skills/get", {})).code == -32602


async def test_list_pages_never_split_an_entry(version: str) -> None:
    async with Client(cookbook_app(page_size=1), protocol_version=version) as client:
        first = await client.request("skills/list")
        assert len(first["skills"]) == 1 and first["nextCursor"]
        entries = await walk(client, "skills/list", "skills")
        assert [len(e["resources"]) for e in entries] == [2, 1, 6]
        assert (await error_of(client, "skills/list", {"cursor": "forged"})).code == -32602


async def test_capability_only_when_skills_are_served(version: str) -> None:
    for app, expected in ((cookbook_app(), {EXTENSION: {"directoryRead": True}}), (App("plain"), None)):
        async with Client(app, protocol_version=version) as client:
            if version == MODERN:
                caps = (await client.request("server/discover"))["capabilities"]
            else:
                assert client.initialize_result is not None
                caps = client.initialize_result["capabilities"]
            assert caps.get("extensions") == expected
            assert caps["resources"] == {"subscribe": True, "listChanged": True}


# --- the files as resources ---------------------------------------------------------------------


async def test_every_file_listed_once_and_read_as_text_or_blob(version: str) -> None:
    async with Client(cookbook_app(), protocol_version=version) as client:
        listed = {r["uri"]: r for r in await client.list_resources()}
        files = sorted(p for p in SKILLS.rglob("*") if p.is_file())
        assert sorted(listed) == sorted("skill://" + p.relative_to(SKILLS).as_posix() for p in files)
        skill = listed["skill://acme/billing/refunds/SKILL.md"]
        assert skill["name"] == "refunds" and skill["mimeType"] == "text/markdown"
        assert skill["description"] == "Process customer refund requests per ACME billing policy."
        assert listed["skill://pdf-processing/templates/invoice.md"]["name"] == "invoice.md"
        text = (await client.read("skill://pdf-processing/scripts/extract.py"))[0]
        assert text["mimeType"] == "text/x-python"
        assert text["text"] == (SKILLS / "pdf-processing/scripts/extract.py").read_text()
        stamp = (await client.read("skill://pdf-processing/assets/stamp.png"))[0]
        assert stamp["mimeType"] == "image/png" and "text" not in stamp
        assert base64.b64decode(stamp["blob"]) == (SKILLS / "pdf-processing/assets/stamp.png").read_bytes()
        md = (await client.read("skill://git-workflow/SKILL.md"))[0]
        assert md["mimeType"] == "text/markdown" and md["text"].startswith("---\nname: git-workflow\n")


async def test_text_or_blob_by_the_bytes_not_the_name(tmp_path: Path) -> None:
    write(tmp_path / "s" / "SKILL.md", skill_md("s"))
    write(tmp_path / "s" / "NOTES", "plain words\n")
    write(tmp_path / "s" / "data.bin", b"\xff\xfe\x00binary")
    app = App("t")
    app.add_skills(tmp_path, poll=None)
    async with Client(app) as client:
        notes = (await client.read("skill://s/NOTES"))[0]
        assert notes == {"uri": "skill://s/NOTES", "mimeType": "text/plain", "text": "plain words\n",
                         "_meta": notes["_meta"]}
        data = (await client.read("skill://s/data.bin"))[0]
        assert data["mimeType"] == "application/octet-stream"
        assert base64.b64decode(data["blob"]) == b"\xff\xfe\x00binary"


# --- resources/directory/read -------------------------------------------------------------------


async def test_directory_read_of_skill_directories(version: str) -> None:
    async with Client(cookbook_app(), protocol_version=version) as client:
        root = await client.request("resources/directory/read", {"uri": "skill://pdf-processing"})
        assert [(r["uri"], r["mimeType"]) for r in root["resources"]] == [
            ("skill://pdf-processing/SKILL.md", "text/markdown"),
            ("skill://pdf-processing/assets", "inode/directory"),
            ("skill://pdf-processing/references", "inode/directory"),
            ("skill://pdf-processing/scripts", "inode/directory"),
            ("skill://pdf-processing/templates", "inode/directory"),
        ]
        assert ("ttlMs" in root) == (version == MODERN)
        templates = await client.request("resources/directory/read", {"uri": "skill://pdf-processing/templates"})
        assert [(r["uri"], r["name"]) for r in templates["resources"]] == [
            ("skill://pdf-processing/templates/invoice.md", "invoice.md"),
            ("skill://pdf-processing/templates/regional", "regional"),
        ]
        for uri, child in (("skill://acme", "skill://acme/billing"), ("skill://acme/billing", "skill://acme/billing/refunds")):
            page = await client.request("resources/directory/read", {"uri": uri})
            name = child.rpartition("/")[2]
            assert page["resources"] == [{"uri": child, "name": name, "mimeType": "inode/directory"}]
        for uri in ("skill://pdf-processing/", "skill://pdf-processing/SKILL.md", "skill://", "skill://nope",
                    "skill://pdf-processing/../git-workflow", "nope://x"):
            error = await error_of(client, "resources/directory/read", {"uri": uri})
            assert error.code == -32602, uri


async def test_directory_read_pages(version: str) -> None:
    async with Client(cookbook_app(page_size=2), protocol_version=version) as client:
        children = await walk(client, "resources/directory/read", "resources", {"uri": "skill://pdf-processing"})
        assert len(children) == 5 and len({c["uri"] for c in children}) == 5
        page = await client.request("resources/directory/read", {"uri": "skill://pdf-processing"})
        other = await error_of(client, "resources/directory/read",
                               {"uri": "skill://pdf-processing/templates", "cursor": page["nextCursor"]})
        assert other.code == -32602  # a cursor belongs to its directory


async def test_directory_read_serves_listable_resources(version: str) -> None:
    async with Client(ext_app, protocol_version=version) as client:
        children = await walk(client, "resources/directory/read", "resources", {"uri": "tree://a"})
        assert [c["uri"] for c in children] == ["tree://a/sub", *(f"tree://a/f{n}.txt" for n in range(7))]
        assert children[0]["mimeType"] == "inode/directory"
        for uri in ("tree://a/f1.txt", "tree://nowhere", "counter://value", "nope://x"):
            error = await error_of(client, "resources/directory/read", {"uri": uri})
            assert error.code == -32602, uri
        caps = (await client.request("server/discover"))["capabilities"] if version == MODERN else \
            client.initialize_result["capabilities"]  # type: ignore[index]
        assert "extensions" not in caps


# --- definition errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "problem"), [
    ("# no frontmatter\n", "no YAML frontmatter"),
    ("---\nname: s\ndescription: x\n", "not closed"),
    ("---\nname: [unclosed\n---\n", "not valid YAML"),
    ("---\n- a list\n---\n", "must be a YAML mapping"),
    (skill_md("Bad_Name"), "breaks the Agent Skills naming rules"),
    (skill_md("-s"), "naming rules"),
    (skill_md("a--b"), "naming rules"),
    (skill_md("other"), "differs from its folder 's'"),
    ("---\nname: s\n---\n", "missing description"),
    ("---\nname: s\ndescription: ''\n---\n", "missing description"),
    ("---\ndescription: x\n---\n", "missing name"),
])
def test_definition_errors_name_the_file(tmp_path: Path, text: str, problem: str) -> None:
    write(tmp_path / "ok" / "SKILL.md", skill_md("ok"))
    write(tmp_path / "team" / "s" / "SKILL.md", text)
    with pytest.raises(SkillError) as info:
        App("t").add_skills(tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'team' / 's' / 'SKILL.md'}: ")
    assert problem in str(info.value)


def test_skills_over_the_limits_are_refused(tmp_path: Path) -> None:
    write(tmp_path / "many" / "SKILL.md", skill_md("many"))
    for n in range(512):
        write(tmp_path / "many" / "files" / f"{n}.txt", "x")
    with pytest.raises(SkillError, match=r"many/SKILL.md: the skill has 513 files, over the limit of 512"):
        App("t").add_skills(tmp_path)
    (tmp_path / "many" / "files" / "0.txt").unlink()
    App("t").add_skills(tmp_path)  # 512 is fine
    write(tmp_path / "big" / "SKILL.md", skill_md("big"))
    with open(tmp_path / "big" / "blob.bin", "wb") as f:
        f.truncate(16 * 1024 * 1024)
    with pytest.raises(SkillError, match=r"big/SKILL.md: the skill's files total 16777\d+ bytes"):
        App("t").add_skills(tmp_path)


def test_missing_pyyaml_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "s" / "SKILL.md", skill_md("s"))
    monkeypatch.setitem(sys.modules, "yaml", None)
    with pytest.raises(DefinitionError, match=r"pip install 'resourcekit\[skills\]'"):
        App("t").add_skills(tmp_path)


def test_bad_directories_and_prefixes(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match="is not a directory"):
        App("t").add_skills(tmp_path / "missing")
    with pytest.raises(DefinitionError, match="'..'"):
        App("t").add_skills(tmp_path, prefix="a/../b")
    write(tmp_path / "s" / "SKILL.md", skill_md("s"))
    app = App("t")
    app.add_skills(tmp_path)
    with pytest.raises(DefinitionError, match="already served"):
        app.add_skills(tmp_path)


async def test_prefix_nesting_and_a_directory_that_is_one_skill(tmp_path: Path) -> None:
    write(tmp_path / "outer" / "SKILL.md", skill_md("outer"))
    write(tmp_path / "outer" / "inner" / "SKILL.md", skill_md("inner"))
    write(tmp_path / "outer" / "inner" / "ref.md", "ref")
    write(tmp_path / "README.md", "not in any skill: not served")
    write(tmp_path / "single" / "SKILL.md", skill_md("single"))
    app = App("t")
    app.add_skills(tmp_path / "outer", prefix="team/")
    app.add_skills(tmp_path / "single", prefix="")
    async with Client(app) as client:
        listed = (await client.request("skills/list"))["skills"]
        entries = {e["uri"]: [r["uri"] for r in e["resources"]] for e in listed}
        assert entries == {
            "skill://team/outer/SKILL.md": ["skill://team/outer/SKILL.md", "skill://team/outer/inner/SKILL.md",
                                            "skill://team/outer/inner/ref.md"],
            "skill://team/outer/inner/SKILL.md": ["skill://team/outer/inner/SKILL.md",
                                                  "skill://team/outer/inner/ref.md"],
            "skill://single/SKILL.md": ["skill://single/SKILL.md"],
        }
        assert len(await client.list_resources()) == 4
        team = await client.request("resources/directory/read", {"uri": "skill://team"})
        assert [r["uri"] for r in team["resources"]] == ["skill://team/outer"]


# --- security -------------------------------------------------------------------------------------


async def test_nothing_outside_the_directory_is_served(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "skills"
    write(root / "s" / "SKILL.md", skill_md("s"))
    write(root / "s" / "inside.md", "inside")
    write(tmp_path / "secret.txt", "outside the root")
    write(root / "s" / ".env", "TOKEN=hidden")
    write(root / "s" / ".git" / "config", "hidden")
    (root / "s" / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (root / "s" / "up").symlink_to(tmp_path)
    (root / "s" / "alias.md").symlink_to(root / "s" / "inside.md")
    os.mkfifo(root / "s" / "pipe")
    caplog.set_level(logging.WARNING, "resourcekit")
    app = App("t")
    app.add_skills(root, poll=None)
    warnings = [r.getMessage() for r in caplog.records if "symlink leading outside" in r.getMessage()]
    assert len(warnings) == 2 and any("leak.txt" in w for w in warnings) and any("/up " in w for w in warnings)
    async with Client(app) as client:
        uris = sorted(r["uri"] for r in await client.list_resources())
        assert uris == ["skill://s/SKILL.md", "skill://s/alias.md", "skill://s/inside.md"]
        for uri in ("skill://s/leak.txt", "skill://s/up/secret.txt", "skill://s/../secret.txt",
                    "skill://s/%2e%2e/secret.txt", "skill://s/.env", "skill:///etc/passwd", "skill://s/pipe",
                    f"skill://{tmp_path}/secret.txt"):
            with pytest.raises(MCPError):
                await client.read(uri)
        # swapped for an escaping symlink after start-up: not served either
        (root / "s" / "inside.md").unlink()
        (root / "s" / "inside.md").symlink_to(tmp_path / "secret.txt")
        with pytest.raises(MCPError) as info:
            await client.read("skill://s/inside.md")
        assert info.value.code == -32002


# --- changes ----------------------------------------------------------------------------------------


async def until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def expect(client: Client, method: str, uri: str | None = None) -> None:
    """Wait for a notification (others, such as a second ``updated`` for a file caught mid-write, pass by)."""
    while True:
        note = await client.next_notification(10)
        if note["method"] == method and (uri is None or note["params"]["uri"] == uri):
            return


async def test_changes_refresh_digests_notify_and_list_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from resourcekit.skills import mounts as skills

    root = tmp_path / "skills"
    write(root / "s" / "SKILL.md", skill_md("s"))
    ref = write(root / "s" / "ref.md", "one")
    hashed: list[str] = []
    original = skills.hash_file
    monkeypatch.setattr(skills, "hash_file", lambda r, p: hashed.append(p) or original(r, p))
    app = App("t")
    app.add_skills(root, poll=0.05)
    assert len(hashed) == 2
    async with Client(app) as client:
        await client.subscribe("skill://s/ref.md")

        async def entry() -> dict[str, Any]:
            return dict((await client.request("skills/get", {"uri": "skill://s/SKILL.md"}))["skill"])

        before = await entry()
        await asyncio.sleep(0.3)  # several rescans: nothing re-hashed while nothing changes
        assert len(hashed) == 2 and await entry() == before
        ref.write_text("two, longer")
        await expect(client, "notifications/resources/updated", "skill://s/ref.md")

        async def refreshed() -> bool:
            return (await entry())["resources"][1] == {"uri": "skill://s/ref.md", "digest": digest(ref), "size": 11}

        await until(refreshed)
        write(root / "s" / "new.md", "new")
        await expect(client, "notifications/resources/list_changed")
        assert [r["uri"] for r in (await entry())["resources"]] == ["skill://s/SKILL.md", "skill://s/new.md",
                                                                    "skill://s/ref.md"]
        assert (await client.read_text("skill://s/new.md")) == "new"
        ref.unlink()
        await expect(client, "notifications/resources/updated", "skill://s/ref.md")
        assert [r["uri"] for r in (await entry())["resources"]] == ["skill://s/SKILL.md", "skill://s/new.md"]
        assert "skill://s/ref.md" not in [r["uri"] for r in await client.list_resources()]
        write(root / "t" / "SKILL.md", skill_md("t"))

        async def listed() -> bool:
            return len((await client.request("skills/list"))["skills"]) == 2

        await until(listed)
        write(root / "t" / "SKILL.md", skill_md("t", extra="x: [\n"))  # broken later: logged, left out

        async def dropped() -> bool:
            return len((await client.request("skills/list"))["skills"]) == 1

        await until(dropped)


async def test_watchfiles_notices_a_change_at_once(tmp_path: Path) -> None:
    import watchfiles  # noqa: F401  (the dev extra installs it: this test runs in CI)
    write(tmp_path / "s" / "SKILL.md", skill_md("s"))
    ref = write(tmp_path / "s" / "ref.md", "one")
    app = App("t")
    app.add_skills(tmp_path, poll=600)  # the timer never fires during the test: watchfiles must
    async with Client(app) as client:
        await client.subscribe("skill://s/ref.md")
        await asyncio.sleep(0.2)  # the watcher is started
        ref.write_text("two")
        await expect(client, "notifications/resources/updated", "skill://s/ref.md")


def test_frontmatter_bombs_and_bad_bytes_are_refused(tmp_path: Path) -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join(['*' + chr(97 + n)] * 10)}]\n" for n in range(8))
    write(tmp_path / "s" / "SKILL.md", f"---\nname: s\ndescription: d\n{laughs}---\n")
    with pytest.raises(SkillError, match="expands to over 10000 values"):
        App("t").add_skills(tmp_path)
    write(tmp_path / "s" / "SKILL.md", "---\nname: s\ndescription: d\nx: '" + "y" * 70_000 + "'\n---\n")
    with pytest.raises(SkillError, match="frontmatter is over"):
        App("t").add_skills(tmp_path)
    write(tmp_path / "s" / "SKILL.md", b"---\nname: s\ndescription: \xff\n---\n")
    with pytest.raises(SkillError, match="not UTF-8"):
        App("t").add_skills(tmp_path)


def test_pyyaml_is_imported_only_when_skills_are_added() -> None:
    import subprocess

    code = ("import sys; from resourcekit import App; App('x'); assert 'yaml' not in sys.modules; "
            f"App('y').add_skills({str(SKILLS)!r}, poll=None); assert 'yaml' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, env=env())


async def test_symlinked_directories_inside_are_followed_loops_are_not(tmp_path: Path) -> None:
    write(tmp_path / "s" / "SKILL.md", skill_md("s"))
    write(tmp_path / "s" / "docs" / "a.md", "a")
    (tmp_path / "s" / "alias").symlink_to(tmp_path / "s" / "docs")
    (tmp_path / "s" / "docs" / "loop").symlink_to(tmp_path / "s")
    app = App("t")
    app.add_skills(tmp_path, poll=None)
    async with Client(app) as client:
        assert sorted(r["uri"] for r in await client.list_resources()) == [
            "skill://s/SKILL.md", "skill://s/alias/a.md", "skill://s/docs/a.md"]
        assert await client.read_text("skill://s/alias/a.md") == "a"
