"""mimeTypes: which is text, which a declaration gets, which a name suggests."""

from __future__ import annotations

import os

__all__ = ["declared_mime_type", "guess_mime_type", "is_textual"]

_TEXTUAL_APPLICATION = ("json", "xml", "javascript", "yaml", "toml", "x-sh", "sql", "csv")


def is_textual(mime_type: str) -> bool:
    """Is content of ``mime_type`` text (``text/*``, or JSON, XML, YAML and their kin)?"""
    main, _, sub = mime_type.partition("/")
    return main == "text" or (main == "application" and any(t in sub for t in _TEXTUAL_APPLICATION))


def declared_mime_type(declared: str | None, inferred: str | None, uri: str) -> str | None:
    """The declared mimeType, else the one inferred from the handler's return annotation; when neither
    is telling, a URI ending in .png or .md says more than a bare ``bytes``/``str``."""
    mime_type = declared or inferred
    if declared is None and mime_type in _GUESSABLE and "." in uri:  # most URIs: no call
        mime_type = guess_mime_type(uri, "") or mime_type
    return mime_type


_GUESSABLE = frozenset({None, "application/octet-stream", "text/plain"})


def guess_mime_type(name: str, default: str) -> str:
    """mimeType from a URI's or file's extension, else ``default``."""
    if "." not in name:
        return default  # most URIs: decided without a copy (declaring 100,000 is a hot path)
    last = name.rstrip("/").rsplit("/", 1)[-1]
    if "." not in last:
        return default
    suffix = os.path.splitext(last)[1]
    if not suffix:
        return default
    import mimetypes  # deferred: its database is read on first use, which start-up need not pay

    guessed, _ = mimetypes.guess_type("x" + suffix, strict=False)
    if guessed is None:
        guessed = _EXTRA_TYPES.get(suffix.lower())
    return guessed or default


_EXTRA_TYPES = {".md": "text/markdown", ".yaml": "application/yaml", ".yml": "application/yaml",
                ".toml": "application/toml", ".log": "text/plain", ".py": "text/x-python"}
