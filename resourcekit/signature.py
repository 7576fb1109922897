"""One pass of ``inspect.signature`` into a plain record.

Everything the runtime needs to call a handler (which parameters come from
which template variables, how to convert them, whether to inject a Context)
is worked out here, once, at decoration time.
"""

from __future__ import annotations

import builtins
import dataclasses
import gc
import inspect
import operator
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin, get_type_hints

from .contents import BINARY_MIME, JSON_MIME, TEXT_MIME, never_served
from .context import Context
from .errors import DefinitionError, UnsupportedParameterType, UnsupportedReturnType

if TYPE_CHECKING:
    from ._convert import Convertor

__all__ = ["Param", "Signature", "SignatureCache", "inspect_handler"]

_EMPTY = inspect.Parameter.empty
_UNIONS: tuple[Any, ...] = (typing.Union, getattr(types, "UnionType", typing.Union))


class Param:
    __slots__ = ("convertor", "default", "description", "name", "required")

    def __init__(self, name: str, convertor: Convertor, default: Any, description: str | None):
        self.name = name
        self.convertor = convertor
        self.default = default
        self.required = default is _EMPTY and not convertor.optional
        self.description = description


class Signature:
    __slots__ = ("context_param", "description", "is_async", "mime_type", "name", "params", "title")

    def __init__(
        self,
        name: str,
        title: str | None,
        description: str | None,
        params: dict[str, Param],
        context_param: str | None,
        is_async: bool,
        mime_type: str | None,
    ) -> None:
        self.name = name
        self.title = title
        self.description = description
        self.params = params
        self.context_param = context_param
        self.is_async = is_async
        self.mime_type = mime_type  # inferred from the return annotation; None if unknown


def _is_context(annotation: Any) -> bool:
    if get_origin(annotation) in _UNIONS:  # Optional[Context] / Context | None
        members = [a for a in get_args(annotation) if a is not type(None)]
        annotation = members[0] if len(members) == 1 else None
    return isinstance(annotation, type) and issubclass(annotation, Context)


def _split_annotated(annotation: Any) -> tuple[Any, str | None]:
    if get_origin(annotation) is Annotated:
        base, *extras = get_args(annotation)
        for extra in extras:
            text = extra if isinstance(extra, str) else getattr(extra, "documentation", None)
            if isinstance(text, str):
                return base, text
        return base, None
    return annotation, None


def mime_for_return(annotation: Any) -> str | None:
    annotation, _ = _split_annotated(annotation)
    origin = get_origin(annotation) or annotation
    if origin is str:
        return TEXT_MIME
    if origin in (bytes, bytearray):
        return BINARY_MIME
    if origin in (dict, list, Mapping) or (
        isinstance(origin, type)
        and (dataclasses.is_dataclass(origin) or _is_typeddict(origin) or hasattr(origin, "model_dump"))
    ):
        return JSON_MIME
    return None


def _is_coroutine_function(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    )


_CO_VARIADIC = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
_RETURN_MIME: dict[Any, str | None] = {}
_BUILTINS = vars(builtins)
_NAMES: dict[str, tuple[str, ...]] = {}  # a string annotation -> the names it reads


