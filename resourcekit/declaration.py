"""The compiled record of one declared resource or template."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any

from .errors import DefinitionError, ToolNameError

if TYPE_CHECKING:
    from .signature import Signature
    from .templates import UriTemplate

__all__ = ["BAD_TOOL_NAME", "Handler", "check_tool_option", "choices_completer", "completers_for",
           "normalize_annotations", "plain_handler", "tool_name_allowed", "uri_template"]

_AUDIENCES = frozenset({"user", "assistant"})
# SEP-986 (2025-11-25): a tool's name is 1-128 of these characters
_TOOL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")


def uri_template(text: str) -> UriTemplate:
    """``UriTemplate(text)``, for a template or a watcher's pattern being declared: the seam where
    ``resourcekit.templates`` (the largest module) loads, with the first one, so that an app of
    fixed URIs starts without it (``resourcekit.UriTemplate`` loads it too)."""
    from .templates import UriTemplate

    return UriTemplate(text)


class Completer:
    """A completion function for one template variable, inspected once when declared."""

    __slots__ = ("fn", "is_async", "with_context")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)
        try:
            positional = [p for p in inspect.signature(fn).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
        except (TypeError, ValueError):
            positional = []
        # fn(value) or fn(value, resolved): the variables already resolved (context.arguments)
        self.with_context = len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional)


def choices_completer(choices: Iterable[str]) -> Callable[[str], list[str]]:
    """A completer offering the choices (an Enum's, a Literal's) that start with what was typed."""
    options = tuple(choices)

    def complete(value: str) -> list[str]:
        lowered = value.lower()
        return [c for c in options if c.lower().startswith(lowered)]

    return complete


class Options:
    """The rarely-set options of a declaration; one shared instance when none is set."""

    __slots__ = ("cache_scope", "children", "completers", "kind", "lister", "lister_paged", "meta",
                 "metadata", "poll", "scopes", "size", "streamable", "tool", "ttl_ms")

    def __init__(
        self,
        size: int | None = None,
        meta: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: str | None = None,
        kind: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        lister: Callable[..., Any] | None = None,
        lister_paged: bool = False,
        completers: dict[str, Completer] | None = None,
        children: Callable[..., Any] | None = None,
        poll: float | None = None,
        scopes: frozenset[str] | None = None,
        tool: str | bool | None = None,
        streamable: bool = False,
    ) -> None:
        self.size = size
        self.meta = meta
        self.ttl_ms = ttl_ms
        self.cache_scope = cache_scope
        self.kind = kind
        self.metadata = metadata
        self.lister = lister
        self.lister_paged = lister_paged
        self.completers = completers or {}
        self.children = children
        self.poll = poll
        self.scopes = scopes  # None: the App's (resourcekit.scopes)
        self.tool = tool  # a template's tool: None its name, False none (methods.template_tools)
        self.streamable = streamable  # served by resources/stream too (SEP-2532)


    def mark_streamable(self, uri: str, streamable: Any, wire: dict[str, Any] | None) -> bool:
        """A declaration's ``streamable=`` (SEP-2532): checked, and when True shown on its listed
        object (``streamable: true``) and kept here (a declaration given it has both of its own)."""
        if streamable is False:
            return False
        if streamable is not True:
            raise DefinitionError(f"streamable of {uri!r} must be True or False, not {streamable!r}")
        assert wire is not None and self is not DEFAULT_OPTIONS
        wire["streamable"] = True
        self.streamable = True
        return True


DEFAULT_OPTIONS = Options()


def _delegate(name: str) -> Any:
    return property(lambda self: getattr(self.options, name), doc=f"Option {name!r}.")


class Handler:
    """Everything known about one resource (``template is None``) or template.

    Built once at decoration time; the protocol core only reads it.  Registering
    100,000 resources builds 100,000 of these, so the common fields are slots, the
    rarely-set ones live in a shared ``Options``, and a plain resource's listed
    object (``wire``) is made when listed rather than kept.
    """

    __slots__ = ("_wire", "fn", "memo", "mime_type", "name", "options", "seq", "sig", "template", "uri")

    def __init__(
        self,
        uri: str,
        template: UriTemplate | None,
        fn: Callable[..., Any],
        sig: Signature,
        mime_type: str | None,
        wire: dict[str, Any] | None,
        options: Options,
        seq: int,
        name: str,
    ) -> None:
        self.uri = uri  # the URI, or the template string for a template
        self.template = template
        self.fn = fn
        self.sig = sig
        self.mime_type = mime_type
        self.name = name
        # the Resource / ResourceTemplate object as listed (without _meta); None: made
        # from name, uri, sig.description and mime_type when asked for (``wire``)
        self._wire = wire
        self.options = options
        self.seq = seq
        # facts the protocol works out on first use (how to call children=, a warning given):
        # kept here, so they go when the declaration goes
        self.memo: dict[str, Any] | None = None

    @property
    def wire(self) -> dict[str, Any]:
        """The Resource / ResourceTemplate object as listed (without _meta): shared by every
        listing when the declaration keeps one (do not change it), else made afresh."""
        wire = self._wire
        if wire is not None:
            return wire
        wire = {"name": self.name, "uri": self.uri}
        if self.sig.description:
            wire["description"] = self.sig.description
        if self.mime_type:
            wire["mimeType"] = self.mime_type
        return wire

    def own_wire(self) -> dict[str, Any]:
        """``wire`` as a dict the caller may change (copied only when it is shared)."""
        return dict(self._wire) if self._wire is not None else self.wire

    def remembered(self, key: str) -> Any:
        return self.memo.get(key) if self.memo is not None else None

    def remember(self, key: str, value: Any) -> None:
        if self.memo is None:
            self.memo = {}
        self.memo[key] = value

    size = _delegate("size")
    meta = _delegate("meta")
    ttl_ms = _delegate("ttl_ms")
    cache_scope = _delegate("cache_scope")
    kind = _delegate("kind")
    metadata = _delegate("metadata")
    lister = _delegate("lister")
    lister_paged = _delegate("lister_paged")
    completers = _delegate("completers")
    children = _delegate("children")
    poll = _delegate("poll")
    scopes = _delegate("scopes")
    streamable = _delegate("streamable")
    tool = _delegate("tool")

    def convert(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Typed keyword arguments from matched strings; ValueError if they do not convert."""
        kwargs: dict[str, Any] = {}
        for name, param in self.sig.params.items():
            value = raw.get(name)
            if value is None:
                if param.required:
                    raise ValueError(f"missing {name}")
                continue  # the function's own default applies
            conv = param.convertor
            if isinstance(value, list) and not conv.is_list:
                if len(value) != 1:
                    raise ValueError(f"{name} takes one value")
                value = value[0]
            kwargs[name] = conv.parse(value)
        return kwargs

    def instance_uri(self, values: Mapping[str, Any]) -> str:
        """Expand the template with typed values (a lister's output).

        A value given in its wire form (an Enum's plain value, a number as a string)
        is converted first; ValueError when it does not convert.
        """
        assert self.template is not None
        strings: dict[str, Any] = {}
        for name, value in values.items():
            param = self.sig.params.get(name)
            if param is None or value is None:
                continue
            conv = param.convertor
            try:
                strings[name] = conv.format(value)
            except (TypeError, ValueError, AttributeError):
                if not isinstance(value, (str, int, float)):
                    raise
                strings[name] = conv.format(conv.parse(str(value)))
        uri: str = self.template.expand(**strings)
        return uri

    def __repr__(self) -> str:
        return f"<Handler {self.uri!r} -> {self.sig.name}()>"


