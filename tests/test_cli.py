"""The CLI: finding the app, its error cases, ``list`` and ``read``."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import orjson
import pytest

from tests.support.process import APPS, COOKBOOK, cli, command, env


def write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_missing_file(tmp_path):
    result = cli("run", str(tmp_path / "nope.py"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"resourcekit: error: no such file: {tmp_path / 'nope.py'}"]


def test_import_error_shows_where_and_the_apps_traceback(tmp_path):
    path = write(tmp_path, "broken.py", "import os\n\nimport no_such_module_anywhere\n")
    result = cli("run", str(path))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == (f"resourcekit: error: importing {path} failed at {path}:3: "
                        "ModuleNotFoundError: No module named 'no_such_module_anywhere'")
    assert lines[1:] == ["Traceback (most recent call last):", f'  File "{path}", line 3, in <module>',
                         "    import no_such_module_anywhere",
                         "ModuleNotFoundError: No module named 'no_such_module_anywhere'"]


def test_a_definition_error_is_summed_up_by_its_first_line_not_its_caret(tmp_path):
    path = write(tmp_path, "typo.py", """\
        from resourcekit import App

        app = App("t")


        @app.template("notes://{note_id")
        def note(note_id: str) -> str:
            return note_id
    """)
    result = cli("run", str(path))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == (f"resourcekit: error: importing {path} failed at {path}:6: resourcekit.errors."
                        "TemplateSyntaxError: unclosed expression '{' at position 8 in 'notes://{note_id'")
    assert lines[-2:] == ["  notes://{note_id", "          ^"]  # the traceback still points at the fault


def test_a_mistyped_flag_is_reported_under_its_commands_usage():
    result = cli("run", "app.py", "--transprot", "http")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("usage: resourcekit run [-h]")
    assert lines[-1] == "resourcekit run: error: unrecognized arguments: --transprot http (did you mean --transport?)"
    result = cli("list", "app.py", "--jsn")
    assert result.stderr.strip().splitlines()[-1] == ("resourcekit list: error: unrecognized arguments: --jsn "
                                                      "(did you mean --json?)")
    result = cli("read", "app.py", "notes://a", "extra")
    assert result.stderr.strip().splitlines()[-1] == "resourcekit read: error: unrecognized arguments: extra"


def test_no_app(tmp_path):
    path = write(tmp_path, "empty.py", "x = 1\n")
    result = cli("run", str(path))
    assert result.returncode == 1
    assert "defines no App" in result.stderr


def test_named_attr_and_conventions(tmp_path):
    path = write(tmp_path, "two.py", """
        from resourcekit import App
        first = App("first")
        second = App("second")

        @first.resource("a://x")
        def x() -> str:
            return "from first"

        @second.resource("a://x")
        def y() -> str:
            return "from second"
    """)
    assert "several Apps" in cli("list", str(path)).stderr
    assert cli("read", f"{path}:second", "a://x").stdout == "from second\n"
    assert "no App named 'third'" in cli("read", f"{path}:third", "a://x").stderr
    conventional = write(tmp_path, "conv.py", """
        from resourcekit import App
        other = App("other")
        server = App("server")

        @server.resource("a://x")
        def x() -> str:
            return "server wins"
    """)
    assert cli("read", str(conventional), "a://x").stdout == "server wins\n"


def test_module_level_decorators_use_the_default_app(tmp_path):
    path = write(tmp_path, "script.py", """
        import resourcekit

        @resourcekit.resource("hello://world")
        def hello() -> str:
            return "hi"
    """)
    assert cli("read", str(path), "hello://world").stdout == "hi\n"


def test_list_human_and_json():
    result = cli("list", str(APPS / "basic_app.py"))
    assert result.returncode == 0
    assert result.stdout.startswith("basic: 39 resources, ")
    assert "text://hello" in result.stdout and "user://{user_id}/profile{?verbose}" in result.stdout
    data = orjson.loads(cli("list", "--json", str(COOKBOOK / "notes.py")).stdout)
    assert {r["uri"] for r in data["resources"]} >= {"config://settings", "notes://1"}


def test_read_human_and_json_and_errors():
    app = str(APPS / "basic_app.py")
    assert cli("read", app, "text://hello").stdout == "hello, world\n"
    data = orjson.loads(cli("read", "--json", app, "bin://data.bin").stdout)
    assert data["contents"][0]["mimeType"] == "application/octet-stream"
    missing = cli("read", app, "nope://x")
    assert missing.returncode == 1 and "Resource not found: nope://x (code -32002)" in missing.stderr


def test_http_without_uvicorn_says_what_to_install(tmp_path):
    pytest.importorskip("uvicorn")  # with uvicorn present, the real HTTP tests cover it
    shadow = write(tmp_path, "uvicorn.py", "raise ImportError('hidden for this test')\n")
    result = subprocess.run(
        [*command("run", str(APPS / "basic_app.py"), "--transport", "http")],
        capture_output=True, text=True, timeout=60,
        env={**env(), "PYTHONPATH": f"{shadow.parent}:{env()['PYTHONPATH']}"},
    )
    assert result.returncode == 1
    assert "pip install 'resourcekit[http]'" in result.stderr


def test_list_counts_one_resource_and_one_template_in_the_singular(tmp_path):
    path = write(tmp_path, "one.py", """
        from resourcekit import App
        app = App("one")
        app.resource("a://b")(lambda: "x")
        app.template("a://{x}/y")(lambda x: x)
    """)
    assert cli("list", str(path)).stdout.startswith("one: 1 resource, 1 template\n")
