"""One error hierarchy.

Definition errors (raised while an app is being declared) derive from
``DefinitionError``; errors that travel to a client derive from ``MCPError`` and
carry their JSON-RPC wire code, so the protocol core converts them to a response
in exactly one place.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DefinitionError",
    "DuplicateResourceError",
    "HeaderMismatch",
    "InsufficientScope",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "LifespanDefinitionError",
    "LifespanFailed",
    "MCPError",
    "MethodNotFound",
    "MissingParameterError",
    "NotModified",
    "ParseError",
    "QueryDefaultError",
    "ResourceKitError",
    "ResourceNotFound",
    "ResourceTooLarge",
    "StreamNotSupported",
    "TemplateSyntaxError",
    "ToolNameError",
    "UnknownParameterError",
    "UnsupportedParameterType",
    "UnsupportedReturnType",
    "UnsupportedVersion",
    "bad_resource_uri",
    "decorator_without_uri",
    "unencodable",
]


class ResourceKitError(Exception):
    """Base of every exception resourcekit raises on purpose."""


# --- definition time -----------------------------------------------------------


class DefinitionError(ResourceKitError):
    """A resource or template was declared wrongly; raised at decoration time."""


class TemplateSyntaxError(DefinitionError, ValueError):
    """A URI template is not valid RFC 6570."""

    def __init__(self, template: str, position: int, reason: str) -> None:
        self.template = template
        self.position = position
        self.reason = reason
        pointer = " " * position + "^"
        super().__init__(f"{reason} at position {position} in {template!r}\n  {template}\n  {pointer}")


class MissingParameterError(DefinitionError):
    """A template variable has no function parameter of the same name."""

    def __init__(self, template: str, variable: str, function: str) -> None:
        self.template, self.variable, self.function = template, variable, function
        super().__init__(
            f"template {template!r} has variable {variable!r} but {function}() "
            f"has no parameter named {variable!r}"
        )


class UnknownParameterError(DefinitionError):
    """A function parameter matches no template variable (and is not injected)."""

    def __init__(self, template: str, parameter: str, function: str, *, resource: bool | None = None) -> None:
        self.template, self.parameter, self.function = template, parameter, function
        if resource is None:
            resource = "{" not in template
        # another framework's placeholder (":id", "<id>", "<int:id>", "$id") where RFC 6570 writes {id}
        written = _placeholder(template, parameter)
        fixed = template.replace(written, "{" + parameter + "}", 1) if written else None
        if resource:  # @app.resource: nothing fills its parameters
            if fixed is not None:
                advice = f'write {{{parameter}}} in place of {written} and declare it with @app.template("{fixed}")'
            else:
                advice = (f"give {parameter!r} a default, or declare a template such as "
                          f"'{template.rstrip('/')}/{{{parameter}}}' with @app.template")
            super().__init__(f"{function}() has parameter {parameter!r} but resource {template!r} has no "
                             f"variables: {advice}")
            return
        advice = (f"write {{{parameter}}} in place of {written}: {fixed!r}" if fixed is not None else
                  f"add {{{parameter}}} to the template, or remove the parameter")
        super().__init__(
            f"{function}() has parameter {parameter!r} but template {template!r} "
            f"has no variable {{{parameter}}}: {advice}"
        )


def _placeholder(template: str, name: str) -> str | None:
    """How ``template`` spells variable ``name`` in another framework's syntax, if it does."""
    at = template.find(f":{name}>")
    start = template.rfind("<", 0, at)
    if at >= 0 and start >= 0 and template[start + 1:at].isidentifier():  # Flask's <int:name>
        return template[start:at + len(name) + 2]
    for written in (f"<{name}>", f":{name}", f"${name}"):
        at = template.find(written)
        end = at + len(written)
        # the whole name (":id" in ":identifier" is not it)
        if at >= 0 and (end == len(template) or not (template[end].isalnum() or template[end] == "_")):
            return written
    return None


class QueryDefaultError(DefinitionError):
    """A query variable (``{?x}``/``{&x}``) may be absent, so its parameter needs a default."""

    def __init__(self, template: str, variable: str, function: str) -> None:
        self.template, self.variable, self.function = template, variable, function
        super().__init__(
            f"query variable {variable!r} of {template!r} may be absent: give parameter "
            f"{variable!r} of {function}() a default"
        )


class UnsupportedParameterType(DefinitionError):
    """A parameter's annotation has no converter from a URI string."""

    def __init__(self, function: str, parameter: str, annotation: object) -> None:
        self.function, self.parameter, self.annotation = function, parameter, annotation
        super().__init__(
            f"parameter {parameter!r} of {function}() is annotated {annotation!r}, which "
            "cannot be converted from a URI (use str, int, float, bool, Enum, Literal, "
            "UUID, date, datetime, Decimal, Optional[...] or list[...])"
        )


