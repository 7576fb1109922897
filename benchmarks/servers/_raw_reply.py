"""The hand-built JSON-RPC replies of the two raw HTTP servers (``raw_http.py``, ``raw_asgi.py``).

An if-chain dispatch and the reply dict built by hand, as ``raw_loop.py`` does over stdio: no
hashing, no validation beyond what answering needs. Sessions are a set of ids handed out at
``initialize``; the servers check them on every later request.
"""

import secrets

import _content as c

TEXT = {c.BIG_URI: c.big_text()} if c.WORKLOAD == "big" else {c.SMALL_URI: c.SMALL_TEXT}
SESSIONS = set()


def new_session():
    sid = secrets.token_hex(16).encode()
    SESSIONS.add(sid)
    return sid


def reply(msg):
    """The JSON-RPC reply (a dict) to the request msg."""
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "resources/read":
        text = TEXT.get(params.get("uri"))
        if text is None:
            return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32002, "message": "Resource not found"}}
        result = {"contents": [{"uri": params["uri"], "mimeType": "text/plain", "text": text}]}
    elif method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                  "capabilities": {"resources": {}}, "serverInfo": {"name": "raw", "version": "0"}}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}
