"""URI → handler, with explicit precedence and a cost that does not grow with templates.

Precedence: an exact URI first; then, among templates whose pattern matches
and whose values convert, the most specific (``UriTemplate.specificity``),
then the first registered.  Templates are indexed by their literal prefix cut
at its last ``/`` or ``:``, so a lookup probes one bucket per such boundary of
the URI (a handful of dict lookups) instead of scanning every template.

A URI longer than ``max_uri_length`` matches nothing.  Registration may happen at
run time from any thread while other threads match: ``add`` and ``remove`` never
change a bucket or the set of key lengths in place, they build new ones and swap
them in, so a reader sees either the old or the new table, never a half-sorted one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .declaration import Handler
from .errors import DuplicateResourceError

__all__ = ["Match", "Router"]

_CUTS = "/:"
_CACHE_SIZE = 4096
# clients re-read short URIs; a long one is rarely read twice, and 4096 of them would
# pin gigabytes
_CACHE_URI_LENGTH = 256


_NO_VALUES: dict[str, Any] = {}  # never changed: only a Context parameter is ever added to kwargs


def _index_key(literal_prefix: str) -> str:
    cut = max(literal_prefix.rfind(c) for c in _CUTS)
    return literal_prefix[: cut + 1]


def _as_is(handler: Handler) -> bool:
    """Whether ``handler.convert`` of what its template matches gives it back unchanged: every
    variable one string, for a ``str`` parameter of that name, and no ``Context`` to add."""
    assert handler.template is not None
    names, params = handler.template.scalars, handler.sig.params
    return (names is not None and handler.sig.context_param is None and set(names) == set(params)
            and all(p.convertor.parse is str and not p.convertor.is_list for p in params.values()))


class Match:
    __slots__ = ("handler", "kwargs", "raw")

    def __init__(self, handler: Handler, kwargs: dict[str, Any], raw: dict[str, Any]) -> None:
        self.handler = handler
        self.kwargs = kwargs
        self.raw = raw


class Router:
    __slots__ = ("_as_is", "_buckets", "_canonical", "_copied", "_key_lengths", "_listy", "claim", "exact",
                 "generation", "max_uri_length", "shared", "templates")

    def __init__(self, *, max_uri_length: int = 8192) -> None:
        self.max_uri_length = max_uri_length
        self.exact: dict[str, Handler] = {}  # changed in place, never replaced
        # claim(uri, handler): route the exact ``uri`` to ``handler`` unless it is taken; returns
        # the handler ``uri`` routes to (a clash when it is not ``handler``).  One C call:
        # declaring 100,000 resources is a hot path
        self.claim: Callable[[str, Handler], Handler] = self.exact.setdefault
        self.templates: dict[str, Handler] = {}  # by template string
        self.generation = 0  # counts the templates' comings and goings (what is worked out from them stays)
        self._canonical: dict[str, Handler] = {}
        self._buckets: dict[str, list[Handler]] = {}  # each list is replaced, never changed
        self._key_lengths: frozenset[int] = frozenset()  # which prefix lengths have a bucket
        self._listy: frozenset[Handler] = frozenset()  # templates whose values may be lists
        self._as_is: set[Handler] = set()  # templates whose matched strings are their arguments
        # recently matched template URIs: clients re-read the same URIs, and a hit skips
        # the regex and the conversions.  Replaced (not cleared) whenever a template comes
        # or goes, so a match computed against the old table lands in the dropped dict.
        # uri -> its match, handed out as it is (its handler adds nothing to its values, which
        # hold no list): read directly by who serves a read, as ``exact`` is
        self.shared: dict[str, Match] = {}
        # uri -> its match, copied for each request (lists a handler may change, or a Context to add)
        self._copied: dict[str, Match] = {}

    def add(self, handler: Handler) -> None:
        """Route to ``handler``; DuplicateResourceError if it clashes with a registered one."""
        template = handler.template
        if template is None:
            if self.claim(handler.uri, handler) is not handler:
                raise DuplicateResourceError(handler.uri, handler.uri, self.exact[handler.uri].fn)
            return
        existing = self._canonical.get(template.canonical)
        if existing is not None:
            raise DuplicateResourceError(handler.uri, existing.uri, existing.fn)
        self.templates[handler.uri] = handler
        self._canonical[template.canonical] = handler
        if any(v.explode for v in template.variables) or any(p.convertor.is_list for p in handler.sig.params.values()):
            self._listy = self._listy | {handler}
        if _as_is(handler):
            self._as_is.add(handler)  # (a set's add and a reader's ``in`` are atomic)
        key = _index_key(template.literal_prefix)
        self._buckets[key] = sorted([*self._buckets.get(key, ()), handler], key=_precedence)
        self._key_lengths = self._key_lengths | {len(key)}
        self.shared, self._copied = {}, {}
        self.generation += 1

    def remove(self, handler: Handler) -> None:
        template = handler.template
        if template is None:
            if self.exact.get(handler.uri) is handler:
                del self.exact[handler.uri]
            return
        if self.templates.get(handler.uri) is not handler:
            return
        del self.templates[handler.uri]
        del self._canonical[template.canonical]
        key = _index_key(template.literal_prefix)
        bucket = [h for h in self._buckets[key] if h is not handler]
        if bucket:
            self._buckets[key] = bucket
        else:
            del self._buckets[key]
            if not any(len(k) == len(key) for k in self._buckets):
                self._key_lengths = self._key_lengths - {len(key)}
        self._listy = self._listy - {handler}
        self._as_is.discard(handler)
        self.shared, self._copied = {}, {}
        self.generation += 1

    def candidates(self, uri: str) -> list[Handler]:
        """Templates that may match ``uri``, in precedence order."""
        buckets = self._buckets
        found: list[Handler] | None = None
        several = False
        for length in self._key_lengths:
            if length > len(uri) or (length and uri[length - 1] not in _CUTS):
                continue
            bucket = buckets.get(uri[:length])
            if bucket is None:
                continue
            if found is None:
                found = bucket
            else:
                found = found + bucket
                several = True
        if found is None:
            return []
        if several:
            found.sort(key=_precedence)
        return found

    def match(self, uri: str) -> Match | None:
        handler = self.exact.get(uri)
        if handler is not None:
            if handler.sig.context_param is None:  # nobody adds to the values: share empty ones
                return Match(handler, _NO_VALUES, _NO_VALUES)
            return Match(handler, {}, {})
        return self.templated(uri)

    def templated(self, uri: str) -> Match | None:
        """``match`` for a URI no exact one is."""
        return self.shared.get(uri) or self.unshared(uri)

    def unshared(self, uri: str) -> Match | None:
        """``templated`` for a URI the shared matches do not hold (a read looks there itself)."""
        hit = self._copied.get(uri)
        if hit is not None:
            handler = hit.handler
            if handler in self._listy:
                return Match(handler, _copied(hit.kwargs), _copied(hit.raw))
            return Match(handler, dict(hit.kwargs), hit.raw)
        if len(uri) > self.max_uri_length:
            return None
        for handler in self.candidates(uri):
            assert handler.template is not None
            raw = handler.template.match(uri)
            if raw is None:
                continue
            if handler in self._as_is:  # (a fresh dict of strings, as the conversion would give)
                kwargs = raw
            else:
                try:
                    kwargs = handler.convert(raw)
                except (ValueError, TypeError, ArithmeticError):
                    continue  # does not convert: this template does not match, try the next
            if len(uri) <= _CACHE_URI_LENGTH:
                # the handler gets its own lists, so one that mutates its argument cannot
                # change what the next request receives
                if handler in self._listy:
                    _cache(self._copied, uri, Match(handler, _copied(kwargs), _copied(raw)))
                elif handler.sig.context_param is None:  # nobody adds to its values: the cached match itself
                    found = Match(handler, kwargs, raw)
                    _cache(self.shared, uri, found)
                    return found
                else:
                    _cache(self._copied, uri, Match(handler, dict(kwargs), raw))
            return Match(handler, kwargs, raw)
        return None

    def forget(self, uri: str) -> None:
        """Drop ``uri`` from the match cache: for a URI its handler answered not-found,
        which would otherwise hold a slot that no later read profits from."""
        self.shared.pop(uri, None)
        self._copied.pop(uri, None)

    def __iter__(self) -> Iterator[Handler]:
        yield from self.exact.values()
        yield from self.templates.values()


def _cache(cache: dict[str, Match], uri: str, match: Match) -> None:
    """``cache[uri] = match``; a full cache starts over."""
    if len(cache) >= _CACHE_SIZE:
        cache.clear()
    cache[uri] = match


def _copied(values: dict[str, Any]) -> dict[str, Any]:
    """A copy whose lists are copies too (converted values are otherwise immutable)."""
    return {k: list(v) if isinstance(v, list) else v for k, v in values.items()}


def _precedence(handler: Handler) -> tuple[Any, int]:
    assert handler.template is not None
    return (handler.template.specificity, handler.seq)