_new = object.__new__


def plain_handler(uri: str, fn: Callable[..., Any], sig: Signature, mime_type: str | None, name: str) -> Handler:
    """``Handler(uri, None, fn, sig, mime_type, None, DEFAULT_OPTIONS, 0, name)``, made without
    calling the class: on CPython 3.11 a class call runs ``__init__`` in a fresh interpreter frame
    (about 2,000 instructions more), and declaring 100,000 plain resources makes 100,000 of these."""
    handler: Handler = _new(Handler)
    handler.uri = uri
    handler.template = None
    handler.fn = fn
    handler.sig = sig
    handler.mime_type = mime_type
    handler.name = name
    handler._wire = None
    handler.options = DEFAULT_OPTIONS
    handler.seq = 0
    handler.memo = None
    return handler


def normalize_annotations(annotations: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Check and convert a Resource's annotations to their wire form."""
    if annotations is None:
        return None
    wire: dict[str, Any] = {}
    for key, value in annotations.items():
        if key == "audience":
            audience = [value] if isinstance(value, str) else list(value)
            bad = [a for a in audience if a not in _AUDIENCES]
            if bad:
                raise DefinitionError(f"annotation audience must be 'user' or 'assistant', not {bad}")
            wire["audience"] = audience
        elif key == "priority":
            if not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise DefinitionError(f"annotation priority must be a number in [0, 1], not {value!r}")
            wire["priority"] = value
        elif key in ("lastModified", "last_modified"):
            dt = sys.modules.get("datetime")  # a date or datetime comes from a module that imported it
            if dt is not None and isinstance(value, dt.date):
                value = value.isoformat()
            wire["lastModified"] = str(value)
        else:
            raise DefinitionError(
                f"unknown annotation {key!r}; use audience, priority or lastModified"
            )
    return wire


def iter_lister_page(handler: Handler, offset: int, limit: int) -> Iterable[Any]:
    """One page of a lister's output (plain listers are sliced, paged ones asked)."""
    assert handler.lister is not None
    if handler.lister_paged:
        page: Iterable[Any] = handler.lister(offset, limit + 1)
        return page
    return islice(handler.lister(), offset, offset + limit + 1)


def completers_for(uri: str, template: UriTemplate | None, sig: Signature,
                   explicit: Mapping[str, Callable[..., Any]] | None) -> dict[str, Completer]:
    """A template's completers: choices of Enum/Literal parameters, then the ``complete=`` ones."""
    completers: dict[str, Completer] = {}
    if template is None:
        return completers
    for name, param in sig.params.items():
        if param.convertor.choices:
            completers[name] = Completer(choices_completer(param.convertor.choices))
    for name, fn in (explicit or {}).items():
        if not callable(fn):
            raise DefinitionError(f"completer for {name!r} of {uri!r} must be callable")
        completers[name] = Completer(fn)
    return completers



def check_tool_option(uri: str, template: UriTemplate | None, function: str, tool: object) -> None:
    """``tool=`` of ``@app.template``: a name MCP allows, True (the template's name) or False (no tool)."""
    if template is None:
        raise DefinitionError(f"tool= is a template option; {uri!r} is a resource (read_resource reads it)")
    if isinstance(tool, bool):
        return
    if not isinstance(tool, str):
        raise DefinitionError(f"tool= of {uri!r} must be a tool name or False, not {tool!r}")
    if not tool_name_allowed(tool):
        raise ToolNameError(tool, (f"{function}()",), BAD_TOOL_NAME)


BAD_TOOL_NAME = "MCP allows 1-128 characters in a tool's name: letters, digits, '_', '-' and '.'"


def tool_name_allowed(name: str) -> bool:
    return 0 < len(name) <= 128 and _TOOL_CHARS.issuperset(name)
