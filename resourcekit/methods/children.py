"""Calling a listable resource's ``children=`` function (SEP-2093), from worker threads.

``fn`` receives the same typed keyword arguments as the handler (the template
variables, never a Context; it may leave out ones it does not need).  It may be
sync or async.  It returns ``None`` when this instance is not listable, else an
iterable (or async iterable) of children, each a URI string or a dict with
``"uri"`` and optional Resource fields.  If it also takes ``offset`` and
``limit`` (not template variables) it is asked for one page at a time;
otherwise its iterable is sliced.  A generator function cannot return ``None``:
every instance counts as listable.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..declaration import Handler
    from ._base import SessionView as Connection

__all__ = ["children_from", "listable", "off_loop"]

log = logging.getLogger("resourcekit")

_ASYNC_BATCH = 64
_END: Any = object()


class _Shape:
    """How to call one handler's ``children`` function (found once per handler)."""

    __slots__ = ("accepts", "generator", "paged")

    def __init__(self, handler: Handler) -> None:
        fn = handler.children
        variables = set(handler.sig.params)
        params: Mapping[str, inspect.Parameter] | None
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = None
        if params is None or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            self.accepts: frozenset[str] | None = None  # pass every variable
        else:
            self.accepts = frozenset(params)
        self.paged = (params is not None and "offset" in params and "limit" in params
                      and "offset" not in variables and "limit" not in variables)
        self.generator = inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)


def _shape(handler: Handler) -> _Shape:
    shape: _Shape | None = handler.remembered("children_shape")
    if shape is None:
        shape = _Shape(handler)
        handler.remember("children_shape", shape)
    return shape


def _call(conn: Connection, handler: Handler, kwargs: Mapping[str, Any], **page: int) -> Any:
    """``handler.children(**kwargs)`` from a worker thread; async results are awaited on the loop."""
    shape = _shape(handler)
    args = dict(kwargs) if shape.accepts is None else {k: v for k, v in kwargs.items() if k in shape.accepts}
    result = handler.children(**args, **page)
    if inspect.isawaitable(result):
        result = asyncio.run_coroutine_threadsafe(_await(result), conn.server.loop).result()
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _iterate(conn: Connection, result: Any) -> Iterator[Any]:
    """A sync iterator over what a children function returned (async iterables pulled in batches)."""
    if hasattr(result, "__aiter__"):
        it = result.__aiter__()

        async def take() -> tuple[list[Any], bool]:
            out: list[Any] = []
            try:
                while len(out) < _ASYNC_BATCH:
                    out.append(await it.__anext__())
            except StopAsyncIteration:
                return out, True
            return out, False

        while True:
            items, done = asyncio.run_coroutine_threadsafe(take(), conn.server.loop).result()
            yield from items
            if done:
                return
    if not isinstance(result, Iterable) or isinstance(result, (str, bytes, Mapping)):
        raise TypeError(f"children must return None or an iterable of children, not {type(result).__name__}")
    yield from result


def children_from(
    conn: Connection, handler: Handler, kwargs: Mapping[str, Any], offset: int, chunk: int
) -> Iterator[tuple[int, Any]] | None:
    """(position, child) from ``offset`` on, lazily; None when this instance is not listable."""
    if _shape(handler).paged:
        first = _call(conn, handler, kwargs, offset=offset, limit=chunk)
        if first is None:
            return None
        return _paged(conn, handler, kwargs, offset, chunk, first)
    result = _call(conn, handler, kwargs)
    if result is None:
        return None
    items = _iterate(conn, result)
    for _ in range(offset):  # a plain iterable is walked from its start
        if next(items, _END) is _END:
            return iter(())
    return enumerate(items, offset)


def _paged(
    conn: Connection, handler: Handler, kwargs: Mapping[str, Any], offset: int, chunk: int, page: Any
) -> Iterator[tuple[int, Any]]:
    while True:
        got = 0
        for item in _iterate(conn, page):
            yield offset, item
            offset += 1
            got += 1
        if got < chunk:
            return
        page = _call(conn, handler, kwargs, offset=offset, limit=chunk)
        if page is None:
            return


def listable(conn: Connection, handler: Handler, kwargs: Mapping[str, Any], *, strict: bool) -> bool:
    """Does this instance list (children returns non-None)?  Worker threads only.

    ``strict``: let the children function's exceptions through (metadata, listing);
    otherwise log them and say "not listable" (a read or a listed object).
    """
    if handler.children is None:
        return False
    shape = _shape(handler)
    if shape.generator:
        return True
    try:
        page = {"offset": 0, "limit": 1} if shape.paged else {}
        return _call(conn, handler, kwargs, **page) is not None
    except Exception:
        if strict:
            raise
        log.exception("children of %s failed", handler.uri)
        return False


def off_loop() -> bool:
    """True in a worker thread, where calling user code (and blocking) is fine."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False
