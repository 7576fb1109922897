"""The session's life: ``initialize``, ``ping``, ``server/discover``, ``logging/setLevel``,
and the client's ``notifications/initialized`` and ``notifications/cancelled``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..context import LEVEL_RANK, LEVELS
from ..eras import is_request_id
from ..errors import InvalidParams, InvalidRequest
from ..extensions import OptIn
from ..revisions import HANDSHAKE_VERSIONS, LATEST_HANDSHAKE, MODERN_VERSIONS
from ._base import Method, Notification, cache_hints

if TYPE_CHECKING:
    from ..registry import Registry
    from ._base import RequestView as Request
    from ._base import ServerView
    from ._base import SessionView as Connection

__all__ = ["HANDSHAKE", "NOTIFICATIONS", "SKILLS_EXTENSION", "STATELESS", "capabilities"]

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"  # SEP-2640


def capabilities(version: str, skills: bool = False, tools: bool = False, subscribe: bool = True,
                 list_changed: bool = True, stream: bool = False) -> dict[str, Any]:
    """What this server declares to a client speaking ``version`` (``skills``: the app serves skills;
    ``tools``: its resources as tools too; ``subscribe``, ``list_changed``: what ``App`` says of them;
    ``stream``: ``resources/stream`` of SEP-2532, HTTP only)."""
    resources: dict[str, Any] = {}
    if subscribe:
        resources["subscribe"] = True
    if list_changed:
        resources["listChanged"] = True
    if stream:
        resources["stream"] = True
    caps: dict[str, Any] = {"resources": resources}
    if tools:
        caps["tools"] = {}
    if version != "2024-11-05":
        caps["completions"] = {}
    if version in HANDSHAKE_VERSIONS:
        caps["logging"] = {}
    if skills:
        caps["extensions"] = {SKILLS_EXTENSION: {"directoryRead": True}}
    return caps


def streams(server: ServerView) -> bool:
    """Does this server declare ``resources.stream`` (SEP-2532)?  Over HTTP, once something is
    ``streamable=True``; never over stdio or in memory (the SEP leaves them out)."""
    return server.app.streamable and server.transport == "tcp"


def app_capabilities(app: Registry, version: str, stream: bool = False) -> dict[str, Any]:
    return capabilities(version, app.skills is not None, app.resource_tools, app.subscribe, app.list_changed, stream)


def initialize(req: Request) -> dict[str, Any]:
    conn = req.conn
    if conn.protocol_version is not None:  # the version is negotiated once per session
        raise InvalidRequest("Invalid Request: the session is already initialized")
    requested = req.params.get("protocolVersion")
    version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE
    caps = req.params.get("capabilities")
    conn.protocol_version = version
    conn.client_capabilities = caps if type(caps) is dict else {}
    conn.optin = OptIn.of(conn.client_capabilities)
    conn.replan()  # the session's profile is known now: its plan
    info = req.params.get("clientInfo")
    conn.client_info = info if type(info) is dict else {}
    server = conn.server
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": app_capabilities(conn.app, version, streams(conn.server)),
        "serverInfo": server.server_info,
    }
    if conn.app.instructions:
        result["instructions"] = conn.app.instructions
    return result


def ping(req: Request) -> dict[str, Any]:
    return {}


def set_level(req: Request) -> dict[str, Any]:
    level = req.params.get("level")
    if type(level) is not str or level not in LEVEL_RANK:
        raise InvalidParams(f"Invalid params: level must be one of {list(LEVELS)}", {"level": level})
    req.conn.log_level = level
    req.conn.replan()
    return {}


def discover(req: Request) -> dict[str, Any]:
    server = req.conn.server
    result: dict[str, Any] = {
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": app_capabilities(server.app, req.version or MODERN_VERSIONS[-1], streams(server)),
    }
    if server.app.instructions:
        result["instructions"] = server.app.instructions
    return cache_hints(req, result)


def _initialized(conn: Connection, params: dict[str, Any]) -> None:
    conn.initialized = True


def _cancelled(conn: Connection, params: dict[str, Any]) -> None:
    rid = params.get("requestId")
    if is_request_id(rid):  # (True would cancel request 1)
        conn.cancel(rid)


HANDSHAKE: dict[str, Method] = {"initialize": initialize, "ping": ping, "logging/setLevel": set_level}
STATELESS: dict[str, Method] = {"server/discover": discover}
NOTIFICATIONS: dict[str, Notification] = {
    "notifications/initialized": _initialized,
    "notifications/cancelled": _cancelled,
}
