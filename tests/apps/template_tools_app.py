"""Templates served as typed tools: every kind of variable a tool's inputSchema describes, a TypedDict
result (structuredContent), an image, a template left out, one named by tool=."""

from __future__ import annotations

import datetime
import enum
import uuid
from typing import Annotated, Literal, TypedDict

from resourcekit import App, ResourceNotFound

app = App("template-tools", resource_tools=True)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(16))


class Shelf(enum.Enum):
    FICTION = "fiction"
    SCIENCE = "science"


class Book(TypedDict):
    id: str
    title: str
    pages: int


BOOKS = {uuid.UUID(int=n): Book(id=str(uuid.UUID(int=n)), title=f"Book {n}", pages=100 + n) for n in range(1, 4)}


@app.template("shelf://{shelf}/{size}/{n}{?since,tags*,limit}",
              lister=lambda: [{"shelf": s, "size": "s", "n": n} for s in Shelf for n in (1, 2)])
def shelf(shelf: Shelf, size: Literal["s", "l"], n: Annotated[int, "the position on the shelf"],
          since: datetime.date | None = None, tags: list[str] | None = None, limit: int = 10) -> str:
    """One book on a shelf."""
    return f"{shelf.value}/{size}/{n} since={since} tags={','.join(tags or [])} limit={limit}"


@app.template("book://{book_id}", title="A book", tool="get_book")
def book(book_id: uuid.UUID) -> Book:
    """A book by its id."""
    try:
        return BOOKS[book_id]
    except KeyError:
        raise ResourceNotFound(f"book://{book_id}") from None


@app.template("cover://{book_id}.png", mime_type="image/png")
def cover(book_id: int) -> bytes:
    return PNG


@app.template("secret://{key}", tool=False)
def secret(key: str) -> str:
    return key
