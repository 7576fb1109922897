"""SQLite: a database file as resources (schema, tables, rows), with the standard library only.

    db://schema                  every table and its columns, as JSON
    db://{table}                 one table: its columns and row count; listable (its rows)
    db://{table}/{rowid}         one row as JSON, rowid typed as int

``resources/list`` shows every table, then every row of every table, one page
at a time: a page that follows the one before costs one indexed query, however
far into a million rows it starts.  Writes made through ``insert_row``,
``update_row`` and ``delete_row`` tell subscribers at once; writes by other
programs reach them through watchers: while a URI has subscribers, its watcher
asks SQLite's ``PRAGMA data_version`` (which moves when another connection
commits) every RESOURCEKIT_POLL seconds, and the content hash decides whether
the subscribers hear of it.  The lifespan makes the demo database when serving
starts (never at import).  Table names are checked against the schema and
quoted, values are always bound parameters, so a URI cannot inject SQL.

Run it:
    RESOURCEKIT_DB=shop.sqlite resourcekit run cookbook/sqlite.py   # stdio
    resourcekit list cookbook/sqlite.py          # without RESOURCEKIT_DB: a small demo database
    resourcekit read cookbook/sqlite.py db://schema
    python cookbook/sqlite.py big.sqlite 1000000   # make a demo database with a million rows
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

from resourcekit import App, Context, ResourceNotFound, UriTemplate

DB = os.environ.get("RESOURCEKIT_DB") or os.path.join(tempfile.gettempdir(), "resourcekit-demo.sqlite")
POLL = float(os.environ.get("RESOURCEKIT_POLL", "2"))  # seconds between a watcher's checks

TABLE = UriTemplate("db://{table}")
ROW = UriTemplate("db://{table}/{rowid}")  # expanding percent-encodes odd table names

app = App("sqlite", version="1.0.0", instructions="A SQLite database: schema, tables and rows.")

_local = threading.local()


@app.lifespan
async def database() -> AsyncIterator[dict[str, str]]:
    """Serving starts: without RESOURCEKIT_DB, a small demo database is made if there is none."""
    if "RESOURCEKIT_DB" not in os.environ and not os.path.exists(DB):
        await asyncio.to_thread(create_demo, DB)
    yield {"db": DB}


def db() -> sqlite3.Connection:
    """This thread's connection (handlers run in worker threads; sqlite3 connections stay in one)."""
    conn: sqlite3.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = sqlite3.connect(DB, timeout=10)
    return conn


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def tables() -> list[str]:
    """Tables that have rowids, in name order: the only names ever put into SQL."""
    rows = db().execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()
    return [name for name, sql in rows if "WITHOUT ROWID" not in (sql or "").upper()]


def columns(table: str) -> list[dict[str, Any]]:
    return [
        {"name": name, "type": type_, "notNull": bool(notnull), "default": default, "primaryKey": bool(pk)}
        for _, name, type_, notnull, default, pk in db().execute(f"PRAGMA table_info({quote(table)})")
    ]


def checked(table: str, ctx: Context | None = None) -> str:
    if table not in tables():
        raise ResourceNotFound(ctx.uri if ctx else TABLE.expand(table=table))
    return table


# --- resources -------------------------------------------------------------------


@app.resource("db://schema")
def schema() -> dict[str, Any]:
    """Every table with its columns."""
    return {"tables": [{"name": t, "uri": TABLE.expand(table=t), "columns": columns(t)} for t in tables()]}


def _table_items() -> Iterator[dict[str, Any]]:
    for table in tables():
        yield {"table": table, "title": f"table {table}", "mimeType": "application/json"}


def _complete_table(value: str) -> list[str]:
    return [t for t in tables() if t.startswith(value)]


def _table_rows(table: str) -> Iterator[str] | None:
    """A table's children: its rows' URIs, streamed from a cursor (never all in memory)."""
    if table not in tables():
        return None
    cursor = db().execute(f"SELECT rowid FROM {quote(table)} ORDER BY rowid")
    # later pages skip the rows before them one by one (children have no paged form): keep each cheap
    prefix = TABLE.expand(table=table) + "/"
    return (f"{prefix}{rowid}" for (rowid,) in cursor)


@app.template("db://{table}", lister=_table_items, complete={"table": _complete_table},
              children=_table_rows)
def table(table: str, ctx: Context) -> dict[str, Any]:
    """One table: its columns and how many rows it has (list it for the rows)."""
    checked(table, ctx)
    (count,) = db().execute(f"SELECT count(*) FROM {quote(table)}").fetchone()
    return {"name": table, "columns": columns(table), "rows": count}


# Where the next page of the row listing starts: a sequential walk through the
# list resumes after the last rowid it saw (an indexed seek) instead of making
# SQLite step over ``offset`` rows again.  Offsets nobody asked for fall back to
# counting and OFFSET.
_resume: dict[int, tuple[str, int | None]] = {}
_resume_lock = threading.Lock()


def _seek(names: list[str], offset: int) -> tuple[str, int | None] | None:
    """(table, rowid to continue after, or None for its start) at a global ``offset``."""
    for name in names:
        (count,) = db().execute(f"SELECT count(*) FROM {quote(name)}").fetchone()
        if offset < count:
            if offset == 0:
                return name, None
            (rowid,) = db().execute(
                f"SELECT rowid FROM {quote(name)} ORDER BY rowid LIMIT 1 OFFSET ?", (offset - 1,)
            ).fetchone()
            return name, rowid
        offset -= count
    return None


