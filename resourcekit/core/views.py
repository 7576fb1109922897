"""What the engine's modules ask of each other, as ``typing.Protocol``\\ s, so that the arrows
inside ``core`` point one way even for types: ``server`` → ``engine`` → ``request``, ``outbox``
→ here.

They extend what a method may ask (``methods._base``) with what the engine itself needs; the
classes satisfy them structurally (``Server``, ``Connection``), and a type checker checks that
where one is handed to the other.
"""

from __future__ import annotations

from collections.abc import Callable, MutableSet
from typing import TYPE_CHECKING, Any, Protocol

from ..methods._base import ProfileView, ServerView, SessionView, SubscriptionsView
from ..telemetry import spans as telemetry

if TYPE_CHECKING:
    from .._jobs import Lane
    from .._runner import ThreadRunner

__all__ = ["CallerView", "Host", "ProfileView", "Session", "Subscribers"]


class CallerView(Protocol):
    """Who sends 2026-07-28 requests (``server.Caller``): the lane their jobs share, and how many of
    them are open."""

    lane: Lane
    open: int


class Subscribers(SubscriptionsView, telemetry.Subscribers, Protocol):
    """A server's subscribers, as the methods and the metrics see them."""

    def drop(self, conn: SessionView) -> None: ...


class Host(ServerView, telemetry.Observed, Protocol):
    """What a session asks of its ``Server``."""

    @property
    def subscriptions(self) -> Subscribers: ...
    @property
    def logged(self) -> bool: ...
    @property
    def traced(self) -> bool: ...
    @property
    def _runner(self) -> ThreadRunner | None: ...
    @property
    def connections(self) -> MutableSet[Any]: ...


class Session(SessionView, telemetry.Session, Protocol):
    """What a request and an outbox ask of their ``Connection``."""

    held: bool

    @property
    def server(self) -> Host: ...
    @property
    def sink(self) -> Callable[[bytes], None] | None: ...
    @property
    def principal(self) -> Any: ...
    @property
    def inflight(self) -> dict[Any, Any]: ...  # id -> Request (``request`` is below this module)

    def hold(self) -> None: ...

    def release(self) -> None: ...
