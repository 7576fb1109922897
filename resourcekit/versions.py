"""Deprecated: ``resourcekit.versions`` is ``resourcekit.revisions`` (this path warns for one release)."""

from ._moved import moved

__getattr__ = moved(__name__, "resourcekit.revisions")
