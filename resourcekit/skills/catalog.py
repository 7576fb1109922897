"""Agent Skills (SEP-2640) served from directories: ``skill://`` resources, entries, directories.

``Registry.add_skills(directory, prefix=...)`` mounts a directory; every folder
under it holding a ``SKILL.md`` is a skill, served as ``skill://<prefix/><path>/<file>``.
Each file becomes an ordinary resource through ``add_resource``; this module keeps
what the skills methods need beside them: each skill's entry (verbatim frontmatter,
every file with its SHA-256 digest and size) and the directory tree.

Digests are computed once and refreshed only when a file's stat (mtime, size,
inode) moves.  A rescan (every ``poll`` seconds while a server runs, and at once when
``watchfiles``, if installed, reports a change; in a worker thread) registers added
files and removes deleted ones (the registry sends ``list_changed``), and asks the
tracker to re-check changed ones (subscribers hear ``updated``).  At start-up a bad
skill is a ``SkillError`` naming its ``SKILL.md``; later it is logged, once, and left out.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import importlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from ..contents import Blob, Text, guess_mime_type
from ..errors import DefinitionError, ResourceNotFound
from ..pagination import SeqIndex
from .dynamic import DynamicSkill
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

    from .._runner import ThreadRunner

__all__ = ["DIRECTORY_MIME", "Mount", "SkillCatalog", "SkillError"]


class Mount(Protocol):
    """What the catalog asks of the registry it mounts files into (``Registry``)."""

    def add_resource(self, fn: Callable[..., Any], uri: str, *, name: str, description: str | None,
                     mime_type: str) -> object: ...

    def remove(self, uri: str) -> None: ...

    def add_template(self, fn: Callable[..., Any], uri_template: str, *, name: str, tool: bool,
                     description: str) -> object: ...

    def notify_changed(self, uri: str) -> None: ...

log = logging.getLogger("resourcekit")

DIRECTORY_MIME = "inode/directory"
SCHEME = "skill://"
_SAFE = "-._~!$&'()*+,;=:@"  # RFC 3986 pchar, less '%'


class _File:
    """One served file: where it is, its stat key, digest and size as last hashed."""

    __slots__ = ("digest", "frontmatter", "key", "mount", "path", "size", "text")

    def __init__(self, mount: _Mount, path: str, key: tuple[int, ...], digest: str, size: int, text: bool) -> None:
        self.mount = mount
        self.path = path
        self.key = key
        self.digest = digest
        self.size = size
        self.text = text
        self.frontmatter: dict[str, Any] | None = None  # a valid skill's SKILL.md


class _Mount:
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
        """A served file's bytes (``path``: as ``_File`` keeps it), or None if it is gone or escapes."""
        if self.tree is None:
            return read_confined(self.root, path)
        try:
            return _below(self.tree, path).read_bytes()
        except OSError:
            return None

    def uri(self, rel: str) -> str:
        parts = self.base + rel.split("/") if rel else self.base
        return SCHEME + "/".join(map(_segment, parts))

    def scan(self, previous: Mapping[str, _File], strict: bool) -> tuple[dict[str, _File], dict[str, list[str]],
                                                                          set[str]]:
        """(served files by URI, each valid skill's file URIs by its SKILL.md URI, directory URIs)."""
        found = list(walk(self.root, self.warned) if self.tree is None else _walk_tree(self.tree))
        skill_dirs = {rel.rpartition("/")[0] for rel, is_dir, _ in found
                      if not is_dir and rel.rpartition("/")[2] == SKILL_FILE}
        if "" in skill_dirs and not self.base:  # a SKILL.md at the root needs a name: the prefix
            skill_dirs.discard("")
        hashed: dict[str, _File] = {}
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

    def _file(self, uri: str, rel: str, st: os.stat_result | None, old: _File | None) -> _File | None:
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
        file = _File(self, path, key, digest, size, text)
        if rel.rpartition("/")[2] == SKILL_FILE:
            folder = (self.base + rel.split("/"))[-2]
            try:
                file.frontmatter = check_frontmatter(data, self._where(rel), folder)
            except SkillError as exc:
                file.frontmatter = {"\0error": str(exc)}
        return file

    def _where(self, rel: str) -> str:
        return os.path.join(self.display, *rel.split("/"))

    def _check(self, rel: str, skill_uri: str, files: dict[str, _File], uris: list[str]) -> list[str]:
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
def _segment(name: str) -> str:
    return quote(name, safe=_SAFE)


def _ancestors(rel: str) -> list[str]:
    """The folders holding ``rel``, nearest first, down to the root ``""``."""
    out = []
    while rel:
        rel = rel.rpartition("/")[0]
        out.append(rel)
    return out


