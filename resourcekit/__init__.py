"""resourcekit: serve Model Context Protocol resources from plain Python functions.

The public API is this module and ``resourcekit.testing`` (``Client``), ``resourcekit.http``
(``ASGIApp``, ``HTTPError``), ``resourcekit.auth`` (``OAuthResourceServer``), ``resourcekit.contents``
(``dump_json``, ``guess_mime_type``, ``is_textual``), ``resourcekit.logs`` (``Repeats``) and
``resourcekit.telemetry`` (``use_meter_provider``), as documented in docs/api.md.  Every other
module (``core``, ``methods``, ``registry``, ``router``, ``transports`` ...) is internal.

The names below load on first use (``__getattr__``, PEP 562): ``import resourcekit`` imports
nothing else, so that ``python -m resourcekit`` starts its CLI before anything is imported
(``__main__``), and ``UriTemplate``'s module, the largest, loads only when it is asked for here or
a template is first declared (``declaration.uri_template``).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


#: the module that defines each name of ``__all__``
_HOMES = {
    **dict.fromkeys(("App", "resource", "template"), "app"),
    **dict.fromkeys(("Blob", "Text"), "contents"),
    "Context": "context",
    **dict.fromkeys((
        "DefinitionError", "DuplicateResourceError", "InsufficientScope", "LifespanDefinitionError", "LifespanFailed",
        "LimitExceeded", "MCPError", "MissingParameterError", "NotModified", "QueryDefaultError", "ResourceKitError",
        "ResourceNotFound", "TemplateSyntaxError", "ToolNameError", "UnknownParameterError", "UnsupportedParameterType",
        "UnsupportedReturnType", "WatcherDefinitionError",
    ), "errors"),
    "Limits": "limits",
    "Principal": "scopes",
    "UriTemplate": "templates",
}

def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
