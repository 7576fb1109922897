"""Agent Skills (SEP-2640) served: ``skill://`` resources, entries, directories.

``Registry.add_skills(directory, prefix=...)`` mounts a directory (``mounts``); every folder
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
A skill a function generates (``@app.skill``, ``dynamic``) is listed as ``"dynamic"``; its files
are served by a template and its directories listed by calling the function.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..contents import Blob, Text, guess_mime_type
from ..errors import DefinitionError, ResourceNotFound
from ..pagination import SeqIndex
from .dynamic import DynamicSkill
from .files import SKILL_FILE, SkillError
from .mounts import SCHEME, File, SkillMount, reader, segment

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
class SkillCatalog:
    """Every mounted skill of one registry, as the skills methods serve them."""

    def __init__(self, registry: Mount) -> None:
        self.registry = registry
        self.mounts: list[SkillMount] = []
        self.files: dict[str, File] = {}
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
        mount = SkillMount(directory, prefix)
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
        base = SCHEME + segment(skill.name)
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
            files: dict[str, File] = {}
            skills: dict[str, list[str]] = {}
            dirs: set[str] = set()
            for mount in self.mounts:
                f, s, d = mount.scan(self.files, strict=False)
                files.update((u, x) for u, x in f.items() if u not in files)
                skills.update(s)
                dirs |= d
            self._apply(files, skills, dirs)

    def _apply(self, files: dict[str, File], skills: dict[str, list[str]], dirs: set[str]) -> None:
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

    def _register(self, uri: str, file: File) -> None:
        name, description = _shown(file)
        mime = "text/markdown" if name is not None else _mime(uri, file.text)
        self.registry.add_resource(reader(file.mount, file.path, uri, mime), uri,
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


def _shown(file: File) -> tuple[str | None, str | None]:
    fm = file.frontmatter
    if fm is None or "\0error" in fm:
        return None, None
    return str(fm["name"]), str(fm["description"])


def _mime(uri: str, text: bool) -> str:
    return guess_mime_type(uri, "") or ("text/plain" if text else "application/octet-stream")


def _entry(uri: str, members: list[str], files: Mapping[str, File]) -> dict[str, Any]:
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


def _tree(files: Mapping[str, File], dirs: set[str]) -> dict[str, tuple[tuple[str, str, bool], ...]]:
    children: dict[str, list[tuple[str, str, bool]]] = {d: [] for d in dirs}
    for uri, is_dir in [*((u, False) for u in files), *((d, True) for d in dirs)]:
        parent, _, name = uri.rpartition("/")
        if parent in children:
            children[parent].append((name, uri, is_dir))
    return {d: tuple(sorted(c)) for d, c in children.items()}
