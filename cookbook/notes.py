"""Notes: the README tour as a runnable app (text, JSON, binary, typed templates, completion).

Run it:
    resourcekit run cookbook/notes.py                      # stdio, for an MCP client
    resourcekit run cookbook/notes.py --transport http     # http://127.0.0.1:8000/mcp
    resourcekit list cookbook/notes.py                     # what it serves
    resourcekit read cookbook/notes.py notes://2?rev=1
"""

from __future__ import annotations

import enum
from typing import Annotated

from resourcekit import App, Context, ResourceNotFound

app = App("notes", version="1.0.0", instructions="Short notes, one per id, with revisions.")

NOTES: dict[int, list[str]] = {
    1: ["Buy milk"],
    2: ["Draft the talk", "Draft the talk, then rehearse it"],
}


class Tone(enum.Enum):
    plain = "plain"
    shout = "shout"


@app.resource("config://settings")
def settings() -> dict[str, str]:
    """Current settings."""
    return {"theme": "dark", "language": "en"}


@app.resource("notes://index", mime_type="text/markdown")
def index() -> str:
    """Every note, one line each."""
    return "\n".join(f"- [{n}](notes://{n}) {revs[-1]}" for n, revs in sorted(NOTES.items()))


@app.resource("images://pixel.png")
def pixel() -> bytes:
    """A 1x1 transparent PNG (binary, mimeType guessed from the URI)."""
    return bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )


def _note_ids(value: str) -> list[str]:
    return [str(n) for n in sorted(NOTES) if str(n).startswith(value)]


@app.template(
    "notes://{note_id}{?rev,tone}",
    lister=lambda: ({"note_id": n} for n in sorted(NOTES)),
    complete={"note_id": _note_ids},
)
async def note(
    note_id: Annotated[int, "The note's number"],
    rev: int = -1,
    tone: Tone = Tone.plain,
    ctx: Context | None = None,
) -> str:
    """One note; ``rev`` picks a revision (default: the latest)."""
    revisions = NOTES.get(note_id)
    if revisions is None or not -len(revisions) <= rev < len(revisions):
        raise ResourceNotFound(ctx.uri if ctx else f"notes://{note_id}")
    text = revisions[rev]
    return text.upper() if tone is Tone.shout else text


def add_note(text: str) -> int:
    """Add a note at run time; subscribers to the index and list hear about it."""
    note_id = max(NOTES, default=0) + 1
    NOTES[note_id] = [text]
    app.notify_changed("notes://index")
    app.notify_list_changed()
    return note_id
