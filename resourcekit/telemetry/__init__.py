"""OpenTelemetry: traces and metrics per the MCP semantic conventions (``App(telemetry=True)``, the default).

| module | holds |
|---|---|
| ``spans`` | request spans (``Traced``), session and stream metrics, the provider probe |
| ``sampling`` | head sampling of root request spans for the SDK's own samplers |
| ``causes`` | what made a resource change, for the notification spans linked to it |

``use_meter_provider`` is the public name here; the rest is internal.  What ``resourcekit.telemetry``
held before it was a package is read from ``spans`` with a ``DeprecationWarning``, for one release.
"""

from __future__ import annotations

from typing import Any

from . import spans
from .spans import use_meter_provider

__all__ = ["use_meter_provider"]


def __getattr__(name: str) -> Any:
    if name.startswith("__") or not hasattr(spans, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import warnings

    warnings.warn(f"resourcekit.telemetry.{name} is deprecated: it is resourcekit.telemetry.spans.{name} "
                  "(the old path goes in the next release)", DeprecationWarning, stacklevel=2)
    return getattr(spans, name)
