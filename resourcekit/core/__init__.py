"""The engine: decoded messages in, encoded replies out; it starts no thread and writes nothing.

| module | holds |
|---|---|
| ``engine`` | ``Server`` (what connections to one App share), ``Connection`` (one client): the envelope checks |
| ``plan`` | a session's profile and the plan compiled for it, ``{method: step}`` |
| ``request`` | ``Request``, one request in flight, where its one answer is made; ``Batch`` |
| ``observers`` | the access log, a wrapper of every step |
| ``outbox`` | ``Outbox``, a session's one output channel for a transport that writes a stream |

Transports are the loops around it: stdio writes an outbox, HTTP answers a POST or feeds an SSE
stream, ``testing.Client`` delivers in memory; the runner is handed in.
"""

from ..eras import Era, error_response
from .engine import Connection
from .plan import HANDSHAKE, STATELESS
from .request import Batch, Request, Send
from .server import Server

__all__ = ["HANDSHAKE", "STATELESS", "Batch", "Connection", "Era", "Request", "Send", "Server", "error_response"]