class UnsupportedReturnType(DefinitionError):
    """A function's return annotation names a type no value of which can be served (``-> set``)."""

    def __init__(self, function: str, annotation: object) -> None:
        self.function, self.annotation = function, annotation
        if annotation is None or annotation is type(None):
            super().__init__(f"{function}() is annotated to return None, but a resource's function returns "
                             "its contents: str, bytes, JSON data (a dict, a list, a dataclass), a Path, Text or Blob")
            return
        shown = annotation.__qualname__ if type(annotation) is type else repr(annotation)
        super().__init__(f"{function}() is annotated to return {shown}, which cannot be served: return str, bytes, "
                         "JSON data (a dict, a list, a dataclass), a Path, Text or Blob")


class ToolNameError(DefinitionError):
    """A template's tool (``App(resource_tools=True)``) has a name MCP does not allow, or one another
    tool has; ``functions`` names the functions involved."""

    def __init__(self, name: str, functions: tuple[str, ...], reason: str) -> None:
        self.name, self.functions, self.reason = name, functions, reason
        super().__init__(f"tool {name!r} of {' and '.join(functions)}: {reason}")


class LifespanDefinitionError(DefinitionError, TypeError):
    """An ``@app.lifespan`` function is not an async generator function that yields once
    (``function``: its name; ``reason``: what is wrong)."""

    def __init__(self, function: str, reason: str) -> None:
        self.function, self.reason = function, reason
        super().__init__(f"lifespan {function}() {reason}")


class LifespanFailed(ResourceKitError):
    """The app's lifespan raised while starting: nothing is served.  ``function`` names it,
    ``error`` is what it raised (also the ``__cause__``)."""

    def __init__(self, function: str, error: BaseException) -> None:
        self.function, self.error = function, error
        detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        super().__init__(f"the lifespan {function}() failed at start-up: {detail}")


class WatcherDefinitionError(DefinitionError, TypeError):
    """An ``@app.watch`` declaration is wrong (``pattern``: its URI or template; ``function``: the
    function's name; ``reason``: what is wrong).  Variables and parameters that do not agree raise
    ``MissingParameterError``, ``UnknownParameterError`` or ``QueryDefaultError``, as for templates."""

    def __init__(self, pattern: str, function: str, reason: str) -> None:
        self.pattern, self.function, self.reason = pattern, function, reason
        super().__init__(f"watcher {function}() for {pattern!r} {reason}")


class DuplicateResourceError(DefinitionError):
    """The URI (or an equivalent template) is already registered."""

    def __init__(self, uri: str, existing: str, owner: object = None) -> None:
        self.uri, self.existing = uri, existing
        by = f" by {defined_at(owner)}" if owner is not None else ""
        if uri == existing:
            super().__init__(f"{uri!r} is already registered{by}")
        else:
            super().__init__(f"{uri!r} is equivalent to the template {existing!r} registered{by}")


