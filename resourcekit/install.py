"""``resourcekit install HOST FILE``: put this server into a host's own MCP configuration file.

Each host keeps its servers in a JSON file of its own (where, and under which key, is in
``HOSTS`` and ``config_path``).  The entry runs this app with the interpreter that runs
``resourcekit`` now (``python -m resourcekit run /absolute/app.py``), so it works whatever
the host's PATH and working directory.  The file is edited in place (``_jsonedit``): other
servers, other settings and the formatting stay as they were.  Installing again with the
same options changes nothing; with other ones it updates the entry, keeping what the user
added to it (other keys, other environment variables).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._jsonedit import JSONEditError, set_member
from ._loader import CLIError, load_app, split_target

__all__ = ["HOSTS", "Host", "config_path", "install", "server_entry"]


class Host:
    """One MCP host: its name, the key its servers live under, and how it spells an stdio entry."""

    __slots__ = ("comments", "indent", "key", "label", "stdio_type")

    def __init__(self, label: str, key: str, *, stdio_type: bool, comments: bool = False, indent: str = "  ") -> None:
        self.label = label
        self.key = key
        self.stdio_type = stdio_type  # entries say "type": "stdio"
        self.comments = comments  # the host reads JSON with comments (JSONC)
        self.indent = indent  # for a file we create


HOSTS: dict[str, Host] = {
    "claude-desktop": Host("Claude Desktop", "mcpServers", stdio_type=False),
    # user scope: ~/.claude.json's top-level mcpServers; a project's .mcp.json has the same shape
    "claude-code": Host("Claude Code", "mcpServers", stdio_type=True),
    "cursor": Host("Cursor", "mcpServers", stdio_type=False),
    "vscode": Host("VS Code", "servers", stdio_type=True, comments=True, indent="\t"),
}


def config_path(host: str, platform: str = sys.platform, environ: Mapping[str, str] = os.environ,
                home: Path | None = None) -> Path:
    """Where ``host`` reads its user-wide MCP servers on ``platform``."""
    home = Path.home() if home is None else home
    if platform == "darwin":
        support = home / "Library" / "Application Support"
    elif platform == "win32":
        support = Path(environ.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        support = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    if host == "claude-desktop":
        return support / "Claude" / "claude_desktop_config.json"
    if host == "claude-code":
        return home / ".claude.json"
    if host == "cursor":
        return home / ".cursor" / "mcp.json"
    if host == "vscode":
        return support / "Code" / "User" / "mcp.json"
    raise ValueError(f"unknown host {host!r}")


def resolve_target(target: str) -> str:
    """``FILE[:ATTR]`` or ``module[:ATTR]`` as an absolute file path (with ``:ATTR``), for any working directory."""
    path, attr = split_target(target)
    if not os.path.isfile(path):
        spec = importlib.util.find_spec(path) if path and not path.endswith(".py") else None
        if spec is None or not spec.origin or not os.path.isfile(spec.origin):
            raise CLIError(f"no such file: {path}")
        path = spec.origin
    return os.path.abspath(path) + (f":{attr}" if attr else "")


def server_entry(host: Host, target: str, env: Mapping[str, str], run_args: Sequence[str] = ()) -> dict[str, Any]:
    """The configuration entry that starts this server for ``host``."""
    entry: dict[str, Any] = {"type": "stdio"} if host.stdio_type else {}
    entry["command"] = os.path.abspath(sys.executable)  # not resolved: a venv's python is a symlink
    entry["args"] = ["-m", "resourcekit", "run", target, *run_args]
    if env:
        entry["env"] = dict(env)
    return entry


def _merged(existing: Any, entry: dict[str, Any]) -> dict[str, Any]:
    """The new entry over the old one: the user's own keys and environment variables stay."""
    if not isinstance(existing, dict):
        return entry
    merged = dict(existing)
    merged.update((k, v) for k, v in entry.items() if k != "env")
    env = {**(existing.get("env") or {}), **entry.get("env", {})} if isinstance(existing.get("env"), dict) \
        else entry.get("env")
    if env:
        merged["env"] = env
    return merged


def parse_env(pairs: Sequence[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CLIError(f"--env takes KEY=VALUE, not {pair!r}")
        env[key] = value
    return env


def install(host_name: str, target: str, *, name: str | None = None, env: Sequence[str] = (),
            config: str | None = None, show_only: bool = False, run_args: Sequence[str] = ()) -> str:
    """Add or update the server's entry; what was done, as text for the terminal."""
    host = HOSTS[host_name]
    variables = parse_env(env)
    app = load_app(target)  # fail here, not when the host starts it; and the default name
    absolute = resolve_target(target)
    server = name if name is not None else app.name
    if not server:
        raise CLIError("--name must not be empty")
    path = Path(config).expanduser().absolute() if config else config_path(host_name)
    try:
        before = path.read_text(encoding="utf-8-sig") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise CLIError(f"cannot read {path}: {exc}") from None
    entry = server_entry(host, absolute, variables, run_args)
    try:
        _, existing = set_member(before, [host.key], server, entry, comments=host.comments,
                                 default_indent=host.indent)
        entry = _merged(existing, entry)
        after, _ = set_member(before, [host.key], server, entry, comments=host.comments, default_indent=host.indent)
    except JSONEditError as exc:
        hint = "" if host.comments else f" ({host.label} reads plain JSON: no comments or trailing commas)"
        raise CLIError(f"{path} is not valid JSON: {exc}{hint}; fix it, or write to another file with --config") \
            from None
    if existing == entry:
        return f"{server!r} is already in {host.label}'s configuration, unchanged: {path}"
    if show_only:
        import difflib  # deferred, like tempfile below: `resourcekit run` imports this module

        diff = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                    str(path), str(path))
        return "".join(diff).rstrip("\n") + "\n(--print: nothing written)"
    _write(path, after)
    verb = "updated" if existing is not None else "added"
    return (f"{verb} {server!r} in {host.label}'s configuration: {path}\n"
            + json.dumps({server: entry}, indent=2, ensure_ascii=False)
            + f"\nrestart {host.label} (or reload its MCP servers) to use it")


def _write(path: Path, text: str) -> None:
    """Replace the file in one step (a crash leaves the old one), keeping its permissions."""
    path = Path(os.path.realpath(path))  # a symlinked config (dotfiles) stays a symlink
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o7777 if path.exists() else None
        import tempfile

        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
                out.write(text)
            if mode is not None:
                os.chmod(temporary, mode)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc}") from None
