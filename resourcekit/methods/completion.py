"""``completion/complete``: suggestions for a template variable (Enum/Literal choices or ``complete=``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidParams
from ..scopes import may_read
from ._base import Method

if TYPE_CHECKING:
    from ..declaration import Completer
    from ._base import RequestView as Request

__all__ = ["METHODS"]

MAX_COMPLETIONS = 100  # the spec's cap on values per response


async def complete(req: Request) -> dict[str, Any]:
    ref = req.params.get("ref")
    argument = req.params.get("argument")
    if type(ref) is not dict or type(argument) is not dict:
        raise InvalidParams("Invalid params: 'ref' and 'argument' must be objects")
    name, value = argument.get("name"), argument.get("value", "")
    if not isinstance(name, str) or not isinstance(value, str):
        raise InvalidParams("Invalid params: argument needs a string 'name' and 'value'")
    context = req.params.get("context")
    resolved = context.get("arguments") if type(context) is dict else None
    resolved = resolved if type(resolved) is dict else {}
    values: list[str] = []
    if ref.get("type") == "ref/resource":
        uri = ref.get("uri")
        router = req.conn.app.router
        handler = router.templates.get(uri) if isinstance(uri, str) else None
        if handler is not None and not may_read(req.principal, req.conn.app, handler):
            handler = None  # suggestions would show what the token may not read
        completer = handler.completers.get(name) if handler is not None else None
        if completer is not None:
            values = await _call_completer(req, completer, value, resolved)
    elif ref.get("type") != "ref/prompt":
        raise InvalidParams("Invalid params: ref.type must be 'ref/resource' or 'ref/prompt'")
    completion: dict[str, Any] = {"values": values[:MAX_COMPLETIONS], "total": len(values),
                                  "hasMore": len(values) > MAX_COMPLETIONS}
    return {"completion": completion}


async def _call_completer(req: Request, completer: Completer, value: str, resolved: dict[str, Any]) -> list[str]:
    args = (value, resolved) if completer.with_context else (value,)
    fn = completer.fn
    if completer.is_async:
        out = await fn(*args)
    else:
        out = await req.conn.server.runner.call(lambda: list(fn(*args)))
    return [str(v.value) if hasattr(v, "value") else str(v) for v in out]


METHODS: dict[str, Method] = {"completion/complete": complete}
