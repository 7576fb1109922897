"""The limit over HTTP without a framework: a bare asyncio HTTP/1.1 keep-alive server with orjson.

POST /mcp only. Each connection is an asyncio Protocol that cuts requests out of its buffer
(request line, headers, Content-Length body; pipelined requests are fine), answers the
JSON-RPC message with the hand-built reply of ``_raw_reply.py`` (an if-chain, no hashing: the
honest limit, as ``raw_loop.py`` is over stdio) and writes application/json with
Content-Length, all replies to one read of the socket in one write. ``initialize`` hands out an
Mcp-Session-Id that later requests must carry (404 otherwise); notifications get 202. On uvloop
when it is installed (as uvicorn picks it for the others), ``BENCH_RAW_UVLOOP=0`` for plain
asyncio. ``raw_asgi.py`` serves the same replies as an ASGI app on uvicorn: the best any
framework on uvicorn can do.

Run: BENCH_PORT=8000 python benchmarks/servers/raw_http.py   (BENCH_WORKLOAD=small)
"""

import asyncio
import os

import orjson
from _raw_reply import SESSIONS, new_session, reply

JSON_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n"
ACCEPTED = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"
NO_SESSION = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"
BAD = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class HTTP(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""

    def data_received(self, data):
        buf = self.buf + data if self.buf else data
        out = []
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            headers = {}
            for line in buf[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            size = int(headers.get(b"content-length", b"0"))
            if len(buf) < end + 4 + size:
                break
            body = buf[end + 4:end + 4 + size]
            buf = buf[end + 4 + size:]
            out.append(self.respond(headers, body))
        self.buf = buf
        if out:
            self.transport.write(b"".join(out))

    def respond(self, headers, body):
        try:
            msg = orjson.loads(body)
        except orjson.JSONDecodeError:
            return BAD
        extra = b""
        if msg.get("method") == "initialize":
            extra = b"mcp-session-id: " + new_session() + b"\r\n"
        elif headers.get(b"mcp-session-id") not in SESSIONS:
            return NO_SESSION
        if "id" not in msg:
            return ACCEPTED
        data = orjson.dumps(reply(msg))
        return JSON_HEAD % (len(data), extra) + data


async def main():
    server = await asyncio.get_running_loop().create_server(
        HTTP, "127.0.0.1", int(os.environ.get("BENCH_PORT", "8000")), backlog=1024)
    async with server:
        await server.serve_forever()


try:
    import uvloop
except ImportError:
    uvloop = None
if uvloop is not None and os.environ.get("BENCH_RAW_UVLOOP", "1") != "0":
    uvloop.run(main())
else:
    asyncio.run(main())
