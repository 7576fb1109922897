"""Talking to the authorization server: JSON over HTTP(S), in a worker thread, bounded.

The standard library's ``urllib`` (no runtime dependency), run through
``anyio.to_thread`` so the event loop never waits on the network. Answers are
bounded in size and time; anything unexpected is a ``FetchError`` (the caller
refuses the token and logs why).
"""

from __future__ import annotations

import base64
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import anyio.to_thread
import orjson

__all__ = ["FetchError", "discover", "fetch_json", "metadata_urls"]

MAX_BYTES = 1 << 20
TIMEOUT = 5.0


class FetchError(Exception):
    """The authorization server could not be asked, or answered something unusable."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a redirect is an answer we do not follow: keys come from where we were told


_OPENER = urllib.request.build_opener(_NoRedirects)


def _fetch(url: str, form: dict[str, str] | None, basic: tuple[str, str] | None) -> Any:
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise FetchError(f"{url}: not an http(s) URL")
    headers = {"Accept": "application/json", "User-Agent": "resourcekit"}
    data = None
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    if basic is not None:  # RFC 6749 §2.3.1: both parts form-encoded first
        pair = f"{urllib.parse.quote(basic[0], safe='')}:{urllib.parse.quote(basic[1], safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    request = urllib.request.Request(url, data=data, headers=headers, method="POST" if form is not None else "GET")
    try:
        with _OPENER.open(request, timeout=TIMEOUT) as response:
            body = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise FetchError(f"{url}: HTTP {exc.code}") from None
    except (OSError, ValueError) as exc:
        raise FetchError(f"{url}: {exc}") from None
    if len(body) > MAX_BYTES:
        raise FetchError(f"{url}: answer larger than {MAX_BYTES} bytes")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        raise FetchError(f"{url}: answer is not JSON") from None


async def fetch_json(url: str, form: dict[str, str] | None = None, basic: tuple[str, str] | None = None) -> Any:
    """GET ``url`` (POST ``form`` when given) and decode its JSON, off the event loop."""
    return await anyio.to_thread.run_sync(_fetch, url, form, basic)


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be (RFC 8414 §3.1, then OpenID Connect Discovery)."""
    parts = urllib.parse.urlsplit(issuer)
    root = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [f"{root}/.well-known/oauth-authorization-server", f"{root}/.well-known/openid-configuration"]
    return [f"{root}/.well-known/oauth-authorization-server{path}", f"{root}/.well-known/openid-configuration{path}",
            f"{root}{path}/.well-known/openid-configuration"]


async def discover(issuer: str) -> dict[str, Any]:
    """The authorization server's metadata; its ``issuer`` must be exactly ours (RFC 8414 §3.3)."""
    reasons = []
    for url in metadata_urls(issuer):
        try:
            document = await fetch_json(url)
        except FetchError as exc:
            reasons.append(str(exc))
            continue
        if not isinstance(document, dict) or document.get("issuer") != issuer:
            raise FetchError(f"{url}: metadata of another issuer ({document.get('issuer')!r})"
                             if isinstance(document, dict) else f"{url}: metadata is not an object")
        return document
    raise FetchError("no authorization server metadata: " + "; ".join(reasons))
