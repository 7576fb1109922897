"""An app served as tools too: resource_tools=True, small pages, text, an image, binary, templates, errors."""

from __future__ import annotations

import asyncio

from resourcekit import App, Blob, MCPError, Text

app = App("tools", page_size=3, resource_tools=True)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(32))

for n in range(5):
    app.resource(f"note://{n}", name=f"note-{n}", description=f"Note {n}")(lambda n=n: f"note {n}")


@app.resource("img://dot.png")
def dot() -> bytes:
    return PNG


@app.resource("bin://raw")
def raw() -> Blob:
    return Blob(b"\x00\x01\x02", "application/octet-stream")


@app.resource("multi://pair")
def pair() -> list[Text]:
    return [Text("first"), Text("second", uri="multi://pair/second")]


@app.resource("err://quota")
def quota() -> str:
    raise MCPError(-32001, "Quota exceeded", {"retryAfter": 30})


@app.resource("err://bug")
def bug() -> str:
    raise RuntimeError("a secret in a traceback")


@app.template("upper://{word}")
async def upper(word: str) -> str:
    await asyncio.sleep(0)
    return word.upper()


@app.template("row://{n}", lister=lambda: ({"n": n} for n in range(4)))
def row(n: int) -> str:
    return f"row {n}"


for n in range(4):
    app.template(f"t{n}://{{x}}", name=f"t{n}")(lambda x: x)
