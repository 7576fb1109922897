"""Deprecated: ``resourcekit.handler`` is ``resourcekit.declaration`` (this path warns for one release)."""

from ._moved import moved

__getattr__ = moved(__name__, "resourcekit.declaration")
