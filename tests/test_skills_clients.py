"""Agent Skills (SEP-2640) with real clients and processes: the official ``mcp`` client's raw requests
in both eras over stdio and HTTP, ``cookbook/skills_app.py`` and ``resourcekit skills cookbook/skills``."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as ClientError

from tests.support.http_server import free_port, wait_for_port
from tests.support.node import (
    ensure_npm_packages,
    inspect,
    node_env,
    result_of,
    run_skills_conformance,
)
from tests.support.process import COOKBOOK, ROOT, command, env

pytestmark = pytest.mark.anyio
SKILLS = COOKBOOK / "skills"
EXTENSION = "io.modelcontextprotocol/skills"
SKILL_URIS = ["skill://acme/billing/refunds/SKILL.md", "skill://git-workflow/SKILL.md",
              "skill://pdf-processing/SKILL.md"]


class UriParams(types.PaginatedRequestParams):
    uri: str


class SkillsListRequest(types.Request[types.PaginatedRequestParams, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"
    params: types.PaginatedRequestParams | None = None


class SkillsGetRequest(types.Request[UriParams, Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"
    params: UriParams


class DirectoryReadRequest(types.Request[UriParams, Literal["resources/directory/read"]]):
    method: Literal["resources/directory/read"] = "resources/directory/read"
    params: UriParams


class SkillsListResult(types.Result):
    skills: list[dict[str, Any]]
    next_cursor: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None


class SkillsGetResult(types.Result):
    skill: dict[str, Any]


def sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


async def exercise(session: ClientSession, modern: bool) -> None:
    """What every client must see of the cookbook skills, whatever the transport or era."""
    listed = await session.send_request(SkillsListRequest(), SkillsListResult)
    assert [s["uri"] for s in listed.skills] == SKILL_URIS
    assert (listed.ttl_ms is not None and listed.cache_scope == "private") == modern
    pdf = listed.skills[2]
    assert pdf["frontmatter"]["metadata"] == {"version": "2.1.0", "owner": "documents-team", "released": "2026-03-01"}
    for res in pdf["resources"]:
        assert res["digest"] == sha256(SKILLS / res["uri"].removeprefix("skill://"))
    got = await session.send_request(SkillsGetRequest(params=UriParams(uri=SKILL_URIS[0])), SkillsGetResult)
    assert got.skill == listed.skills[0]
    directory = await session.send_request(
        DirectoryReadRequest(params=UriParams(uri="skill://pdf-processing/templates")), types.ListResourcesResult)
    assert [(str(r.uri), r.mime_type) for r in directory.resources] == [
        ("skill://pdf-processing/templates/invoice.md", "text/markdown"),
        ("skill://pdf-processing/templates/regional", "inode/directory")]
    for request in (SkillsGetRequest(params=UriParams(uri="skill://nope/SKILL.md")),
                    DirectoryReadRequest(params=UriParams(uri="skill://pdf-processing/SKILL.md"))):
        with pytest.raises(ClientError) as info:
            await session.send_request(request, types.Result)
        assert info.value.error.code == -32602
    skill = (await session.read_resource(SKILL_URIS[1])).contents[0]
    assert isinstance(skill, types.TextResourceContents) and skill.mime_type == "text/markdown"
    stamp = (await session.read_resource("skill://pdf-processing/assets/stamp.png")).contents[0]
    assert isinstance(stamp, types.BlobResourceContents)
    assert base64.b64decode(stamp.blob) == (SKILLS / "pdf-processing/assets/stamp.png").read_bytes()
    resources = await session.list_resources()
    refunds = next(r for r in resources.resources if str(r.uri) == SKILL_URIS[0])
    assert refunds.name == "refunds"
    assert refunds.description == "Process customer refund requests per ACME billing policy."


@asynccontextmanager
async def stdio(args: list[str], modern: bool) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "resourcekit", *args],
                                   env={"PYTHONPATH": env()["PYTHONPATH"]}, cwd=str(ROOT))
    with tempfile.TemporaryFile("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await open_declaring_skills(session, modern)
            yield session


async def open_declaring_skills(session: ClientSession, modern: bool) -> None:
    """discover (2026-07-28) or initialize, and check that the skills extension is declared."""
    opened = await session.discover() if modern else await session.initialize()
    assert opened.capabilities.extensions == {EXTENSION: {"directoryRead": True}}


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026-07-28"])
@pytest.mark.parametrize("args", [["run", "cookbook/skills_app.py"], ["skills", "cookbook/skills"]],
                         ids=["skills_app", "skills-command"])
async def test_stdio_both_eras(args: list[str], modern: bool) -> None:
    async with stdio(args, modern) as session:
        await exercise(session, modern)


@pytest.fixture(scope="module")
def http_url() -> Any:
    port = free_port()
    proc = subprocess.Popen(command("skills", "cookbook/skills", "--transport", "http", "--port", str(port)),
                            env=env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr:
            proc.stderr.close()


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026-07-28"])
async def test_http_both_eras(http_url: str, modern: bool) -> None:
    async with streamable_http_client(http_url) as (read, write), ClientSession(read, write) as session:
        await open_declaring_skills(session, modern)
        await exercise(session, modern)


def test_skills_command_reports_a_broken_skill(tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "SKILL.md").write_text("---\nname: bad\n---\n")
    done = subprocess.run(command("skills", str(tmp_path)), env=env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == f"resourcekit: error: {tmp_path / 'bad' / 'SKILL.md'}: missing description"
    (tmp_path / "bad" / "SKILL.md").write_text("---\nname: bad\ndescription: fixed\n---\n")
    done = subprocess.run(command("skills", str(tmp_path), "--port", "1"), env=env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and "--port only applies to --transport http" in done.stderr


# --- the conformance suite's SEP-2640 scenarios (conformance 0.2.0-alpha.12) --------------------------


def test_conformance_skills_scenarios(http_url: str, tmp_path: Path) -> None:
    run_skills_conformance(http_url, tmp_path)


# --- the MCP Inspector CLI (2.12.0) browsing the skills ---------------------------------------------

INSPECTOR_CALLS = {
    "list": ("--method", "skills/list"),
    "get": ("--method", "skills/get", "--uri", "skill://acme/billing/refunds/SKILL.md"),
    "directory": ("--method", "resources/directory/read", "--uri", "skill://pdf-processing/templates"),
    "modern-list": ("--protocol-era", "modern", "--method", "skills/list"),
    "modern-directory": ("--protocol-era", "modern", "--method", "resources/directory/read", "--uri", "skill://acme"),
    "read": ("--method", "resources/read", "--uri", "skill://pdf-processing/templates/invoice.md"),
}


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_inspector_cli_browses_skills(http_url: str, transport: str, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    ensure_npm_packages()
    environment = node_env(env())
    environment["HOME"] = str(tmp_path)
    if transport == "stdio":
        before, after = [], ["--", sys.executable, "-m", "resourcekit", "skills", str(SKILLS)]
    else:
        before, after = [http_url, "--transport", "http"], []
    with ThreadPoolExecutor(len(INSPECTOR_CALLS)) as pool:
        futures = {name: pool.submit(inspect, environment, before, options, after)
                   for name, options in INSPECTOR_CALLS.items()}
        done = {name: future.result() for name, future in futures.items()}
    for name in ("list", "modern-list"):
        assert [s["uri"] for s in result_of(done[name])["skills"]] == SKILL_URIS, name
    refunds = result_of(done["get"])["skill"]
    assert refunds["frontmatter"]["name"] == "refunds" and len(refunds["resources"]) == 2
    assert [(r["uri"], r["mimeType"]) for r in result_of(done["directory"])["resources"]] == [
        ("skill://pdf-processing/templates/invoice.md", "text/markdown"),
        ("skill://pdf-processing/templates/regional", "inode/directory")]
    assert [r["uri"] for r in result_of(done["modern-directory"])["resources"]] == ["skill://acme/billing"]
    assert result_of(done["read"])["contents"][0]["text"].startswith("# Invoice {{number}}")
