"""Deprecated: ``resourcekit.sampling`` is ``resourcekit.telemetry.sampling`` (this path warns for one release)."""

from ._moved import moved

__getattr__ = moved(__name__, "resourcekit.telemetry.sampling")
