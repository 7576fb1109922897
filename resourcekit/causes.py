"""Deprecated: ``resourcekit.causes`` is ``resourcekit.telemetry.causes`` (this path warns for one release)."""

from ._moved import moved

__getattr__ = moved(__name__, "resourcekit.telemetry.causes")
