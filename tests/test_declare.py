"""Declaring resources: metadata from signatures, conversions, definition errors, precedence."""

from __future__ import annotations

import collections.abc
import dataclasses
import datetime as dt
import enum
import re
import typing
import uuid
from decimal import Decimal
from typing import Annotated, Literal, Optional, TypedDict

import pytest
import typing_extensions

import resourcekit
from resourcekit import (
    App,
    Context,
    DefinitionError,
    DuplicateResourceError,
    MissingParameterError,
    QueryDefaultError,
    TemplateSyntaxError,
    UnknownParameterError,
    UnsupportedParameterType,
    UnsupportedReturnType,
    resource,
    template,
)


class Color(enum.Enum):
    red = "r"
    blue = "b"


class PointX(typing_extensions.TypedDict):  # typing_extensions' own TypedDict, not typing's
    x: int


class Point(TypedDict):
    x: int


@dataclasses.dataclass
class Pair:
    a: int
    b: int


def test_decorators_return_the_function_unchanged():
    app = App("t")

    def plain() -> str:
        return "x"

    async def note(note_id: int, rev: int = 0) -> str:
        return f"{note_id}@{rev}"

    assert app.resource("a://plain")(plain) is plain
    assert app.template("n://{note_id}{?rev}")(note) is note
    assert plain() == "x"
    import asyncio

    assert asyncio.run(note(3)) == "3@0"


def test_metadata_from_signature_and_options():
    app = App("t")

    @app.resource("cfg://settings")
    def settings() -> dict[str, str]:
        """Current settings.

        More text.
        """
        return {}

    @app.resource("img://logo.png", title="Logo", size=3,
                  annotations={"audience": ["user"], "priority": 0.5,
                               "lastModified": dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)},
                  icons=[{"src": "https://example.com/i.png"}], meta={"k": "v"})
    def logo() -> bytes:
        return b"png"

    s = app.router.exact["cfg://settings"].wire
    assert s == {"name": "settings", "uri": "cfg://settings",
                 "description": "Current settings.\n\nMore text.", "mimeType": "application/json"}
    logo_wire = app.router.exact["img://logo.png"].wire
    assert logo_wire["mimeType"] == "image/png"  # bytes, and the URI says png
    assert logo_wire["title"] == "Logo" and logo_wire["size"] == 3
    assert logo_wire["annotations"] == {"audience": ["user"], "priority": 0.5,
                                        "lastModified": "2026-01-01T00:00:00+00:00"}
    assert app.router.exact["img://logo.png"].meta == {"k": "v"}


@pytest.mark.parametrize(("annotation", "mime"), [
    (str, "text/plain"), (bytes, "application/octet-stream"), (dict, "application/json"),
    (list[int], "application/json"), (Point, "application/json"), (Pair, "application/json"),
    (PointX, "application/json"),
])
def test_mime_type_from_return_annotation(annotation, mime):
    app = App("t")

    def fn():
        return None

    fn.__annotations__["return"] = annotation
    app.resource("x://y")(fn)
    assert app.router.exact["x://y"].mime_type == mime


@pytest.mark.parametrize(("annotation", "shown"), [
    (set, "set"), (frozenset[str], "frozenset[str]"), (Optional[set], "typing.Optional[set]"),
    (complex, "complex"), (Annotated[set, "tags"], "typing.Annotated[set, 'tags']"),
    (collections.abc.Iterator[str], "collections.abc.Iterator[str]"), (typing.Generator, "typing.Generator"),
])
@pytest.mark.parametrize("shape", ["parameterless", "template", "async"])
def test_a_return_annotation_that_can_never_be_served_is_rejected(annotation, shown, shape):
    app = App("t")

    if shape == "async":
        async def notes():
            return set()
    elif shape == "template":
        def notes(a: str):
            return set()
    else:
        def notes():
            return set()

    notes.__annotations__["return"] = annotation
    declare = app.template("t://{a}") if shape == "template" else app.resource("t://x")
    with pytest.raises(UnsupportedReturnType) as info:
        declare(notes)
    assert str(info.value) == (f"notes() is annotated to return {shown}, which cannot be served: return str, bytes, "
                               "JSON data (a dict, a list, a dataclass), a Path, Text or Blob")
    assert info.value.function == "notes" and info.value.annotation == annotation
    assert not app.resources and not app.templates