def _fast_signature(fn: types.FunctionType) -> Signature | None:
    """Parameterless plain functions (most static resources) without ``inspect``'s cost."""
    code = fn.__code__
    if code.co_argcount or code.co_kwonlyargcount or code.co_flags & _CO_VARIADIC:
        return None
    annotation = fn.__annotations__.get("return", _EMPTY)
    if isinstance(annotation, str):  # resolved now, as get_type_hints would: the memo is by what it names
        # in the globals of what a decorator wrapped, as get_type_hints
        names = getattr(_wrapped(fn), "__globals__", {})
        if annotation.isidentifier() and (annotation in names or annotation in _BUILTINS):
            annotation = names[annotation] if annotation in names else _BUILTINS[annotation]
        else:
            try:
                annotation = eval(annotation, names)  # what get_type_hints does for one name
            except Exception:
                annotation = _EMPTY
    try:
        mime = _RETURN_MIME[annotation]
    except KeyError:  # an annotation not seen yet (or never served: those are not remembered)
        if never_served(annotation):
            raise UnsupportedReturnType(fn.__name__, annotation) from None
        if len(_RETURN_MIME) >= 512:  # annotations made per declaration: keep the memo bounded
            _RETURN_MIME.clear()
        mime = _RETURN_MIME[annotation] = mime_for_return(annotation)
    except TypeError:  # an unhashable annotation
        return None
    doc = fn.__doc__
    if doc is None and "." in fn.__qualname__ and "<locals>" not in fn.__qualname__:
        return None  # a class's method: inspect.getdoc looks in its bases
    return Signature(
        name=fn.__name__,
        title=None,
        description=inspect.cleandoc(doc) if doc else None,
        params={},
        context_param=None,
        # as the general path asks: a sync def marked with inspect.markcoroutinefunction (3.12+)
        # is one too (once per code object: the cache inspects each model once)
        is_async=_is_coroutine_function(fn),
        mime_type=mime,
    )


def _wrapped(fn: Any) -> Any:
    """What ``fn`` wraps (``functools.wraps``'s ``__wrapped__``, followed to the end), or ``fn``;
    DefinitionError if the chain loops."""
    seen = {id(fn)}
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
        if id(fn) in seen:
            raise DefinitionError(f"{fn!r}: its __wrapped__ chain loops back to itself")
        seen.add(id(fn))
    return fn


def convertor_for(annotation: Any) -> Convertor | None:
    """``_convert.convertor_for``: the typed convertors load with the first parameter, not at start-up."""
    from ._convert import convertor_for

    return convertor_for(annotation)


def inspect_handler(fn: Callable[..., Any], *, serves: bool = True) -> Signature:
    """Introspect ``fn`` once. Raises UnsupportedParameterType for unconvertible params, and
    UnsupportedReturnType for a return annotation nothing can be served of unless it ``serves``
    nothing (a watcher)."""
    if type(fn) is types.FunctionType and serves:
        fast = _fast_signature(fn)
        if fast is not None:
            return fast
    name = getattr(fn, "__name__", type(fn).__name__)
    if hasattr(fn, "__wrapped__"):
        _wrapped(fn)  # a loop: get_type_hints would follow it for ever
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception:  # a forward reference that does not resolve: the others still do
        hints = _hints_one_by_one(fn)
    sig = inspect.signature(fn)
    params: dict[str, Param] = {}
    context_param = None
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        raw = hints.get(p.name, p.annotation)
        annotation, description = _split_annotated(raw)
        if _is_context(annotation):
            context_param = p.name
            continue
        convertor = convertor_for(str if annotation is _EMPTY else annotation)
        if convertor is None:
            raise UnsupportedParameterType(name, p.name, annotation)
        params[p.name] = Param(p.name, convertor, p.default, description)
    returned = hints.get("return", sig.return_annotation)
    if serves and never_served(returned):
        raise UnsupportedReturnType(name, returned)
    doc = inspect.getdoc(fn)
    return Signature(
        name=name,
        title=None,
        description=doc or None,
        params=params,
        context_param=context_param,
        is_async=_is_coroutine_function(fn),
        mime_type=mime_for_return(returned),
    )


def _hints_one_by_one(fn: Callable[..., Any]) -> dict[str, Any]:
    """``get_type_hints(fn)`` without the annotations that do not resolve (a name defined later, or
    only for type checkers): one of them must not turn ``ctx: Context | None`` or ``a: int`` back
    into strings."""
    names: dict[str, Any] = getattr(_wrapped(fn), "__globals__", {})  # as get_type_hints
    hints: dict[str, Any] = {}
    for key, annotation in (getattr(fn, "__annotations__", None) or {}).items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, names)  # what get_type_hints does
            except Exception:
                continue
        hints[key] = type(None) if annotation is None else annotation
    return hints


