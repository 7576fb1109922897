"""Agent Skills (SEP-2640) served from directories: ``App.add_skills(directory, prefix=...)``.

| module | holds |
|---|---|
| ``catalog`` | ``SkillCatalog``: the mounted skills, their entries and directory tree, rescans |
| ``files`` | reading a skill's files: confined to its directory, bounded, hashed, frontmatter checked |

The protocol methods (``skills/list``, ``skills/get``, ``resources/directory/read``) live with the
other methods, in ``resourcekit.methods.skills``.
"""

from __future__ import annotations

from .catalog import DIRECTORY_MIME, Mount, SkillCatalog, SkillError

__all__ = ["DIRECTORY_MIME", "Mount", "SkillCatalog", "SkillError"]
