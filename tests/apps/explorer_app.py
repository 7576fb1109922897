"""The app the explorer's browser tests drive: 2,500 resources over five pages, templates with
completion and a lister, an image, Markdown, JSON, a listable folder, and ``live://status``,
read from the file named by ``$EXPLORER_STATUS_FILE`` and polled while subscribed."""

from __future__ import annotations

import datetime
import enum
import os
import struct
import zlib
from collections.abc import Callable
from typing import Annotated

from resourcekit import App

app = App("explorer-demo", version="1.0.0", page_size=500,
          instructions="A demo of the explorer: items, weather forecasts, users and a live status.")

COUNT = 2500
CITIES = ["Amsterdam", "Athens", "Berlin", "Bern", "Lisbon", "London", "Madrid", "Oslo", "Paris", "Prague"]
STATUS_FILE = os.environ.get("EXPLORER_STATUS_FILE", "")


def _item(i: int) -> Callable[[], str]:
    def read() -> str:
        return f"item {i}\nline two of item {i}\n"

    return read


for number in range(COUNT):
    app.add_resource(_item(number), f"data://items/{number:04d}", name=f"item-{number:04d}",
                     title=f"Item {number}", mime_type="text/plain")


def _png(width: int, height: int) -> bytes:
    """A small gradient PNG (no imaging library needed)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(v for x in range(width) for v in (40 + 4 * x, 70 + 3 * y, 229))
                    for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@app.resource("image://logo.png", title="Logo", annotations={"audience": ["user"], "priority": 0.8})
def logo() -> bytes:
    """A 48x48 gradient."""
    return _png(48, 48)


@app.resource("blob://archive.bin", mime_type="application/octet-stream")
def archive() -> bytes:
    return bytes(range(256)) * 8


@app.resource("docs://readme.md", mime_type="text/markdown", title="Read me")
def readme() -> str:
    return ("# Explorer demo\n\nSome **bold**, some *emphasis*, `code` and a [link](https://example.org).\n\n"
            "- one\n- two\n\n```\nraw <b>not bold</b>\n```\n")


@app.resource("config://settings")
def settings() -> dict[str, object]:
    """Settings as JSON."""
    return {"theme": "dark", "limits": {"items": COUNT, "page": 500}, "flags": [True, False, None],
            "nested": {"level2": {"level3": {"deep": 1}}}}


@app.resource("live://status", poll=0.2, title="Live status")
def status() -> str:
    """Whatever the test wrote last."""
    if not STATUS_FILE:
        return "no status file"
    with open(STATUS_FILE, encoding="utf-8") as file:
        return file.read()


class Unit(enum.Enum):
    metric = "metric"
    imperial = "imperial"


def _cities(value: str) -> list[str]:
    return [c for c in CITIES if c.lower().startswith(value.lower())]


@app.template("weather://{city}/forecast{?days,unit,start}", complete={"city": _cities}, title="Forecast")
def forecast(city: Annotated[str, "A city name"], days: int = 3, unit: Unit = Unit.metric,
             start: datetime.date = datetime.date(2026, 1, 1)) -> dict[str, object]:
    """A made-up forecast for a city."""
    return {"city": city, "days": days, "unit": unit.value, "start": start.isoformat(),
            "forecast": [{"day": d, "high": 20 + d} for d in range(days)]}


@app.template("users://{user_id}", lister=lambda: [{"user_id": n, "title": f"User {n}"} for n in (1, 2, 3)])
def user(user_id: int) -> dict[str, object]:
    return {"id": user_id, "name": f"user {user_id}"}


@app.resource("users://me", title="Me")
def me() -> str:
    """A plain resource the users://{user_id} template would not match: user_id is an int."""
    return "me"


@app.template("rooms://{floor}", complete={"floor": lambda value: [f for f in ("10", "11", "12", "20")
                                                                  if f.startswith(value)]})
def room(floor: int) -> str:
    """An int variable with a completer."""
    return f"floor {floor}"


@app.resource("folder://", title="Folder", children=lambda: ["folder://a.txt", "folder://b.txt"])
def folder() -> str:
    return "a.txt\nb.txt\n"


@app.template("folder://{name}.txt")
def folder_file(name: str) -> str:
    return f"file {name}\n"


@app.template("control://add/{name}")
def add(name: str) -> str:
    """Reading this adds ``added://NAME`` while serving: clients hear ``list_changed``."""
    app.add_resource(lambda: f"added {name}", f"added://{name}", name=name)
    return "added"
