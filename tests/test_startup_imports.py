"""`resourcekit run app.py` over stdio imports nothing of the features a stdio server does not use.

The app serves ``sorted(sys.modules)`` of its own process; the test reads it the way a host does
(a real process, JSON-RPC over its pipes). The features load on first use, each at one seam: the
HTTP transport (``resourcekit.transports.http``'s ``__getattr__``, ``resourcekit.http``), the
explorer (``resourcekit dev``), ``install``, authorization, scale-out (``--redis``), Agent Skills
(``resourcekit.skills``), and of telemetry everything but the flag a request checks (``spans``):
``sampling``, ``causes`` and OpenTelemetry itself come with a configured provider.  Nor does it
import what the app does not declare (URI templates: ``declaration.uri_template``; the convertors
of parameters: ``signature.convertor_for``), nor completion before a client asks for one
(``methods.on_first_use``).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import orjson

from tests.support.process import APPS, command, env

# prefixes: a module is the feature's when its name is one of these or starts with one and a dot
FEATURES = {
    "HTTP": ("resourcekit.http", "resourcekit.transports.http._headers", "resourcekit.transports.http.asgi",
             "resourcekit.transports.http.serve", "resourcekit.transports.http._uvicorn", "uvicorn", "h11",
             "httptools", "starlette"),
    "telemetry": ("resourcekit.telemetry.sampling", "resourcekit.telemetry.causes", "opentelemetry"),
    "auth": ("resourcekit.auth", "jwt", "cryptography"),
    "skills": ("resourcekit.skills", "resourcekit.methods.skills"),
    "resources as tools": ("resourcekit.methods.tools", "resourcekit.methods.template_tools", "resourcekit.schemas"),
    "resources/stream": ("resourcekit.methods.streaming",),
    # methods most clients never call
    "completion/complete": ("resourcekit.methods.completion",),
    "resources/metadata (SEP-2093)": ("resourcekit.methods.metadata",),
    "scale-out": ("resourcekit.scaleout", "resourcekit.transports.http._redis_sessions", "redis"),
    "explorer": ("resourcekit.explorer.asgi", "resourcekit.explorer.serve"),
    "install": ("resourcekit.install", "resourcekit._jsonedit"),
    # the app declares no template: the parser and matcher of URI templates load with the first one
    "URI templates": ("resourcekit.templates",),
    # nor a parameter: the typed convertors load with the first one (signature.convertor_for)
    "typed parameters": ("resourcekit._convert",),
    # not features, but what `run FILE` needs no more: the parser of the other commands' options
    "the CLI parser": ("argparse", "resourcekit._cliparser"),
}
# the seams themselves load: a package's __init__ that holds a constant or a module __getattr__
SEAMS = ("resourcekit.transports.http", "resourcekit.explorer", "resourcekit.telemetry",
         "resourcekit.telemetry.spans")


def _read_from_a_stdio_server(uri: str) -> Any:
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}},
    ]
    result = subprocess.run(
        command("run", str(APPS / "modules_app.py")), input=b"".join(orjson.dumps(m) + b"\n" for m in messages),
        capture_output=True, timeout=60, env=env(),
    )
    replies = {r["id"]: r for r in map(orjson.loads, result.stdout.splitlines())}
    assert "result" in replies.get(1, {}), result.stderr.decode()
    return orjson.loads(replies[1]["result"]["contents"][0]["text"])


def test_a_stdio_server_imports_none_of_the_features_it_does_not_serve() -> None:
    modules: list[str] = _read_from_a_stdio_server("test://modules")
    assert "resourcekit.transports.stdio" in modules and "resourcekit.core.engine" in modules  # what it does use
    loaded = {
        feature: [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]
        for feature, prefixes in FEATURES.items()
    }
    assert {feature: names for feature, names in loaded.items() if names} == {}
    seams_only = [m for m in modules if m.startswith(tuple(seam + "." for seam in SEAMS)) and m not in SEAMS]
    assert seams_only == []  # under a seam, nothing beyond it


def test_a_stdio_server_serves_with_the_gc_running_and_what_start_up_made_frozen() -> None:
    """The CLI imports (``__main__``) and loads the app (``_loader``) with the cyclic GC paused, then freezes
    what they made; the GC runs again for what serving makes."""
    state = _read_from_a_stdio_server("test://gc")
    assert state["enabled"] is True
    assert state["frozen"] > 10_000  # asyncio and resourcekit: the GC never scans them again


def test_importing_the_package_imports_none_of_its_modules_until_a_name_is_used() -> None:
    """``resourcekit``'s names load on first use (PEP 562), each from the module ``_HOMES`` names."""
    code = (
        "import sys, resourcekit; before = sorted(m for m in sys.modules if m.startswith('resourcekit'))\n"
        "from resourcekit import *\n"
        "assert sorted(resourcekit._HOMES) == sorted(resourcekit.__all__)\n"
        "assert all(getattr(resourcekit, n) is getattr(sys.modules['resourcekit.' + resourcekit._HOMES[n]], n)"
        " for n in resourcekit.__all__)\n"
        "assert set(resourcekit.__all__) <= set(dir(resourcekit))\n"
        "print(before)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['resourcekit']"


def test_frozen_after_freezes_what_the_block_made_and_gives_the_gc_back_as_it_was() -> None:
    import gc

    from resourcekit._frozen import frozen_after

    was = gc.isenabled()
    kept = []  # (what a block made stays alive: freed, it would leave the frozen count)
    try:
        for collecting in (True, False):
            (gc.enable if collecting else gc.disable)()
            before = gc.get_freeze_count()
            with frozen_after():
                assert not gc.isenabled()
                made = [[n] for n in range(1000)]
            kept.append(made)
            assert gc.isenabled() is collecting
            assert gc.get_freeze_count() >= before + len(made)
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()
