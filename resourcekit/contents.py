"""Turning a handler's return value into resource contents, and versions.

A version is a hash of exactly the bytes served plus their mimeType, so two
reads that would look identical to a client always carry the same version.
"""

from __future__ import annotations

import base64
import builtins
import dataclasses
import sys
import types
import typing
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin

import orjson

if TYPE_CHECKING:
    import hashlib
    import pathlib

from .mime import guess_mime_type, is_textual  # part of this module's public edge: re-exported

__all__ = ["TEXT_MIME", "Blob", "Content", "StreamedVersion", "Text", "dump_json", "guess_mime_type", "is_textual",
           "never_served", "text_version", "to_contents", "version_of"]

JSON_MIME = "application/json"
TEXT_MIME = "text/plain"
BINARY_MIME = "application/octet-stream"


class Text:
    """Explicit text contents, with its own mimeType, URI or ``_meta``."""

    __slots__ = ("meta", "mime_type", "text", "uri")

    def __init__(
        self,
        text: str,
        mime_type: str | None = None,
        *,
        uri: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.text = text
        self.mime_type = mime_type
        self.uri = uri
        self.meta = meta

    def __repr__(self) -> str:
        return f"Text({self.text[:40]!r}, mime_type={self.mime_type!r}, uri={self.uri!r})"


class Blob:
    """Explicit binary contents, served base64-encoded."""

    __slots__ = ("data", "meta", "mime_type", "uri")

    def __init__(
        self,
        data: bytes,
        mime_type: str | None = None,
        *,
        uri: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.data = bytes(data)
        self.mime_type = mime_type
        self.uri = uri
        self.meta = meta

    def __repr__(self) -> str:
        return f"Blob(<{len(self.data)} bytes>, mime_type={self.mime_type!r}, uri={self.uri!r})"


class Content:
    """One item of ``contents`` as served: encoded once, hashed once."""

    __slots__ = ("data", "meta", "mime_type", "text", "uri", "version")

    def __init__(
        self,
        uri: str,
        mime_type: str,
        text: str | None,
        data: bytes,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.uri = uri
        self.mime_type = mime_type
        self.text = text  # None for a blob
        self.data = data  # the exact bytes served (UTF-8 for text)
        self.meta = meta
        self.version = version_of(data, mime_type)

    @property
    def size(self) -> int:
        return len(self.data)

    def to_wire(self, version_key: str | None = None) -> dict[str, Any]:
        wire: dict[str, Any] = {"uri": self.uri, "mimeType": self.mime_type}
        if self.text is not None:
            wire["text"] = self.text
        else:
            wire["blob"] = base64.b64encode(self.data).decode("ascii")
        meta = dict(self.meta) if self.meta else {}
        if version_key is not None:
            meta[version_key] = self.version
        if meta:
            wire["_meta"] = meta
        return wire


def _bind_hashes() -> None:
    """Bind hashlib's constructors in place of the two below (once; a race binds the same ones):
    importing hashlib (its OpenSSL half) is 2.5 ms of start-up, and a server answers
    ``initialize`` without hashing anything."""
    global blake2b, sha256
    import hashlib  # deferred for start-up, see above

    blake2b, sha256 = hashlib.blake2b, hashlib.sha256


def _first_blake2b(data: bytes = b"", *, digest_size: int = 64) -> hashlib.blake2b:
    _bind_hashes()
    return blake2b(data, digest_size=digest_size)


def _first_sha256(data: bytes = b"") -> hashlib._Hash:
    _bind_hashes()
    return sha256(data)


# hashlib.blake2b and hashlib.sha256 from the first hash on (call them through the module:
# ``from .contents import blake2b`` would keep the stand-in)
blake2b: Callable[..., hashlib.blake2b] = _first_blake2b
sha256: Callable[..., hashlib._Hash] = _first_sha256

_SHORT = 1 << 16  # bytes: below, one BLAKE2b call is cheapest; above, SHA-256 (SHA extensions)
_SUFFIXES: dict[str, bytes] = {}


def version_of(data: bytes, mime_type: str) -> str:
    """A 128-bit hash of the bytes and mimeType, in hex: the version of a content.

    Short contents (the most frequent reads) take one BLAKE2b call; long ones SHA-256,
    which CPUs with SHA extensions run at 0.8 ms per MiB against BLAKE2b's 2.1.  Both
    are collision-resistant and the choice depends on the bytes alone, so equal
    contents always get equal versions.
    """
    suffix = _SUFFIXES.get(mime_type)
    if suffix is None:
        suffix = b"\0" + mime_type.encode()
        if len(_SUFFIXES) < 256:  # mimeTypes are few; never let them pile up
            _SUFFIXES[mime_type] = suffix
    if len(data) < _SHORT:
        return blake2b(data + suffix, digest_size=16).hexdigest()
    return _long_version((data,), suffix)


def _long_version(pieces: Iterable[bytes], suffix: bytes) -> str:
    """``version_of`` contents of ``_SHORT`` bytes or more, given in pieces: SHA-256."""
    digest = sha256()
    for piece in pieces:
        digest.update(piece)
    digest.update(suffix)
    return digest.hexdigest()[:32]


_MEMO_TEXT = 256  # characters: texts up to this long have their versions remembered
_MEMO_SIZE = 4096  # texts (as many as the router caches URIs); the table starts over when full
_TEXT_VERSIONS: dict[str, tuple[str, str]] = {}  # text -> (mimeType, version): 2 MB at most


def text_version(text: str, mime_type: str) -> str:
    """``version_of`` the text's UTF-8 bytes; a short text's version is remembered, by the text.

    Most reads serve a few short texts again and again: a dict lookup then replaces the
    encoding and the hash (equal texts have equal versions, so nothing else can change).
    """
    if len(text) <= _MEMO_TEXT:
        known = _TEXT_VERSIONS.get(text)
        if known is not None and known[0] == mime_type:
            return known[1]
    elif len(text) >= _SHORT:
        return _long_text_version(text, mime_type)
    version = version_of(text.encode("utf-8", "surrogatepass"), mime_type)
    if len(text) <= _MEMO_TEXT:
        if len(_TEXT_VERSIONS) >= _MEMO_SIZE:
            _TEXT_VERSIONS.clear()
        _TEXT_VERSIONS[text] = (mime_type, version)
    return version


_LONG_MEMO_BYTES = 1 << 22  # long texts up to this size in memory are remembered, the last one per length
_LONG_MEMO_SIZE = 4  # lengths: 16 MiB in all at most; the table starts over when full
_LONG_VERSIONS: dict[int, tuple[str, str, str]] = {}  # len(text) -> (text, mimeType, version)


def _long_text_version(text: str, mime_type: str) -> str:
    """``text_version`` of a text of ``_SHORT`` characters or more.

    A file-backed resource serves a new but equal ``str`` on every read: comparing it with
    the last text of its length served (a ``memcmp`` that stops at the first difference,
    0.03 ms per MiB) replaces the SHA-256 (0.65 ms per MiB) whenever it did not change.
    Otherwise the text is hashed encoded a piece at a time: a worker hashing a 1 MiB text
    holds 64 KiB of its bytes, not 1 MiB (its allocator keeps it).  Workers may run this at
    once: the table's reads and writes are single dict operations.
    """
    size = len(text)
    known = _LONG_VERSIONS.get(size)
    if known is not None and known[1] == mime_type and known[0] == text:
        return known[2]
    version = _long_version((text[start:start + _SHORT].encode("utf-8", "surrogatepass")
                             for start in range(0, size, _SHORT)), b"\0" + mime_type.encode())
    if sys.getsizeof(text) <= _LONG_MEMO_BYTES:  # in bytes: a text of wide characters takes up to 4 each
        if len(_LONG_VERSIONS) >= _LONG_MEMO_SIZE and size not in _LONG_VERSIONS:
            _LONG_VERSIONS.clear()
        _LONG_VERSIONS[size] = (text, mime_type, version)
    return version


class StreamedVersion:
    """``version_of`` bytes that come in pieces (a streamed body), computed as they come:
    SHA-256 from the first piece, the first ``_SHORT`` bytes kept until there are more, so a body
    shorter than that gets the BLAKE2b ``version_of`` gives it; equal bodies, equal versions."""

    __slots__ = ("digest", "head", "size")

    def __init__(self) -> None:
        self.digest = sha256()
        self.head: list[bytes] | None = []
        self.size = 0

    def update(self, piece: bytes) -> None:
        self.digest.update(piece)
        self.size += len(piece)
        if self.head is not None:
            if self.size < _SHORT:
                self.head.append(piece)
            else:
                self.head = None

    def version(self, mime_type: str) -> str:
        if self.head is not None:
            return version_of(b"".join(self.head), mime_type)
        self.digest.update(b"\0" + mime_type.encode())
        return self.digest.hexdigest()[:32]


def combined_version(contents: list[Content]) -> str:
    """The version of a whole read: its single content's, or a hash over all of them."""
    if len(contents) == 1:
        return contents[0].version
    digest = sha256()
    for content in contents:
        digest.update(content.uri.encode() + b"\0" + content.version.encode())
    return digest.hexdigest()[:32]


def _json_default(value: Any) -> Any:
    """What orjson cannot serialise itself (it does UUID, date, datetime, time, Enum and dataclasses)."""
    decimals = sys.modules.get("decimal")  # a Decimal comes from a module that imported decimal
    if decimals is not None and isinstance(value, decimals.Decimal):
        # its exact digits as a JSON number (no float's rounding); NaN and infinities as orjson
        # writes a float's: null
        return orjson.Fragment(str(value).encode()) if value.is_finite() else None
    dump = getattr(value, "model_dump", None)  # pydantic v2, never imported here
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    paths = sys.modules.get("pathlib")  # a path comes from a module that imported pathlib (start-up need not)
    if paths is not None and isinstance(value, paths.PurePath):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dump_json(value: Any) -> bytes:
    """``value`` as JSON bytes, as resourcekit serves a handler's JSON result (dates, UUIDs, Decimals,
    dataclasses and non-string keys included)."""
    return orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS)


def _file_content(uri: str, path: pathlib.Path, mime_type: str | None) -> Content:
    data = path.read_bytes()
    mime = mime_type or guess_mime_type(path.name, BINARY_MIME)
    if is_textual(mime):
        try:
            return Content(uri, mime, data.decode("utf-8"), data)
        except UnicodeDecodeError:
            pass
    return Content(uri, mime, None, data)


def _one(uri: str, value: Any, mime_type: str | None) -> Content:
    """One content from one value; ``mime_type`` is the declared or inferred default."""
    if isinstance(value, str):
        return Content(uri, mime_type or TEXT_MIME, value, value.encode("utf-8", "surrogatepass"))
    if isinstance(value, Text):
        text = value.text
        return Content(
            value.uri or uri, value.mime_type or mime_type or TEXT_MIME, text,
            text.encode("utf-8", "surrogatepass"), value.meta,
        )
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Content(uri, mime_type or BINARY_MIME, None, bytes(value))
    if isinstance(value, Blob):
        return Content(value.uri or uri, value.mime_type or mime_type or BINARY_MIME, None,
                       value.data, value.meta)
    paths = sys.modules.get("pathlib")  # a Path comes from a module that imported pathlib (start-up need not)
    if paths is not None and isinstance(value, paths.Path):
        return _file_content(uri, value, mime_type)
    if value is None:
        raise TypeError("handler returned None; return str, bytes, JSON data, a Path, Text or Blob")
    if (
        isinstance(value, (dict, list, tuple, int, float, bool))
        or dataclasses.is_dataclass(value)
        or hasattr(value, "model_dump")
    ):
        data = dump_json(value)
        return Content(uri, mime_type if mime_type and "json" in mime_type else JSON_MIME,
                       data.decode("utf-8"), data)
    raise TypeError(
        f"cannot serve a value of type {type(value).__name__}; return str, bytes, JSON data, a Path, Text or Blob"
    )


def to_contents(uri: str, value: Any, mime_type: str | None = None) -> list[Content]:
    """The contents of a read of ``uri`` whose handler returned ``value``."""
    if isinstance(value, list) and value and all(isinstance(v, (Text, Blob)) for v in value):
        # a ``list[...]`` annotation made the default JSON; each item knows better
        item_mime = None if mime_type == JSON_MIME else mime_type
        return [_one(uri, v, item_mime) for v in value]
    return [_one(uri, value, mime_type)]


# the builtin classes whose values (or their subclasses') ``_one`` serves; no value of any other
# builtin class (set, complex, range...) can be served, nor None, nor any iterator
_SERVABLE_BUILTINS = frozenset({object, str, bytes, bytearray, memoryview, dict, list, tuple, int, float, bool})
_NEVER = (type(None), Iterator, Generator, AsyncIterator, AsyncGenerator)
_UNIONS = (typing.Union, types.UnionType)
_BUILTINS = vars(builtins)


def never_served(annotation: Any) -> bool:
    """Whether a return annotation rules out every value ``to_contents`` serves (``-> set``, ``-> None``,
    ``-> Iterator[str]``; in a union, every member).  Classes of their own, which a servable subclass
    (a dataclass) may extend, and whatever is not a class (Any, a TypeVar, a string) pass."""
    if annotation is None:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return never_served(get_args(annotation)[0])
    if origin in _UNIONS:
        return all(never_served(member) for member in get_args(annotation))
    if origin is not None:
        annotation = origin
    if not isinstance(annotation, type):
        return False
    if _BUILTINS.get(annotation.__name__) is annotation:  # a builtin (not a class that only says it is one)
        return annotation not in _SERVABLE_BUILTINS
    return annotation in _NEVER
