"""Authorization with several workers sharing one real ``redis-server``: a session belongs to its
principal on every worker, and ``--workers N`` passes the ``--auth-*`` settings to each worker."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from tests.support.auth import ResourceServer, resource_server
from tests.support.redis_server import RedisProcess, redis_process

AUDIENCE = "http://127.0.0.1:9/mcp"  # one canonical URL for every worker (behind one balancer)


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisProcess]:
    with redis_process() as server:
        yield server



def _read(rs: ResourceServer, token: str, sid: str) -> int:
    return rs.call("resources/read", {"uri": "notes://list"}, token, session=sid).status_code


def test_a_session_is_bound_to_its_principal_across_workers(redis, auth_server):
    flags = ("--redis", redis.url, "--auth-issuer", auth_server.issuer, "--auth-audience", AUDIENCE)
    with contextlib.ExitStack() as stack:
        first, second = (stack.enter_context(resource_server(*flags)) for _ in range(2))
        alice = auth_server.mint(AUDIENCE, "notes:read", subject="alice")
        bob = auth_server.mint(AUDIENCE, "notes:read", subject="bob")
        sid = first.initialize(alice)
        assert _read(second, alice, sid) == 200  # the same principal, on the other worker
        assert _read(second, bob, sid) == 404  # another one learns nothing of it, on either worker
        assert _read(first, bob, sid) == 404
        stepped_up = auth_server.mint(AUDIENCE, "notes:read secret", subject="alice")
        assert _read(second, stepped_up, sid) == 200


def test_workers_each_check_tokens(redis, auth_server):
    with resource_server("--workers", "2", "--redis", redis.url, "--auth-issuer", auth_server.issuer,
                         "--auth-audience", AUDIENCE) as rs:
        deadline = time.monotonic() + 30
        while True:  # uvicorn's supervisor answers before its workers are all up
            try:
                if rs.call("ping", {}, None).status_code == 401:
                    break
            except Exception:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.1)
        token = auth_server.mint(AUDIENCE, "notes:read")
        for _ in range(6):
            assert rs.call("resources/read", {"uri": "notes://list"}, token).status_code == 200
            assert rs.call("resources/read", {"uri": "notes://list"}, None).status_code == 401