def test_a_function_annotated_to_return_none_is_rejected():
    app = App("t")
    for annotation in (None, "None", type(None)):
        def fn():
            return None

        fn.__annotations__["return"] = annotation
        with pytest.raises(UnsupportedReturnType, match=r"^fn\(\) is annotated to return None, but a resource's "
                           "function returns its contents: str, bytes"):
            app.resource("x://y")(fn)


class Shape:  # a plain class: a dataclass extending it can be served
    pass


class Pydantic:
    def model_dump(self, mode: str) -> dict:
        return {}


@pytest.mark.parametrize("annotation", [
    typing.Any, object, Optional[str], str | None, set | str, int, bool, float, tuple[int, int], list[dict],
    dict[str, Decimal], Point, PointX, Pair, Shape, Pydantic, Decimal, typing.Iterable[str], typing.Sequence[bytes],
    typing.Mapping[str, int], typing.Awaitable[str], typing.Union[Pair, None], "Later", typing.TypeVar("T"),
    Literal["a"], bytearray, memoryview, resourcekit.Text, list[resourcekit.Blob], dict | list, "pathlib.Path",
])
def test_return_annotations_that_may_be_served_are_accepted(annotation):
    app = App("t")

    def fn():
        return ""

    def with_a(a: str):
        return ""

    fn.__annotations__["return"] = with_a.__annotations__["return"] = annotation
    app.resource("x://y")(fn)
    app.template("x://{a}")(with_a)


def _converted(annotation, text):
    app = App("t")

    def fn(v):
        return v

    fn.__annotations__["v"] = annotation
    app.template("t://{v}")(fn)
    match = app.router.match(f"t://{text}")
    return None if match is None else match.kwargs["v"]


@pytest.mark.parametrize(("annotation", "text", "expected"), [
    (str, "abc", "abc"),
    (int, "42", 42),
    (int, "-7", -7),
    (float, "1.5", 1.5),
    (bool, "true", True),
    (bool, "0", False),
    (Color, "r", Color.red),
    (Color, "blue", Color.blue),
    (Literal["a", "b"], "b", "b"),
    (Literal[1, 2], "2", 2),
    (uuid.UUID, "12345678-1234-5678-1234-567812345678", uuid.UUID("12345678-1234-5678-1234-567812345678")),
    (dt.date, "2026-11-22", dt.date(2026, 11, 22)),
    (dt.datetime, "2026-11-22T10:00:00", dt.datetime(2026, 11, 22, 10)),
    (Decimal, "1.10", Decimal("1.10")),
    (Annotated[int, "doc"], "5", 5),
    (Optional[int], "5", 5),
    (list[int], "1,2,3", [1, 2, 3]),
])
def test_conversions(annotation, text, expected):
    assert _converted(annotation, text) == expected


@pytest.mark.parametrize(("annotation", "text"), [
    (int, "4x"), (int, "1_000"), (float, "nan"), (bool, "maybe"), (Color, "green"),
    (Literal["a"], "c"), (uuid.UUID, "nope"), (dt.date, "2026-13-01"), (Decimal, "abc"),
    (Decimal, "Infinity"),
])
def test_conversion_failure_means_no_match(annotation, text):
    assert _converted(annotation, text) is None


def test_equivalent_templates_are_duplicates():
    app = App("t")

    @app.template("items://{item_id}")
    def by_id(item_id: int) -> str:
        return "id"

    with pytest.raises(DuplicateResourceError) as info:
        app.template("items://{slug}")(lambda slug: slug)
    assert "items://{item_id}" in str(info.value)


def test_precedence_exact_then_specific_then_registration_order():
    app = App("t")
    app.template("docs://{+path}")(lambda path: "catch-all")
    app.template("docs://{section}/{page}")(lambda section, page: "two-level")
    app.template("docs://api/{page}")(lambda page: "api")
    app.template("docs://api/{page:3}x")(lambda page: "prefix")
    app.resource("docs://api/index")(lambda: "exact")

    def winner(uri):
        match = app.router.match(uri)
        return match.handler.fn() if not match.handler.sig.params else match.handler.fn(**match.kwargs)

    assert winner("docs://api/index") == "exact"
    assert winner("docs://api/intro") == "api"
    assert winner("docs://guide/intro") == "two-level"
    assert winner("docs://guide/a/b/c") == "catch-all"


