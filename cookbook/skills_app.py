"""Agent Skills: the folders under ``cookbook/skills/`` served as ``skill://`` resources (SEP-2640).

Three skills: ``git-workflow`` (a single ``SKILL.md``), ``pdf-processing`` (with
``scripts/``, ``references/``, ``templates/`` and a binary asset) and ``refunds``,
nested under the prefix ``acme/billing``.  Clients enumerate them with ``skills/list``
(each entry carries the frontmatter and every file's SHA-256 digest and size), fetch
one entry with ``skills/get``, browse folders with ``resources/directory/read`` and
read files with ``resources/read``.  Editing a file is noticed within a second.

Run it:
    resourcekit run cookbook/skills_app.py
    resourcekit skills cookbook/skills            # the same skills, no Python file needed
"""

from __future__ import annotations

from pathlib import Path

from resourcekit import App

app = App(
    "skills",
    version="1.0.0",
    instructions="Team skills. Call skills/list, then read the SKILL.md of the skill you need.",
)
app.add_skills(Path(__file__).parent / "skills", poll=1.0)
