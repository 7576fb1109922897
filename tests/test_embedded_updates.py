"""SEP-3119's ``embedResources`` (issue 32, item 4; a draft, experimental): a 2026-07-28
``subscriptions/listen`` that asks for it gets the new contents inside
``notifications/resources/updated``, as a read returns them; without it, and past
``Limits.max_embedded_bytes``, the plain form."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from resourcekit import App, Limits
from resourcekit.revisions import META_SUBSCRIPTION_ID, META_VERSION
from resourcekit.testing import Client
from tests.support.http_server import EventReader, http_server_process, post
from tests.support.process import APPS
from tests.support.wire import modern

pytestmark = pytest.mark.anyio

UPDATED = "notifications/resources/updated"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


def listen(url: str, uris: list[str], rid: int, **extra: Any) -> EventReader:
    body, headers = modern("subscriptions/listen", {"notifications": {"resourceSubscriptions": uris, **extra}}, rid)
    stream = EventReader("POST", url, headers, body)
    acknowledged = stream.next()
    assert acknowledged["method"] == ACKNOWLEDGED
    assert acknowledged["params"]["notifications"].get("embedResources") is extra.get("embedResources")
    return stream


def test_a_listen_stream_that_asks_gets_the_new_contents_and_the_others_the_plain_form(tmp_path: Path) -> None:
    (tmp_path / "small").write_text("one")
    (tmp_path / "big").write_text("b" * 10)
    with http_server_process(APPS / "watch_app.py", extra_env={"WATCH_DATA": str(tmp_path)}) as url:
        embedding = listen(url, ["watch://small", "watch://big"], 1, embedResources=True)
        plain = listen(url, ["watch://small"], 2)
        time.sleep(0.5)  # the watchers run
        (tmp_path / "small").write_text("two")
        update = embedding.next()
        assert update["method"] == UPDATED and update["params"]["uri"] == "watch://small"
        (content,) = update["params"]["contents"]
        assert content["uri"] == "watch://small" and content["text"] == "two"
        assert content["mimeType"] == "text/plain" and content["_meta"][META_VERSION]
        assert update["params"]["_meta"][META_SUBSCRIPTION_ID] == 1
        # what a read answers now carries the same contents and version
        body, headers = modern("resources/read", {"uri": "watch://small"}, 3)
        read = post(url, body, {**headers, "mcp-name": "watch://small"}).json()["result"]["contents"]
        assert read == [content]
        assert plain.next()["params"] == {"uri": "watch://small", "_meta": {META_SUBSCRIPTION_ID: 2}}
        (tmp_path / "big").write_text("b" * 65)  # past the app's 64 bytes: the plain form
        assert embedding.next()["params"] == {"uri": "watch://big", "_meta": {META_SUBSCRIPTION_ID: 1}}
        (tmp_path / "big").write_text("b" * 64)  # at the limit: embedded
        assert embedding.next()["params"]["contents"][0]["text"] == "b" * 64
        assert embedding.quiet(0.5) and plain.quiet(0.5)
        embedding.close()
        plain.close()


async def test_binary_contents_are_embedded_as_a_read_returns_them_and_a_deleted_resource_plainly() -> None:
    app = App("t", limits=Limits(max_embedded_bytes=1024))
    blobs: dict[str, bytes] = {"x": b"\x00\x01"}

    @app.template("blob://{name}", mime_type="application/octet-stream")
    def blob(name: str) -> bytes:
        from resourcekit import ResourceNotFound

        if name not in blobs:
            raise ResourceNotFound(f"blob://{name}")
        return blobs[name]

    async with Client(app, protocol_version="2026-07-28") as client:
        client.listen(["blob://x"], embed=True)
        assert (await client.next_notification())["method"] == ACKNOWLEDGED
        blobs["x"] = b"\x02\x03"
        app.notify_changed("blob://x")
        update = await client.next_notification()
        (content,) = update["params"]["contents"]
        assert content["blob"] == "AgM=" and content["mimeType"] == "application/octet-stream"
        assert [content] == await client.read("blob://x")
        del blobs["x"]
        app.notify_changed("blob://x")
        gone = await client.next_notification()
        assert gone["method"] == UPDATED and "contents" not in gone["params"]
