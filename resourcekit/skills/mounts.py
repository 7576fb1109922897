"""One mounted skills directory (``add_skills``): a path, or a package's ``Traversable``; walking it,
hashing its files, checking each skill's ``SKILL.md`` and limits, and reading a served file.

``SkillMount.scan`` says what is served from one mount (files by ``skill://`` URI, each valid skill's
files, the directories of the namespace); ``SkillCatalog`` (``catalog``) puts the mounts together.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..contents import Blob, Text
from ..errors import DefinitionError, ResourceNotFound
from .files import (
    MAX_BYTES,
    MAX_FILES,
    SKILL_FILE,
    SKIPPED,
    SkillError,
    check_frontmatter,
    hash_file,
    read_confined,
    walk,
)

if TYPE_CHECKING:
    from importlib.abc import Traversable  # importlib.resources.abc from Python 3.11

__all__ = ["SCHEME", "File", "SkillMount", "reader", "segment"]

log = logging.getLogger("resourcekit")

SCHEME = "skill://"
_SAFE = "-._~!$&'()*+,;=:@"  # RFC 3986 pchar, less '%'


class File:
    """One served file: where it is, its stat key, digest and size as last hashed."""

    __slots__ = ("digest", "frontmatter", "key", "mount", "path", "size", "text")

    def __init__(self, mount: SkillMount, path: str, key: tuple[int, ...], digest: str, size: int, text: bool) -> None:
        self.mount = mount
        self.path = path
        self.key = key
        self.digest = digest
        self.size = size
        self.text = text
        self.frontmatter: dict[str, Any] | None = None  # a valid skill's SKILL.md


class SkillMount:
    """One directory given to ``add_skills``: a path, or a package's ``Traversable`` (``tree``: read
    through it, also from a zip file; what a package ships does not change while it is imported)."""

    def __init__(self, directory: str | os.PathLike[str] | Traversable, prefix: str) -> None:
        self.tree: Traversable | None = None
        if isinstance(directory, (str, os.PathLike)):
            self.display = os.fspath(directory)
            self.root = os.path.realpath(self.display)
            is_dir = os.path.isdir(self.root)
            one_skill = is_dir and os.path.isfile(os.path.join(self.root, SKILL_FILE))
            name = os.path.basename(self.root)
        elif callable(getattr(directory, "iterdir", None)) and callable(getattr(directory, "read_bytes", None)):
            self.tree, self.display, self.root = directory, str(directory), ""
            is_dir = directory.is_dir()
            one_skill = is_dir and (directory / SKILL_FILE).is_file()
            name = directory.name
        else:
            raise DefinitionError(f"add_skills takes a directory (a path, or importlib.resources.files(...) / "
                                  f"'skills'), not {directory!r}")
        if not is_dir:
            raise DefinitionError(f"skills directory {self.display!r} is not a directory")
        segments = [s for s in prefix.strip("/").split("/") if s] if prefix else []
        if any(s in (".", "..") for s in segments):
            raise DefinitionError(f"skills prefix {prefix!r} may not contain '.' or '..' segments")
        if one_skill:  # the directory is itself one skill
            segments.append(name)
        self.base = segments
        self.warned: set[str] = set()

    def read(self, path: str) -> bytes | None:
        """A served file's bytes (``path``: as ``File`` keeps it), or None if it is gone or escapes."""
        if self.tree is None:
            return read_confined(self.root, path)
        try:
            return _below(self.tree, path).read_bytes()
        except OSError:
            return None

    def uri(self, rel: str) -> str:
        parts = self.base + rel.split("/") if rel else self.base
        return SCHEME + "/".join(map(segment, parts))

    def scan(self, previous: Mapping[str, File], strict: bool) -> tuple[dict[str, File], dict[str, list[str]],
                                                                          set[str]]:
        """(served files by URI, each valid skill's file URIs by its SKILL.md URI, directory URIs)."""
        found = list(walk(self.root, self.warned) if self.tree is None else _walk_tree(self.tree))
        skill_dirs = {rel.rpartition("/")[0] for rel, is_dir, _ in found
                      if not is_dir and rel.rpartition("/")[2] == SKILL_FILE}
        if "" in skill_dirs and not self.base:  # a SKILL.md at the root needs a name: the prefix
            skill_dirs.discard("")
        hashed: dict[str, File] = {}
        members: dict[str, list[str]] = {}
        below: list[tuple[str, list[str]]] = []  # directories inside skills, and their skills
        for rel, is_dir, st in found:
            owners = [d for d in _ancestors(rel) if d in skill_dirs]
            if not owners:
                continue
            if is_dir:
                below.append((rel, owners))
                continue
            uri = self.uri(rel)
            file = self._file(uri, rel, st, previous.get(uri))
            if file is not None:
                hashed[uri] = file
                for owner in owners:
                    members.setdefault(owner, []).append(uri)
        skills: dict[str, list[str]] = {}
        valid: set[str] = set()
        for rel in sorted(skill_dirs):
            skill_uri = self.uri(f"{rel}/{SKILL_FILE}" if rel else SKILL_FILE)
            try:
                skills[skill_uri] = self._check(rel, skill_uri, hashed, members.get(rel, []))
                valid.add(rel)
            except SkillError as exc:
                if strict:
                    raise
                if str(exc) not in self.warned:
                    self.warned.add(str(exc))
                    log.error("skills: %s (the skill is not served until it is fixed)", exc)
        # what no valid skill holds is not served
        files = {u: hashed[u] for u in sorted({u for rel in valid for u in members.get(rel, [])})}
        dirs = {self.uri(rel) for rel in valid}
        dirs.update(self.uri(rel) for rel, owners in below if valid.intersection(owners))
        for uri in list(files) + list(dirs):  # every level above is a directory of the namespace
            while True:
                uri = uri.rpartition("/")[0]
                if len(uri) <= len(SCHEME) or uri in dirs:
                    break
                dirs.add(uri)
        return files, skills, dirs

    def _file(self, uri: str, rel: str, st: os.stat_result | None, old: File | None) -> File | None:
        # a package's files do not change while it is imported: hashed once
        key = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev, st.st_ctime_ns) if st is not None else ()
        if old is not None and old.key == key:
            return old  # unchanged: no re-read, no re-hash
        if self.tree is None:
            path = os.path.join(self.root, rel)
            hashed = hash_file(self.root, path)
        else:
            path, data = rel, self.read(rel)
            hashed = None if data is None else (hashlib.sha256(data).hexdigest(), len(data), data)
        if hashed is None:
            return None
        digest, size, data = hashed
        try:
            data.decode("utf-8")
            text = True
        except UnicodeDecodeError:
            text = False
        file = File(self, path, key, digest, size, text)
        if rel.rpartition("/")[2] == SKILL_FILE:
            folder = (self.base + rel.split("/"))[-2]
            try:
                file.frontmatter = check_frontmatter(data, self._where(rel), folder)
            except SkillError as exc:
                file.frontmatter = {"\0error": str(exc)}
        return file

    def _where(self, rel: str) -> str:
        return os.path.join(self.display, *rel.split("/"))

    def _check(self, rel: str, skill_uri: str, files: dict[str, File], uris: list[str]) -> list[str]:
        where = self._where(f"{rel}/{SKILL_FILE}" if rel else SKILL_FILE)
        top = files.get(skill_uri)
        if top is None or top.frontmatter is None:
            raise SkillError(f"{where}: cannot be read")
        if "\0error" in top.frontmatter:
            raise SkillError(top.frontmatter["\0error"])
        present = [u for u in uris if u in files]
        if len(present) > MAX_FILES:
            raise SkillError(f"{where}: the skill has {len(present)} files, over the limit of {MAX_FILES}")
        total = sum(files[u].size for u in present)
        if total > MAX_BYTES:
            raise SkillError(f"{where}: the skill's files total {total} bytes, over the limit of {MAX_BYTES}")
        return [skill_uri, *sorted(u for u in present if u != skill_uri)]


