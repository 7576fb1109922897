"""The layout stays a map: arrows point down (import-linter) and modules stay small."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.process import ROOT

MAX_LINES = 400
WHOLE = {"templates.py"}  # RFC 6570 in one place: parse, match, expand


def test_import_arrows_point_down() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_module_over_400_lines() -> None:
    long = {
        path.relative_to(ROOT).as_posix(): n
        for path in (ROOT / "resourcekit").rglob("*.py")
        if path.name not in WHOLE and (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, long
