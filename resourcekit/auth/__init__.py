"""OAuth 2.1 resource-server authorization for the HTTP transport (the ``auth`` extra).

    from resourcekit.auth import OAuthResourceServer

    app.run("http", auth=OAuthResourceServer(issuer="https://auth.example.com",
                                             audience="https://mcp.example.com/mcp"))

- ``server``: ``OAuthResourceServer``: tokens checked, challenges, the metadata document.
- ``_keys``: the issuer's JWKS, cached, refreshed on an unknown ``kid`` at most every 30 s.
- ``_fetch``: JSON from the authorization server (metadata, JWKS, introspection).

Which resources need which scopes is declared on them (``scopes=``) and checked by
``resourcekit.scopes``; see docs/authorization.md.
"""

from __future__ import annotations

try:
    import jwt  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError("resourcekit.auth needs PyJWT with cryptography: pip install 'resourcekit[auth]'") from exc

from ..scopes import Principal
from .server import OAuthResourceServer

__all__ = ["OAuthResourceServer", "Principal"]