@functools.lru_cache(maxsize=65536)
def segment(name: str) -> str:
    return quote(name, safe=_SAFE)


def _ancestors(rel: str) -> list[str]:
    """The folders holding ``rel``, nearest first, down to the root ``""``."""
    out = []
    while rel:
        rel = rel.rpartition("/")[0]
        out.append(rel)
    return out




def _walk_tree(tree: Traversable) -> Iterator[tuple[str, bool, None]]:
    """``walk`` over a ``Traversable`` (a package's directory, also in a zip file): directories before
    their contents, names sorted, hidden names and ``__pycache__`` left out."""
    stack: list[tuple[Traversable, str]] = [(tree, "")]
    while stack:
        directory, rel = stack.pop()
        below = []
        for entry in sorted(directory.iterdir(), key=lambda e: e.name):
            if entry.name.startswith(".") or entry.name in SKIPPED:
                continue
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir():
                yield child, True, None
                below.append((entry, child))
            elif entry.is_file():
                yield child, False, None
        stack.extend(reversed(below))


def _below(tree: Traversable, rel: str) -> Traversable:
    for part in rel.split("/"):
        tree = tree / part
    return tree


def reader(mount: SkillMount, path: str, uri: str, mime: str) -> Callable[[], Text | Blob]:
    def read_skill_file() -> Text | Blob:
        data = mount.read(path)
        if data is None:
            raise ResourceNotFound(uri)
        try:
            return Text(data.decode("utf-8"), mime)
        except UnicodeDecodeError:
            return Blob(data, mime)

    return read_skill_file
