"""Skills that ship with code (SEP-2640): ``tests/fixtures/skillpkg`` serves the skills inside its
package (``add_skills(files("skillpkg") / "skills")``) and one its code generates (``@app.skill``).
The package is installed as a wheel into a fresh venv, and imported from a zip file; each server
passes the conformance suite's SEP-2640 scenarios and shows the official client both kinds of skill."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import mcp_types as types
import pytest

from resourcekit import App, MCPError
from resourcekit.skills import SkillError
from resourcekit.testing import Client
from tests.support.http_server import free_port, wait_for_port
from tests.support.mcp_client import http_session
from tests.support.node import run_skills_conformance
from tests.support.process import ROOT, stop_process

pytestmark = pytest.mark.anyio
PACKAGE = ROOT / "tests" / "fixtures" / "skillpkg"
SOURCE = PACKAGE / "src" / "skillpkg"
NOTES = "skill://release-notes/SKILL.md"
GENERATED = "skill://changelog-writer/SKILL.md"


class UriParams(types.PaginatedRequestParams):
    uri: str


class SkillsList(types.Request[types.PaginatedRequestParams, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"
    params: types.PaginatedRequestParams | None = None


class SkillsListResult(types.Result):
    skills: list[dict[str, Any]]


class DirectoryRead(types.Request[UriParams, Literal["resources/directory/read"]]):
    method: Literal["resources/directory/read"] = "resources/directory/read"
    params: UriParams


def served(python: str, extra_path: str, where: str, cwd: Path) -> Iterator[str]:
    """``resourcekit run skillpkg:app`` over HTTP with ``python``; checks skillpkg is imported from ``where``."""
    env = {"PYTHONPATH": extra_path, "PATH": "/usr/bin:/bin"}
    probe = subprocess.run([python, "-c", "import skillpkg; print(skillpkg.__file__)"], env=env, cwd=cwd,
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and probe.stdout.strip().startswith(where), probe.stdout + probe.stderr
    port = free_port()
    proc = subprocess.Popen([python, "-m", "resourcekit", "run", "skillpkg:app", "--transport", "http",
                             "--port", str(port)], env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def from_wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """skillpkg built as a wheel and installed into a fresh venv (resourcekit and its dependencies
    reached through a .pth file: the venv installs nothing else)."""
    tmp = tmp_path_factory.mktemp("wheel")
    shutil.copytree(PACKAGE, tmp / "skillpkg")  # the build writes beside its sources
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"),
                    str(tmp / "skillpkg")], check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp / "dist").glob("skillpkg-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True, timeout=120)
    python = str(tmp / "venv" / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "resourcekit-deps.pth").write_text(f"{ROOT}\n{sysconfig.get_paths()['purelib']}\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", site,
                    str(wheel)], check=True, capture_output=True, timeout=300)
    yield from served(python, "", site, tmp)


@pytest.fixture(scope="module")
def from_zip(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """skillpkg imported from a zip file (zipimport): its skills are read through the zip."""
    tmp = tmp_path_factory.mktemp("zip")
    archive = tmp / "skillpkg.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted(SOURCE.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zipped.write(path, path.relative_to(SOURCE.parent).as_posix())
    yield from served(sys.executable, f"{archive}:{ROOT}", str(archive), tmp)


async def check_skills(url: str) -> None:
    async with http_session(url) as session:
        listed = (await session.send_request(SkillsList(), SkillsListResult)).skills
        assert [s["uri"] for s in listed] == [NOTES, GENERATED]
        notes, generated = listed
        assert notes["frontmatter"] == {"name": "release-notes", "metadata": {"owner": "docs-team"},
                                        "description": "Draft release notes from merged pull requests."}
        for entry in notes["resources"]:  # digests of the files the package ships
            shipped = (SOURCE / "skills" / entry["uri"].removeprefix("skill://")).read_bytes()
            assert entry["digest"] == "sha256:" + hashlib.sha256(shipped).hexdigest()
            text = (await session.read_resource(entry["uri"])).contents[0]
            assert isinstance(text, types.TextResourceContents) and text.text.encode() == shipped
        assert generated == {"uri": GENERATED, "resources": "dynamic", "frontmatter": {
            "name": "changelog-writer", "description": "Write a changelog entry from a list of changes.",
            "license": "MIT", "metadata": {"generated": "true"}}}
        skill_md = (await session.read_resource(GENERATED)).contents[0]
        assert isinstance(skill_md, types.TextResourceContents)
        assert skill_md.text == ("---\nname: changelog-writer\ndescription: Write a changelog entry from a list of "
                                 "changes.\nlicense: MIT\nmetadata:\n  generated: 'true'\n---\n\n"
                                 "List the changes, newest first, one line each.\n")
        top = await session.send_request(DirectoryRead(params=UriParams(uri="skill://changelog-writer")),
                                         types.ListResourcesResult)
        assert [(str(r.uri), r.mime_type) for r in top.resources] == [
            (GENERATED, "text/markdown"), ("skill://changelog-writer/templates", "inode/directory")]
        below = await session.send_request(
            DirectoryRead(params=UriParams(uri="skill://changelog-writer/templates")), types.ListResourcesResult)
        (entry_file,) = below.resources
        template = (await session.read_resource(entry_file.uri)).contents[0]
        assert isinstance(template, types.TextResourceContents) and template.text.startswith("## {version}")


async def test_skills_from_a_wheel_installed_in_a_fresh_venv(from_wheel: str) -> None:
    await check_skills(from_wheel)


async def test_skills_from_a_package_imported_from_a_zip_file(from_zip: str) -> None:
    await check_skills(from_zip)


@pytest.mark.parametrize("fixture", ["from_wheel", "from_zip"])
def test_conformance_skills_scenarios(fixture: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    run_skills_conformance(request.getfixturevalue(fixture), tmp_path)


# --- generated skills: what the function returns, and mistakes ----------------------------------------


async def test_a_generated_skill_is_called_when_read_and_checked() -> None:
    app = App("generated")
    calls: list[str] = []

    @app.skill("daily-brief", description="Today's brief.")
    def daily_brief() -> str:
        calls.append("called")
        return f"Call number {len(calls)}.\n"

    @app.skill("own-frontmatter", description="Writes its own.")
    def own() -> str:
        return "---\nname: own-frontmatter\ndescription: Something else.\n---\nBody.\n"

    async with Client(app) as client:
        assert calls == []  # listed without being called
        first = await client.read_text("skill://daily-brief/SKILL.md")
        second = await client.read_text("skill://daily-brief/SKILL.md")
        assert first.endswith("Call number 1.\n") and second.endswith("Call number 2.\n")
        with pytest.raises(MCPError) as info:  # what skills/list shows and the file would disagree: refused
            await client.read_text("skill://own-frontmatter/SKILL.md")
        assert info.value.code == -32603
        with pytest.raises(MCPError) as info:
            await client.request("resources/directory/read", {"uri": "skill://daily-brief/nothing"})
        assert info.value.code == -32602


def test_a_generated_skill_breaking_the_rules_fails_at_decoration() -> None:
    app = App("bad")
    with pytest.raises(SkillError, match="Bad_Name"):
        app.skill("Bad_Name", description="x")(lambda: "x")
    with pytest.raises(SkillError, match="missing description"):
        app.skill("no-description", description="")(lambda: "x")
    app.skill("twice", description="x")(lambda: "x")
    with pytest.raises(SkillError, match="already served"):
        app.skill("twice", description="x")(lambda: "x")
