"""Filesystem: a directory tree as ``file://`` resources, confined to its root.

Files are read as text or binary by their type, directories are listable
(``inode/directory``), listed entries carry ``size`` and ``lastModified``, and
subscribers hear about changes through watchers: while a file or directory has
subscribers, its watcher checks its ``stat`` (no read, no hash) every
RESOURCEKIT_POLL seconds and says ``notify_changed`` when it moves (an inotify or
watchdog loop would sit in the same place).  The lifespan checks the root when
serving starts: a missing root stops start-up with its name.  Nothing outside the
root is ever served: ``..``, percent-encoded traversal, absolute paths and
symlinks that leave the root all answer "resource not found".

Run it:
    RESOURCEKIT_ROOT=~/notes resourcekit run cookbook/filesystem.py    # stdio (default root: .)
    RESOURCEKIT_ROOT=~/notes resourcekit list cookbook/filesystem.py
    RESOURCEKIT_POLL=0.5 ...                                           # poll interval, seconds
    RESOURCEKIT_SKIP=.git,node_modules ...                             # names never served (see SKIP)

Version-control folders and virtual environments (a folder with ``pyvenv.cfg``, whatever
its name) are skipped by default: neither listed nor readable.

URIs are real ``file://`` URIs: with the root ``/home/me/notes`` the file
``todo.md`` is ``file:///home/me/notes/todo.md`` and the root itself is
``file:///home/me/notes``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from resourcekit import App, Blob, Context, ResourceNotFound, Text, UriTemplate
from resourcekit.contents import guess_mime_type

ROOT = Path(os.environ.get("RESOURCEKIT_ROOT", ".")).expanduser().resolve()
POLL = float(os.environ.get("RESOURCEKIT_POLL", "2"))  # seconds between a watcher's checks
SKIP = frozenset(filter(None, os.environ.get(
    "RESOURCEKIT_SKIP", ".git,.hg,.svn,.venv,venv,__pycache__,.mypy_cache,.pytest_cache,.ruff_cache").split(",")))
DIRECTORY = "inode/directory"
BASE = ROOT.as_uri().rstrip("/")  # percent-encoded, so the root's name never reads as template syntax
FILE_TEMPLATE = BASE + "/{+path}"
FILE = UriTemplate(FILE_TEMPLATE)

app = App("filesystem", version="1.0.0", instructions=f"The files under {ROOT}, read-only.")


@app.lifespan
async def checked_root() -> AsyncIterator[dict[str, Path]]:
    if not ROOT.is_dir():
        raise NotADirectoryError(f"RESOURCEKIT_ROOT {ROOT} is not a directory")
    yield {"root": ROOT}


def locate(path: str) -> Path | None:
    """The file or directory ``path`` names under ROOT, or None if it names nothing we serve.

    ``path`` arrives percent-decoded, so ``%2e%2e`` is already ``..`` here. Only the
    canonical spelling is accepted (no ``.``, ``..`` or empty segments, not absolute),
    so each file has exactly one URI; symlinks are followed, but only within ROOT.
    """
    if not path or path.startswith("/") or "\0" in path:
        return None
    parts = path.split("/")
    if any(part in ("", ".", "..") or part in SKIP for part in parts):
        return None
    try:
        full = (ROOT / path).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, unreadable, or a symlink loop
        return None
    if not full.is_relative_to(ROOT) or any(is_venv(ROOT.joinpath(*parts[:n])) for n in range(1, len(parts) + 1)):
        return None
    return full


def is_venv(directory: Path) -> bool:
    """A virtual environment, whatever its name: it has a ``pyvenv.cfg``."""
    return (directory / "pyvenv.cfg").is_file()


def entry(full: Path, rel: str) -> dict[str, Any] | None:
    """A listed Resource's fields for ``full`` (None if it vanished meanwhile)."""
    try:
        st = full.stat()
    except OSError:
        return None
    modified = dt.datetime.fromtimestamp(st.st_mtime, dt.timezone.utc).isoformat()
    item: dict[str, Any] = {"name": rel or ROOT.name, "annotations": {"lastModified": modified}}
    if stat.S_ISDIR(st.st_mode):
        item["mimeType"] = DIRECTORY
    else:
        mime_type = guess_mime_type(full.name, "")
        if mime_type:  # without an extension only a read can tell text from binary
            item["mimeType"] = mime_type
        item["size"] = st.st_size
    return item


