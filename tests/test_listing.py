"""Listing: cursors cannot be forged, listers are walked a page at a time (never from their start
for every page, never to the end of an endless one), list changes announced without a walk."""

from __future__ import annotations

import asyncio
import enum

import pytest

from resourcekit import App, Limits, MCPError
from resourcekit.testing import Client

pytestmark = pytest.mark.anyio


class Habitat(enum.Enum):
    forest = "forest"
    sea = "sea"


# --- finding 14: notify_list_changed does not walk an endless lister ------------------------------


async def test_notify_list_changed_with_an_endless_lister_answers() -> None:
    import itertools

    app = App("t", limits=Limits(page_scan_budget=50))
    app.template("r://{n}", lister=lambda: ({"n": n} for n in itertools.count()))(lambda n: str(n))
    async with Client(app) as client:
        for _ in range(2):  # no version to compare: each call is reported
            app.notify_list_changed()
            note = await client.next_notification(timeout=2)
            assert note["method"] == "notifications/resources/list_changed"


# --- finding 4: listers and children cannot be turned into work ---------------------------------


async def test_forged_cursors_are_refused() -> None:
    import base64

    app = App("t", page_size=2)
    app.template("item://{n}", lister=lambda: ({"n": i} for i in range(10)))(lambda n: str(n))
    async with Client(app) as client:
        first = await client.request("resources/list")
        assert len(first["resources"]) == 2 and "nextCursor" in first
        second = await client.request("resources/list", {"cursor": first["nextCursor"]})
        assert [r["uri"] for r in second["resources"]] == ["item://2", "item://3"]
        forged = base64.urlsafe_b64encode(b"l:1:1000000000000").decode()
        with pytest.raises(MCPError) as caught:
            await client.request("resources/list", {"cursor": forged})
        assert caught.value.code == -32602


async def test_a_plain_lister_is_not_walked_from_its_start_for_every_page() -> None:
    pulled = []

    def numbers():
        for i in range(1000):
            pulled.append(i)
            yield {"n": i}

    app = App("t", page_size=100)
    app.template("item://{n}", lister=numbers)(lambda n: str(n))
    async with Client(app) as client:
        assert len(await client.list_resources()) == 1000  # every page, following nextCursor
    assert len(pulled) == 1000  # walked once, not 100 + 200 + ... + 1000 times


async def test_a_filter_over_an_endless_lister_answers_a_short_page() -> None:
    import itertools

    app = App("t", limits=Limits(page_scan_budget=500))
    app.template("item://{n}", lister=lambda: ({"n": i} for i in itertools.count()))(lambda n: str(n))
    async with Client(app) as client:
        page = await asyncio.wait_for(client.request("resources/list", {"filter": {"kind": "none"}}), 5)
        assert page["resources"] == [] and "nextCursor" in page
        page = await asyncio.wait_for(client.request("resources/list", {"cursor": page["nextCursor"],
                                                                         "filter": {"kind": "none"}}), 5)
        assert page["resources"] == [] and "nextCursor" in page


async def test_children_with_a_filter_over_an_endless_generator_answer() -> None:
    import itertools

    app = App("t", limits=Limits(page_scan_budget=300))
    app.resource("tree://", children=lambda: (f"tree://{i}" for i in itertools.count()))(lambda: "root")
    async with Client(app) as client:
        page = await asyncio.wait_for(client.request("resources/list", {"uri": "tree://",
                                                                         "filter": {"uriPrefix": "nope"}}), 5)
        assert page["resources"] == [] and "nextCursor" in page


async def test_a_lister_item_with_an_enum_value_lists_and_a_bad_one_is_left_out() -> None:
    app = App("t")
    items = [{"habitat": "forest"}, {"habitat": Habitat.sea}, {"habitat": "moon"}]
    def animal(habitat: Habitat) -> str:
        return habitat.value

    app.template("animal://{habitat}", lister=lambda: items)(animal)
    app.resource("plain://x")(lambda: "x")
    async with Client(app) as client:
        listed = [r["uri"] for r in await client.list_resources()]
    assert listed == ["plain://x", "animal://forest", "animal://sea"]


async def test_instances_without_lister_given_names_get_distinct_names_and_titles() -> None:
    app = App("names")

    @app.template("city://{country}/{city}", title="City",
                  lister=lambda: [{"country": "fr", "city": "Paris"}, {"country": "fr", "city": "Lyon"},
                                  "city://de/Berlin", {"country": "a,b", "city": "c"}, {"country": "a", "city": "b,c"},
                                  {"country": "it", "city": "Roma", "name": "rome", "title": "Rome"}])
    def city(country: str, city: str) -> str:
        return city

    @app.template("day://{n}", lister=lambda: [{"n": 1}, {"n": 2}, {"n": 3, "title": "The third"}])
    def day(n: int) -> str:
        return str(n)

    async with Client(app) as client:
        listed = await client.list_resources()
    labels = {r["uri"]: (r["name"], r["title"]) for r in listed}
    assert labels == {
        "city://fr/Paris": ("city:fr,Paris", "City (country: fr, city: Paris)"),
        "city://fr/Lyon": ("city:fr,Lyon", "City (country: fr, city: Lyon)"),
        "city://de/Berlin": ("city:de,Berlin", "City (country: de, city: Berlin)"),  # a URI the lister gave
        "city://a%2Cb/c": ("city:a%2Cb,c", "City (country: a,b, city: c)"),
        "city://a/b%2Cc": ("city:a,b%2Cc", "City (country: a, city: b,c)"),
        "city://it/Roma": ("rome", "Rome"),  # what the lister says wins
        "day://1": ("day:1", "day 1"),  # no title declared: the template's name
        "day://2": ("day:2", "day 2"),
        "day://3": ("day:3", "The third"),
    }
    names = [name for name, _ in labels.values()]
    titles = [title for _, title in labels.values()]
    assert len(set(names)) == len(names) and len(set(titles)) == len(titles)
    assert not set(names) & set(labels) and "City" not in titles
