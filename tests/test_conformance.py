"""The official MCP conformance suites against ``resourcekit run --transport http``.

Three runs, each against its own server process (tests/apps/conformance_app.py):

* conformance 0.1.16, whole active suite, ``--expected-failures baseline-0.1.16.yml``;
* conformance 0.2.0-alpha.12 (installed beside it as the npm alias ``conformance-alpha``),
  ``--requirements 2025-11-25`` and ``--requirements 2026-07-28``, each with its own
  ``baseline-alpha-<revision>.yml``.

The baselines list only what needs a tool, a prompt or elicitation (see the comments in
each file for the few single checks and the one transport check that cannot pass without a
tool).  A baseline entry is ``<scenario>`` or, in the alpha files, ``<scenario>:<check-id>``.

How the CLIs judge a baseline (read from their source and tried): a FAILURE *or WARNING*
in an unlisted scenario/check fails the run, and so does a listed one that now passes
("stale baseline").  0.1.16 applies it to every scenario it ran.  Alpha with
``--requirements`` applies it only to the scenarios the revision scores and ignores the
"not scored" ones (pending, extension, added after release), whose failures would
otherwise not matter.  So for alpha the exit code must be 0 *and* this test applies the
same rule to every scenario's ``checks.json`` itself, scored or not.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.http_server import http_server_process
from tests.support.node import ALPHA, CONFORMANCE, ensure_npm_packages, failing, node_env, read_results
from tests.support.process import APPS

APP = APPS / "conformance_app.py"

# scenarios that must have run and passed (guards against a run that tested nothing)
MUST_PASS = {
    "0.1.16": {"server-initialize", "ping", "logging-set-level", "completion-complete", "resources-list",
               "resources-read-text", "resources-read-binary", "resources-templates-read", "resources-subscribe",
               "resources-unsubscribe", "server-sse-multiple-streams", "dns-rebinding-protection"},
    "2025-11-25": {"server-initialize", "ping", "logging-set-level", "completion-complete", "resources-list",
                   "resources-read-text", "resources-read-binary", "resources-templates-read",
                   "resources-subscribe", "resources-unsubscribe", "server-sse-multiple-streams",
                   "dns-rebinding-protection", "server-session-lifecycle"},
    "2026-07-28": {"completion-complete", "resources-list", "resources-read-text", "resources-read-binary",
                   "resources-templates-read", "sep-2164-resource-not-found", "dns-rebinding-protection",
                   "input-required-result-unsupported-methods", "input-required-result-validate-input"},
}


@pytest.fixture(scope="module")
def npm_packages() -> None:
    ensure_npm_packages()


@pytest.fixture
def server_url(npm_packages):
    """A fresh ``resourcekit run --transport http`` per suite run."""
    with http_server_process(APP) as url:
        yield url


def read_baseline(path: Path) -> set[str]:
    """The ``server:`` entries of an expected-failures YAML file (a flat list; no YAML library needed)."""
    entries: set[str] = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].rstrip()
        if line.startswith("  - "):
            entries.add(line[4:].strip().strip("'\""))
    return entries


def judge(scenarios: dict[str, list[dict]], baseline: set[str]) -> list[str]:
    """Every failing check must be in the baseline; every baseline entry must still fail."""
    problems = []
    for scenario, checks in scenarios.items():
        for check in failing(checks):
            if scenario not in baseline and f"{scenario}:{check['id']}" not in baseline:
                problems.append(f"unexpected {check['status']} {scenario}:{check['id']}: "
                                f"{(check.get('errorMessage') or check.get('description') or '')[:300]}")
    for entry in sorted(baseline):
        scenario, _, check_id = entry.partition(":")
        if scenario not in scenarios:
            problems.append(f"baseline entry {entry}: scenario did not run")
        elif check_id:
            statuses = {c["status"] for c in scenarios[scenario] if c["id"] == check_id}
            if not statuses & {"FAILURE", "WARNING"}:
                problems.append(f"stale baseline entry {entry}: check status {sorted(statuses) or 'absent'}")
        elif not failing(scenarios[scenario]):
            problems.append(f"stale baseline entry {entry}: the scenario passes now")
    return problems


def summary(stdout: str, scenarios: dict[str, list[dict]]) -> str:
    tail = stdout[stdout.find("Total:"):] if "Total:" in stdout else stdout[-4000:]
    table = [f"  {scenario} | {c['id']} | {c['status']} | {(c.get('errorMessage') or '')[:200]}"
             for scenario, checks in scenarios.items() for c in failing(checks)]
    return tail[-4000:] + "\nfailing checks (checks.json):\n" + "\n".join(table)


def run_suite(argv: list[str], results: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, list[dict]]]:
    done = subprocess.run([*argv, "-o", str(results)], cwd=CONFORMANCE, env=node_env(), capture_output=True,
                          text=True, timeout=600)
    assert "Total:" in done.stdout, f"the suite did not run:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done, read_results(results)


def test_conformance_0_1_16_active_suite(server_url, tmp_path):
    baseline = CONFORMANCE / "baseline-0.1.16.yml"
    done, scenarios = run_suite(["npx", "--no-install", "conformance", "server", "--url", server_url,
                                 "--expected-failures", str(baseline)], tmp_path)
    assert done.returncode == 0, summary(done.stdout, scenarios)
    assert "Baseline check passed" in done.stdout
    assert not judge(scenarios, read_baseline(baseline)), summary(done.stdout, scenarios)
    assert MUST_PASS["0.1.16"] <= set(scenarios)


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_conformance_alpha_requirements(server_url, tmp_path, revision):
    baseline = CONFORMANCE / f"baseline-alpha-{revision}.yml"
    done, scenarios = run_suite(["node", str(ALPHA), "server", "--url", server_url, "--requirements", revision,
                                 "--expected-failures", str(baseline)], tmp_path)
    # alpha's own verdict on the scored scenarios
    assert done.returncode == 0, summary(done.stdout, scenarios)
    # the same rule over every scenario that ran, the unscored ones included
    problems = judge(scenarios, read_baseline(baseline))
    assert not problems, "\n".join(problems) + "\n\n" + summary(done.stdout, scenarios)
    assert MUST_PASS[revision] <= set(scenarios)
