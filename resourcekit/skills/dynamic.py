"""Skills a function generates: ``@app.skill("name", description=..., **frontmatter)`` (SEP-2640 ``"dynamic"``).

The function returns the skill's files: a ``SKILL.md`` text, or a mapping of relative paths to text or
bytes holding one.  It is called whenever a file or a directory of the skill is read, so nothing is
hashed and the skill is listed with ``resources: "dynamic"``.  The frontmatter is the decorator's,
checked once as a ``SKILL.md`` on disk is (``check_frontmatter``); resourcekit writes it at the top of
a ``SKILL.md`` returned without one, and refuses one whose own frontmatter says otherwise, so what
``skills/list`` shows and the file agree.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import DefinitionError
from .files import SKILL_FILE, SkillError, _yaml, check_frontmatter

__all__ = ["DynamicSkill"]


class DynamicSkill:
    """One generated skill: its name, frontmatter and function."""

    def __init__(self, name: str, fn: Callable[..., Any], frontmatter: dict[str, Any]) -> None:
        if not callable(fn) or inspect.iscoroutinefunction(fn):
            raise DefinitionError(f"@app.skill({name!r}) decorates a plain function returning the skill's files, "
                                  f"not {fn!r}")
        self.name = name
        self.fn = fn
        self.where = f"@app.skill({name!r}) on {getattr(fn, '__qualname__', fn)}()"
        yaml, _ = _yaml()
        try:
            self.header = "---\n" + yaml.safe_dump(frontmatter, sort_keys=False, allow_unicode=True) + "---\n"
        except yaml.YAMLError as exc:
            raise SkillError(f"{self.where}: the frontmatter cannot be written as YAML: {exc}") from None
        self.frontmatter = check_frontmatter(self.header.encode(), self.where, name)

    def files(self) -> dict[str, str | bytes]:
        """What the function returns now, checked, its ``SKILL.md`` with the frontmatter."""
        value = self.fn()
        if isinstance(value, str):
            files: dict[str, str | bytes] = {SKILL_FILE: value}
        elif isinstance(value, Mapping):
            files = {}
            for path, content in value.items():
                parts = path.split("/") if isinstance(path, str) else [""]
                if any(p in ("", ".", "..") or p.startswith(".") for p in parts):
                    raise ValueError(f"{self.where} returned the path {path!r}: relative paths of "
                                     "non-hidden names only ('templates/form.md')")
                if not isinstance(content, (str, bytes)):
                    raise TypeError(f"{self.where} returned {type(content).__name__} for {path!r}: text or bytes")
                files[path] = content
        else:
            raise TypeError(f"{self.where} returned {type(value).__name__}: a SKILL.md text, or a mapping of "
                            "relative paths to text or bytes")
        top = files.get(SKILL_FILE)
        if not isinstance(top, str):
            raise ValueError(f"{self.where} returned no {SKILL_FILE} text")
        files[SKILL_FILE] = self.skill_md(top)
        return files

    def skill_md(self, text: str) -> str:
        if text.removeprefix("\ufeff").split("\n", 1)[0].rstrip("\r") != "---":
            return f"{self.header}\n{text}"
        own = check_frontmatter(text.encode(), self.where, self.name)
        if own != self.frontmatter:
            raise ValueError(f"{self.where} returned a {SKILL_FILE} whose frontmatter differs from the decorator's: "
                             "return the body alone (resourcekit writes the frontmatter)")
        return text

    def children(self, path: str) -> tuple[tuple[str, str, bool], ...] | None:
        """(name, relative path, is_dir) of what directory ``path`` ("" for the skill's) holds, or None."""
        prefix = f"{path}/" if path else ""
        found: dict[str, bool] = {}
        for file in self.files():
            if file.startswith(prefix):
                head, sep, _ = file[len(prefix):].partition("/")
                found[head] = found.get(head, False) or bool(sep)
        if not found:
            return None
        return tuple(sorted((name, prefix + name, is_dir) for name, is_dir in found.items()))
