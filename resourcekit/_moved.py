"""Old import paths kept for one release: each warns (``DeprecationWarning``) naming the new one.

A stub module for an old path sets ``__getattr__ = moved(__name__, "resourcekit.new")``; a package
whose attributes moved keeps a table of them.  The new module is imported by name, when an
attribute is first asked for: the stubs import nothing themselves, so they cost nothing at
start-up and draw no arrow in the layer contract.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved", "moved_attributes"]


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated: import it from {new} (the old path goes in the next release)",
                  DeprecationWarning, stacklevel=3)


def moved(old: str, new: str) -> Callable[[str], Any]:
    """A module ``__getattr__``: every attribute of ``old`` is now ``new``'s."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(importlib.import_module(new), name)
        _warn(f"{old}.{name}", f"{new}")
        return value

    return __getattr__


def moved_attributes(old: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the attributes of ``old`` that moved: ``{name: new module}``."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        _warn(f"{old}.{name}", home)
        return value

    return __getattr__