def test_typed_template_falls_through_on_conversion_failure():
    app = App("t")

    @app.template("v://{n}/x")
    def by_number(n: int) -> str:
        return f"int {n}"

    @app.template("v://{name}/{rest}")  # less literal text: tried after v://{n}/x
    def by_name(name: str, rest: str) -> str:
        return f"str {name}"

    assert app.router.match("v://12/x").handler.fn is by_number
    assert app.router.match("v://ab/x").handler.fn is by_name


def test_definition_errors_name_the_culprit():
    app = App("t")
    with pytest.raises(MissingParameterError, match="'note_id'.*fn\\(\\)"):
        @app.template("n://{note_id}")
        def fn() -> str:
            return ""
    with pytest.raises(UnknownParameterError, match="'extra'"):
        @app.template("n://{a}")
        def fn2(a: str, extra: str) -> str:
            return ""
    with pytest.raises(QueryDefaultError, match="'rev'"):
        @app.template("n://{a}{?rev}")
        def fn3(a: str, rev: int) -> str:
            return ""
    with pytest.raises(UnsupportedParameterType, match="'a'"):
        @app.template("n://{a}")
        def fn4(a: set[str]) -> str:
            return ""
    with pytest.raises(TemplateSyntaxError) as info:
        app.template("n://{a")(lambda a: a)
    assert info.value.template == "n://{a" and info.value.position >= 4
    with pytest.raises(UnknownParameterError, match="resource 'static://x' has no variables: give 'needed' a "
                       "default, or declare a template such as 'static://x/{needed}'"):
        @app.resource("static://x")
        def fn5(needed: str) -> str:
            return ""

    def first() -> str:
        return ""

    app.resource("dup://x")(first)
    line = first.__code__.co_firstlineno
    with pytest.raises(DuplicateResourceError, match=f"'dup://x' is already registered by .*first\\(\\) at "
                                                     f".*test_declare.py:{line}"):
        app.resource("dup://x")(lambda: "")
    app.template("dup://{a}/y")(lambda a: a)
    with pytest.raises(DuplicateResourceError, match="equivalent to the template 'dup://{a}/y' registered by "):
        app.template("dup://{b}/y")(lambda b: b)
    for uri, why in [("://x", "must start with its scheme"), ("1abc://x", "not '1abc'"), (" n://x", "not ' n'"),
                     ("_n://x", "not '_n'"), ("no-colon", "has no scheme"), ("", "non-empty")]:
        with pytest.raises(DefinitionError, match=why):
            app.resource(uri)(lambda: "")
    for uri, why in [("notes://my note", r"' ' at 10: .* %20"), ("notes://a\tb", r"'\\t' at 9: .* %09"),
                     ("notes://a\nb", "%0A"), ("notes://a\x7fb", "%7F"), ("notes://a\u2028b", "UTF-8 bytes")]:
        with pytest.raises(DefinitionError, match=why):  # a client percent-encodes it and finds nothing
            app.resource(uri)(lambda: "")
        assert uri not in app.router.exact
    app.resource("notes://café/ünïcode")(lambda: "")  # printable non-ASCII (an IRI) stays allowed
    assert "z://x" not in app.router.exact
    app.resource("z://x")(lambda: "")
    app.resource("Z+b-c.d:x")(lambda: "")
    with pytest.raises(DefinitionError, match="@app.template"):
        app.resource("n://{a}")(lambda a: a)
    with pytest.raises(DefinitionError, match="audience"):
        app.resource("a://b", annotations={"audience": ["robots"]})(lambda: "")
    with pytest.raises(DefinitionError, match="priority"):
        app.resource("a://c", annotations={"priority": 2})(lambda: "")
    with pytest.raises(DefinitionError, match="exploded"):
        app.template("n://x{/segments*}")(lambda segments: "")