def row_page(offset: int, limit: int) -> Iterator[dict[str, Any]]:
    """Rows ``offset`` to ``offset + limit`` of all tables (the paged lister form), streamed."""
    names = tables()
    with _resume_lock:
        start = _resume.get(offset)
    if start is None or start[0] not in names:
        start = _seek(names, offset)
        if start is None:
            return
    first, after = start
    count, last, previous = 0, start, start
    for name in names[names.index(first):]:
        sql = f"SELECT rowid FROM {quote(name)}"
        args: tuple[int, ...] = (limit - count,)
        if after is not None:
            sql += " WHERE rowid > ?"
            args = (after, *args)
        for (rowid,) in db().execute(sql + " ORDER BY rowid LIMIT ?", args):
            count += 1
            previous, last = last, (name, rowid)
            yield {"table": name, "rowid": rowid}
        if count >= limit:
            break
        after = None
    with _resume_lock:
        if len(_resume) > 1024:
            _resume.clear()
        # the framework asks for one item more than a page, so the next page starts at either
        _resume[offset + count] = last
        if count:
            _resume[offset + count - 1] = previous


@app.template("db://{table}/{rowid}", lister=row_page, complete={"table": _complete_table})
def row(table: str, rowid: int, ctx: Context) -> dict[str, Any]:
    """One row, as a JSON object of its columns (BLOBs base64-encoded)."""
    cursor = db().execute(f"SELECT * FROM {quote(checked(table, ctx))} WHERE rowid = ?", (rowid,))
    values = cursor.fetchone()
    if values is None:
        raise ResourceNotFound(ctx.uri)
    return dict(zip([d[0] for d in cursor.description], values, strict=True))


# --- watchers: writes by other programs -----------------------------------------------


def _data_version(conn: sqlite3.Connection) -> int:
    (version,) = conn.execute("PRAGMA data_version").fetchone()
    return int(version)


async def committed(ctx: Context) -> None:
    """Until cancelled: when another connection commits, tell subscribers of ``ctx.uri`` (if what it
    serves changed: the content hash decides) and listing clients (if the list changed)."""
    conn = sqlite3.connect(ctx.state["db"], timeout=10, check_same_thread=False)  # one thread at a time
    try:
        seen = await asyncio.to_thread(_data_version, conn)
        while True:
            await asyncio.sleep(POLL)
            now = await asyncio.to_thread(_data_version, conn)
            if now != seen:
                seen = now
                app.notify_changed(ctx.uri)
                app.notify_list_changed()
    finally:
        conn.close()


@app.watch("db://schema")
async def watch_schema(ctx: Context) -> None:
    await committed(ctx)


@app.watch("db://{table}")
async def watch_table(table: str, ctx: Context) -> None:
    await committed(ctx)


@app.watch("db://{table}/{rowid}")
async def watch_row(table: str, rowid: int, ctx: Context) -> None:
    await committed(ctx)


# --- writes: through these, subscribers hear at once --------------------------------


def _assignable(table: str, values: dict[str, Any]) -> list[str]:
    known = {c["name"] for c in columns(checked(table))}
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"table {table!r} has no column(s) {sorted(unknown)}")
    return list(values)


def insert_row(table: str, **values: Any) -> int:
    """Insert a row; returns its rowid."""
    names = _assignable(table, values)
    conn = db()
    with conn:
        if names:
            cursor = conn.execute(
                f"INSERT INTO {quote(table)} ({', '.join(map(quote, names))}) "
                f"VALUES ({', '.join('?' * len(names))})", list(values.values()))
        else:
            cursor = conn.execute(f"INSERT INTO {quote(table)} DEFAULT VALUES")
    rowid = cursor.lastrowid
    assert rowid is not None
    app.notify_changed(TABLE.expand(table=table))
    app.notify_list_changed()
    return rowid


def update_row(table: str, rowid: int, **values: Any) -> None:
    names = _assignable(table, values)
    if not names:
        return
    conn = db()
    with conn:
        conn.execute(f"UPDATE {quote(table)} SET {', '.join(f'{quote(n)} = ?' for n in names)} WHERE rowid = ?",
                     [*values.values(), rowid])
    app.notify_changed(ROW.expand(table=table, rowid=str(rowid)))


def delete_row(table: str, rowid: int) -> None:
    conn = db()
    with conn:
        conn.execute(f"DELETE FROM {quote(checked(table))} WHERE rowid = ?", (rowid,))
    app.notify_changed(ROW.expand(table=table, rowid=str(rowid)))
    app.notify_changed(TABLE.expand(table=table))
    app.notify_list_changed()


# --- a demo database --------------------------------------------------------------


def create_demo(path: str, events: int = 100) -> None:
    """A small shop: a few products, and ``events`` rows in an events table."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE IF NOT EXISTS products "
                     "(id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL, image BLOB)")
        conn.execute("CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, kind TEXT, payload TEXT)")
        conn.executemany("INSERT INTO products (name, price, image) VALUES (?, ?, ?)",
                         [("tea", 3.5, b"\x89PNG\r\n"), ("coffee", 4.0, None), ("cake", 2.25, None)])
        batch = 50_000
        for start in range(0, events, batch):
            conn.executemany("INSERT INTO events (kind, payload) VALUES (?, ?)",
                             ((("view", "cart", "buy")[i % 3], f"event {i}")
                              for i in range(start, min(start + batch, events))))
    conn.close()


if __name__ == "__main__":
    create_demo(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100)
