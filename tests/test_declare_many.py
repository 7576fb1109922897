"""Declaring many resources: one Signature per code object, listed objects made when listed.

Closures made by one factory share a code object, and the registry inspects it once; these
tests hold it to inspecting again whenever a closure differs in anything the inspection reads.
"""

from __future__ import annotations

import functools
import gc
import inspect
import sys
from typing import Any

import pytest

from resourcekit import App, DefinitionError, DuplicateResourceError, QueryDefaultError
from resourcekit.pagination import SeqIndex
from resourcekit.testing import Client

pytestmark = pytest.mark.anyio

# a factory compiled without ``from __future__ import annotations``: each closure's
# annotations are evaluated when it is made, so two closures of one code object differ
_FACTORY = compile(
    "def make(returns, doc=None):\n"
    "    def static() -> returns:\n"
    "        return b'x' if returns is bytes else 'x'\n"
    "    static.__doc__ = doc\n"
    "    return static\n"
    "def make_item(default):\n"
    "    def item(id: str, page: int = default) -> str:\n"
    "        return f'{id}:{page}'\n"
    "    return item\n",
    "<factory>", "exec", dont_inherit=True,
)
_NS: dict[str, Any] = {}
exec(_FACTORY, _NS)
make, make_item = _NS["make"], _NS["make_item"]


def _static(i: int) -> Any:
    def static() -> str:
        return f"resource {i}"

    return static


def _listed(app: App) -> dict[str, dict[str, Any]]:
    return {h.uri: h.wire for h in app.resources}


def test_closures_with_different_annotations_get_their_own_mime_types() -> None:
    app = App("t")
    text, data, text_again = make(str), make(bytes), make(str)
    assert text.__code__ is data.__code__ is text_again.__code__
    app.resource("a://text")(text)
    app.resource("a://data")(data)
    app.resource("a://again")(text_again)
    listed = _listed(app)
    assert listed["a://text"]["mimeType"] == "text/plain"
    assert listed["a://data"]["mimeType"] == "application/octet-stream"
    assert listed["a://again"]["mimeType"] == "text/plain"


def test_closures_with_different_docstrings_names_or_replaced_annotations() -> None:
    app = App("t")
    first, documented, renamed, replaced = make(str), make(str, "Documented."), make(str), make(str)
    renamed.__name__ = "other"
    replaced.__annotations__ = {"return": bytes}  # after it was made: the def's annotations are gone
    for i, fn in enumerate((first, documented, renamed, replaced)):
        app.resource(f"a://r{i}")(fn)
    listed = _listed(app)
    assert listed["a://r0"] == {"name": "static", "uri": "a://r0", "mimeType": "text/plain"}
    assert listed["a://r1"] == {"name": "static", "uri": "a://r1", "description": "Documented.",
                                "mimeType": "text/plain"}
    assert listed["a://r2"]["name"] == "other"
    assert listed["a://r3"]["mimeType"] == "application/octet-stream"


def test_closures_with_different_defaults_are_checked_each() -> None:
    app = App("t")
    app.template("n://{id}{?page}")(make_item(1))
    app.template("m://{id}{?page}")(make_item(5))
    required = make_item(2)
    required.__defaults__ = None  # ``page`` has no default now: a query variable needs one
    with pytest.raises(QueryDefaultError, match="page"):
        app.template("k://{id}{?page}")(required)
    assert app.router.templates["n://{id}{?page}"].sig.params["page"].default == 1
    assert app.router.templates["m://{id}{?page}"].sig.params["page"].default == 5


async def test_closures_with_equal_but_different_defaults_list_their_own() -> None:
    # 1 == 1.0 == True and 0.0 == -0.0, yet a template's listed form shows each default as it is
    ns: dict[str, Any] = {}
    exec(compile("def make_scaled(default):\n"
                 "    def item(id: str, scale: float = default, *, x: float = default) -> str:\n"
                 "        return f'{id}:{scale}'\n"
                 "    return item\n", "<factory>", "exec", dont_inherit=True), ns)
    defaults = [1, 1.0, True, 0.0, -0.0]
    app = App("t")
    for i, default in enumerate(defaults):
        app.template(f"s{i}://{{id}}{{?scale,x}}")(ns["make_scaled"](default))
    for i, default in enumerate(defaults):
        sig = app.router.templates[f"s{i}://{{id}}{{?scale,x}}"].sig
        assert repr(sig.params["scale"].default) == repr(sig.params["x"].default) == repr(default)
    async with Client(app) as client:
        listed = (await client.request("resources/templates/list", {}))["resourceTemplates"]
    shown = [t["_meta"]["io.resourcekit/variables"][v]["default"] for t in listed for v in ("scale", "x")]
    assert [(type(d), repr(d)) for d in shown] == [(type(d), repr(d)) for d in defaults for _ in "sx"]


