"""resourcekit: serve Model Context Protocol resources from plain Python functions.

The public API is this module and ``resourcekit.testing`` (``Client``), ``resourcekit.http``
(``ASGIApp``, ``HTTPError``), ``resourcekit.auth`` (``OAuthResourceServer``), ``resourcekit.contents``
(``dump_json``, ``guess_mime_type``, ``is_textual``), ``resourcekit.logs`` (``Repeats``) and
``resourcekit.telemetry`` (``use_meter_provider``), as documented in docs/api.md.  Every other
module (``core``, ``methods``, ``registry``, ``router``, ``transports`` ...) is internal.
"""

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
