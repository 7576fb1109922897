from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.process import APPS, RawServer

if TYPE_CHECKING:
    from tests.support.telemetry import Otel


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=("plain", "logged", "traced", "scoped"))
def profile(request: pytest.FixtureRequest) -> str:
    """A session profile (``tests.support.session.PROFILES``): a protocol test taking it runs once
    for each, on ``Session(app, profile)``."""
    from tests.support.session import PROFILES

    assert request.param in PROFILES
    return str(request.param)


@pytest.fixture
def sdk() -> Iterator[Otel]:
    """The OpenTelemetry SDK of the test process, recording while the test runs (telemetry tests)."""
    from tests.support.telemetry import otel  # the SDK: set up only by the tests that use it

    o = otel()
    o.reset()
    o.sampler.on = True
    try:
        yield o
    finally:
        o.sampler.on = False


@pytest.fixture(scope="module")
def auth_server() -> Iterator[Any]:
    """A real OAuth authorization server in the test process (the authorization tests)."""
    from tests.support.oauth_server import AuthorizationServer  # Authlib: loaded only by the tests that use it

    with AuthorizationServer() as server:
        yield server


@pytest.fixture
async def served() -> Any:
    """``serve(app, **options)``: a started in-process ``ASGIApp`` of ``app``, closed after the test."""
    from resourcekit.http import ASGIApp

    made: list[ASGIApp] = []

    def serve(app: Any, **options: Any) -> ASGIApp:
        asgi = ASGIApp(app, **options)
        asgi.start()
        made.append(asgi)
        return asgi

    yield serve
    for asgi in made:
        asgi.close()


@pytest.fixture
def server() -> Iterator[RawServer]:
    """A real ``resourcekit run tests/apps/basic_app.py`` over stdio (files may define their own)."""
    with RawServer(APPS / "basic_app.py") as s:
        yield s