def defined_at(fn: object) -> str:
    """``name()`` of a function, with the file and line where it was defined when known."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return f"{name}()"
    return f"{name}() at {code.co_filename}:{code.co_firstlineno}"


def decorator_without_uri(kind: str, given: object) -> DefinitionError:
    """``@app.resource`` (or ``@app.template``) written without its URI: show the right spelling."""
    example = "notes://{name}" if kind == "template" else "notes://today"
    if callable(given):
        name = getattr(given, "__name__", "handler")
        return DefinitionError(
            f"@app.{kind} needs the URI{' template' if kind == 'template' else ''} in parentheses: write "
            f"@app.{kind}(\"{example}\") above def {name}(), not @app.{kind}")
    return DefinitionError(f"@app.{kind}(...) takes the URI as a string first, not {given!r}: "
                           f"@app.{kind}(\"{example}\")")


def bad_resource_uri(uri: object) -> DefinitionError:
    """What is wrong with a resource URI that is not a non-empty ``scheme:...`` string without braces,
    spaces or control characters."""
    if not isinstance(uri, str) or not uri:
        return DefinitionError(f"resource URI must be a non-empty string, not {uri!r}")
    if "{" in uri or "}" in uri:
        return DefinitionError(f"{uri!r} looks like a URI template: declare it with @app.template")
    scheme, colon, rest = uri.partition(":")
    if not colon:
        return DefinitionError(f"resource URI {uri!r} has no scheme (e.g. 'notes://{uri}')")
    odd = next((char for char in uri if char == " " or not char.isprintable()), None)
    if odd is None or not ("a" <= uri < "{" or "A" <= uri < "["):
        return DefinitionError(f"resource URI {uri!r} must start with its scheme, a letter then letters, digits, "
                               f"'+', '-' or '.' (e.g. 'notes://{rest.lstrip('/')}'), not {scheme!r}")
    encoded = f"%{ord(odd):02X}" if ord(odd) < 0x80 else "its UTF-8 bytes, each as %XX"
    return DefinitionError(f"resource URI {uri!r} has {odd!r} at {uri.index(odd)}: a URI has no spaces or "
                           f"control characters (percent-encode it: {encoded})")


# --- wire errors ---------------------------------------------------------------


class MCPError(ResourceKitError):
    """An error answered to the client as a JSON-RPC error object: ``{code, message, data}``.

    Raise it from a handler: ``MCPError("Quota exceeded", {"retryAfter": 30}, code=-32001)``.
    JSON-RPC's own order works too: ``MCPError(-32001, "Quota exceeded"[, data])``.  The
    code defaults to -32603 (internal error); subclasses fix theirs (``ResourceNotFound``).
    A message that is not a string, or a code given twice, is a TypeError here rather
    than a puzzling answer on the wire.
    """

    code: int = -32603

    def __init__(self, message: str | int, data: Any = None, *more: Any, code: int | None = None) -> None:
        if type(message) is int:  # MCPError(-32602, "msg"[, data]): JSON-RPC's order
            if code is not None or len(more) > 1 or not isinstance(data, str):
                raise TypeError("write MCPError(code, message[, data]) or MCPError(message, data, code=code)")
            code, message, data = message, data, more[0] if more else None
        elif more:
            raise TypeError("MCPError takes a message and data; give the code as code=...")
        if not isinstance(message, str):
            raise TypeError(f"MCPError's message must be a string, not {message!r}")
        if type(data) is int and code is None:
            raise TypeError(f"MCPError({message!r}, {data}): is {data} the code? write code={data}")
        if code is not None and type(code) is not int:
            raise TypeError(f"MCPError's code must be an int, not {code!r}")
        super().__init__(message)
        self.message = message
        self.data = data
        if code is not None:
            self.code = code

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(MCPError):
    code = -32700


class InvalidRequest(MCPError):
    code = -32600


class MethodNotFound(MCPError):
    code = -32601


class InvalidParams(MCPError):
    code = -32602


class InternalError(MCPError):
    code = -32603


def unencodable() -> InternalError:
    """The answer to a request whose result JSON cannot carry (a lone surrogate in a ``str``)."""
    return InternalError("Internal error: the result could not be encoded as JSON")


class ResourceNotFound(MCPError):
    """Raised by handlers (or the router) when a URI names nothing.

    The wire code depends on the era: -32002 in the handshake era, -32602 in 2026-07-28.
    The protocol core picks it; ``code`` here is the handshake-era default.
    """

    code = -32002

    def __init__(self, uri: str, message: str | None = None) -> None:
        super().__init__(message or f"Resource not found: {uri}", {"uri": uri})
        self.uri = uri


class NotModified(MCPError):
    """``resources/get`` with a ``version`` that is still current (seed-000 variant)."""

    code = -32003

    def __init__(self, uri: str, version: str) -> None:
        super().__init__("Not modified", {"uri": uri, "version": version})


class StreamNotSupported(MCPError):
    """``resources/stream`` (SEP-2532) cannot be answered with bytes: the resource is not
    ``streamable``, the transport is not HTTP, or the client did not declare ``resourceStreaming``."""

    code = -32003

    def __init__(self, uri: str | None, reason: str) -> None:
        data: dict[str, Any] = {"reason": reason, "suggestion": "Use resources/read for this resource"}
        if uri is not None:
            data["uri"] = uri
        super().__init__("Stream not supported", data)


class ResourceTooLarge(MCPError):
    """``resources/stream`` (SEP-2532): the resource is larger than the client's ``maxStreamSize``."""

    code = -32004

    def __init__(self, uri: str, size: int, max_size: int) -> None:
        super().__init__("Resource too large", {"uri": uri, "size": size, "maxStreamSize": max_size})


class LimitExceeded(MCPError):
    """A documented limit (a field of ``Limits``) was reached; ``data.limit`` names it.

    -32602 when the request itself is too big (a URI, a list of URIs), -32603 when the
    server is busy (in-flight requests, queued jobs): retrying later may succeed.
    """

    def __init__(self, limit: str, value: int | float, message: str, *, code: int = -32602) -> None:
        super().__init__(message, {"limit": limit, "max": value}, code=code)
        self.limit = limit


class InsufficientScope(MCPError):
    """The request's access token lacks scopes the resource requires (``data.scopes``: all it needs).

    Over HTTP the answer is 403 with ``WWW-Authenticate: Bearer error="insufficient_scope"``,
    so the client can ask its authorization server for more (step-up); the handler never ran.
    """

    code = -32030

    def __init__(self, uri: str, scopes: frozenset[str]) -> None:
        super().__init__(f"Forbidden: {uri} needs scope {' '.join(sorted(scopes))}",
                         {"uri": uri, "scopes": sorted(scopes)})
        self.uri = uri
        self.scopes = scopes


class HeaderMismatch(MCPError):
    code = -32020


class UnsupportedVersion(MCPError):
    code = -32022
