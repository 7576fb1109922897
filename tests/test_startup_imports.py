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
    # a method most clients never call
    "completion/complete": ("resourcekit.methods.completion",),
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


def _modules_of_a_stdio_server() -> list[str]:
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "test://modules"}},
    ]
    result = subprocess.run(
        command("run", str(APPS / "modules_app.py")), input=b"".join(orjson.dumps(m) + b"\n" for m in messages),
        capture_output=True, timeout=60, env=env(),
    )
    replies = {r["id"]: r for r in map(orjson.loads, result.stdout.splitlines())}
    assert "result" in replies.get(1, {}), result.stderr.decode()
    modules: list[str] = orjson.loads(replies[1]["result"]["contents"][0]["text"])
    return modules


def test_a_stdio_server_imports_none_of_the_features_it_does_not_serve() -> None:
    modules = _modules_of_a_stdio_server()
    assert "resourcekit.transports.stdio" in modules and "resourcekit.core.engine" in modules  # what it does use
    loaded = {
        feature: [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]
        for feature, prefixes in FEATURES.items()
    }
    assert {feature: names for feature, names in loaded.items() if names} == {}
    seams_only = [m for m in modules if m.startswith(tuple(seam + "." for seam in SEAMS)) and m not in SEAMS]
    assert seams_only == []  # under a seam, nothing beyond it