@pytest.mark.parametrize(("kind", "uri", "advice"), [
    ("template", "notes://:note_id", "template 'notes://:note_id' has no variable {note_id}: write {note_id} in "
                                     "place of :note_id: 'notes://{note_id}'"),
    ("template", "notes://$note_id/raw", "write {note_id} in place of $note_id: 'notes://{note_id}/raw'"),
    ("resource", "notes://:note_id", "resource 'notes://:note_id' has no variables: write {note_id} in place of "
                                     ':note_id and declare it with @app.template("notes://{note_id}")'),
    ("resource", "notes://<int:note_id>", 'in place of <int:note_id> and declare it with @app.template("notes:'
                                          '//{note_id}")'),
    ("template", "notes://all", "template 'notes://all' has no variable {note_id}: add {note_id} to the template, "
                                "or remove the parameter"),
    ("template", "notes://:note_idx", "add {note_id} to the template, or remove the parameter"),  # not the name
    ("resource", "notes://all", "resource 'notes://all' has no variables: give 'note_id' a default, or declare a "
                                "template such as 'notes://all/{note_id}' with @app.template"),
])
def test_a_parameter_without_its_variable_gets_advice_that_fits_what_was_written(kind, uri, advice):
    app = App("t")

    def note(note_id: str) -> str:
        return note_id

    with pytest.raises(UnknownParameterError) as info:
        getattr(app, kind)(uri)(note)
    assert str(info.value).startswith("note() has parameter 'note_id' but ") and str(info.value).endswith(advice)
    assert "@app.template" not in str(info.value) or kind == "resource"


def test_context_is_injected_not_a_variable():
    app = App("t")

    @app.template("c://{a}")
    def with_ctx(a: str, ctx: Context) -> str:
        return ctx.uri

    @app.resource("c://static")
    def static(ctx: Optional[Context] = None) -> str:
        return "s"

    assert app.router.templates["c://{a}"].sig.context_param == "ctx"
    assert app.router.exact["c://static"].sig.context_param == "ctx"


def test_context_or_none_is_injected_and_the_function_stays_callable_without_it():
    app = App("t")

    @app.template("c://{a}")
    def with_ctx(a: int, ctx: Context | None = None) -> Later:  # noqa: F821 - resolves nowhere
        return f"{a} from {ctx.uri if ctx else 'a direct call'}"

    handler = app.router.templates["c://{a}"]
    # an annotation that does not resolve leaves the others resolved: ctx is injected, a is an int
    assert handler.sig.context_param == "ctx" and list(handler.sig.params) == ["a"]
    assert app.router.match("c://x") is None and app.router.match("c://7").kwargs == {"a": 7}
    assert with_ctx(7) == "7 from a direct call"  # the decorator returned the function as written


def test_annotated_descriptions_and_default_app():
    app = App("t")

    @app.template("d://{a}")
    def described(a: Annotated[int, "The a"]) -> str:
        return ""

    assert app.router.templates["d://{a}"].sig.params["a"].description == "The a"

    @resourcekit.resource("default://one")
    def one() -> str:
        return "1"

    assert "default://one" in resourcekit.app.default_app.router.exact
    resourcekit.app.default_app.remove("default://one")


def test_templates_declared_from_many_threads_at_once_all_convert_uuids() -> None:
    import threading

    app = App("threads")
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def declare(k: int) -> None:
        barrier.wait()
        for i in range(50):
            def item(id: uuid.UUID) -> str:
                return str(id)
            try:
                app.template(f"t{k}-{i}://{{id}}")(item)
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=declare, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(app.router.templates) == 400


# --- @app.resource without parentheses (issue 12, the first ten minutes) --------------------------


def test_decorators_without_their_uri_say_how_to_write_them():
    app = App("x")
    with pytest.raises(DefinitionError, match=re.escape('write @app.resource("notes://today") above def hello()')):

        @app.resource  # type: ignore[arg-type]
        def hello() -> str:
            return "hi"

    with pytest.raises(DefinitionError, match=re.escape('@app.template("notes://{name}") above def note()')):

        @app.template  # type: ignore[arg-type]
        def note(name: str) -> str:
            return name

    with pytest.raises(DefinitionError, match="@app.resource"):
        resource(lambda: "x")  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="@app.template"):
        template(lambda: "x")  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="takes the URI as a string"):
        app.resource(42)  # type: ignore[arg-type]
    assert len(app.resources) == 0
