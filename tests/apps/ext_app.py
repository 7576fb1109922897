"""Fixture for the extension tests (SEP-2093 and seed 000).

* ``tree://`` and ``tree://{+path}``: a filesystem-shaped tree; directories are
  listable, files are not (``children`` returns None), unknown paths are not found.
* ``db://{table}`` and ``db://{table}/{row}``: a database; tables list their rows
  (an async ``children``), rows are not listable.
* ``many://`` (paged ``children(offset, limit)``), ``stream://`` (async generator).
* ``formats://report`` (one URI, two formats), ``bundle://`` (other URIs, not
  listable), ``folder://`` (other URIs, listable).
* ``counter://value`` changed by reading ``control://bump``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from resourcekit import App, Blob, ResourceNotFound, Text

app = App("ext", page_size=3)

# --- a filesystem ----------------------------------------------------------------------

FILES = [f"a/f{n}.txt" for n in range(7)]
TREE: dict[str, list[str]] = {"": ["a", "b"], "a": ["a/sub", *FILES], "a/sub": ["a/sub/deep.md"], "b": []}
LEAVES = {*FILES, "a/sub/deep.md"}


def children(path: str) -> Iterator[dict[str, Any]] | None:
    if path in LEAVES:
        return None  # a file: not listable
    if path not in TREE:
        raise ResourceNotFound(f"tree://{path}")
    return ({"uri": f"tree://{child}", "mimeType": "inode/directory" if child in TREE else "text/plain",
             "size": 0 if child in TREE else len(child)}
            for child in TREE[path])


def walk() -> Iterator[dict[str, Any]]:
    for path in [*TREE, *sorted(LEAVES)]:
        if path:
            yield {"path": path, "mimeType": "inode/directory" if path in TREE else "text/plain"}


@app.resource("tree://", children=lambda: children(""), kind="directory", mime_type="inode/directory")
def root() -> str:
    """The root of the tree."""
    return "a/\nb/"


@app.template("tree://{+path}", children=children, lister=walk, kind="file")
def node(path: str) -> str:
    """A file or a directory of the tree."""
    if path in TREE:
        return "\n".join(TREE[path])
    if path in LEAVES:
        return f"contents of {path}"
    raise ResourceNotFound(f"tree://{path}")


# --- a database --------------------------------------------------------------------------

TABLES: dict[str, list[int]] = {"users": [1, 2, 3, 4], "empty": []}


async def rows(table: str) -> list[str]:
    if table not in TABLES:
        raise ResourceNotFound(f"db://{table}")
    return [f"db://{table}/{row}" for row in TABLES[table]]


@app.template("db://{table}", children=rows, lister=lambda: [{"table": t} for t in TABLES],
              kind="database_table", metadata={"engine": "memory"})
def table(table: str) -> dict[str, Any]:
    """One table (list it for its rows)."""
    if table not in TABLES:
        raise ResourceNotFound(f"db://{table}")
    return {"table": table, "rows": len(TABLES[table])}


@app.template("db://{table}/{row}", kind="database_row")
def row(table: str, row: int) -> dict[str, Any]:
    """One row."""
    if row not in TABLES.get(table, []):
        raise ResourceNotFound(f"db://{table}/{row}")
    return {"id": row}


# --- children in other shapes --------------------------------------------------------------

CALLS: list[tuple[int, int]] = []


def many(offset: int, limit: int) -> Iterator[dict[str, Any]]:
    CALLS.append((offset, limit))
    return ({"uri": f"many://{n}"} for n in range(offset, min(offset + limit, 1_000_000)))


@app.resource("many://", children=many)
def many_root() -> str:
    return "a million children"


async def stream_children() -> AsyncIterator[str]:
    for n in range(5):
        yield f"stream://{n}"


@app.resource("stream://", children=stream_children)
def stream() -> str:
    return "five children from an async generator"


# --- multi-content reads ----------------------------------------------------------------------

PDF = b"%PDF-1.4 not really"


@app.resource("formats://report", title="Quarterly report", description="One report, two formats")
def report() -> list[Text | Blob]:
    return [Blob(PDF, "application/pdf"), Text("Extracted text", "text/plain")]


@app.resource("bundle://")
def bundle() -> list[Text]:
    return [Text("main", uri="bundle://"), Text("extra", uri="bundle://extra")]


@app.resource("folder://", children=lambda: ["folder://one", "folder://two"])
def folder() -> list[Text]:
    return [Text("first", uri="folder://one"), Text("second", uri="folder://two")]


@app.template("folder://{name}", description="An item of the folder")
def folder_item(name: str) -> str:
    return name


# --- change notifications ---------------------------------------------------------------------

state = {"n": 0}


@app.resource("counter://value", kind="counter", metadata={"unit": "clicks"})
def counter() -> str:
    return f"n={state['n']}"


@app.resource("control://bump")
def bump() -> str:
    state["n"] += 1
    app.notify_changed("counter://value")
    return str(state["n"])
