"""``resources/templates/list`` describes each template's variables in ``_meta["io.resourcekit/variables"]``
(what a form needs to offer typed inputs: the explorer's template form reads it)."""

from __future__ import annotations

import datetime
import decimal
import enum
import uuid
from typing import Annotated, Literal, Optional

import pytest

from resourcekit import App
from resourcekit.testing import Client

pytestmark = pytest.mark.anyio

VARIABLES = "io.resourcekit/variables"


class Color(enum.Enum):
    red = "r"
    green = "g"


app = App("variables")


@app.template("shop://{sku}/{day}{?qty,color,mode,at,price,ref,tags*,flag,note}",
              complete={"sku": lambda value: ["a1", "a2"]}, meta={"owner": "me"})
def product(sku: Annotated[str, "Stock keeping unit"], day: datetime.date, qty: int = 1, color: Color = Color.red,
            mode: Literal["fast", "slow"] = "fast", at: Optional[datetime.datetime] = None,
            price: decimal.Decimal = decimal.Decimal("1.50"), ref: Optional[uuid.UUID] = None,
            tags: list[int] = [], flag: bool = False, note: float = 0.5) -> str:  # noqa: B006
    return sku


@app.template("own://{x}", meta={VARIABLES: {"x": {"type": "string", "enum": ["mine"]}}})
def own(x: str) -> str:
    return x


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_each_variable_is_described(version: str) -> None:
    async with Client(app, protocol_version=version) as client:
        templates = {t["uriTemplate"]: t for t in await client.list_templates()}
    product_meta = templates["shop://{sku}/{day}{?qty,color,mode,at,price,ref,tags*,flag,note}"]["_meta"]
    assert product_meta["owner"] == "me"  # the template's own _meta is kept
    assert product_meta[VARIABLES] == {
        "sku": {"type": "string", "required": True, "description": "Stock keeping unit", "completion": True},
        "day": {"type": "string", "format": "date", "required": True},
        "qty": {"type": "integer", "default": 1},
        "color": {"type": "string", "enum": ["r", "g"], "default": "r", "completion": True},
        "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast", "completion": True},
        "at": {"type": "string", "format": "date-time"},
        "price": {"type": "string", "format": "decimal", "default": "1.50"},
        "ref": {"type": "string", "format": "uuid"},
        "tags": {"type": "array", "items": {"type": "integer"}, "default": []},
        "flag": {"type": "boolean", "default": False, "completion": True},
        "note": {"type": "number", "default": 0.5},
    }
    # a template that describes its variables itself keeps its own description
    assert templates["own://{x}"]["_meta"][VARIABLES] == {"x": {"type": "string", "enum": ["mine"]}}
