from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.telemetry_support import Otel


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def sdk() -> Iterator[Otel]:
    """The OpenTelemetry SDK of the test process, recording while the test runs (telemetry tests)."""
    from tests.telemetry_support import otel  # the SDK: set up only by the tests that use it

    o = otel()
    o.reset()
    o.sampler.on = True
    try:
        yield o
    finally:
        o.sampler.on = False
