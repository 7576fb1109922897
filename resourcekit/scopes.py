"""Who is asking, and may they read this: the ``Principal`` and the one scope check.

A declaration's ``scopes=[a, b]`` (else the App's ``scopes=``) are all required: a
principal reads it only when its token carries every one. Every path that reads or
shows a resource asks here: ``check_read`` before a handler runs (read, get,
metadata, subscribe, listen, children), ``may_read`` to leave out of a list what
the principal may not read (listings, completion, skills). Without a principal
(stdio, in-memory, HTTP without ``auth``) nothing is checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from .errors import DefinitionError, InsufficientScope

__all__ = ["Principal", "Protected", "check_read", "may_read", "normalize_scopes", "required_scopes"]

NO_SCOPES: frozenset[str] = frozenset()


class Protected(Protocol):
    """What the check reads of an App (its ``scopes``) and of a declaration (its own, or None:
    the App's)."""

    @property
    def scopes(self) -> frozenset[str] | None: ...


class Principal:
    """The authenticated caller: who (``subject``), through which client (``client_id``),
    with which ``scopes``, and the token's ``claims`` (or the introspection answer).

    Equal principals are the same caller: issuer, subject and client, whatever the
    scopes (a session survives a step-up to more scopes; another caller gets 404).
    """

    __slots__ = ("claims", "client_id", "expires_at", "issuer", "scopes", "subject")

    def __init__(self, subject: str | None, *, client_id: str | None = None, scopes: Iterable[str] = (),
                 claims: Mapping[str, Any] | None = None, issuer: str | None = None,
                 expires_at: float | None = None) -> None:
        self.subject = subject
        self.client_id = client_id
        self.scopes = frozenset(scopes)
        self.claims: Mapping[str, Any] = claims if claims is not None else {}
        self.issuer = issuer
        self.expires_at = expires_at

    @property
    def key(self) -> tuple[str | None, str | None, str | None]:
        return (self.issuer, self.subject, self.client_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Principal) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:  # also what binds a session across workers: no scopes, no token
        return f"Principal(issuer={self.issuer!r}, subject={self.subject!r}, client_id={self.client_id!r})"


def normalize_scopes(scopes: Iterable[str] | None, where: str) -> frozenset[str] | None:
    """A declaration's ``scopes=`` as a frozenset (None: not given); DefinitionError for bad ones."""
    if scopes is None:
        return None
    if isinstance(scopes, str):
        raise DefinitionError(f"scopes of {where} must be a list of strings, not the string {scopes!r}")
    out = frozenset(scopes)
    bad = [s for s in out if not isinstance(s, str) or not s or any(c in s for c in ' "\\') or not s.isprintable()]
    if bad:
        raise DefinitionError(f"scopes of {where}: {bad[0]!r} is not a scope token (RFC 6749 §3.3)")
    return out


def required_scopes(app: Protected, handler: Protected) -> frozenset[str]:
    """What reading through ``handler`` takes: its own ``scopes=``, else the App's."""
    own = handler.scopes
    return (app.scopes or NO_SCOPES) if own is None else own


def granted(principal: Any) -> frozenset[str]:
    """A principal's scopes; one a custom ``auth`` hook made without any has none."""
    scopes = getattr(principal, "scopes", None)
    return scopes if isinstance(scopes, frozenset) else frozenset(scopes or ())


def may_read(principal: Any, app: Protected, handler: Protected) -> bool:
    """May ``principal`` (None: nobody checks) read what ``handler`` serves?"""
    if principal is None:
        return True
    required = required_scopes(app, handler)
    return not required or required <= granted(principal)


def check_read(principal: Any, app: Protected, handler: Protected, uri: str) -> None:
    """Raise ``InsufficientScope`` unless ``principal`` may read ``uri`` (served by ``handler``).

    Called after the URI matched and before the handler runs, so a protected template
    answers the same whether the instance exists or not.
    """
    if principal is None:
        return
    required = required_scopes(app, handler)
    if required and not required <= granted(principal):
        raise InsufficientScope(uri, required)
