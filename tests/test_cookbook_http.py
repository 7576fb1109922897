"""cookbook/notes.py served with ``resourcekit run --transport http``, through the official client."""

from __future__ import annotations

import mcp_types as types
import pytest

from tests.support.http_server import http_server_process
from tests.support.mcp_client import http_session
from tests.support.process import COOKBOOK

pytestmark = pytest.mark.anyio


async def test_notes_over_http_in_both_eras():
    with http_server_process(COOKBOOK / "notes.py") as url:
        async with http_session(url) as session:
            uris = {str(r.uri) for r in (await session.list_resources()).resources}
            assert {"config://settings", "notes://index", "notes://1", "notes://2"} <= uris
            note = await session.read_resource("notes://2?rev=0&tone=shout")
            assert note.contents[0].text == "DRAFT THE TALK"
            ref = types.ResourceTemplateReference(type="ref/resource", uri="notes://{note_id}{?rev,tone}")
            assert (await session.complete(ref, {"name": "tone", "value": "s"})).completion.values == ["shout"]
        async with http_session(url, initialize=False) as session:
            await session.discover()
            settings = await session.read_resource("config://settings")
            assert settings.contents[0].mime_type == "application/json"
