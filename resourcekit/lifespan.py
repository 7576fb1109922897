"""The app's lifespan: what a serving process sets up before its first answer and tears down at
shutdown (a database pool, a client, a watcher thread), and the state it yields to handlers.

Entered by whatever serves: stdio, the ASGI app's lifespan events (each worker), ``testing.Client``,
``resourcekit list`` and ``read`` around their one answer, a host app through ``app.running()``.
Several of them in one process share one entry: the first enters it, the last to leave exits it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any

from .errors import DefinitionError, LifespanDefinitionError, LifespanFailed

__all__ = ["Lifespan", "check_lifespan"]

Factory = Callable[..., contextlib.AbstractAsyncContextManager[Any]]


def _name(fn: Any) -> str:
    """``connect``, ``Db.connect``: the qualified name without the functions it was declared in."""
    name = str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))
    return name.rpartition("<locals>.")[2]


def check_lifespan(fn: Any) -> Factory:
    """The async context manager factory an ``@app.lifespan`` function makes; raises
    ``LifespanDefinitionError`` when it is not an async generator function yielding once."""
    name = _name(fn)
    if not inspect.isasyncgenfunction(fn):
        if inspect.iscoroutinefunction(fn):
            reason = "is a coroutine function without 'yield': yield the state once, between set-up and tear-down"
        elif inspect.isgeneratorfunction(fn):
            reason = "is a plain generator function: declare it 'async def'"
        else:
            reason = "is not an async generator function ('async def' with one 'yield')"
        raise LifespanDefinitionError(name, reason)
    yields = _count_yields(fn)
    if yields is not None and yields != 1:
        raise LifespanDefinitionError(name, f"has {yields} yields: yield once (the state), set-up before, "
                                            "tear-down after")
    _check_parameters(fn, name)
    return contextlib.asynccontextmanager(fn)


def _check_parameters(fn: Callable[..., Any], name: str) -> None:
    """None, or one: the App."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return
    required = [p for p in params if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    if len(required) > 1:
        raise LifespanDefinitionError(name, f"takes {len(required)} parameters: a lifespan takes none, or one "
                                            "(the App)")


def _count_yields(fn: Callable[..., Any]) -> int | None:
    """``yield`` expressions in the body of ``fn`` (nested functions aside); a ``yield`` in a loop
    counts twice. None when its source cannot be read."""
    import ast  # only for an app that declares a lifespan: not part of every server's start-up
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    defs = [node for node in tree.body if isinstance(node, ast.AsyncFunctionDef)]
    if not defs:
        return None
    count = 0

    def visit(node: Any, in_loop: bool) -> None:
        nonlocal count
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            count += 2 if in_loop else 1
        in_loop = in_loop or isinstance(node, (ast.For, ast.AsyncFor, ast.While))
        for child in ast.iter_child_nodes(node):
            visit(child, in_loop)

    for statement in defs[0].body:
        visit(statement, False)
    return count


class Lifespan:
    """One App's lifespan: its factory, the state it yielded, and how many servers entered it."""

    __slots__ = ("_entered", "_ready", "_users", "app", "factory")

    def __init__(self, app: Any, factory: Callable[..., Any] | None = None) -> None:
        """``factory``: ``App(lifespan=...)``, an async context manager factory (or an async
        generator function, as ``@app.lifespan`` takes)."""
        if factory is not None and not callable(factory):
            raise TypeError(f"lifespan must be an async context manager factory, not {factory!r}")
        self.app = app
        self.factory = check_lifespan(factory) if inspect.isasyncgenfunction(factory) else factory
        self._users = 0
        self._entered: contextlib.AbstractAsyncContextManager[Any] | None = None
        self._ready: asyncio.Future[None] | None = None

    def declare(self, fn: Any) -> None:
        """``@app.lifespan``: check ``fn`` and make it the lifespan."""
        if self.factory is not None:
            raise DefinitionError(f"App {self.app.name!r} already has a lifespan ({self.name}); "
                                  f"{_name(fn)} would replace it")
        self.factory = check_lifespan(fn)

    @property
    def state(self) -> Any:
        return self.app.state

    @state.setter
    def state(self, value: Any) -> None:
        self.app.state = value

    @property
    def idle(self) -> bool:
        """Declared and not entered by anyone in this process."""
        return self.factory is not None and self._users == 0

    @property
    def name(self) -> str:
        return _name(getattr(self.factory, "__wrapped__", self.factory))

    def _call(self) -> contextlib.AbstractAsyncContextManager[Any]:
        assert self.factory is not None
        try:
            takes_app = bool(inspect.signature(self.factory).parameters)
        except (TypeError, ValueError):
            takes_app = False
        return self.factory(self.app) if takes_app else self.factory()

    async def enter(self) -> Any:
        """Enter it (the first caller does; the others wait for it and share its state); raises
        ``LifespanFailed`` when it raises."""
        self._users += 1
        if self._users > 1:
            if self._ready is not None:
                await asyncio.shield(self._ready)
            return self.state
        if self.factory is None:
            return None
        ready = self._ready = asyncio.get_running_loop().create_future()
        try:
            entered = self._call()
            self.state = await entered.__aenter__()
            self._entered = entered
        except BaseException as exc:
            self._users = 0
            self.state = None
            ready.set_exception(exc if not isinstance(exc, Exception) else
                                LifespanFailed(self.name, exc))
            ready.exception()  # retrieved: a failure nobody else waited for is not logged as lost
            self._ready = None
            if isinstance(exc, Exception):
                raise LifespanFailed(self.name, exc) from exc
            raise
        ready.set_result(None)
        self._ready = None
        return self.state

    async def exit(self) -> None:
        """Leave it; the last one to leave runs its tear-down (as after a normal end: shutting down
        is not an error of the lifespan's)."""
        if self._users == 0:
            return
        self._users -= 1
        if self._users:
            return
        entered, self._entered = self._entered, None
        try:
            if entered is not None:
                await entered.__aexit__(None, None, None)
        finally:
            self.state = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Any]:
        state = await self.enter()
        try:
            yield state
        finally:
            await self.exit()
