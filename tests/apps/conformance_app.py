"""The fixtures the official conformance scenarios read (see shared conformance HOWTO)."""

from resourcekit import App

app = App("conformance-fixture", version="1.0.0")
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
@app.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."
@app.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    return PNG
@app.resource("test://watched-resource")
def watched() -> str:
    return "Watched resource content"
@app.template("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> dict:
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}
