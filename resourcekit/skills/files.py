"""Agent Skills on disk: walking a skills directory safely, hashing files, reading frontmatter.

Nothing here knows about MCP.  ``walk`` never leaves its root: a symlink whose
target lies outside it is skipped (with a warning, once), hidden names and
``__pycache__`` are never served, and only regular files count.
``read_confined`` re-checks all of that at read time, so a file swapped for an
escaping symlink after start-up is not served either.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import re
import stat
from collections.abc import Iterator
from typing import Any

from ..errors import DefinitionError

__all__ = ["SkillError", "check_frontmatter", "hash_file", "read_confined", "read_regular", "walk"]

log = logging.getLogger("resourcekit")

SKILL_FILE = "SKILL.md"
MAX_FILES = 512  # SEP-2640 "Limits": resources per skill, SKILL.md included
MAX_BYTES = 16 * 1024 * 1024  # and their total size
MAX_FRONTMATTER = 64 * 1024  # characters of YAML; the parsed value is bounded by _MAX_NODES
_MAX_NODES = 10_000  # YAML aliases can make a small document expand exponentially when copied out
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")  # agentskills.io: lowercase, digits, single inner hyphens
SKIPPED = frozenset({"__pycache__"})
_MAX_DEPTH = 64


class SkillError(DefinitionError):
    """A skill that cannot be served; the message starts with its ``SKILL.md`` path."""


def inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root if root.endswith(os.sep) else root + os.sep)


def walk(root: str, warned: set[str]) -> Iterator[tuple[str, bool, os.stat_result | None]]:
    """``(relative path, is_dir, stat)`` for everything servable under ``root`` (a real path).

    Directories come before their contents; names are sorted.  Symlinks are followed
    only when they resolve inside ``root``; a directory that is its own ancestor (a
    symlink loop) is not entered again.
    """
    stack: list[tuple[str, str, frozenset[str]]] = [(root, "", frozenset({root}))]
    while stack:
        directory, rel, chain = stack.pop()  # ``directory`` is a real path
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            log.warning("skills: cannot read directory %s: %s", directory, exc)
            continue
        below = []
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name in SKIPPED:
                continue
            child = f"{rel}/{name}" if rel else name
            try:
                real = entry.path
                if entry.is_symlink():
                    real = os.path.realpath(entry.path)
                    if not inside(real, root):
                        if entry.path not in warned:
                            warned.add(entry.path)
                            log.warning("skills: %s is a symlink leading outside %s: skipped", entry.path, root)
                        continue
                if entry.is_dir():
                    if real in chain or len(chain) > _MAX_DEPTH:
                        continue
                    yield child, True, None
                    below.append((real, child, chain | {real}))
                elif entry.is_file():
                    yield child, False, entry.stat()
            except OSError:  # vanished meanwhile, or unreadable: not served
                continue
        stack.extend(reversed(below))


def read_confined(root: str, path: str) -> bytes | None:
    """The bytes of the regular file at ``path`` if it (still) lies inside ``root``, else None."""
    real = os.path.realpath(path)
    if not inside(real, root):
        return None
    return read_regular(real)


def read_regular(path: str, nofollow: bool = False) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (``nofollow``: and not a symlink)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (getattr(os, "O_NOFOLLOW", 0) if nofollow else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # a fifo or device swapped in
            return None
        return f.read()


def hash_file(root: str, path: str) -> tuple[str, int, bytes] | None:
    """(sha256 hex, size, bytes) of a file ``walk`` found inside ``root``; None if it is gone or escapes.

    A plain file is opened without following symlinks (no path resolution: start-up reads
    every file); only a symlink, or a file swapped for one meanwhile, is resolved and checked.
    """
    data = read_regular(path, nofollow=True)
    if data is None:
        data = read_confined(root, path)
    if data is None:
        return None
    return hashlib.sha256(data).hexdigest(), len(data), data


# --- frontmatter -----------------------------------------------------------------------------


def check_frontmatter(data: bytes, where: str, folder: str) -> dict[str, Any]:
    """The frontmatter of a ``SKILL.md`` as JSON data; SkillError naming ``where`` if it is not valid.

    Verbatim: every field the author wrote, nesting included.  Timestamps stay the strings
    they were written as (a host parsing the same YAML must find the same values).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{where}: not UTF-8 text") from None
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[0].rstrip("\r") != "---":
        raise SkillError(f"{where}: no YAML frontmatter (the file must begin with a '---' line)")
    for end in range(1, len(lines)):
        if lines[end].rstrip("\r") in ("---", "..."):
            break
    else:
        raise SkillError(f"{where}: the frontmatter is not closed by a '---' line")
    block = "\n".join(lines[1:end])
    if len(block) > MAX_FRONTMATTER:
        raise SkillError(f"{where}: the frontmatter is over {MAX_FRONTMATTER} characters")
    yaml, loader = _yaml()
    try:
        value = yaml.load(block, Loader=loader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise SkillError(f"{where}: the frontmatter is not valid YAML: {exc}") from None
    if not isinstance(value, dict):
        raise SkillError(f"{where}: the frontmatter must be a YAML mapping")
    budget = [_MAX_NODES]
    try:
        frontmatter: dict[str, Any] = _jsonable(value, budget)
    except RecursionError:
        raise SkillError(f"{where}: the frontmatter nests too deeply") from None
    if budget[0] < 0:
        raise SkillError(f"{where}: the frontmatter expands to over {_MAX_NODES} values")
    name = frontmatter.get("name")
    if not isinstance(name, str) or not name:
        raise SkillError(f"{where}: missing name")
    if len(name) > 64 or not _NAME.match(name):
        raise SkillError(f"{where}: name {name!r} breaks the Agent Skills naming rules (1-64 characters: "
                         "lowercase letters, digits and single hyphens, not first or last)")
    if name != folder:
        raise SkillError(f"{where}: name {name!r} differs from its folder {folder!r}")
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{where}: missing description")
    if len(description) > 1024:
        raise SkillError(f"{where}: description over 1024 characters")
    return frontmatter


def _jsonable(value: Any, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        return None
    if isinstance(value, dict):
        return {k if isinstance(k, str) else _key(k): _jsonable(v, budget) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v, budget) for v in value]
    if isinstance(value, (bytes, bytearray)):
        import base64

        return base64.b64encode(value).decode("ascii")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    iso = getattr(value, "isoformat", None)  # an explicit !!timestamp
    return iso() if callable(iso) else str(value)


def _key(key: Any) -> str:
    if isinstance(key, bool) or key is None:
        return {True: "true", False: "false", None: "null"}[key]
    return str(key)


_LOADER: Any = None


def _yaml() -> tuple[Any, Any]:
    """PyYAML and a safe loader that keeps timestamps as strings (imported only when skills are served)."""
    global _LOADER
    try:
        yaml: Any = importlib.import_module("yaml")  # untyped; imported only here, when skills are served
    except ImportError:
        raise DefinitionError("serving skills needs PyYAML: pip install 'resourcekit[skills]'") from None
    if _LOADER is None:
        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class Loader(base):  # type: ignore[valid-type, misc]
            pass

        Loader.yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }
        _LOADER = Loader
    return yaml, _LOADER
