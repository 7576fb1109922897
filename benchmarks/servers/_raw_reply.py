"""The hand-built JSON-RPC replies of the raw limits (``raw_loop.py`` over stdio, ``raw_http.py``
and ``raw_asgi.py`` over HTTP).

An if-chain dispatch and the reply dict built by hand: no hashing, no validation beyond what
answering needs. Sessions are a set of ids handed out at ``initialize``; the HTTP servers check
them on every later request.
"""

import _content as c

STATIC = {}  # uri -> () -> str
TEMPLATES = {}  # scheme -> (literal prefix after "://", (id) -> str)
if c.WORKLOAD in ("small", "small-async"):
    STATIC[c.SMALL_URI] = lambda: c.SMALL_TEXT
elif c.WORKLOAD == "big":
    STATIC[c.BIG_URI] = c.read_big
elif c.WORKLOAD == "templates":
    for _i in range(c.N_TEMPLATES):
        TEMPLATES[f"tpl{_i}"] = ("item/", lambda id, i=_i: c.item_text(i, id))
for _i in range(c.list_size()):
    STATIC[c.static_uri(_i)] = lambda i=_i: c.static_text(i)
LISTING = [{"uri": u, "name": u.rpartition("/")[2], "mimeType": "text/plain"} for u in STATIC]
PAGE = 1000
SESSIONS = set()


def lookup(uri):
    fn = STATIC.get(uri)
    if fn is not None:
        return fn()
    scheme, _, rest = uri.partition("://")
    tpl = TEMPLATES.get(scheme)
    if tpl and rest.startswith(tpl[0]) and "/" not in rest[len(tpl[0]):]:
        return tpl[1](rest[len(tpl[0]):])
    return None


def new_session():
    import secrets  # HTTP only: the stdio limit does not pay for it at start-up

    sid = secrets.token_hex(16).encode()
    SESSIONS.add(sid)
    return sid


def reply(msg):
    """The JSON-RPC reply (a dict) to the request msg."""
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "resources/read":
        text = lookup(params.get("uri") or "")
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
