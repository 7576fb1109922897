"""The method tables, one per era, assembled here once from the feature modules.

| module | methods |
|---|---|
| ``lifecycle`` | initialize, ping, logging/setLevel, server/discover; notifications/initialized, cancelled |
| ``reading`` | resources/read, resources/get (seed 000), resources/metadata (SEP-2093) |
| ``listing`` | resources/list (plain, ``filter``, children of ``uri``), resources/templates/list |
| ``subscriptions`` | resources/subscribe, resources/unsubscribe, subscriptions/listen |
| ``completion`` | completion/complete |
| ``skills`` | skills/list, skills/get, resources/directory/read (SEP-2640) |
| ``streaming`` | resources/stream (SEP-2532, experimental): the bytes on the HTTP response |
| ``tools`` | tools/list, tools/call: the resources as tools, when the app sets ``resource_tools`` |

Nothing patches these tables later: what a method does is in the module it is named after.
``COMPILERS`` names the methods whose step depends on the session's profile (``core.plan``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from . import completion, lifecycle, listing, reading, skills, streaming, subscriptions, tools
from ._base import PENDING, Method, Notification
from .subscriptions import Subscriptions

if TYPE_CHECKING:
    from ..eras import Era
    from ..extensions import OptIn

__all__ = ["COMPILERS", "HANDSHAKE_METHODS", "NOTIFICATIONS", "PENDING", "STATELESS_METHODS", "Subscriptions"]

_BOTH: dict[str, Method] = {**reading.METHODS, **listing.METHODS, **completion.METHODS, **skills.METHODS,
                            **tools.METHODS, **streaming.METHODS}

HANDSHAKE_METHODS: Mapping[str, Method] = MappingProxyType(
    {**_BOTH, **lifecycle.HANDSHAKE, **subscriptions.HANDSHAKE}
)
STATELESS_METHODS: Mapping[str, Method] = MappingProxyType(
    {**_BOTH, **lifecycle.STATELESS, **subscriptions.STATELESS}
)
NOTIFICATIONS: Mapping[str, Notification] = MappingProxyType(dict(lifecycle.NOTIFICATIONS))
COMPILERS: Mapping[str, Callable[[Era, OptIn], Method]] = MappingProxyType({"resources/read": reading.compile_read})