def entries(directory: Path, rel: str) -> Iterator[tuple[Path, str]]:
    """The direct children of a directory that stay within ROOT, sorted by name."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return
    for name in names:
        child_rel = f"{rel}/{name}" if rel else name
        full = locate(child_rel)
        if full is not None:
            yield full, child_rel


def children_of(directory: Path, rel: str) -> Iterator[dict[str, Any]]:
    for full, child_rel in entries(directory, rel):
        item = entry(full, child_rel)
        if item is not None:
            yield {"uri": FILE.expand(path=child_rel), **item}


def walk() -> Iterator[dict[str, Any]]:
    """Every entry under ROOT, directory by directory, lazily.

    A page walks only as far as its own last entry; a plain lister is sliced from
    the start, though, so very deep pages of a huge tree re-walk the ones before.
    """
    stack = [(ROOT, "")]
    while stack:
        directory, rel = stack.pop()
        below = []
        for full, child_rel in entries(directory, rel):
            item = entry(full, child_rel)
            if item is None:
                continue
            yield {"path": child_rel, **item}
            # a symlinked directory is listed but not entered: it could loop
            if item.get("mimeType") == DIRECTORY and not (ROOT / child_rel).is_symlink():
                below.append((full, child_rel))
        stack.extend(reversed(below))


def listing(directory: Path, rel: str) -> Text:
    """A directory reads as its entries' names, one a line, directories ending in '/'."""
    lines = [
        child_rel.rsplit("/", 1)[-1] + ("/" if full.is_dir() else "")
        for full, child_rel in entries(directory, rel)
    ]
    return Text("\n".join(lines), DIRECTORY)


@app.resource(BASE, name="root", mime_type=DIRECTORY, children=lambda: children_of(ROOT, ""))
def root() -> Text:
    """The root directory: its entries, one a line."""
    return listing(ROOT, "")


def _children(path: str) -> Iterator[dict[str, Any]] | None:
    full = locate(path)
    if full is None or not full.is_dir():
        return None  # a file (or nothing): not listable
    return children_of(full, path)


@app.template(FILE_TEMPLATE, lister=walk, children=_children)
def file(path: str, ctx: Context) -> Path | Text | Blob:
    """A file (text or binary by its type) or a directory (its entries, one a line)."""
    full = locate(path)
    if full is None:
        raise ResourceNotFound(ctx.uri)
    if full.is_dir():
        return listing(full, path)
    if not full.is_file():
        raise ResourceNotFound(ctx.uri)  # a socket, a fifo, a device: not content
    if guess_mime_type(full.name, ""):
        return full  # resourcekit reads it: text if the type is textual and UTF-8, else blob
    # no extension to go by: UTF-8 without NUL bytes is text, anything else binary
    data = full.read_bytes()
    if b"\0" not in data[:8192]:
        try:
            return Text(data.decode("utf-8"), "text/plain")
        except UnicodeDecodeError:
            pass
    return Blob(data, "application/octet-stream")


# --- watchers -------------------------------------------------------------------------


def fingerprint(path: str) -> tuple[int, ...] | None:
    """What moves when a file or directory changes: its modification time, size and inode (a
    directory's time moves when an entry comes, goes or is renamed); None when it is not served."""
    full = ROOT if not path else locate(path)
    if full is None:
        return None
    try:
        st = full.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


async def changes(ctx: Context, path: str) -> None:
    """Until cancelled: tell subscribers of ``ctx.uri`` when ``path`` changes (the content hash
    decides whether it really did), and listing clients when a directory's entries do."""
    seen = await asyncio.to_thread(fingerprint, path)
    while True:
        await asyncio.sleep(POLL)
        now = await asyncio.to_thread(fingerprint, path)
        if now != seen:
            seen = now
            app.notify_changed(ctx.uri)
            if (ROOT / path).is_dir():
                app.notify_list_changed()


@app.watch(BASE)
async def watch_root(ctx: Context) -> None:
    await changes(ctx, "")


@app.watch(FILE_TEMPLATE)
async def watch_file(path: str, ctx: Context) -> None:
    await changes(ctx, path)
