"""OpenTelemetry: traces and metrics per the MCP semantic conventions (``App(telemetry=True)``, the default).

| module | holds |
|---|---|
| ``spans`` | request spans (``Traced``), session and stream metrics, the provider probe |
| ``sampling`` | head sampling of root request spans for the SDK's own samplers |
| ``causes`` | what made a resource change, for the notification spans linked to it |

``use_meter_provider`` is the public name here; the rest is internal.  ``spans`` loads with the core
(its flag is what a request checks); ``sampling`` and ``causes`` load on first use, through this
module's ``__getattr__`` (``telemetry.causes``), once a provider is configured: a server that never
sees one never imports them, nor OpenTelemetry.  What ``resourcekit.telemetry``
held before it was a package is read from ``spans`` with a ``DeprecationWarning``, for one release.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import spans
from .spans import use_meter_provider

if TYPE_CHECKING:
    from . import causes as causes
    from . import sampling as sampling

__all__ = ["use_meter_provider"]


_ON_FIRST_USE = ("causes", "sampling")


def __getattr__(name: str) -> Any:
    if name in _ON_FIRST_USE:  # the submodule's import sets it here: asked once
        return importlib.import_module(f".{name}", __name__)
    if name.startswith("__") or not hasattr(spans, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import warnings

    warnings.warn(f"resourcekit.telemetry.{name} is deprecated: it is resourcekit.telemetry.spans.{name} "
                  "(the old path goes in the next release)", DeprecationWarning, stacklevel=2)
    return getattr(spans, name)
