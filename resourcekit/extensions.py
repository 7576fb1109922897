"""Extensions from the seed documents, served beside the standard methods."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .protocol import Request

METHODS: dict[str, Callable[[Request], Any]] = {}
