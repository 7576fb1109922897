"""A session's profile and the plan compiled for it: ``{method: step}``, once per profile.

A profile is what decides how a session's requests are served: its era, the extensions its
client opted into, and the observers watching (the access log).  It changes only at
``initialize``, so the plan for it is compiled then and cached: a handful of profiles exist in
a process; a 2026-07-28 request, which carries its own profile, finds the plan for it here.  A method module
may compile a step of its own for a profile (``methods.COMPILERS``: a plain session's read
needs none of SEP-2093's metadata); observers wrap every step the same way, like middleware,
and never change which code serves a request.  The two eras are made here, each with the method
table ``methods`` assembles for it: an ``Era`` is a record and imports no method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..eras import Era
from ..methods import COMPILERS, HANDSHAKE_METHODS, STATELESS_METHODS
from . import observers

if TYPE_CHECKING:
    from ..extensions import OptIn

__all__ = ["HANDSHAKE", "STATELESS", "Plan", "Profile", "plan_for", "profile_for"]

HANDSHAKE = Era("handshake", HANDSHAKE_METHODS, stateless=False, not_found_code=-32002)
STATELESS = Era("2026-07-28", STATELESS_METHODS, stateless=True, not_found_code=-32602)

Plan = dict[str, observers.Step]

_PLANS: dict[tuple[str, bool, bool, bool], Plan] = {}


def plan_for(era: Era, optin: OptIn, logged: bool) -> Plan:
    """The plan for a profile: compiled the first time it is asked for, then the same dict."""
    key = (era.name, optin.sep_2093, optin.resources_get, logged)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _compile(era, optin, logged)
    return plan


class Profile:
    """What decides how a request is served: its era, the negotiated version, the log level, the
    extensions its client opted into; and the plan compiled for them.  A session's changes only
    at ``initialize`` and ``logging/setLevel`` (``Connection.replan``); a 2026-07-28 request's
    comes from its ``_meta``.  Immutable and shared: a handful exist in a process."""

    __slots__ = ("era", "log_level", "modern", "optin", "plan", "version")

    def __init__(self, era: Era, version: str | None, log_level: str | None, optin: OptIn, logged: bool) -> None:
        self.era = era
        self.modern = era.stateless
        self.version = version
        self.log_level = log_level
        self.optin = optin
        self.plan = plan_for(era, optin, logged)


_PROFILES: dict[tuple[str, str | None, str | None, bool, bool, bool], Profile] = {}


def profile_for(era: Era, version: str | None, log_level: str | None, optin: OptIn, logged: bool) -> Profile:
    """The profile of these settings: made the first time they are asked for, then the same one."""
    key = (era.name, version, log_level, optin.sep_2093, optin.resources_get, logged)
    profile = _PROFILES.get(key)
    if profile is None:
        if len(_PROFILES) >= _MAX_PROFILES:  # versions and levels are checked before: a bound all the same
            _PROFILES.clear()
        profile = _PROFILES[key] = Profile(era, version, log_level, optin, logged)
    return profile


_MAX_PROFILES = 256


def _compile(era: Era, optin: OptIn, logged: bool) -> Plan:
    plan: Plan = {}
    for name, method in era.methods.items():
        compiler = COMPILERS.get(name)
        step = method if compiler is None else compiler(era, optin)
        if logged:
            step = observers.logged(step)
        plan[name] = step
    return plan
