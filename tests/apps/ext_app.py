"""Fixture for the extension tests: a listable tree, kinds and metadata."""

from __future__ import annotations

from resourcekit import App

app = App("ext", page_size=3)
TREE = {"": ["a", "b"], "a": ["a/x.txt", "a/y.txt", "a/z.txt", "a/w.txt"], "b": []}
state = {"n": 0}


def children(path: str):
    if path not in TREE:
        return None  # a file: not listable
    return ({"uri": f"tree://{child}", "mimeType": "inode/directory" if child in TREE else "text/plain"}
            for child in TREE[path])


@app.template("tree://{+path}", children=children, kind="file")
def node(path: str) -> str:
    return f"node {path}"


@app.resource("tree://", children=lambda: children(""), kind="file", mime_type="inode/directory")
def root() -> str:
    return "root"


@app.resource("db://users", kind="database_table", metadata={"rows": 2})
def users() -> list[dict[str, object]]:
    return [{"id": 1}, {"id": 2}]


@app.resource("counter://value", kind="counter")
def counter() -> str:
    return f"n={state['n']}"


@app.resource("control://bump")
def bump() -> str:
    state["n"] += 1
    app.notify_changed("counter://value")
    return str(state["n"])


CALLS: list[tuple[int, int]] = []


def many(offset: int, limit: int):
    CALLS.append((offset, limit))
    return ({"uri": f"many://{n}"} for n in range(offset, min(offset + limit, 1_000_000)))


@app.resource("many://", children=many)
def many_root() -> str:
    return "a million children"