class SkillCatalog:
    """Every mounted skill of one registry, as the skills methods serve them."""

    def __init__(self, registry: Mount) -> None:
        self.registry = registry
        self.mounts: list[_Mount] = []
        self.files: dict[str, _File] = {}
        self.skills: dict[str, list[str]] = {}  # SKILL.md URI -> its files' URIs (SKILL.md first)
        self.entries: dict[str, dict[str, Any]] = {}  # SKILL.md URI -> its skills/list entry
        self.index: SeqIndex[str] = SeqIndex()  # listing order of SKILL.md URIs
        self.seqs: dict[str, int] = {}
        self.dirs: dict[str, tuple[tuple[str, str, bool], ...]] = {}  # dir URI -> (name, uri, is_dir) children
        self.poll: float | None = None
        self.dynamic: dict[str, DynamicSkill] = {}  # skill:// directory URI -> a skill a function generates
        self._seq = 0
        self._lock = threading.Lock()
        self._task: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._stop_watching: asyncio.Event | None = None
        self._servers = 0

    def mount(self, directory: str | os.PathLike[str] | Traversable, prefix: str, poll: float | None) -> None:
        if poll is not None and poll <= 0:
            raise DefinitionError("poll interval of skills must be positive")
        mount = _Mount(directory, prefix)
        with self._lock:
            files, skills, dirs = mount.scan({}, strict=True)
            clash = next((u for u in files if u in self.files), None)
            if clash is not None:
                raise DefinitionError(f"{mount.display}: {clash} is already served by another skills directory")
            self.mounts.append(mount)
            if poll is not None:
                self.poll = poll if self.poll is None else min(self.poll, poll)
            self._apply({**self.files, **files}, {**self.skills, **skills}, set(self.dirs) | dirs)

    def add_dynamic(self, skill: DynamicSkill) -> None:
        """Serve a generated skill: its ``SKILL.md`` listed, its other files by a template, read on demand."""
        base = SCHEME + _segment(skill.name)
        top = f"{base}/{SKILL_FILE}"
        with self._lock:
            if base in self.dynamic or top in self.entries or top in self.files:
                raise SkillError(f"{skill.where}: skill {top} is already served")
            registry = self.registry

            def read_skill_md() -> Text:
                text = _files_of(skill, top)[SKILL_FILE]
                assert isinstance(text, str)  # DynamicSkill.files made it so
                return Text(text, "text/markdown")

            def read_skill_file(path: str) -> Text | Blob:
                uri = f"{base}/{path}"
                content = _files_of(skill, uri).get(path)
                if content is None:
                    raise ResourceNotFound(uri)
                mime = guess_mime_type(path, "")
                if isinstance(content, str):
                    return Text(content, mime or "text/plain")
                return Blob(content, mime or "application/octet-stream")

            registry.add_resource(read_skill_md, top, name=skill.name, description=skill.frontmatter["description"],
                                  mime_type="text/markdown")
            registry.add_template(read_skill_file, base + "/{+path}", name=f"{skill.name}-files", tool=False,
                                  description=f"A file of the skill {skill.name} (generated when read)")
            self.dynamic[base] = skill
            self.entries[top] = _dynamic_entry(top, skill)
            self._seq += 1
            self.seqs[top] = self._seq
            self.index.append(self._seq, top)

    def _dynamic_entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for base, skill in self.dynamic.items():
            yield f"{base}/{SKILL_FILE}", _dynamic_entry(f"{base}/{SKILL_FILE}", skill)

    def dynamic_directory(self, uri: str) -> Callable[[], tuple[tuple[str, str, bool], ...]] | None:
        """For a directory of a generated skill, what lists it (called in a worker: it calls the function)."""
        for base, skill in self.dynamic.items():
            if uri == base or uri.startswith(base + "/"):
                path = uri[len(base) + 1:].strip("/")

                def listing(skill: DynamicSkill = skill, base: str = base, path: str = path) -> tuple[
                        tuple[str, str, bool], ...]:
                    children = skill.children(path)
                    if children is None:
                        raise ResourceNotFound(uri)
                    return tuple((name, f"{base}/{rel}", is_dir) for name, rel, is_dir in children)

                return listing
        return None

    def rescan(self) -> None:
        """Look at every mount again (a worker thread): register, remove and re-check what moved."""
        with self._lock:
            files: dict[str, _File] = {}
            skills: dict[str, list[str]] = {}
            dirs: set[str] = set()
            for mount in self.mounts:
                f, s, d = mount.scan(self.files, strict=False)
                files.update((u, x) for u, x in f.items() if u not in files)
                skills.update(s)
                dirs |= d
            self._apply(files, skills, dirs)

    def _apply(self, files: dict[str, _File], skills: dict[str, list[str]], dirs: set[str]) -> None:
        """Make ``files`` what is served: the new entries first, then the resources and the
        notifications they send (a client told of a change finds the new entry)."""
        registry, old = self.registry, self.files
        changed = [u for u, f in files.items() if u in old and old[u] is not f]
        if not changed and files.keys() == old.keys() and skills == self.skills and set(self.dirs) == dirs:
            return  # nothing moved: entries stay as they are
        self.files = files
        self.entries = {uri: _entry(uri, members, files) for uri, members in skills.items()}
        self.entries.update((uri, entry) for uri, entry in self._dynamic_entries())
        for uri in [u for u in self.seqs if u not in skills and u not in self.entries]:
            self.index.remove(self.seqs.pop(uri))
        for uri in sorted(u for u in skills if u not in self.seqs):
            self._seq += 1
            self.seqs[uri] = self._seq
            self.index.append(self._seq, uri)
        self.skills = skills
        self.dirs = _tree(files, dirs)
        for uri, file in files.items():
            if uri not in old:
                self._register(uri, file)
        for uri in [u for u in old if u not in files]:
            with contextlib.suppress(KeyError):
                registry.remove(uri)
            registry.notify_changed(uri)  # subscribers hear it is gone
        for uri in changed:
            if _shown(old[uri]) != _shown(files[uri]):  # a SKILL.md's name or description: a new Resource
                registry.remove(uri)
                self._register(uri, files[uri])
            registry.notify_changed(uri)

    def _register(self, uri: str, file: _File) -> None:
        name, description = _shown(file)
        mime = "text/markdown" if name is not None else _mime(uri, file.text)
        self.registry.add_resource(_reader(file.mount, file.path, uri, mime), uri,
                                   name=name or uri.rpartition("/")[2], description=description, mime_type=mime)

    # --- serving: a rescan every ``poll`` seconds while a server runs --------------------------

    def start(self, loop: asyncio.AbstractEventLoop, runner: ThreadRunner) -> None:
        self._servers += 1
        if self._task is None and self.poll is not None:
            self._task = loop.create_task(self._poll(runner, self.poll))
            try:  # with watchfiles installed a change is also noticed at once
                watchfiles = importlib.import_module("watchfiles")
            except ImportError:
                return
            self._stop_watching = asyncio.Event()
            self._watcher = loop.create_task(self._watch(runner, watchfiles, self._stop_watching))

    def stop(self) -> None:
        self._servers -= 1
        if self._servers <= 0 and self._task is not None:
            self._task.cancel()
            self._task = None
            if self._stop_watching is not None:
                self._stop_watching.set()  # the watcher's thread ends within its step (50 ms)
                self._stop_watching = None

    async def _watch(self, runner: ThreadRunner, watchfiles: Any, stop: asyncio.Event) -> None:
        try:
            roots = [m.root for m in self.mounts if m.tree is None]
            if not roots:
                return  # only packages: nothing to watch
            async for _ in watchfiles.awatch(*roots, stop_event=stop, debounce=100):
                await runner.call(self.rescan)
        except Exception:
            if not stop.is_set():
                log.exception("skills: watching for changes failed; polling every %s s", self.poll)

    async def _poll(self, runner: ThreadRunner, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await runner.call(self.rescan)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("skills: rescanning failed")


def _shown(file: _File) -> tuple[str | None, str | None]:
    fm = file.frontmatter
    if fm is None or "\0error" in fm:
        return None, None
    return str(fm["name"]), str(fm["description"])


def _mime(uri: str, text: bool) -> str:
    return guess_mime_type(uri, "") or ("text/plain" if text else "application/octet-stream")


def _entry(uri: str, members: list[str], files: Mapping[str, _File]) -> dict[str, Any]:
    fm = files[uri].frontmatter
    assert fm is not None
    return {"uri": uri, "frontmatter": fm,
            "resources": [{"uri": u, "digest": "sha256:" + files[u].digest, "size": files[u].size} for u in members]}


def _dynamic_entry(uri: str, skill: DynamicSkill) -> dict[str, Any]:
    return {"uri": uri, "frontmatter": skill.frontmatter, "resources": "dynamic"}  # SEP-2640: no digests


def _files_of(skill: DynamicSkill, uri: str) -> dict[str, str | bytes]:
    try:
        return skill.files()
    except (TypeError, ValueError) as exc:  # the function's mistake: logged, answered as a handler's bug
        raise RuntimeError(f"{uri}: {exc}") from exc


def _tree(files: Mapping[str, _File], dirs: set[str]) -> dict[str, tuple[tuple[str, str, bool], ...]]:
    children: dict[str, list[tuple[str, str, bool]]] = {d: [] for d in dirs}
    for uri, is_dir in [*((u, False) for u in files), *((d, True) for d in dirs)]:
        parent, _, name = uri.rpartition("/")
        if parent in children:
            children[parent].append((name, uri, is_dir))
    return {d: tuple(sorted(c)) for d, c in children.items()}


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


def _reader(mount: _Mount, path: str, uri: str, mime: str) -> Callable[[], Text | Blob]:
    def read_skill_file() -> Text | Blob:
        data = mount.read(path)
        if data is None:
            raise ResourceNotFound(uri)
        try:
            return Text(data.decode("utf-8"), mime)
        except UnicodeDecodeError:
            return Blob(data, mime)

    return read_skill_file
