"""A format declared once as a model: its writer, strict reader and schema (``inputs.model``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

import jsonschema
import pytest

from patchlane.errors import ReportError
from patchlane.inputs.fields import Fields, json_document
from patchlane.inputs.jsonio import parse_json_text
from patchlane.inputs.model import Group, from_fields, keys, schema_of, spec, to_data


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Leaf:
    name: str
    weight: int = field(default=1, metadata=spec(lo=0, description="how heavy"))


def _pairs(top: Fields, key: str) -> tuple[tuple[str, str], ...]:
    value = top.sequence(key)
    if not all(isinstance(v, list) and len(v) == 2 for v in value):
        raise top.fail(key, "pairs of two")
    return tuple((a, b) for a, b in value)


@dataclass(frozen=True)
class Tree:
    colour: Colour
    kind: Literal["oak", "elm"]
    leaves: tuple[Leaf, ...] = ()
    tags: tuple[str, ...] = field(default=(), metadata=spec(write="nonempty"))
    note: str | None = None
    source: str | None = field(default=None, metadata=spec(choices=("a", "b"), null=False))
    height: float = field(default=0.0, metadata=spec(when="note"))
    root: Leaf | None = None
    flag: bool = field(default=False, metadata=spec(required=True))
    pairs: tuple[tuple[str, str], ...] = field(default=(), metadata=spec(read=_pairs))


def read(text: str, model: type = Tree) -> object:
    value = parse_json_text(text, "t.json", ReportError)
    doc = json_document(text, "t.json", ReportError)
    assert isinstance(value, dict)
    return from_fields(model, doc.fields(value))


def test_writes_every_key_in_declaration_order_as_the_specs_say() -> None:
    tree = Tree(Colour.RED, "oak", (Leaf("a", 2),), note="n", height=3.5, pairs=(("x", "y"),))
    assert list(to_data(tree, {"lane": "t"})) == [
        "lane", "colour", "kind", "leaves", "note", "source", "height", "root", "flag", "pairs",
    ]  # fmt: skip
    data = to_data(tree)
    assert data["colour"] == "red" and data["leaves"] == [{"name": "a", "weight": 2}]
    assert data["pairs"] == [["x", "y"]] and data["root"] is None
    bare = to_data(Tree(Colour.BLUE, "elm"))
    assert "tags" not in bare and "height" not in bare  # nonempty; ``when`` note is None
    assert to_data(Tree(Colour.BLUE, "elm", tags=("t",)))["tags"] == ["t"]


def test_what_it_writes_reads_back_equal_and_fits_its_schema() -> None:
    tree = Tree(Colour.RED, "oak", (Leaf("a", 2),), ("t",), "n", "b", 1.5, Leaf("r"), True)
    data = to_data(tree)
    jsonschema.validate(data, schema_of(Tree))
    assert read(json.dumps(data, indent=2)) == tree


def test_absent_keys_read_as_defaults_and_required_ones_are_refused() -> None:
    assert read('{"colour": "red", "kind": "elm", "flag": false}') == Tree(Colour.RED, "elm")
    with pytest.raises(ReportError, match=r"t\.json:1: flag: missing"):
        read('{"colour": "red", "kind": "elm"}')  # a default, but required by its spec
    with pytest.raises(ReportError, match=r"name: missing"):
        read('{"colour": "red", "kind": "elm", "flag": true, "root": {}}')


VALID = {"colour": "red", "kind": "oak", "flag": True}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('"colour": "green"', r"t\.json:1: colour: expected one of red, blue, got a string"),
        ('"kind": "ash"', r"t\.json:1: kind: expected one of oak, elm"),
        ('"leaves": [{"name": "a", "weight": -1}]', r"leaves\[0\]\.weight: must be at least 0"),
        ('"leaves": [{"name": "a", "zz": 0}]', r"leaves\[0\]\.zz: unknown key"),
        ('"tags": ["a", 3]', r"tags\[1\]: expected a string, got a number"),
        ('"note": 4', r"note: expected a string or null"),
        ('"source": null', r"source: expected one of a, b, got null"),
        ('"source": "c"', r"source: expected one of a, b"),
        ('"height": true', r"height: expected a number, got a boolean"),
        ('"flag": "yes"', r"flag: expected true or false"),
        ('"pairs": [["x"]]', r"pairs: pairs of two"),
        ('"zz": 1', r"t\.json:1: zz: unknown key \(expected one of: colour, kind, leaves"),
    ],
)
def test_a_value_of_the_wrong_shape_is_refused_at_its_line(body: str, message: str) -> None:
    wrong = json.loads("{" + body + "}")
    value = {**wrong, **{k: v for k, v in VALID.items() if k not in wrong}}
    with pytest.raises(ReportError, match=message):
        read(json.dumps(value))  # one line: every message is on line 1
    with pytest.raises(ReportError, match=message.replace(r"t\.json:1:", r"t\.json:2:")):
        read(json.dumps(value, indent=0))  # the wrong key first: its line is 2
    assert not _valid(value)  # the schema refuses what the reader refuses


def test_null_is_a_value_only_where_the_type_allows_it() -> None:
    tree = read('{"colour": "red", "kind": "oak", "flag": true, "note": null, "root": null}')
    assert tree == Tree(Colour.RED, "oak", flag=True)
    assert _valid({"colour": "red", "kind": "oak", "flag": True, "note": None})
    assert not _valid({"colour": "red", "kind": "oak", "flag": True, "source": None})


def test_the_schema_is_derived_from_the_types_and_specs() -> None:
    schema = schema_of(Tree)
    props = schema["properties"]
    assert isinstance(props, dict)
    assert props["colour"] == {"enum": ["red", "blue"]}
    assert props["note"] == {"type": ["string", "null"]}
    assert props["source"] == {"enum": ["a", "b"]}
    assert props["leaves"]["items"]["properties"]["weight"] == {  # type: ignore[index]
        "type": "integer", "minimum": 0, "description": "how heavy",
    }  # fmt: skip
    assert props["root"]["type"] == ["object", "null"]  # type: ignore[index]
    assert schema["required"] == ["colour", "kind", "flag"]
    assert schema["additionalProperties"] is False
    assert keys(Tree)[:3] == ("colour", "kind", "leaves")


def test_a_type_no_reader_knows_must_bring_its_own() -> None:
    @dataclass(frozen=True)
    class Odd:
        when: dict[str, int]

    with pytest.raises(TypeError, match=r"Odd\.when: no reader"):
        read("{}", Odd)  # refused when the model is first used, not when a file has the key
    with pytest.raises(TypeError, match="no reader"):
        schema_of(Odd)

    @dataclass(frozen=True)
    class Typo:
        n: int = field(default=0, metadata=spec(write="non-empty"))

    with pytest.raises(TypeError, match="write must be"):
        to_data(Typo())

    @dataclass(frozen=True)
    class Stray:
        n: int = field(default=0, metadata=spec(when="m"))

    with pytest.raises(TypeError, match="when names no field: 'm'"):
        to_data(Stray())


def _valid(value: object) -> bool:
    try:
        jsonschema.validate(value, schema_of(Tree))
    except jsonschema.ValidationError:
        return False
    return True


COST = Group("cost", "what it cost")


@dataclass(frozen=True)
class Run:
    name: str
    total: int = field(metadata=spec(lo=0))
    twice: int = field(init=False)
    payload: Any = None
    error: str | None = field(default=None, metadata=spec(write="notnone", null=False))
    limit: float = field(default=1.0, metadata=spec(above=0))
    seconds: float = field(default=0.0, metadata=spec(group=COST))
    steps: int = field(default=0, metadata=spec(group=COST, when="error"))

    def __post_init__(self) -> None:
        object.__setattr__(self, "twice", 2 * self.total)


def test_a_group_holds_its_keys_in_one_object_in_the_place_of_the_first() -> None:
    data = to_data(Run("a", 2, seconds=1.5, error="e", steps=3))
    assert list(data) == ["name", "total", "twice", "payload", "error", "limit", "cost"]
    assert data["cost"] == {"seconds": 1.5, "steps": 3}
    assert to_data(Run("a", 2))["cost"] == {"seconds": 0.0}  # ``steps`` only ``when`` error
    assert read(json.dumps(data), Run) == Run("a", 2, seconds=1.5, error="e", steps=3)
    assert read('{"name": "a", "total": 1, "twice": 0}', Run) == Run("a", 1)  # no group: defaults
    with pytest.raises(
        ReportError, match=r"cost\.zz: unknown key \(expected one of: seconds, steps\)"
    ):
        read('{"name": "a", "total": 1, "twice": 2, "cost": {"zz": 1}}', Run)
    with pytest.raises(ReportError, match=r"cost: expected an object, got a list"):
        read('{"name": "a", "total": 1, "twice": 2, "cost": []}', Run)
    with pytest.raises(ReportError, match=r"seconds: unknown key"):
        read('{"name": "a", "total": 1, "twice": 2, "seconds": 1}', Run)  # only inside the group
    group = schema_of(Run)["properties"]["cost"]  # type: ignore[index]
    assert group == {
        "type": "object",
        "properties": {"seconds": {"type": "number"}, "steps": {"type": "integer"}},
        "additionalProperties": False,
        "description": "what it cost",
    }


def test_a_computed_field_is_written_and_checked_but_recomputed() -> None:
    assert to_data(Run("a", 4))["twice"] == 8
    assert read('{"name": "a", "total": 4, "twice": 1}', Run) == Run("a", 4)  # 8 again
    with pytest.raises(ReportError, match=r"twice: missing"):
        read('{"name": "a", "total": 4}', Run)
    with pytest.raises(ReportError, match=r"twice: expected an integer, got a string"):
        read('{"name": "a", "total": 4, "twice": "8"}', Run)


def test_any_notnone_and_above() -> None:
    run = read('{"name": "a", "total": 0, "twice": 0, "payload": {"x": [1, null]}}', Run)
    assert run == Run("a", 0, payload={"x": [1, None]})
    assert "error" not in to_data(Run("a", 0)) and to_data(Run("a", 0, error=""))["error"] == ""
    with pytest.raises(ReportError, match=r"error: expected a string, got null"):
        read('{"name": "a", "total": 0, "twice": 0, "error": null}', Run)
    with pytest.raises(ReportError, match=r"limit: expected a number above 0, got a number \(0\)"):
        read('{"name": "a", "total": 0, "twice": 0, "limit": 0}', Run)
    props = schema_of(Run)["properties"]
    assert props["payload"] == {} and props["limit"] == {"type": "number", "exclusiveMinimum": 0}  # type: ignore[index]
    assert schema_of(Run)["required"] == ["name", "total", "twice"]


@dataclass(frozen=True)
class Tally:
    counts: Mapping[str, int] | None = field(
        default=None, metadata=spec(lo=0, null=False, write="notnone")
    )
    names: Mapping[str, str] = field(default_factory=dict)
    # Written whenever ``counts`` is, even as null: a function of the instance decides.
    last: str | None = field(default=None, metadata=spec(write=lambda t: t.counts is not None))


def test_a_mapping_is_written_read_and_described_value_by_value() -> None:
    assert to_data(Tally()) == {"names": {}}  # notnone: no counts, so no last either
    assert to_data(Tally({}, {"b": "x", "a": "y"})) == {
        "counts": {}, "names": {"b": "x", "a": "y"}, "last": None,
    }  # fmt: skip
    tally = Tally({"z": 2, "a": 0}, {"k": "v"}, "n")
    assert list(to_data(tally)["counts"]) == ["z", "a"]  # type: ignore[call-overload]
    assert read(json.dumps(to_data(tally)), Tally) == tally
    schema = schema_of(Tally)
    jsonschema.validate(to_data(tally), schema)
    assert schema["properties"]["counts"] == {  # type: ignore[index]
        "type": "object", "additionalProperties": {"type": "integer", "minimum": 0},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"counts": {"a": -1}}', r"t\.json:1: counts\.a: must be at least 0"),
        ('{"counts": {"a": "1"}}', r"counts\.a: expected an integer, got a string"),
        ('{"counts": null}', r"counts: expected an object, got null"),
        ('{"names": {"a": 1}}', r"names\.a: expected a string, got a number"),
        ('{"names": []}', r"names: expected an object"),
    ],
)
def test_a_mapping_refuses_a_wrong_value_by_its_key(body: str, message: str) -> None:
    with pytest.raises(ReportError, match=message):
        read(body, Tally)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(body), schema_of(Tally))


NEED = Group("need")


@dataclass(frozen=True)
class Bounded:
    share: float = field(default=0.0, metadata=spec(lo=0, hi=1))
    rule: int = field(default=1, metadata=spec(lo=1, hi=7))
    needed: int = field(default=0, metadata=spec(group=NEED, required=True))
    counts: Mapping[str, int] = field(default_factory=dict, metadata=spec(write="nonempty"))


def test_an_upper_bound_is_read_and_described() -> None:
    ok = '{"share": 1, "rule": 7, "need": {"needed": 1}}'
    assert read(ok, Bounded) == Bounded(1, 7, 1)
    with pytest.raises(ReportError, match=r"share: must be at most 1, got 1\.5"):
        read('{"share": 1.5, "need": {"needed": 1}}', Bounded)
    with pytest.raises(ReportError, match=r"rule: must be at most 7, got 8"):
        read('{"rule": 8, "need": {"needed": 1}}', Bounded)
    props = schema_of(Bounded)["properties"]
    assert props["share"] == {"type": "number", "minimum": 0, "maximum": 1}  # type: ignore[index]
    assert props["rule"] == {"type": "integer", "minimum": 1, "maximum": 7}  # type: ignore[index]


def test_a_group_holding_a_required_key_is_required() -> None:
    with pytest.raises(ReportError, match=r"need: missing"):
        read("{}", Bounded)
    with pytest.raises(ReportError, match=r"need\.needed: missing"):
        read('{"need": {}}', Bounded)
    assert schema_of(Bounded)["required"] == ["need"]


def test_a_default_factory_gives_each_read_its_own_value() -> None:
    first = read('{"need": {"needed": 1}}', Bounded)
    second = read('{"need": {"needed": 1}}', Bounded)
    assert isinstance(first, Bounded) and isinstance(second, Bounded)
    assert first.counts == {} and first.counts is not second.counts


def test_null_is_read_before_a_custom_reader_where_the_type_allows_it() -> None:
    @dataclass(frozen=True)
    class Maybe:
        pairs: tuple[tuple[str, str], ...] | None = field(default=None, metadata=spec(read=_pairs))

    assert read('{"pairs": null}', Maybe) == Maybe()
    assert read('{"pairs": [["a", "b"]]}', Maybe) == Maybe((("a", "b"),))
