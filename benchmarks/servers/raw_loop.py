"""The limit over stdio: what one Python process can do with orjson and nothing else.

Blocking reads of stdin in 64 KiB blocks, lines split by hand, ``orjson.loads``, an
if-chain dispatch, the reply dict built by hand, and every batch of replies (all the
complete lines of one block) written with one ``os.write``.  No asyncio, no task per
request, no hashing: a framework cannot do less and still answer.
Run: python benchmarks/servers/raw_loop.py   (BENCH_WORKLOAD selects the resources)
"""

import os

import _content as c
import orjson

STATIC = {}  # uri -> () -> str
TEMPLATES = {}  # scheme -> (literal prefix after "://", (id) -> str)
if c.WORKLOAD == "small":
    STATIC[c.SMALL_URI] = lambda: c.SMALL_TEXT
elif c.WORKLOAD == "big":
    _big = c.big_text()
    STATIC[c.BIG_URI] = lambda: _big
elif c.WORKLOAD == "templates":
    for _i in range(c.N_TEMPLATES):
        TEMPLATES[f"tpl{_i}"] = ("item/", lambda id, i=_i: c.item_text(i, id))
for _i in range(c.list_size()):
    STATIC[c.static_uri(_i)] = lambda i=_i: c.static_text(i)
LISTING = [{"uri": u, "name": u.rpartition("/")[2], "mimeType": "text/plain"} for u in STATIC]
PAGE = 1000


def lookup(uri):
    fn = STATIC.get(uri)
    if fn is not None:
        return fn()
    scheme, _, rest = uri.partition("://")
    tpl = TEMPLATES.get(scheme)
    if tpl and rest.startswith(tpl[0]) and "/" not in rest[len(tpl[0]):]:
        return tpl[1](rest[len(tpl[0]):])
    return None


def answer(msg):
    method, params = msg["method"], msg.get("params") or {}
    if method == "resources/read":
        text = lookup(params["uri"])
        if text is None:
            return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32002, "message": "Resource not found"}}
        result = {"contents": [{"uri": params["uri"], "mimeType": "text/plain", "text": text}]}
    elif method == "resources/list":
        start = int(params.get("cursor") or 0)
        result = {"resources": LISTING[start:start + PAGE]}
        if start + PAGE < len(LISTING):
            result["nextCursor"] = str(start + PAGE)
    elif method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                  "capabilities": {"resources": {}}, "serverInfo": {"name": "raw", "version": "0"}}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}


def write_all(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def main():
    dumps, loads, newline = orjson.dumps, orjson.loads, orjson.OPT_APPEND_NEWLINE
    rest = b""
    while block := os.read(0, 65536):
        lines = (rest + block).split(b"\n") if rest else block.split(b"\n")
        rest = lines.pop()
        out = []
        for line in lines:
            if line:
                msg = loads(line)
                if "id" in msg and "method" in msg:
                    out.append(dumps(answer(msg), option=newline))
        if out:
            write_all(b"".join(out) if len(out) > 1 else out[0])


main()
