"""Listings that notice (issue 32, item 3): ``poll=`` on a template with a lister compares its
listed instances at each poll, and a new (or vanished) instance is a
``notifications/resources/list_changed``; the same instances are nothing."""

from __future__ import annotations

import asyncio
import time

import pytest

from resourcekit import App
from resourcekit.testing import Client

pytestmark = pytest.mark.anyio

LIST_CHANGED = "notifications/resources/list_changed"


def polled_app() -> tuple[App, list[str], list[int]]:
    app = App("t")
    names = ["a"]
    calls = [0]

    def lister() -> list[dict[str, str]]:
        calls[0] += 1
        return [{"name": name} for name in names]

    app.template("page://{name}", lister=lister, poll=0.05)(lambda name: f"page {name}")
    return app, names, calls


async def polls(calls: list[int], more: int) -> None:
    """Wait until the lister was asked ``more`` more times."""
    target = calls[0] + more
    deadline = time.monotonic() + 10
    while calls[0] < target:
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_a_new_instance_is_a_list_changed_and_the_same_instances_are_nothing() -> None:
    app, names, calls = polled_app()
    async with Client(app) as handshake, Client(app, protocol_version="2026-07-28") as modern:
        modern.listen(list_changed=True)
        assert (await modern.next_notification())["method"] == "notifications/subscriptions/acknowledged"
        await polls(calls, 5)  # polls of unchanged instances: nothing to tell
        assert handshake.notifications.empty() and modern.notifications.empty()
        names.append("b")
        assert (await handshake.next_notification())["method"] == LIST_CHANGED
        assert (await modern.next_notification())["method"] == LIST_CHANGED
        assert [r["uri"] for r in await handshake.list_resources()] == ["page://a", "page://b"]
        await polls(calls, 5)
        assert handshake.notifications.empty() and modern.notifications.empty()  # once per change
        names.remove("a")
        assert (await handshake.next_notification())["method"] == LIST_CHANGED


async def test_a_removed_template_is_polled_no_more() -> None:
    app, _, calls = polled_app()
    async with Client(app) as client:
        await polls(calls, 2)
        assert [h.uri for h in app.tracker.pollers.lists] == ["page://{name}"]
        app.remove("page://{name}")
        assert (await client.next_notification())["method"] == LIST_CHANGED  # the registration itself
        deadline = time.monotonic() + 10
        while app.tracker.pollers.lists:
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.01)
        asked = calls[0]
        app.notify_list_changed()  # the list is enumerated without the template: its lister is not asked
        await client.list_resources()
        assert calls[0] == asked
