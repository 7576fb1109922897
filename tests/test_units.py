"""Pure pieces tested without a server: pagination, cursors, contents and versions."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import enum
import json
import pathlib
import uuid

import pytest

from resourcekit import App, Blob, Text
from resourcekit.contents import to_contents, version_of
from resourcekit.errors import InvalidParams
from resourcekit.pagination import SeqIndex, decode_cursor, encode_cursor
from resourcekit.testing import Client


def test_seq_index_pages_are_stable_across_removals_and_additions():
    index: SeqIndex[str] = SeqIndex()
    for i in range(1, 11):
        index.append(i, f"x{i}")
    page, more = index.page(0, 4)
    assert [s for s, _ in page] == [1, 2, 3, 4] and more
    index.remove(5)  # removed before the client asks for the next page
    index.append(11, "x11")
    page, more = index.page(4, 4)
    assert [s for s, _ in page] == [6, 7, 8, 9] and more
    page, more = index.page(9, 4)
    assert [s for s, _ in page] == [10, 11] and not more
    for s in range(1, 12):
        index.remove(s)
    assert len(index) == 0 and index.page(0, 5) == ([], False)


def test_seq_index_compacts_and_still_pages():
    index: SeqIndex[int] = SeqIndex()
    for i in range(1, 1001):
        index.append(i, i)
    for i in range(1, 901):
        index.remove(i)
    assert len(index) == 100
    page, more = index.page(0, 1000)
    assert [s for s, _ in page] == list(range(901, 1001)) and not more


def test_cursor_round_trip_and_rejection():
    cursor = encode_cursor("r", 42)
    assert decode_cursor(cursor, ("r",)) == ("r", [42])
    for bad in ("", "!!!", encode_cursor("x", 1), encode_cursor("r"), 12, "a" * 300,
                base64.urlsafe_b64encode(b"r:-1").decode()):
        with pytest.raises(InvalidParams):
            decode_cursor(bad, ("r",))


def test_contents_from_each_kind_of_value(tmp_path: pathlib.Path):
    @dataclasses.dataclass
    class P:
        x: int

    assert to_contents("a://x", "hi")[0].to_wire() == {"uri": "a://x", "mimeType": "text/plain", "text": "hi"}
    blob = to_contents("a://x", b"\x00\xff")[0].to_wire()
    assert blob == {"uri": "a://x", "mimeType": "application/octet-stream", "blob": "AP8="}
    assert to_contents("a://x", {"a": [1, 2]})[0].text == '{"a":[1,2]}'
    assert to_contents("a://x", P(3))[0].text == '{"x":3}'
    (tmp_path / "f.json").write_text('{"k": 1}')
    (tmp_path / "g.png").write_bytes(b"\x89PNG")
    assert to_contents("a://x", tmp_path / "f.json")[0].to_wire()["text"] == '{"k": 1}'
    assert to_contents("a://x", tmp_path / "g.png")[0].to_wire()["mimeType"] == "image/png"
    multi = to_contents("a://x", [Text("t", uri="a://x/1"), Blob(b"b", "x/y", meta={"m": 1})])
    assert [c.uri for c in multi] == ["a://x/1", "a://x"]
    assert multi[1].to_wire()["_meta"] == {"m": 1}
    with pytest.raises(TypeError):
        to_contents("a://x", None)
    with pytest.raises(TypeError, match="cannot serve a value of type object;"):
        to_contents("a://x", object())


def test_json_results_carry_the_types_parameters_accept():
    class Size(enum.Enum):
        s = "small"

    @dataclasses.dataclass
    class Price:
        amount: decimal.Decimal

    value = {"price": decimal.Decimal("19.90"), "tiny": decimal.Decimal("1E-7"), "nan": decimal.Decimal("NaN"),
             "id": uuid.UUID(int=1), "day": datetime.date(2026, 1, 2), "at": datetime.datetime(2026, 1, 2, 3, 4, 5),
             "time": datetime.time(6, 7), "size": Size.s, "nested": [Price(decimal.Decimal("0.10"))]}
    content, = to_contents("a://x", value)
    assert content.mime_type == "application/json"
    # a Decimal keeps its digits, as a JSON number; the others as orjson writes them
    assert content.text == ('{"price":19.90,"tiny":1E-7,"nan":null,"id":"00000000-0000-0000-0000-000000000001",'
                            '"day":"2026-01-02","at":"2026-01-02T03:04:05","time":"06:07:00","size":"small",'
                            '"nested":[{"amount":0.10}]}')
    assert json.loads(content.text)["price"] == 19.9
    # the version is the hash of the bytes served: the same value, the same version
    assert to_contents("a://x", dict(value))[0].version == content.version


def test_version_hashes_bytes_and_mime():
    assert version_of(b"a", "text/plain") == version_of(b"a", "text/plain")
    assert version_of(b"a", "text/plain") != version_of(b"a", "text/markdown")
    assert version_of(b"a", "text/plain") != version_of(b"b", "text/plain")
    text, = to_contents("a://x", "é")
    assert text.size == 2 and text.version == version_of("é".encode(), "text/plain")


@pytest.mark.anyio
async def test_paging_is_complete_while_resources_come_and_go():
    app = App("t", page_size=10)
    for i in range(50):
        app.resource(f"r://{i}")(lambda: "x")
    async with Client(app) as client:
        first = await client.request("resources/list")
        seen = [r["uri"] for r in first["resources"]]
        app.remove("r://5")       # already seen
        app.remove("r://25")      # not yet seen: must not appear
        app.resource("r://new")(lambda: "x")  # added: appears at the end
        cursor = first["nextCursor"]
        while cursor:
            page = await client.request("resources/list", {"cursor": cursor})
            seen += [r["uri"] for r in page["resources"]]
            cursor = page.get("nextCursor")
        expected = [f"r://{i}" for i in range(50) if i != 25] + ["r://new"]
        assert seen == expected


@pytest.mark.anyio
async def test_million_row_lister_costs_one_page_per_page():
    calls: list[tuple[int, int]] = []

    def rows(offset: int, limit: int):
        calls.append((offset, limit))
        return ({"n": n} for n in range(offset, min(offset + limit, 1_000_000)))

    app = App("t", page_size=100)
    app.template("row://{n}", lister=rows)(lambda n: str(n))
    async with Client(app) as client:
        page = await client.request("resources/list")
        assert len(page["resources"]) == 100
        page = await client.request("resources/list", {"cursor": page["nextCursor"]})
        assert page["resources"][0]["uri"] == "row://100"
    assert calls == [(0, 101), (100, 101)]


@pytest.mark.anyio
async def test_templates_list_pages():
    app = App("t", page_size=3)
    for i in range(7):
        app.template(f"t{i}://{{x}}")(lambda x: x)
    async with Client(app) as client:
        templates = await client.list_templates()
        assert [t["uriTemplate"] for t in templates] == [f"t{i}://{{x}}" for i in range(7)]
