"""resourcekit: serve Model Context Protocol resources from plain Python functions.

The public API is this module and ``resourcekit.testing`` (``Client``), ``resourcekit.http``
(``ASGIApp``, ``HTTPError``), ``resourcekit.auth`` (``OAuthResourceServer``), ``resourcekit.contents``
(``dump_json``, ``guess_mime_type``, ``is_textual``), ``resourcekit.logs`` (``Repeats``) and
``resourcekit.telemetry`` (``use_meter_provider``), as documented in docs/api.md.  Every other
module (``core``, ``methods``, ``registry``, ``router``, ``transports`` ...) is internal.

``UriTemplate`` is read through ``__getattr__``: its module, the largest, loads when it is first
asked for here or a template is first declared (``declaration.uri_template``), so that a server of
fixed URIs starts without it.
"""

from typing import TYPE_CHECKING, Any

from .app import App, resource, template
from .contents import Blob, Text
from .context import Context
from .errors import (
    DefinitionError,
    DuplicateResourceError,
    InsufficientScope,
    LifespanDefinitionError,
    LifespanFailed,
    LimitExceeded,
    MCPError,
    MissingParameterError,
    NotModified,
    QueryDefaultError,
    ResourceKitError,
    ResourceNotFound,
    TemplateSyntaxError,
    ToolNameError,
    UnknownParameterError,
    UnsupportedParameterType,
    UnsupportedReturnType,
    WatcherDefinitionError,
)
from .limits import Limits
from .scopes import Principal

if TYPE_CHECKING:
    from .templates import UriTemplate

__version__ = "0.1.0"

__all__ = [
    "App",
    "Blob",
    "Context",
    "DefinitionError",
    "DuplicateResourceError",
    "InsufficientScope",
    "LifespanDefinitionError",
    "LifespanFailed",
    "LimitExceeded",
    "Limits",
    "MCPError",
    "MissingParameterError",
    "NotModified",
    "Principal",
    "QueryDefaultError",
    "ResourceKitError",
    "ResourceNotFound",
    "TemplateSyntaxError",
    "Text",
    "ToolNameError",
    "UnknownParameterError",
    "UnsupportedParameterType",
    "UnsupportedReturnType",
    "UriTemplate",
    "WatcherDefinitionError",
    "resource",
    "template",
]


def __getattr__(name: str) -> Any:
    if name == "UriTemplate":
        from .templates import UriTemplate

        globals()[name] = UriTemplate  # asked once
        return UriTemplate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