def test_defaults_whose_comparison_raises_are_inspected_again() -> None:
    class Weird:
        def __eq__(self, other: object) -> bool:
            raise TypeError("no truth value")

        __hash__ = object.__hash__

    def make_weird(value: Weird) -> Any:
        def static(option: Weird = value) -> str:
            return "x"

        return static

    app = App("t")
    with pytest.raises(DefinitionError):  # a Weird is no URI value: named, not cached wrongly
        app.resource("w://1")(make_weird(Weird()))
    with pytest.raises(DefinitionError):
        app.resource("w://2")(make_weird(Weird()))


def test_wrappers_of_different_functions_are_inspected_each() -> None:
    def logged(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    def item(id: str) -> str:
        return id

    def other(key: str) -> str:
        return key

    other.__name__ = "item"  # same name, same annotations but for the parameter's name
    app = App("t")
    app.template("a://{id}")(logged(item))
    app.template("b://{key}")(logged(other))  # would fail if the first wrapper's Signature were reused
    assert list(app.router.templates["b://{key}"].sig.params) == ["key"]


def test_sibling_closures_keep_their_annotations_unread() -> None:
    app = App("t")
    for i in range(3):
        app.resource(f"a://r{i}")(_static(i))
    later = _static(3)
    app.resource("a://r3")(later)
    if sys.implementation.name == "cpython":  # the annotations as the def made them, no dict built
        assert ("return", "str") in gc.get_referents(later)
    assert later.__annotations__ == {"return": "str"}  # and the function still has them


async def test_a_hundred_closures_list_page_by_page_and_read() -> None:
    app = App("t", page_size=7)
    for i in range(100):
        app.resource(f"bench://r{i}", name=f"r{i}")(_static(i))
    with pytest.raises(DuplicateResourceError):
        app.resource("bench://r5", name="again")(_static(5))
    app.remove("bench://r3")
    async with Client(app) as client:
        seen: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = await client.request("resources/list", {"cursor": cursor} if cursor else {})
            seen += page["resources"]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert [r["uri"] for r in seen] == [f"bench://r{i}" for i in range(100) if i != 3]
        assert seen[0] == {"name": "r0", "uri": "bench://r0", "mimeType": "text/plain"}
        assert await client.read_text("bench://r42") == "resource 42"  # now it has a version
        listed = await client.request("resources/list", {})
        assert listed["resources"][0] == seen[0]  # a fresh object each time, equal
        cursor, versioned = None, []
        while True:
            page = await client.request("resources/list", {"cursor": cursor} if cursor else {})
            versioned += [r for r in page["resources"] if "_meta" in r]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert [r["uri"] for r in versioned] == ["bench://r42"]
        assert versioned[0]["name"] == "r42" and versioned[0]["mimeType"] == "text/plain"


def test_seq_index_slices_as_it_pages() -> None:
    index: SeqIndex[str] = SeqIndex()
    for i in range(1, 11):
        index.append(i, f"x{i}")
    assert index.slice(0, 4) == (["x1", "x2", "x3", "x4"], 4, True)
    assert index.slice(8, 4) == (["x9", "x10"], 10, False)
    assert index.slice(6, 4) == (["x7", "x8", "x9", "x10"], 10, False)
    assert index.slice(10, 4) == ([], 10, False)
    index.remove(2)  # with an item removed it pages (and skips it) the way page() does
    assert index.slice(0, 4) == (["x1", "x3", "x4", "x5"], 5, True)
    assert index.slice(0, 4)[:2] == ([x for _, x in index.page(0, 4)[0]], index.page(0, 4)[0][-1][0])



def test_the_signature_cache_keeps_no_closure_alive() -> None:
    import weakref

    from resourcekit.signature import SignatureCache

    class Held:
        pass

    def make(value: Held) -> Any:
        def item() -> str:
            return repr(value)

        return item

    cache = SignatureCache()
    first, second = Held(), Held()
    refs = [weakref.ref(first), weakref.ref(second)]
    cache.signature(make(first))  # inspected: the entry
    cache.signature(make(second))  # a sibling: compared with the entry
    del first, second
    gc.collect()
    assert [ref() for ref in refs] == [None, None]


def test_a_plain_declaration_makes_the_handler_the_general_path_would() -> None:
    from resourcekit.declaration import DEFAULT_OPTIONS, Handler

    app = App("plain")
    fn = _static(1)
    plain = app.add_resource(fn, "test://plain/r1", name="r1")
    general = Handler("test://plain/r1", None, fn, plain.sig, "text/plain", None, DEFAULT_OPTIONS, plain.seq, "r1")
    assert {slot: getattr(plain, slot) for slot in Handler.__slots__} == {
        slot: getattr(general, slot) for slot in Handler.__slots__}
    assert plain.wire == general.wire == {"name": "r1", "uri": "test://plain/r1", "mimeType": "text/plain"}
    # a URI with a "." still guesses its mimeType from the extension; a declared one wins
    assert app.add_resource(_static(2), "test://plain/notes.md").mime_type == "text/markdown"
    assert app.add_resource(_static(3), "test://plain/x.md", mime_type="text/x-custom").mime_type == "text/x-custom"
    # numbered in declaration order across resources and templates, and routed
    tpl = app.add_template(lambda id: id, "test://tpl/{id}")
    last = app.add_resource(_static(4), "test://plain/r4")
    assert [plain.seq, tpl.seq, last.seq] == sorted([plain.seq, tpl.seq, last.seq])
    assert [h.uri for h in app.resources] == ["test://plain/r1", "test://plain/notes.md", "test://plain/x.md",
                                              "test://plain/r4"]
    match = app.router.match("test://plain/r4")
    assert match is not None and match.handler is last
    with pytest.raises(DuplicateResourceError, match="test://plain/r4"):
        app.add_resource(_static(5), "test://plain/r4")
    assert app.router.match("test://plain/r4").handler is last  # type: ignore[union-attr]


def test_a_sibling_whose_referents_are_laid_out_otherwise_is_inspected() -> None:
    app = App("layout")
    closures = [make(str), make(str), make(str), make(bytes)]
    closures[1].extra = "an attribute: one more referent, before the cells"  # type: ignore[attr-defined]
    closures[2].__defaults__ = ()  # another one
    for i, fn in enumerate(closures):
        app.add_resource(fn, f"test://layout/{i}")
    assert [h.mime_type for h in app.resources] == ["text/plain", "text/plain", "text/plain",
                                                    "application/octet-stream"]


def test_a_string_return_annotation_is_resolved_when_declared() -> None:
    # one module's globals, a name rebound between two declarations: each gets what the name is then
    ns: dict[str, Any] = {}
    exec(compile("from __future__ import annotations\n"
                 "def one() -> Payload:\n    return 'x'\n"
                 "def two() -> Payload:\n    return b'x'\n", "<module>", "exec", dont_inherit=True), ns)
    app = App("t")
    ns["Payload"] = str
    app.resource("a://one")(ns["one"])
    ns["Payload"] = bytes
    app.resource("a://two")(ns["two"])
    ns["Payload"] = dict
    app.resource("a://three")(ns["one"])
    assert [h.mime_type for h in app.resources] == ["text/plain", "application/octet-stream", "application/json"]


def test_the_return_mime_memo_stays_bounded() -> None:
    from typing import Annotated

    from resourcekit import signature

    def make(i: int) -> Any:
        def static() -> Annotated[str, f"resource {i}"]:  # an annotation made per closure
            return "x"

        static.__annotations__ = {"return": Annotated[str, f"resource {i}"]}
        return static

    app = App("t")
    for i in range(2000):
        app.resource(f"a://r{i}")(make(i))
    assert len(signature._RETURN_MIME) <= 512
    assert {h.mime_type for h in app.resources} == {"text/plain"}


@pytest.mark.parametrize("change", ["annotations", "signature"])
def test_a_declared_closure_changed_afterwards_is_no_model_for_its_siblings(change: str) -> None:
    import inspect

    def make(kind: Any) -> Any:
        def item(id):  # type: ignore[no-untyped-def]
            return str(id)

        item.__annotations__ = {"id": kind}  # a dict from the start
        item.tag = "resource"  # type: ignore[attr-defined]  # and a __dict__
        return item

    app = App("t")
    first = make(str)
    app.template("a://{id}")(first)  # inspected: the model its siblings are compared with
    sibling = make(str)
    if change == "annotations":  # changed once declared: equal to the sibling's now, not when inspected
        first.__annotations__["id"] = sibling.__annotations__["id"] = int
    else:
        first.__signature__ = sibling.__signature__ = inspect.Signature(
            [inspect.Parameter("id", inspect.Parameter.KEYWORD_ONLY, annotation=str, default=7)])
    app.template("b://{id}")(sibling)
    declared = app.router.templates["b://{id}"].sig.params["id"]
    assert (declared.convertor.parse("5"), declared.default) == (
        (5, inspect.Parameter.empty) if change == "annotations" else ("5", 7))
    assert app.router.templates["a://{id}"].sig.params["id"].required  # the model's own stays as declared


_DEFAULTS_APP = '''
from resourcekit import App

app = App("defaults")


def make(default):
    def item(id: str, scale: float = default) -> str:
        return f"{id}:{scale}"
    return item


for i, default in enumerate([1, 1.0, True, 0.0, -0.0]):
    app.template(f"s{i}://{{id}}{{?scale}}")(make(default))
'''


def test_equal_but_different_defaults_as_a_real_server_lists_them(tmp_path: Any) -> None:
    import orjson

    from tests.support.process import RawServer

    (tmp_path / "stdio_app.py").write_text(_DEFAULTS_APP)
    with RawServer(tmp_path / "stdio_app.py") as server:
        server.initialize()
        listed = server.request(1, "resources/templates/list")["result"]["resourceTemplates"]
    shown = [orjson.dumps(t["_meta"]["io.resourcekit/variables"]["scale"]["default"]) for t in listed]
    assert shown == [b"1", b"1.0", b"true", b"0.0", b"-0.0"]


def test_the_signature_cache_forgets_code_declared_and_removed_at_run_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from resourcekit import signature

    monkeypatch.setattr(signature, "_MAX_ENTRIES", 8, raising=False)
    app = App("t")
    for i in range(40):  # a snippet compiled, declared and removed again: a new code object each time
        ns: dict[str, Any] = {}
        exec(compile(f"def h(id: str, page: int = {i}) -> str:\n    return id + '{i}'\n", "<snippet>", "exec"), ns)
        app.add_template(ns["h"], "snip://{id}{?page}")
        assert app.router.templates["snip://{id}{?page}"].sig.params["page"].default == i
        app.remove("snip://{id}{?page}")
    assert len(app._signatures._entries) <= 8


_WRAPPED_APP = '''
from __future__ import annotations

import dataclasses

from resourcekit import App
from wrapping import cached

app = App("wrapped")


@dataclasses.dataclass
class Report:
    pages: int


@app.resource("report://today")
@cached
def today() -> Report:
    return Report(3)
'''


def test_a_wrapped_string_annotation_is_resolved_where_the_wrapped_function_lives(tmp_path: Any) -> None:
    # the wrapper's own module has no Report: get_type_hints looks in the wrapped function's globals
    from tests.support.process import RawServer

    (tmp_path / "wrapping.py").write_text(
        "import functools\n\n\ndef cached(fn):\n    @functools.wraps(fn)\n"
        "    def wrapper():\n        return fn()\n    return wrapper\n")
    (tmp_path / "stdio_app.py").write_text(_WRAPPED_APP)
    with RawServer(tmp_path / "stdio_app.py") as server:
        server.initialize()
        listed = server.request(1, "resources/list")["result"]["resources"]
    assert listed == [{"name": "today", "uri": "report://today", "mimeType": "application/json"}]


async def test_closures_whose_literals_differ_in_order_list_their_own_choices() -> None:
    # Literal["a", "b"] == Literal["b", "a"], yet a form offers the choices in their declared order
    from resourcekit.signature import inspect_handler

    ns: dict[str, Any] = {}
    exec(compile("from typing import Literal, Optional\n"
                 "def make_sorted(*choices):\n"
                 "    def item(by: Literal[choices], then: Optional[Literal[choices]] = None) -> str:\n"
                 "        return by\n"
                 "    return item\n", "<factory>", "exec", dont_inherit=True), ns)
    orders = [("name", "size"), ("size", "name"), ("name", "size")]
    app = App("t")
    for i, choices in enumerate(orders):
        app.template(f"o{i}://{{by}}{{?then}}")(ns["make_sorted"](*choices))
    async with Client(app) as client:
        listed = (await client.request("resources/templates/list", {}))["resourceTemplates"]
    variables = [t["_meta"]["io.resourcekit/variables"] for t in listed]
    assert [tuple(v["by"]["enum"]) for v in variables] == orders
    # (typing's own cache makes Optional[Literal["size", "name"]] the Optional[Literal["name", "size"]]
    # made first: what inspecting each closure gives)
    inspected = [inspect_handler(ns["make_sorted"](*choices)).params["then"].convertor.choices for choices in orders]
    assert [tuple(v["then"]["enum"]) for v in variables] == inspected


async def test_a_default_equal_to_the_first_closures_string_but_of_another_type_is_its_own() -> None:
    # a str enum's member == its value, so the first closure's ("red",) == (Color.RED,): the second
    # closure's handler gets Color.RED when the query leaves it out, as inspecting it alone says
    import enum

    from resourcekit.signature import inspect_handler

    class Color(str, enum.Enum):
        RED = "red"

    ns: dict[str, Any] = {}
    exec(compile("def make_colored(default):\n"
                 "    def item(id: str, color: str = default) -> str:\n"
                 "        return type(color).__name__\n"
                 "    return item\n", "<factory>", "exec", dont_inherit=True), ns)
    defaults: list[Any] = ["red", Color.RED, "red", b"red", bytearray(b"red")]
    app = App("t")
    for i, default in enumerate(defaults):
        app.template(f"c{i}://{{id}}{{?color}}")(ns["make_colored"](default))
    for i, default in enumerate(defaults):
        got = app.router.templates[f"c{i}://{{id}}{{?color}}"].sig.params["color"].default
        alone = inspect_handler(ns["make_colored"](default)).params["color"].default
        assert (type(got), got) == (type(alone), alone) == (type(default), default)
    async with Client(app) as client:
        read = (await client.request("resources/read", {"uri": "c1://x"}))["contents"][0]["text"]
    assert read == "Color"


def test_a_return_annotation_naming_a_class_defined_later_is_resolved_once_it_is() -> None:
    # the first closure is declared before its module defines Item: its mimeType is unknown then,
    # and the closures declared after Item exists are JSON, as inspecting each alone says
    from resourcekit.signature import SignatureCache, inspect_handler

    for source in ("from __future__ import annotations\ndef make_item(i):\n"
                   "    def item() -> Item:\n        return {}\n    return item\n",
                   "def make_item(i):\n    def item(id: str) -> 'Item':\n        return {}\n    return item\n"):
        ns: dict[str, Any] = {}
        exec(compile(source, "<module>", "exec", dont_inherit=True), ns)
        app = App("t")
        app.add_resource(ns["make_item"](0), "a://0") if "future" in source else app.add_template(
            ns["make_item"](0), "a://0/{id}")
        cache = SignatureCache()  # a name never defined (imported under TYPE_CHECKING): one inspection
        assert cache.signature(ns["make_item"](7)) is cache.signature(ns["make_item"](8))
        exec("import dataclasses\n@dataclasses.dataclass\nclass Item:\n    x: int = 0\n", ns)
        for i in (1, 2):
            fn = ns["make_item"](i)
            handler = app.add_resource(fn, f"a://{i}") if "future" in source else app.add_template(
                fn, f"a://{i}/{{id}}")
            assert handler.sig.mime_type == inspect_handler(fn).mime_type == "application/json"


def test_the_signature_cache_keeps_no_wrapped_closure_alive() -> None:
    # functools.wraps puts the wrapped closure in the wrapper's __dict__, a default may be one:
    # neither (nor what its cells hold) outlives the declarations through the cache
    import weakref

    from resourcekit.signature import SignatureCache

    class Held:
        pass

    def cached(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper() -> str:
            return str(fn())

        return wrapper

    def make(value: Held) -> Any:
        @cached
        def item() -> str:
            return repr(value)

        return item

    def make_defaulted(value: Held) -> Any:
        def render() -> str:
            return repr(value)

        def item(id: str, render: Any = render) -> str:
            return str(render())

        return item

    cache = SignatureCache()
    held = [Held() for _ in range(4)]
    refs = [weakref.ref(h) for h in held]
    for maker, value in zip((make, make, make_defaulted, make_defaulted), held, strict=True):
        cache.signature(maker(value))
    del held, value
    gc.collect()
    assert [ref() for ref in refs] == [None] * 4


def test_one_def_in_a_module_loop_resolves_its_string_annotations_as_each_declaration_does() -> None:
    # with postponed annotations the loop's variables are globals rebound between declarations of
    # one code object: each declaration reads what the names are then, as inspecting it alone does
    from resourcekit.signature import inspect_handler

    ns: dict[str, Any] = {"inspect_handler": inspect_handler}
    exec(compile("from __future__ import annotations\n"
                 "import typing\n"
                 "from resourcekit import App\n"
                 "app = App('t')\n"
                 "alone = []\n"
                 "for kind, Payload, Key in (('a', str, int), ('b', bytes, str), ('c', dict, int), ('d', dict, int)):\n"
                 "    @app.template(kind + '://{id}')\n"
                 "    def read(id: typing.Optional[Key]) -> Payload:\n"
                 "        return 'x'\n"
                 "    alone.append(inspect_handler(read))\n", "<module>", "exec", dont_inherit=True), ns)
    sigs = [ns["app"].router.templates[f"{kind}://{{id}}"].sig for kind in "abcd"]
    assert [s.mime_type for s in sigs] == [s.mime_type for s in ns["alone"]] == [
        "text/plain", "application/octet-stream", "application/json", "application/json"]
    assert [s.params["id"].convertor.type for s in sigs] == [
        s.params["id"].convertor.type for s in ns["alone"]] == [int, str, int, int]


class _Documented:
    @staticmethod
    def status() -> str:
        """The service's status."""
        return "ok"

    @staticmethod
    def item(id: str) -> str:
        """An item."""
        return id


class _Undocumented(_Documented):
    @staticmethod
    def status() -> str:
        return "fine"

    @staticmethod
    def item(id: str) -> str:
        return id


def test_a_parameterless_override_describes_itself_as_one_with_parameters_does() -> None:
    # inspect.getdoc gives an undocumented method its base class's docstring, with parameters or not
    app = App("t")
    app.add_resource(_Undocumented.status, "a://status")
    app.add_template(_Undocumented.item, "a://item/{id}")
    assert app.router.match("a://status").handler.sig.description == "The service's status."  # type: ignore[union-attr]
    assert app.router.templates["a://item/{id}"].sig.description == "An item."


@pytest.mark.parametrize("shape", ["parameterless", "template"])
def test_a_wrapped_chain_that_loops_is_a_definition_error_not_a_hang(shape: str) -> None:
    # typing.get_type_hints follows __wrapped__ for ever; inspect.signature raises ValueError
    ns: dict[str, Any] = {}
    exec(compile("from __future__ import annotations\n"
                 "def static() -> str:\n    return 'x'\n"
                 "def item(id: str) -> str:\n    return id\n", "<module>", "exec", dont_inherit=True), ns)
    first = ns["static" if shape == "parameterless" else "item"]
    other = compile("def other(): pass", "<m>", "exec")
    other_ns: dict[str, Any] = {}
    exec(other, other_ns)
    first.__wrapped__, other_ns["other"].__wrapped__ = other_ns["other"], first  # first -> other -> first
    app = App("t")
    with pytest.raises(DefinitionError, match="__wrapped__ chain loops"):
        if shape == "parameterless":
            app.resource("a://x")(first)
        else:
            app.template("a://{id}")(first)
    app.resource("a://ok")(lambda: "fine")  # the app goes on


async def test_a_parameterless_def_marked_as_a_coroutine_function_is_awaited(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain ``def`` returning an awaitable, marked with ``inspect.markcoroutinefunction`` (what
    sync-to-async wrappers do), is served as the coroutine function it says it is, like one with
    parameters; its unmarked siblings stay sync.

    The mark is Python 3.12's. Before 3.12 no plain ``def`` can carry one, so there the test gives
    resourcekit's coroutine check a mark of its own to honour: what it checks is the same, that
    the signature fast path asks that check rather than the code flag alone (it once did not)."""
    mark = getattr(inspect, "markcoroutinefunction", None)
    if mark is None:  # Python 3.10 and 3.11
        from resourcekit import signature

        general = signature._is_coroutine_function
        monkeypatch.setattr(signature, "_is_coroutine_function",
                            lambda fn: getattr(fn, "_test_marked", False) or general(fn))

        def mark(fn: Any) -> Any:
            fn._test_marked = True
            return fn

    app = App("marked")

    def make(marked: bool) -> Any:
        async def body() -> str:
            return "awaited"

        def static() -> Any:
            return body() if marked else "plain"

        return mark(static) if marked else static

    app.resource("m://plain")(make(False))
    app.resource("m://marked")(make(True))
    app.resource("m://plain-again")(make(False))
    async with Client(app) as client:
        assert await client.read_text("m://marked") == "awaited"
        assert await client.read_text("m://plain") == "plain"
        assert await client.read_text("m://plain-again") == "plain"
