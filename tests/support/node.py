"""The npm tools the tests run: the MCP conformance suites and the Inspector CLI, installed from
tests/conformance (``npm ci``) and run by the Node 22 of its node_modules."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.process import ROOT

CONFORMANCE = ROOT / "tests" / "conformance"
NODE_MODULES = CONFORMANCE / "node_modules"
# conformance-alpha's package.json: "bin": {"conformance": "dist/index.js"} -- the same bin
# name as 0.1.16, so npm links only one of them into .bin; the alias is run with node directly
ALPHA = NODE_MODULES / "conformance-alpha" / "dist" / "index.js"
INSPECTOR = NODE_MODULES / "@modelcontextprotocol" / "inspector"
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT[\d-]+Z$")


def node_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: os.environ) with node_modules/.bin first on PATH: Node 22 from the ``node`` package."""
    environment = dict(os.environ if base is None else base)
    environment["PATH"] = f"{NODE_MODULES / '.bin'}{os.pathsep}{environment.get('PATH', '')}"
    return environment


def _installed_as_pinned() -> bool:
    pinned = json.loads((CONFORMANCE / "package.json").read_text())["devDependencies"]
    for name, spec in pinned.items():
        manifest = NODE_MODULES / name / "package.json"
        if not manifest.exists() or json.loads(manifest.read_text()).get("version") != spec.rsplit("@", 1)[-1]:
            return False
    return (NODE_MODULES / ".bin" / "node").exists()


def ensure_npm_packages() -> None:
    """``npm ci`` in tests/conformance unless the pinned versions are there; without npm the tests
    fail, saying what to install (``.ci/run`` installs it): they never skip."""
    if shutil.which("npm") is None:
        pytest.fail("npm is not installed: the MCP conformance suite and the Inspector CLI are npm packages "
                    "(Debian: apt-get install nodejs npm)")
    if _installed_as_pinned():
        return
    done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=CONFORMANCE, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"npm ci in {CONFORMANCE} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert _installed_as_pinned(), "npm ci did not install the versions pinned in tests/conformance/package.json"


def read_results(results: Path) -> dict[str, list[dict]]:
    """scenario -> its checks, from the ``-o`` folder."""
    scenarios: dict[str, list[dict]] = {}
    for directory in sorted(results.iterdir()):
        match = RESULT_DIR.match(directory.name)
        assert match, f"unexpected results folder {directory.name}"
        scenarios.setdefault(match["scenario"], []).extend(json.loads((directory / "checks.json").read_text()))
    return scenarios


def failing(checks: list[dict]) -> list[dict]:
    # as the CLIs judge a baseline: a WARNING counts as failing
    return [c for c in checks if c["status"] in ("FAILURE", "WARNING")]


def inspect(environment: dict[str, str], before: list[str], options: tuple[str, ...], after: list[str]):
    launcher = INSPECTOR / json.loads((INSPECTOR / "package.json").read_text())["bin"]["inspector"]
    argv = [str(NODE_MODULES / ".bin" / "node"), str(launcher), "--cli", *before, *options, "--format", "json",
            "-q", *after]
    return subprocess.run(argv, cwd=CONFORMANCE, env=environment, capture_output=True, text=True, timeout=120)


def result_of(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    line = next(line for line in done.stdout.splitlines() if line.startswith("{"))
    return json.loads(line)["result"]


SKILLS_SCENARIOS = ("sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory")


def run_skills_conformance(url: str, tmp_path: Path) -> None:
    """The conformance suite's SEP-2640 scenarios against the server at ``url``: each passes whole."""
    ensure_npm_packages()
    for scenario in SKILLS_SCENARIOS:
        results = tmp_path / scenario
        done = subprocess.run(["node", str(ALPHA), "server", "--url", url, "--scenario", scenario,
                               "-o", str(results)], cwd=CONFORMANCE, env=node_env(), capture_output=True,
                              text=True, timeout=300)
        report = f"{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
        assert done.returncode == 0 and " 0 failed, 0 warnings" in done.stdout, report
        checks = read_results(results).get(scenario, [])
        assert checks and not failing(checks), report
        assert sum(c["status"] == "SUCCESS" for c in checks) >= 5, report
