"""The fixtures the official MCP conformance scenarios and the Inspector tests read.

``test://static-text`` (text/plain), ``test://static-binary`` (a 1x1 PNG), template
``test://template/{id}/data`` whose text contains the id, and ``test://watched-resource``,
which resources-subscribe / resources-unsubscribe subscribe to (every resourcekit
resource is subscribable).  Completion of the unknown ``ref/prompt`` the
completion-complete scenario asks about is answered by the server with an empty list.
"""

from resourcekit import App

app = App("conformance-fixture", version="1.0.0")

PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@app.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@app.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    return PNG_1X1


@app.resource("test://watched-resource", mime_type="text/plain")
def watched() -> str:
    return "Watched resource content"


@app.template("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> dict[str, object]:
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}
