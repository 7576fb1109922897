"""The issuer's signing keys (its JWKS), fetched once and refreshed only when needed.

A token naming a ``kid`` we do not hold makes us fetch the JWKS again, at most once
per ``refresh_interval`` (30 s): a rotated key is accepted within that time, and a flood
of made-up ``kid`` s costs one fetch per interval, no more. Only the configured (or
discovered) JWKS URL is ever fetched; ``jku``, ``x5u`` and ``jwk`` headers are ignored.
Symmetric keys (``oct``) and encryption keys (``use: enc``) are never used.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from jwt import PyJWK
from jwt.exceptions import PyJWKError

from ._fetch import FetchError, fetch_json

__all__ = ["ALGORITHMS", "KeySet"]

log = logging.getLogger("resourcekit")

# asymmetric signatures only: an HS* token would be checked with a public key as its secret
ALGORITHMS = {"RS256": "RSA", "RS384": "RSA", "RS512": "RSA", "PS256": "RSA", "PS384": "RSA", "PS512": "RSA",
              "ES256": "EC", "ES384": "EC", "ES512": "EC", "EdDSA": "OKP"}
RETRY_AFTER_FAILURE = 5.0


class KeySet:
    """The JWKS at the URL ``locate()`` gives (asked once), as ``PyJWK`` per (kid, alg)."""

    def __init__(self, locate: Callable[[], Awaitable[str]], refresh_interval: float) -> None:
        self._locate = locate
        self.url: str | None = None
        self.refresh_interval = refresh_interval
        self.jwks: dict[str | None, dict[str, Any]] = {}
        self.fetches = 0
        self._next_allowed = 0.0  # monotonic time before which no fetch is made
        self._keys: dict[tuple[str | None, str], PyJWK] = {}
        self._lock = asyncio.Lock()

    async def key(self, kid: str | None, alg: str) -> PyJWK | None:
        """The key that signs with ``alg`` under ``kid`` (None: no such usable key)."""
        found = self._usable(kid, alg)
        # a fetch under way (the lock is held) is waited for: it may bring this key
        if found is None and (self._lock.locked() or time.monotonic() >= self._next_allowed):
            async with self._lock:  # one fetch for every request that waits on it
                if self._usable(kid, alg) is None and time.monotonic() >= self._next_allowed:
                    await self._refresh()
            found = self._usable(kid, alg)
        return found

    def _usable(self, kid: str | None, alg: str) -> PyJWK | None:
        cached = self._keys.get((kid, alg))
        if cached is not None:
            return cached
        jwk = self.jwks.get(kid)
        if jwk is None and kid is None:  # a token without kid: only when one key could have signed it
            fitting = [k for k in self.jwks.values() if k.get("kty") == ALGORITHMS[alg]]
            jwk = fitting[0] if len(fitting) == 1 else None
        if jwk is None or jwk.get("kty") != ALGORITHMS[alg] or jwk.get("alg", alg) != alg:
            return None
        try:
            key = PyJWK(jwk, algorithm=alg)
        except (PyJWKError, ValueError, TypeError) as exc:
            log.warning("auth: JWKS key %r is unusable: %s", kid, exc)
            return None
        self._keys[(kid, alg)] = key
        return key

    async def _refresh(self) -> None:
        self._next_allowed = time.monotonic() + RETRY_AFTER_FAILURE
        self.fetches += 1
        try:
            if self.url is None:
                self.url = await self._locate()
            document = await fetch_json(self.url)
            keys = document.get("keys") if isinstance(document, dict) else None
            if not isinstance(keys, list):
                raise FetchError(f"{self.url}: no 'keys' list")
        except FetchError as exc:
            log.warning("auth: cannot fetch the issuer's keys: %s", exc)
            return
        jwks: dict[str | None, dict[str, Any]] = {}
        for jwk in keys:
            if not isinstance(jwk, dict) or jwk.get("kty") not in ("RSA", "EC", "OKP") \
                    or jwk.get("use", "sig") != "sig":
                continue
            kid = jwk.get("kid")
            jwks[kid if isinstance(kid, str) else None] = jwk
        self.jwks = jwks
        self._keys = {}
        self._next_allowed = time.monotonic() + self.refresh_interval
