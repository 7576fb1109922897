"""The method tables, one per era, assembled here once from the feature modules.

| module | methods |
|---|---|
| ``lifecycle`` | initialize, ping, logging/setLevel, server/discover; notifications/initialized, cancelled |
| ``reading`` | resources/read, resources/get (seed 000) |
| ``metadata`` | resources/metadata (SEP-2093) |
| ``listing`` | resources/list (plain, ``filter``, children of ``uri``), resources/templates/list |
| ``subscriptions`` | resources/subscribe, resources/unsubscribe, subscriptions/listen |
| ``completion`` | completion/complete |
| ``skills`` | skills/list, skills/get, resources/directory/read (SEP-2640) |
| ``streaming`` | resources/stream (SEP-2532, experimental): the bytes on the HTTP response |
| ``tools`` | tools/list, tools/call: the resources as tools, when the app sets ``resource_tools`` |

Nothing patches these tables later: what a method does is in the module it is named after.  The
modules of methods most clients never call (completion, and the features most servers never
serve: metadata, skills, streaming, tools) are imported when one of their methods is first called
(``on_first_use``), so that a stdio server starts without them; those a host calls right after
``initialize`` (reading, listing) load with the engine.
``COMPILERS`` names the methods whose step depends on the session's profile (``core.plan``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from . import lifecycle, listing, reading, subscriptions
from ._base import PENDING, Method, Notification
from .subscriptions import Subscriptions

if TYPE_CHECKING:
    from ..eras import Era
    from ..extensions import OptIn
    from ._base import RequestView


def on_first_use(module: str, *names: str) -> dict[str, Method]:
    """Steps for ``names``, methods of the feature module ``module``, which import it (its
    ``METHODS``) the first time one of them is called."""

    def step_of(name: str) -> Method:
        method: Method | None = None

        def step(req: RequestView) -> Any:
            nonlocal method
            if method is None:
                method = import_module(f"{__name__}.{module}").METHODS[name]
            return method(req)

        step.__qualname__ = step.__name__ = f"{module}:{name}"
        return step

    return {name: step_of(name) for name in names}

__all__ = ["COMPILERS", "HANDSHAKE_METHODS", "NOTIFICATIONS", "PENDING", "STATELESS_METHODS", "Subscriptions"]

_BOTH: dict[str, Method] = {
    **reading.METHODS, **listing.METHODS,
    **on_first_use("completion", "completion/complete"),
    **on_first_use("metadata", "resources/metadata"),
    **on_first_use("skills", "skills/list", "skills/get", "resources/directory/read"),
    **on_first_use("tools", "tools/list", "tools/call"),
    **on_first_use("streaming", "resources/stream"),
}

HANDSHAKE_METHODS: Mapping[str, Method] = MappingProxyType(
    {**_BOTH, **lifecycle.HANDSHAKE, **subscriptions.HANDSHAKE}
)
STATELESS_METHODS: Mapping[str, Method] = MappingProxyType(
    {**_BOTH, **lifecycle.STATELESS, **subscriptions.STATELESS}
)
NOTIFICATIONS: Mapping[str, Notification] = MappingProxyType(dict(lifecycle.NOTIFICATIONS))
COMPILERS: Mapping[str, Callable[[Era, OptIn], Method]] = MappingProxyType({"resources/read": reading.compile_read})
