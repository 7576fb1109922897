"""The limit for a framework on uvicorn: the hand-built replies of raw_http.py as a bare ASGI callable.

One ``async def app(scope, receive, send)``: the body read from ``receive``, the Mcp-Session-Id
looked up in the scope's headers, ``orjson.loads``, the reply of ``_raw_reply.py`` (an if-chain,
the dict built by hand, no hashing) and two ``send`` calls with application/json and
Content-Length. ``initialize`` hands out a session id that later requests must carry (404
otherwise); notifications get 202. Served by uvicorn with httptools and uvloop, access log,
``Server`` and ``Date`` headers and proxy-header rewriting off, no lifespan: what any framework
on uvicorn pays at least, so W5 measures resourcekit against it.

Run: BENCH_PORT=8000 python benchmarks/servers/raw_asgi.py   (BENCH_WORKLOAD=small)
"""

import os

import orjson
import uvicorn
from _raw_reply import SESSIONS, new_session, reply

JSON = b"application/json"
EMPTY = {"type": "http.response.body", "body": b""}
# None here; raw_asgi_thread.py sets an async function of the message that makes its body instead
BODY = None


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    message = await receive()
    body = message.get("body", b"")
    while message.get("more_body"):
        message = await receive()
        body += message.get("body", b"")
    try:
        msg = orjson.loads(body)
    except orjson.JSONDecodeError:
        await send({"type": "http.response.start", "status": 400, "headers": [(b"content-length", b"0")]})
        await send(EMPTY)
        return
    headers = [(b"content-type", JSON)]
    if msg.get("method") == "initialize":
        headers.append((b"mcp-session-id", new_session()))
    else:
        session = None
        for name, value in scope["headers"]:
            if name == b"mcp-session-id":
                session = value
                break
        if session not in SESSIONS:
            await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]})
            await send(EMPTY)
            return
    if "id" not in msg:
        await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
        await send(EMPTY)
        return
    data = orjson.dumps(reply(msg)) if BODY is None else await BODY(msg)
    headers.append((b"content-length", b"%d" % len(data)))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def serve():
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("BENCH_PORT", "8000")), loop="uvloop",
                http="httptools", lifespan="off", access_log=False, server_header=False, date_header=False,
                proxy_headers=False, log_level="warning", backlog=1024)


if __name__ == "__main__":
    serve()
