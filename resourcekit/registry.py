"""The registry: resources and templates, compiled at decoration time, with one registration path."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from . import declaration
from .declaration import DEFAULT_OPTIONS, Handler, Options, completers_for, normalize_annotations, plain_handler
from .errors import (
    DefinitionError,
    DuplicateResourceError,
    MissingParameterError,
    QueryDefaultError,
    TemplateSyntaxError,
    UnknownParameterError,
    bad_resource_uri,
    decorator_without_uri,
)
from .lifespan import Lifespan
from .limits import DEFAULT_LIMITS, Limits
from .mime import declared_mime_type
from .pagination import SeqIndex
from .router import Router
from .scopes import NO_SCOPES, normalize_scopes
from .signature import Signature, SignatureCache
from .skills_api import SkillsDeclared
from .tracking import Tracker

__all__ = ["Registry"]

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:  # the keyword options, for type checkers only: importing typing_extensions costs start-up
    from typing_extensions import TypedDict, Unpack

    from .templates import UriTemplate

    class _Options(TypedDict, total=False):
        """What ``resource`` and ``template`` both take (see README, "Declaring resources")."""

        name: str | None
        title: str | None
        description: str | None
        mime_type: str | None
        annotations: Mapping[str, Any] | None
        icons: list[dict[str, Any]] | None
        meta: Mapping[str, Any] | None
        ttl_ms: int | None
        cache_scope: str | None
        kind: str | None
        metadata: Mapping[str, Any] | None
        children: Callable[..., Any] | None
        poll: float | None
        scopes: Iterable[str] | None
        streamable: bool

    class ResourceOptions(_Options, total=False):
        size: int | None

    class TemplateOptions(_Options, total=False):
        lister: Callable[..., Any] | None
        complete: Mapping[str, Callable[..., Any]] | None
        tool: str | bool | None


CACHE_SCOPES = ("public", "private")
_PLAIN = frozenset({"name", "mime_type"})  # a resource declared with only these keeps no listed object


class Registry(SkillsDeclared):
    """A set of MCP resources and templates (``App`` adds serving on top).

    ``limits`` bounds everything a client can make the server hold or do
    (``page_size``, ``max_message_size`` and ``max_workers`` are shorthands for
    three of them); ``ttl_ms`` and ``cache_scope`` are the caching hints of
    2026-07-28 results unless a resource says otherwise.  ``resource_tools`` also serves
    the resources as read-only tools (``list_resources``, ``read_resource``, one per template).
    ``subscribe=False`` / ``list_changed=False``: the server declares no ``subscribe`` / ``listChanged``
    and sends no such notifications (for data that never changes, or serverless hosts).
    """

    state: Any = None  # what the app's lifespan yielded, while it runs (App.lifespan)

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        instructions: str | None = None,
        title: str | None = None,
        website_url: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        limits: Limits | None = None,
        page_size: int | None = None,
        max_message_size: int | None = None,
        ttl_ms: int = 0,
        cache_scope: str = "private",
        max_workers: int | None = None,
        resource_tools: bool = False,
        subscribe: bool = True,
        list_changed: bool = True,
        scopes: Iterable[str] | None = None,
        telemetry: bool = True,
        lifespan: Callable[..., Any] | None = None,
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.limits = (limits or DEFAULT_LIMITS).replace(
            page_size=page_size, max_message_size=max_message_size, max_workers=max_workers)
        if cache_scope not in CACHE_SCOPES:
            raise ValueError(f"cache_scope must be one of {CACHE_SCOPES}")
        self.name = name
        self.version = version
        self.instructions = instructions
        self.title = title
        self.website_url = website_url
        self.icons = icons
        self.ttl_ms = ttl_ms
        self.cache_scope = cache_scope
        self.telemetry = telemetry  # OpenTelemetry spans and metrics, once a provider is configured
        self.router = Router(max_uri_length=self.limits.max_uri_length)
        # made on first use (``resources``): declaring 100,000 resources appends to no index
        self._resources: SeqIndex[Handler] | None = None
        self.templates: SeqIndex[Handler] = SeqIndex()
        self.listed_templates: SeqIndex[Handler] = SeqIndex()  # templates with a lister
        self._seq = 0
        self._signatures = SignatureCache()
        self._lock = threading.Lock()
        self._tracker: Tracker | None = None
        self.streamable = False  # something was declared streamable=True: resources.stream over HTTP (SEP-2532)
        self.resource_tools = resource_tools  # list_resources, read_resource as tools too (for hosts of tools only)
        # capabilities a client may rely on: off, not declared (subscriptions and list_changed never come)
        self.subscribe = subscribe
        self.list_changed = list_changed
        # what reading takes unless a declaration says otherwise; every scope declared (resourcekit.scopes)
        self.scopes = normalize_scopes(scopes, f"App {name!r}") or NO_SCOPES
        self.declared_scopes: set[str] = set(self.scopes)
        self._lifespan = Lifespan(self, lifespan)  # sets self.state while it runs

    @property
    def resources(self) -> SeqIndex[Handler]:
        """The resources, pageable in declaration order: made on first use from ``router.exact`` (in that
        order already: each URI is claimed under the lock with the next number), then kept up to date."""
        with self._lock:
            if self._resources is None:
                handlers = list(self.router.exact.values())
                self._resources = SeqIndex.of([handler.seq for handler in handlers], handlers)
            return self._resources

    @property
    def page_size(self) -> int:
        return self.limits.page_size

    @property
    def max_message_size(self) -> int:
        return self.limits.max_message_size

    @property
    def max_workers(self) -> int:
        return self.limits.max_workers

    # --- declaring -----------------------------------------------------------

    def resource(self, uri: str, **options: Unpack[ResourceOptions]) -> Callable[[F], F]:
        """Declare a resource at a fixed URI; the decorated function returns its contents."""
        if not isinstance(uri, str):
            raise decorator_without_uri("resource", uri)

        def decorator(fn: F) -> F:
            self._add_resource(fn, uri, options)
            return fn
        return decorator

    def template(self, uri_template: str, **options: Unpack[TemplateOptions]) -> Callable[[F], F]:
        """Declare an RFC 6570 URI template; its variables become the function's arguments."""
        if not isinstance(uri_template, str):
            raise decorator_without_uri("template", uri_template)

        def decorator(fn: F) -> F:
            self.add_template(fn, uri_template, **options)
            return fn
        return decorator

    def add_resource(self, fn: Callable[..., Any], uri: str, **options: Unpack[ResourceOptions]) -> Handler:
        """Register ``fn`` as the resource at ``uri`` (what ``@app.resource`` does)."""
        if not isinstance(uri, str):
            raise bad_resource_uri(uri)
        return self._add_resource(fn, uri, options)

    def _add_resource(self, fn: Callable[..., Any], uri: str, options: ResourceOptions) -> Handler:
        # declaring 100,000 is a hot path: the options as the caller's keywords made them; the URI a str (its
        # callers checked) starting with a letter, with a ":", no braces, space or control character
        if (not ("a" <= uri < "{" or "A" <= uri < "[") or "{" in uri or "}" in uri or ":" not in uri
                or " " in uri or not uri.isprintable()):
            raise bad_resource_uri(uri)
        sig = self._signatures.signature(fn)
        if sig.params:
            for param in sig.params.values():
                if param.required:
                    raise UnknownParameterError(uri, param.name, sig.name, resource=True)
        if not _PLAIN.issuperset(options):
            if "lister" in options or "complete" in options:
                raise DefinitionError(f"lister and complete are template options; {uri!r} is a resource")
            return self._register(fn, uri, None, sig, **options)
        # a plain resource: no listed object kept, no Options (see Handler.wire)
        mime_type = options.get("mime_type")
        if not mime_type:  # declared_mime_type's rule, in one step for a URI without a "." (nothing to guess from)
            mime_type = declared_mime_type(mime_type, sig.mime_type, uri) if "." in uri else sig.mime_type
        return self._insert(plain_handler(uri, fn, sig, mime_type, options.get("name") or sig.name))

    def add_template(self, fn: Callable[..., Any], uri_template: str, **options: Unpack[TemplateOptions]) -> Handler:
        """Register ``fn`` behind a URI template (what ``@app.template`` does)."""
        template = declaration.uri_template(uri_template)
        if template.duplicates:
            name, position = template.duplicates[0]
            raise TemplateSyntaxError(uri_template, position,
                                      f"variable {name!r} appears twice (each variable is one parameter)")
        sig = self._signatures.signature(fn)
        names = set(template.names)
        for variable in template.variables:
            param = sig.params.get(variable.name)
            if param is None:
                raise MissingParameterError(uri_template, variable.name, sig.name)
            if variable.query and param.required:
                raise QueryDefaultError(uri_template, variable.name, sig.name)
            if variable.explode and not param.convertor.is_list and not variable.query:
                raise DefinitionError(
                    f"variable {variable.name!r} of {uri_template!r} is exploded ('*'): "
                    f"annotate parameter {variable.name!r} of {sig.name}() as list[...]"
                )
        for pname in sig.params:
            if pname not in names:
                raise UnknownParameterError(uri_template, pname, sig.name, resource=False)
        for cname in options.get("complete") or {}:
            if cname not in names:
                raise DefinitionError(f"completer for {cname!r}, but {uri_template!r} has no such variable")
        return self._register(fn, uri_template, template, sig, **options)

    def _register(
        self,
        fn: Callable[..., Any],
        uri: str,
        template: UriTemplate | None,
        sig: Signature,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: str | None = None,
        kind: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        lister: Callable[..., Any] | None = None,
        complete: Mapping[str, Callable[..., Any]] | None = None,
        children: Callable[..., Any] | None = None,
        poll: float | None = None,
        scopes: Iterable[str] | None = None, streamable: bool = False,
        tool: str | bool | None = None,
    ) -> Handler:
        mime_type = declared_mime_type(mime_type, sig.mime_type, uri.split("{", 1)[0] if template else uri)
        name = name or sig.name
        extras = DEFAULT_OPTIONS
        wire = None  # a plain resource's is made when listed (Handler.wire): 184 bytes less each
        rare = (size is not None or annotations or icons or meta or ttl_ms is not None or cache_scope is not None
                or kind is not None or metadata is not None or lister is not None or complete
                or children is not None or poll is not None or scopes is not None or streamable or tool is not None)
        if rare or template is not None or title or description:
            wire = {"name": name, "uriTemplate" if template else "uri": uri}
            if title:
                wire["title"] = title
            description = description or sig.description
            if description:
                wire["description"] = description
            if mime_type:
                wire["mimeType"] = mime_type
            if rare or (template is not None and sig.params):
                extras = self._options(uri, template, sig, wire, size, annotations, icons, meta, ttl_ms,
                                       cache_scope, kind, metadata, lister, complete, children, poll, scopes, tool)
        self.streamable = extras.mark_streamable(uri, streamable, wire) or self.streamable
        return self._insert(Handler(uri, template, fn, sig, mime_type, wire, extras, 0, name), lister is not None)

    def _insert(self, handler: Handler, listed: bool = False) -> Handler:
        """Number ``handler`` and add it to the router and the indexes (DuplicateResourceError if taken)."""
        lock = self._lock
        lock.acquire()  # not ``with``: half the cost, paid once per declaration
        try:
            self._seq += 1
            handler.seq = seq = self._seq
            if handler.template is None:  # Router.add's check in one C call: declaring 100,000 is a hot path
                if self.router.claim(handler.uri, handler) is not handler:
                    raise DuplicateResourceError(handler.uri, handler.uri, self.router.exact[handler.uri].fn)
                if self._resources is not None:  # listed already (else made when first listed)
                    self._resources.append(seq, handler)
            else:
                self.router.add(handler)
                self.templates.append(seq, handler)
                if listed:
                    self.listed_templates.append(seq, handler)
        finally:
            lock.release()
        if self._tracker is not None:
            self._tracker.on_registry_changed(handler)
        return handler

    def _options(
        self,
        uri: str,
        template: UriTemplate | None,
        sig: Signature,
        wire: dict[str, Any],
        size: int | None,
        annotations: Mapping[str, Any] | None,
        icons: list[dict[str, Any]] | None,
        meta: Mapping[str, Any] | None,
        ttl_ms: int | None,
        cache_scope: str | None,
        kind: str | None,
        metadata: Mapping[str, Any] | None,
        lister: Callable[..., Any] | None,
        complete: Mapping[str, Callable[..., Any]] | None,
        children: Callable[..., Any] | None,
        poll: float | None,
        scopes: Iterable[str] | None,
        tool: str | bool | None = None,
    ) -> Options:
        """Check the less common options (and add what they show to ``wire``)."""
        if cache_scope is not None and cache_scope not in CACHE_SCOPES:
            raise DefinitionError(f"cache_scope of {uri!r} must be one of {CACHE_SCOPES}")
        if ttl_ms is not None and (not isinstance(ttl_ms, int) or ttl_ms < 0):
            raise DefinitionError(f"ttl_ms of {uri!r} must be a non-negative integer")
        if size is not None and (not isinstance(size, int) or size < 0):
            raise DefinitionError(f"size of {uri!r} must be a non-negative integer")
        if size is not None and template is None:
            wire["size"] = size
        normalized = normalize_annotations(annotations)
        if normalized:
            wire["annotations"] = normalized
        if icons:
            wire["icons"] = list(icons)
        lister_paged = False
        if lister is not None:
            if not callable(lister):
                raise DefinitionError(f"lister of {uri!r} must be callable")
            positional = [
                p for p in inspect.signature(lister).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            lister_paged = len(positional) >= 2
        if children is not None and not callable(children):
            raise DefinitionError(f"children of {uri!r} must be callable")
        if poll is not None and poll <= 0:
            raise DefinitionError(f"poll interval of {uri!r} must be positive")
        if tool is not None:
            declaration.check_tool_option(uri, template, sig.name, tool)
        completers = completers_for(uri, template, sig, complete)
        required = normalize_scopes(scopes, repr(uri))
        if required:
            self.declared_scopes |= required
        return Options(size, dict(meta) if meta else None, ttl_ms, cache_scope, kind, metadata, lister,
                       lister_paged, completers, children, poll, required, None if tool is True else tool)

    def remove(self, uri: str) -> None:
        """Remove a resource (by URI) or template (by its template string) at run time."""
        with self._lock:
            handler = self.router.exact.get(uri) or self.router.templates.get(uri)
            if handler is None:
                raise KeyError(uri)
            self.router.remove(handler)
            index = self._resources if handler.template is None else self.templates
            if index is not None:
                index.remove(handler.seq)
            self.listed_templates.remove(handler.seq)
        if self._tracker is not None:
            self._tracker.on_registry_changed(handler)

    # --- change tracking ---------------------------------------------------------

    @property
    def tracker(self) -> Tracker:
        if self._tracker is None:
            with self._lock:
                if self._tracker is None:
                    self._tracker = Tracker(self)
        return self._tracker

    def notify_changed(self, uri: str) -> None:
        """Tell subscribers of ``uri`` if its content really changed (re-read and hashed); from any thread, bursts
        coalesce."""
        self.tracker.notify_changed(uri)

    def notify_list_changed(self) -> None:
        """Tell clients the resource list changed (for lists that change outside the program)."""
        self.tracker.notify_list_changed()