class SignatureCache:
    """``inspect_handler`` once per code object and what else it reads.

    Closures made by one ``def`` (a factory declaring 100,000 resources) share a code
    object and, almost always, everything ``inspect_handler`` reads of them: their
    annotations, defaults, docstring, name, globals, ``__dict__`` (``__wrapped__``).
    ``gc.get_referents`` lists exactly those, and the closure's cells (the one fact that
    differs between siblings, so not compared), without reading ``__annotations__``: that
    would build a dict on every closure (184 bytes each, kept by the function).

    A sibling matches the function inspected for its code (its model) when every fact is
    the very same object, or a tuple or dict made per closure (defaults, annotations,
    ``__dict__``) holding the very same objects, or equal ones of one type in ``_STRICT``:
    ``1 == 1.0 == True``, ``"red" == Color.RED`` and ``Literal["a", "b"] == Literal["b", "a"]``,
    but a form shows each as declared.  String annotations are resolved in globals that may
    change between declarations (a module's loop variable, a class defined later): the
    names they read must be the very same objects too.  Anything else is inspected, and
    becomes the model for its code's later functions.  The model's own dicts are kept as
    they were when inspected; a function holding a closure in its ``__dict__`` or defaults
    is no model; the table holds at most ``_MAX_ENTRIES`` code objects, then starts over.
    """

    __slots__ = ("_entries", "_last")

    def __init__(self) -> None:
        self._entries: dict[types.CodeType, _Entry] = {}
        self._last: _Entry | None = None  # closures come in runs

    def signature(self, fn: Callable[..., Any]) -> Signature:
        """``fn``'s Signature; DefinitionError if it is not callable."""
        if type(fn) is not _CACHED:
            if not callable(fn):
                raise DefinitionError(f"{fn!r} is not callable")
            return inspect_handler(fn)
        facts = _referents(fn)  # before inspect_handler reads (and so builds) __annotations__
        code = facts[0]  # a function's first referent is its code (see _CACHED)
        entry = self._last
        if entry is None or entry[0] is not code:
            entry = self._entries.get(code)
            if entry is None:
                return self._inspected(fn, facts, -2)
        at = entry[2]
        if at >= 0:  # the cells are the one fact that differs (elsewhere: unequal)
            if len(facts) <= at or facts[at] is not fn.__closure__:
                return self._inspected(fn, facts, -2)
            facts[at] = None
        known = entry[1]
        try:
            same = known == facts  # in C, and the very same objects compare without ==
        except Exception:  # a default whose == raises or is not a bool (an array): inspect
            same = False
        if same and entry[4] is not None:  # equal; and what == may find equal though it reads otherwise
            same = _alike_closer(known, facts, entry[4])
        if not same:
            return self._inspected(fn, facts, at)
        self._last = entry
        return entry[3]

    def _inspected(self, fn: types.FunctionType, facts: list[Any], at: int) -> Signature:
        """Inspect ``fn`` and remember it as the one its code's later functions are compared with;
        ``at``: where its cells were among ``facts`` (now None), -1 if it has none, -2 if not looked for."""
        if at == -2:
            closure = fn.__closure__
            at = -1 if closure is None else next(i for i, fact in enumerate(facts) if fact is closure)
            if at >= 0:
                facts[at] = None  # the cache keeps no function's cells (nor what they hold) alive
        shared = (fn.__globals__, getattr(fn, "__builtins__", None))  # compared by identity
        containers = []  # the places of tuples and dicts whose equal items may read otherwise
        defaults = fn.__defaults__
        holds_cells = False
        for i, fact in enumerate(facts):
            if type(fact) is tuple:  # defaults, or annotations as declared (the cells are None now)
                items: Any = fact
                if fact is defaults or not all(type(item) in _STRICT for item in fact):
                    containers.append(i)  # an annotation that == a string reads as that string
            elif type(fact) is dict and fact is not shared[0] and fact is not shared[1]:
                facts[i] = dict(fact)  # __dict__, kwdefaults, annotations as inspected, not as changed later
                containers.append(i)
                items = fact.values()
            else:
                continue
            holds_cells = holds_cells or any(type(item) is _CACHED and item.__closure__ for item in items)
        sig = inspect_handler(fn)
        read = None if holds_cells else _names_read(fn)
        if read is None:  # no model: a closure wrapped (functools.wraps) or a default would be kept
            return sig  # alive, and no sibling holds the same one; or an annotation does not compile
        code = fn.__code__
        entries = self._entries
        if len(entries) >= _MAX_ENTRIES and code not in entries:  # code compiled at run time, declared
            entries.clear()  # and removed again and again: keep no Signature of every one
        closer = (tuple(containers), read[1], read[0]) if containers or read[1] else None
        entries[code] = self._last = (code, facts, at, sig, closer)
        return sig


