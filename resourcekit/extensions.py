"""The extensions a client may opt into, and what each adds: data, not hooks.

A standard client sees none of this.  The extension methods exist for everyone
(a standard client never calls them); the extra *fields* on standard objects
appear only for a client that named the extension in
``capabilities.experimental`` of ``initialize`` (handshake era), or in
``capabilities.experimental`` / ``capabilities.extensions`` of the
``io.modelcontextprotocol/clientCapabilities`` ``_meta`` of a 2026-07-28
request.  Each method module reads ``OptIn`` and adds the fields below itself.

SEP-2093 (``io.resourcekit/sep-2093``): ``resources/metadata``, children
listing with ``resources/list {uri}``, and for opted-in clients
``capabilities: {list, subscribe}`` on Resources, ResourceTemplates, children
and read contents (which also carry their Resource's metadata and ``size``).

Seed 000 (``io.resourcekit/resources-get``): ``resources/get``, ``filter`` on
``resources/list``, and for opted-in clients ``kind``, ``version`` and
``metadata`` on listed objects and ``notifications/resources/content_changed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["FIELDS", "NONE", "RESOURCES_GET", "SEP_2093", "OptIn", "wants"]

SEP_2093 = "io.resourcekit/sep-2093"
RESOURCES_GET = "io.resourcekit/resources-get"

#: the fields each extension adds to each kind of standard object, for clients that opted in
FIELDS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    SEP_2093: {
        "resource": ("capabilities",),
        "template": ("capabilities",),
        "child": ("capabilities",),
        "content": ("capabilities", "name", "title", "description", "annotations", "icons", "size"),
    },
    RESOURCES_GET: {
        "resource": ("kind", "version", "metadata"),
        "template": ("kind", "metadata"),
        "child": ("kind", "version", "metadata"),
    },
}


def wants(capabilities: Mapping[str, Any], extension: str) -> bool:
    """Did a client with these capabilities opt in to ``extension``?"""
    for key in ("experimental", "extensions"):
        section = capabilities.get(key)
        if type(section) is dict and extension in section:
            return True
    return False


class OptIn:
    """What one client opted into, worked out once per request."""

    __slots__ = ("resources_get", "sep_2093")

    def __init__(self, sep_2093: bool, resources_get: bool) -> None:
        self.sep_2093 = sep_2093
        self.resources_get = resources_get

    @classmethod
    def of(cls, capabilities: Mapping[str, Any]) -> OptIn:
        if not capabilities:
            return NONE
        return cls(wants(capabilities, SEP_2093), wants(capabilities, RESOURCES_GET))

    @property
    def any(self) -> bool:
        return self.sep_2093 or self.resources_get


NONE = OptIn(False, False)
