"""Templates whose values may hold what follows them: the shapes that backtracked."""

from resourcekit import App

app = App("redos")


@app.template("x://{a}-{b}")
def dash(a: str, b: str) -> str:
    return a + b


@app.template("db://{host}:{port}")
def db(host: str, port: str) -> str:
    return host + port


@app.template("files://{+dir}/{+file}")
def files(dir: str, file: str) -> str:
    return dir + file


@app.template("abc://{a}{b}{c}")
def abc(a: str, b: str, c: str) -> str:
    return a + b + c


@app.resource("ok://ping")
def ok() -> str:
    return "pong"