def _alike_closer(known: list[Any], facts: list[Any], closer: _Closer) -> bool:
    """Whether a sibling's facts, equal to its model's, are alike where == is not enough: its
    tuples and dicts hold the same objects (or alike ones), and the globals its string
    annotations name are the very objects they were."""
    containers, read, names = closer
    for i in containers:
        if known[i] is not facts[i] and not _same_items(known[i], facts[i]):
            return False
    for name, value in read:  # noqa: SIM110 - no generator: this runs per declaration
        if names.get(name, _EMPTY) is not value:
            return False
    return True


def _names_read(fn: types.FunctionType) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...]] | None:
    """The globals ``fn``'s string annotations are resolved in, and what the names they read that
    are no builtin's (a module's loop variable, rebound) are now; None if one does not compile."""
    names: dict[str, Any] = getattr(_wrapped(fn), "__globals__", {})  # as get_type_hints
    read = []
    for annotation in fn.__annotations__.values():  # built by the inspection already
        if isinstance(annotation, str):
            used = _NAMES.get(annotation)
            if used is None:
                try:
                    used = compile(annotation, "<annotation>", "eval").co_names
                except Exception:
                    return None
                if len(_NAMES) >= 512:  # annotations made per declaration: keep the memo bounded
                    _NAMES.clear()
                _NAMES[annotation] = used
            read += [(name, names.get(name, _EMPTY)) for name in used if name in names or name not in _BUILTINS]
    return names, tuple(read)


def _same_items(known: Any, fact: Any) -> bool:
    """Whether two equal tuples or dicts hold the very same objects, or equal ones of one type
    whose equal values read the same (``"red"`` and ``"red"``, not ``"red"`` and a str enum's)."""
    if type(fact) is tuple:
        return all(map(_is, known, fact)) or all(map(_alike, known, fact))
    if not all(map(_is, known, fact)):  # the keys, in one order: values paired key by key
        return False
    return all(map(_is, known.values(), fact.values())) or all(map(_alike, known.values(), fact.values()))


def _alike(known: Any, fact: Any) -> bool:
    """Two equal items: the same one, or of one type in ``_STRICT``."""
    return known is fact or (type(known) is type(fact) and type(fact) in _STRICT)


# code, a function's referents (its cells' place None), that place or -1, its Signature, and for
# _alike_closer (None if nothing needs it): the places of its tuples and dicts that need a closer
# look, the names its string annotations read with their values, and the globals they are read in
_Closer = tuple[tuple[int, ...], tuple[tuple[str, Any], ...], dict[str, Any]]
_Entry = tuple[types.CodeType, list[Any], int, Signature, _Closer | None]
_MAX_ENTRIES = 4096  # code objects
_is = operator.is_
_STRICT = frozenset((str, bytes, type, type(None)))  # equal only to what reads the same (a class: itself)


# CPython lists a function's code (first), globals, defaults, annotations... as its referents;
# elsewhere every function is inspected
_referents = gc.get_referents
_CACHED = (types.FunctionType if sys.implementation.name == "cpython"
           and _referents(_is_coroutine_function)[0] is _is_coroutine_function.__code__ else None)


def _is_typeddict(tp: Any) -> bool:
    """``typing``'s TypedDicts, or typing_extensions' if the app imported it (start-up need not)."""
    if typing.is_typeddict(tp):
        return True
    extensions = sys.modules.get("typing_extensions")
    return extensions is not None and bool(extensions.is_typeddict(tp))
