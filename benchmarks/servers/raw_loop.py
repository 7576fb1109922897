"""The practical limit: a bare asyncio stdio loop with orjson, no framework.

Parse each line, dispatch from a dict, hash the content with blake2b (the version a
framework would compute), one asyncio task per request, writes coalesced per loop turn.
Run: python benchmarks/servers/raw_loop.py   (BENCH_WORKLOAD selects the resources)
"""

import asyncio
import hashlib
import sys

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
out, flush_pending = [], False


def lookup(uri):
    fn = STATIC.get(uri)
    if fn is not None:
        return fn()
    scheme, _, rest = uri.partition("://")
    tpl = TEMPLATES.get(scheme)
    if tpl and rest.startswith(tpl[0]) and "/" not in rest[len(tpl[0]):]:
        return tpl[1](rest[len(tpl[0]):])
    return None


def initialize(p):
    return {"protocolVersion": p.get("protocolVersion", "2025-11-25"), "capabilities": {"resources": {}},
            "serverInfo": {"name": "raw", "version": "0"}}


def read(p):
    text = lookup(p["uri"])
    if text is None:
        raise KeyError(p["uri"])
    version = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    return {"contents": [{"uri": p["uri"], "mimeType": "text/plain", "text": text}], "_meta": {"version": version}}


def list_(p):
    start = int(p.get("cursor") or 0)
    result = {"resources": LISTING[start:start + PAGE]}
    if start + PAGE < len(LISTING):
        result["nextCursor"] = str(start + PAGE)
    return result


METHODS = {"initialize": initialize, "resources/read": read, "resources/list": list_, "ping": lambda p: {}}


def flush():
    global flush_pending
    flush_pending = False
    if out:
        writer.write(b"".join(out))
        out.clear()


async def handle(msg):
    global flush_pending
    try:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": METHODS[msg["method"]](msg.get("params") or {})}
    except Exception as exc:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": repr(exc)}}
    data = orjson.dumps(reply, option=orjson.OPT_APPEND_NEWLINE)
    if len(data) > 65536:  # a big reply goes straight out: joining it with others only copies it
        flush()  # keep replies in order
        writer.write(data)
        return
    out.append(data)
    if not flush_pending:
        flush_pending = True
        asyncio.get_running_loop().call_soon(flush)


async def main():
    global writer
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    writer, _ = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout)
    tasks = set()
    while line := await reader.readline():
        msg = orjson.loads(line)
        if "id" in msg and "method" in msg:
            t = loop.create_task(handle(msg))
            tasks.add(t)
            t.add_done_callback(tasks.discard)


asyncio.run(main())
