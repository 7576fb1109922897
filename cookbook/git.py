"""Git: a repository's refs, commits and files, through the ``git`` command (no library).

    git://refs                   branches and tags with the commits they point to (JSON)
    git://{ref}                  a commit (JSON): tree, parents, author, message; listable (its root tree)
    git://{ref}/{+path}          a file at that ref (text or binary by type), or a directory (listable)

``{ref}`` is anything git resolves to a commit: a branch, a tag, an object id,
``HEAD~2``; a ref with a slash is percent-encoded in the URI (``feature%2Fx``).
Each content's ``_meta`` carries git's own object id (``git/oid``): the blob,
tree or commit id is the natural version of what was read.  Values starting
with ``-`` are refused, and refs and paths reach git on its standard input,
never as options.  Subscribers hear about new commits by polling.

Run it:
    RESOURCEKIT_REPO=~/src/project resourcekit run cookbook/git.py   # stdio (default repo: .)
    resourcekit read cookbook/git.py git://HEAD/README.md
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import subprocess
from collections.abc import Iterator
from typing import Any

from resourcekit import App, Blob, Context, ResourceNotFound, Text, UriTemplate
from resourcekit.contents import dump_json, guess_mime_type, is_textual

REPO = os.path.abspath(os.environ.get("RESOURCEKIT_REPO", "."))
POLL = float(os.environ.get("RESOURCEKIT_POLL", "5"))
DIRECTORY = "inode/directory"
COMMIT = UriTemplate("git://{ref}")
FILE = UriTemplate("git://{ref}/{+path}")

app = App("git", version="1.0.0", instructions=f"The git repository at {REPO}, read-only.")


class GitError(Exception):
    pass


def git(*args: str, stdin: str | None = None) -> bytes:
    """Run git in REPO; its stdout.  Arguments are fixed options or validated object ids."""
    done = subprocess.run(
        ["git", "-C", REPO, *args], input=stdin.encode() if stdin is not None else None,
        capture_output=True, timeout=30, check=False,
    )
    if done.returncode != 0:
        raise GitError(done.stderr.decode(errors="replace").strip())
    return done.stdout


def _safe(value: str) -> bool:
    # a leading '-' would read as an option; a newline would end the stdin line early
    return bool(value) and not value.startswith("-") and not any(c in value for c in "\0\n\r")


def read_object(name: str) -> tuple[str, str, bytes] | None:
    """(object id, type, contents) of any git object name (``main``, ``v1^{commit}``, ``HEAD:a/b``).

    The name goes to ``git cat-file --batch`` on stdin, so it can never be taken
    for an option; None if git does not know it.
    """
    out = git("cat-file", "--batch", stdin=name + "\n")
    header, _, body = out.partition(b"\n")
    parts = header.decode(errors="replace").split()
    if len(parts) != 3 or parts[-1] in ("missing", "ambiguous"):
        return None
    oid, type_, size = parts
    return oid, type_, body[: int(size)]


def resolve(ref: str) -> str | None:
    """The commit id ``ref`` names, or None."""
    if not _safe(ref):
        return None
    found = read_object(ref + "^{commit}")
    return found[0] if found else None


def _person(line: str) -> dict[str, Any]:
    # "Ada Lovelace <ada@example.com> 1700000000 +0100"
    name, _, rest = line.partition(" <")
    email, _, when = rest.partition("> ")
    seconds, _, offset = when.partition(" ")
    sign = -1 if offset.startswith("-") else 1
    tz = dt.timezone(sign * dt.timedelta(hours=int(offset[1:3] or 0), minutes=int(offset[3:5] or 0)))
    return {"name": name, "email": email, "date": dt.datetime.fromtimestamp(int(seconds), tz).isoformat()}


def parse_commit(oid: str, raw: bytes) -> dict[str, Any]:
    head, _, message = raw.decode(errors="replace").partition("\n\n")
    commit: dict[str, Any] = {"commit": oid, "parents": []}
    for line in head.split("\n"):
        key, _, value = line.partition(" ")
        if key == "tree":
            commit["tree"] = value
        elif key == "parent":
            commit["parents"].append({"commit": value, "uri": COMMIT.expand(ref=value)})
        elif key in ("author", "committer"):
            commit[key] = _person(value)
    commit["message"] = message
    return commit


# --- refs --------------------------------------------------------------------------


def refs() -> list[dict[str, Any]]:
    out = git("for-each-ref", "--format=%(refname)%00%(refname:short)%00%(objecttype)%00%(objectname)"
              "%00%(*objectname)", "refs/heads", "refs/tags")
    found = []
    for line in out.decode(errors="replace").splitlines():
        name, short, type_, oid, peeled = line.split("\0")
        found.append({"name": name, "short": short, "uri": COMMIT.expand(ref=short),
                      "commit": peeled or oid, **({"tag": oid} if type_ == "tag" else {})})
    return found


@app.resource("git://refs", poll=POLL)
def all_refs() -> dict[str, Any]:
    """Branches and tags, and what HEAD points to."""
    head: dict[str, Any] = {"commit": resolve("HEAD")}
    with contextlib.suppress(GitError):  # a detached HEAD has no symbolic ref
        head["ref"] = git("symbolic-ref", "-q", "HEAD").decode().strip()
    return {"head": head, "refs": refs()}


# --- commits ------------------------------------------------------------------------


def tree_entries(tree: str) -> list[tuple[str, str, str, int | None, str]]:
    """(mode, type, oid, size, name) of one tree object (``tree`` is a checked object id)."""
    entries = []
    for record in git("ls-tree", "-z", "--long", tree).split(b"\0"):
        if not record:
            continue
        info, _, name = record.decode(errors="surrogateescape").partition("\t")
        mode, type_, oid, size = info.split()
        entries.append((mode, type_, oid, int(size) if size.isdigit() else None, name))
    return entries


def _child_items(ref: str, tree: str, prefix: str) -> Iterator[dict[str, Any]]:
    for _, type_, _, size, name in tree_entries(tree):
        if type_ == "commit":
            continue  # a submodule: its objects are not in this repository
        path = f"{prefix}/{name}" if prefix else name
        item: dict[str, Any] = {"uri": FILE.expand(ref=ref, path=path), "name": path}
        if type_ == "tree":
            item["mimeType"] = DIRECTORY
        else:
            item["size"] = size
            mime_type = guess_mime_type(name, "")
            if mime_type:
                item["mimeType"] = mime_type
        yield item


def _refs_listed() -> Iterator[dict[str, Any]]:
    yield {"ref": "HEAD", "title": "HEAD"}
    for found in refs():
        yield {"ref": found["short"], "title": found["name"]}


def _commit_children(ref: str) -> Iterator[dict[str, Any]] | None:
    oid = resolve(ref)
    if oid is None:
        return None
    return _child_items(ref, parse_commit(oid, read_object(oid)[2])["tree"], "")  # type: ignore[index]


@app.template("git://{ref}", lister=_refs_listed, children=_commit_children, poll=POLL,
              mime_type="application/json")
def commit(ref: str, ctx: Context) -> Text:
    """A commit: its tree, parents, author, committer and message (list it for its files)."""
    oid = resolve(ref)
    if oid is None:
        raise ResourceNotFound(ctx.uri)
    found = read_object(oid)
    assert found is not None
    return Text(dump_json(parse_commit(oid, found[2])).decode(), "application/json",
                meta={"git/oid": oid, "git/type": "commit"})


# --- files --------------------------------------------------------------------------


def _safe_path(path: str) -> bool:
    return _safe(path) and not path.startswith("/") and all(
        part not in ("", ".", "..") for part in path.split("/"))


def object_at(ref: str, path: str) -> tuple[str, str, bytes] | None:
    """(oid, type, contents) of ``path`` in the commit ``ref`` names."""
    if not _safe_path(path):
        return None
    oid = resolve(ref)
    if oid is None:
        return None
    found = read_object(f"{oid}:{path}")
    return found if found is not None and found[1] in ("blob", "tree") else None


@functools.lru_cache(maxsize=8)
def files_in(tree: str) -> tuple[dict[str, Any], ...]:
    """Every file of a tree, recursively.  Trees are immutable, so their id is a perfect cache key."""
    files = []
    for record in git("ls-tree", "-r", "-z", "--long", tree).split(b"\0"):
        if not record:
            continue
        info, _, path = record.decode(errors="surrogateescape").partition("\t")
        _, type_, _, size = info.split()
        if type_ == "blob":
            item: dict[str, Any] = {"ref": "HEAD", "path": path, "name": path, "size": int(size)}
            mime_type = guess_mime_type(path, "")
            if mime_type:
                item["mimeType"] = mime_type
            files.append(item)
    return tuple(files)


def head_files(offset: int, limit: int) -> tuple[dict[str, Any], ...]:
    """The files at HEAD, a page at a time (paged lister form)."""
    found = read_object("HEAD^{tree}")
    return files_in(found[0])[offset: offset + limit] if found else ()


def _file_children(ref: str, path: str) -> Iterator[dict[str, Any]] | None:
    found = object_at(ref, path)
    if found is None or found[1] != "tree":
        return None  # a file: not listable
    return _child_items(ref, found[0], path)


@app.template("git://{ref}/{+path}", lister=head_files, children=_file_children, poll=POLL)
def file(ref: str, path: str, ctx: Context) -> Text | Blob:
    """A file at a ref (text or binary by its type), or a directory (its entries, one a line)."""
    found = object_at(ref, path)
    if found is None:
        raise ResourceNotFound(ctx.uri)
    oid, type_, data = found
    meta = {"git/oid": oid, "git/type": type_}
    if type_ == "tree":
        names = [name + ("/" if t == "tree" else "") for _, t, _, _, name in tree_entries(oid)]
        return Text("\n".join(names), DIRECTORY, meta=meta)
    mime_type = guess_mime_type(path, "")
    textual = is_textual(mime_type) if mime_type else b"\0" not in data[:8192]
    if textual:
        try:
            return Text(data.decode("utf-8"), mime_type or "text/plain", meta=meta)
        except UnicodeDecodeError:
            pass
    return Blob(data, mime_type or "application/octet-stream", meta=meta)
