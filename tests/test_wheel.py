"""The built wheel holds the whole package: every module, subpackage and data file.

An editable install serves modules straight from the source tree, so a subpackage
missing from the packaging metadata goes unnoticed everywhere else.  Here the wheel
is built, and a server started from the unpacked wheel alone answers a read.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.process import COOKBOOK, ROOT

PACKAGE = ROOT / "resourcekit"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (built,) = out.glob("resourcekit-*.whl")
    return built


def test_wheel_has_every_module_and_data_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        path.relative_to(ROOT).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert expected, "no package files found"
    assert "resourcekit/py.typed" in expected
    # the explorer page (resourcekit dev) is package data, not modules
    assert {f"resourcekit/explorer/static/{name}" for name in ("index.html", "app.js", "style.css")} <= names
    assert expected <= names, sorted(expected - names)


def test_a_server_runs_from_the_wheel_alone(wheel: Path, tmp_path: Path) -> None:
    zipfile.ZipFile(wheel).extractall(tmp_path)
    script = (
        "import sys, asyncio; sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2])\n"
        "import resourcekit, notes\n"
        "from resourcekit.testing import Client\n"
        "assert resourcekit.__file__.startswith(sys.argv[1]), resourcekit.__file__\n"
        "async def main():\n"
        "    async with Client(notes.app) as client:\n"
        "        print(len(await client.list_resources()))\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path), str(COOKBOOK)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0
