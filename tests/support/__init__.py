"""What the tests share, and the only place they import from (no test module imports another):

* ``process``: paths (``ROOT``, ``APPS``, ``COOKBOOK``), ``resourcekit`` subprocesses (``command``,
  ``env``, ``stop_process``) and the stdio harness ``RawServer``;
* ``wire``: JSON-RPC request lines and messages (``read``, ``cancelled``, ``modern_meta``, ...);
* ``session``: an in-process session served as each profile serves it (``Session``, ``Wire``,
  ``PROFILES``);
* ``http_server``: an HTTP server process on a free port and raw HTTP requests to it;
* ``redis_server``, ``telemetry``, ``auth``, ``oauth_server``, ``mcp_client``, ``rr_proxy``: a real
  redis-server, the OpenTelemetry SDK, a protected server and its authorization server, the official
  client, and a round-robin proxy in front of several workers.
"""
