"""What differs between eras: the handshake-era revisions and the stateless 2026-07-28.

One record per era instead of ``if modern`` scattered over modules: which methods
exist, the wire code of resource-not-found, how a result is decorated.  A record is data:
the two eras, with their method tables, are made where the tables meet the engine
(``core.plan``).  Errors become JSON-RPC error objects here, in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .errors import MCPError, ResourceNotFound
from .revisions import META_SERVER_INFO

__all__ = ["Era", "error_response", "is_request_id"]


class Era:
    """What differs between the handshake-era revisions and the stateless 2026-07-28.

    Which methods exist, the wire code of resource-not-found, and how a result is
    decorated (2026-07-28 results say they are complete and name the server).
    """

    __slots__ = ("methods", "name", "not_found_code", "stateless")

    def __init__(self, name: str, methods: Mapping[str, Callable[..., Any]], *, stateless: bool,
                 not_found_code: int) -> None:
        self.name = name
        self.methods = dict(methods)  # a plain dict: one lookup per request
        self.stateless = stateless
        self.not_found_code = not_found_code

    def decorate(self, result: dict[str, Any], server_info: dict[str, Any]) -> None:
        if self.stateless:
            result["resultType"] = "complete"
            meta = result.get("_meta")
            if meta is None:
                result["_meta"] = {META_SERVER_INFO: server_info}
            else:
                meta.setdefault(META_SERVER_INFO, server_info)

    def __repr__(self) -> str:
        return f"<Era {self.name}>"


def is_request_id(value: Any) -> bool:
    """Whether a request may carry ``value`` as its id: a string or an integer (JSON's ``true``
    is no id, and an integer beyond 64 bits arrives as a float).  The envelope's own check is
    this one, written out in ``Connection._receive_block``."""
    return type(value) is str or type(value) is int


def error_response(rid: Any, exc: BaseException, era: Era | None = None) -> dict[str, Any]:
    """The single place where an exception becomes a JSON-RPC error object (``era``: the
    request's; none is the handshake era, whose codes are the errors' own)."""
    if isinstance(exc, MCPError):
        error = exc.to_error()
        if era is not None and error["code"] == ResourceNotFound.code:
            error["code"] = era.not_found_code
    else:
        error = {"code": -32603, "message": "Internal error"}
    return {"jsonrpc": "2.0", "id": rid, "error": error}
