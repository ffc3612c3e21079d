"""The path-aware field reader every input parser reads with (``inputs.fields``)."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

import pytest

from patchlane.errors import InputError, LockError, MapError
from patchlane.inputs.fields import (
    Document,
    FieldPath,
    Fields,
    Wording,
    calendar_date,
    dotted_name,
    json_document,
    printable,
    printable_non_blank,
    yaml_document,
)
from patchlane.inputs.jsonio import parse_json_text
from patchlane.inputs.yamlio import load_yaml

JSON = """\
{
  "name": "lane",
  "count": 3,
  "flag": true,
  "day": "2026-10-08",
  "tags": ["a", "b"],
  "inner": {
    "x": 1
  },
  "rows": [
    {"id": "r1"},
    7
  ]
}
"""

YAML = """\
# a comment
name: lane
count: 3
flag: true
day: 2026-10-08
tags:
  - a
  - b
inner:
  x: 1
rows:
  - id: r1
  - 7
"""


def json_fields(text: str = JSON) -> Fields:
    return json_document(text, "f.json", LockError).fields(parse_json_text(text, "f.json"))


def yaml_fields(text: str = YAML) -> Fields:
    value = load_yaml(text, "f.yml", MapError)
    return yaml_document(value, "f.yml", MapError).fields(value)


def refused(call: Any) -> InputError:
    with pytest.raises(InputError) as info:
        call()
    return info.value


# --- typed getters ---------------------------------------------------------------------------


@pytest.mark.parametrize("reader", [json_fields, yaml_fields], ids=["json", "yaml"])
def test_well_typed_values_are_returned(reader: Any) -> None:
    r = reader()
    assert r.text("name") == "lane"
    assert r.integer("count", lo=1, hi=3) == 3
    assert r.boolean("flag") is True
    assert r.date("day") == date(2026, 10, 8)
    assert r.text_list("tags", duplicate="{!r} twice") == ("a", "b")
    assert r.mapping("inner").integer("x") == 1
    assert r.has("name") and not r.has("absent")


@pytest.mark.parametrize("reader", [json_fields, yaml_fields], ids=["json", "yaml"])
def test_an_absent_key_gives_the_default_or_is_missing(reader: Any) -> None:
    r = reader()
    assert r.text("absent", default=None) is None
    assert r.integer("absent", default=5) == 5
    assert r.text_list("absent", default=()) == ()
    assert r.mapping("absent", default=None) is None
    err = refused(lambda: r.boolean("absent"))
    assert err.message == "absent: missing"


def test_json_errors_name_the_file_the_field_and_the_value_line() -> None:
    r = json_fields()
    err = refused(lambda: r.integer("name"))
    assert str(err) == "f.json:2: name: expected an integer, got a string ('lane')"
    assert isinstance(err, LockError)
    assert (
        str(refused(lambda: r.integer("count", hi=2)))
        == "f.json:3: count: must be at most 2, got 3"
    )
    assert (
        str(refused(lambda: r.integer("count", lo=4)))
        == "f.json:3: count: must be at least 4, got 3"
    )
    assert str(refused(lambda: r.text("flag"))) == (
        "f.json:4: flag: expected a non-empty string, got a boolean (true)"
    )
    assert (
        str(refused(lambda: r.mapping("tags"))) == "f.json:6: tags: expected an object, got a list"
    )


def test_yaml_errors_name_the_key_line_and_word_kinds_for_yaml() -> None:
    r = yaml_fields()
    err = refused(lambda: r.mapping("tags"))
    assert str(err) == "f.yml:6: tags: expected a mapping, got a list"
    assert isinstance(err, MapError)
    # A missing key is named on the line of the mapping that lacks it: ``inner:``.
    assert str(refused(lambda: r.mapping("inner").text("y"))) == "f.yml:9: inner.y: missing"
    assert str(refused(lambda: r.boolean("count"))) == (
        "f.yml:3: count: expected true or false, got a number (3)"
    )


def test_integers_are_never_booleans_and_huge_ones_are_elided() -> None:
    r = json_fields('{"b": true, "n": ' + "9" * 40 + "}")
    assert refused(lambda: r.integer("b")).message == "b: expected an integer, got a boolean (true)"
    assert (
        refused(lambda: r.integer("n", hi=5)).message
        == "n: must be at most 5, got 99999999...(40 digits)"
    )


def test_text_accept_and_check() -> None:
    r = json_fields('{"s": " ", "h": "abc", "p": "../x"}')
    assert r.text("s", accept=None) == " "
    assert (
        refused(lambda: r.text("s")).message == "s: expected a non-empty string, got a string (' ')"
    )
    hexed = re.compile(r"[0-9a-f]{64}\Z").match
    assert refused(lambda: r.text("h", expected="64 hex digits", accept=hexed)).message == (
        "h: expected 64 hex digits, got a string ('abc')"
    )
    assert refused(
        lambda: r.text("p", check=lambda v: "no '..'" if ".." in v else None)
    ).message == ("p: no '..'")


def test_one_line_predicates() -> None:
    assert printable("a b") and not printable("") and not printable("a\nb")
    assert printable(" ") and not printable_non_blank(" ")
    assert not printable("\udcff")  # a lone surrogate (``"\udcff"`` in JSON)


def test_text_list_names_the_item_and_its_line() -> None:
    r = json_fields('{"ids": [\n  "a",\n  "b",\n  "a"\n], "bad": ["x", 3]}')
    err = refused(lambda: r.text_list("ids", duplicate="node id {!r} is listed twice"))
    assert str(err) == "f.json:4: ids[2]: node id 'a' is listed twice"
    assert refused(lambda: r.text_list("bad", item="a path")).message == (
        "bad[1]: expected a path, got a number (3)"
    )
    assert refused(lambda: r.text_list("bad", accept=lambda v: v != "x")).message == (
        "bad[0]: expected a string, got a string ('x')"
    )


def test_string_takes_any_string_and_null_only_when_asked() -> None:
    r = json_fields('{"e": "", "s": " ", "z": null, "n": 3}')
    assert (r.string("e"), r.string("s"), r.string("absent", default="d")) == ("", " ", "d")
    assert r.string("z", null=True) is None and r.string("absent", null=True, default=None) is None
    assert refused(lambda: r.string("z")).message == "z: expected a string, got null"
    assert refused(lambda: r.string("n", null=True)).message == (
        "n: expected a string or null, got a number (3)"
    )
    assert refused(lambda: r.string("absent", null=True)).message == "absent: missing"


def test_a_nullable_integer_and_a_number() -> None:
    r = json_fields('{"z": null, "i": -1, "f": 1.5, "b": false}')
    assert (
        r.integer("z", null=True) is None and r.integer("absent", null=True, default=None) is None
    )
    assert refused(lambda: r.integer("f", null=True)).message == (
        "f: expected an integer or null, got a number (1.5)"
    )
    assert refused(lambda: r.integer("i", lo=0, null=True)).message == (
        "i: must be at least 0, got -1"
    )
    assert (r.number("i"), r.number("f"), r.number("absent", default=0.0)) == (-1, 1.5, 0.0)
    assert refused(lambda: r.number("b")).message == "b: expected a number, got a boolean (false)"
    assert refused(lambda: r.number("f", lo=2)).message == "f: must be at least 2, got 1.5"


def test_choice_names_the_choices_in_order() -> None:
    r = json_fields('{"c": "head", "x": "side", "n": 1}')
    assert r.choice("c", ("base", "head")) == "head"
    assert r.choice("absent", ("base", "head"), default=None) is None
    assert refused(lambda: r.choice("x", ("base", "head"))).message == (
        "x: expected one of base, head, got a string ('side')"
    )
    assert refused(lambda: r.choice("n", ("a",), expected='"a"')).message == (
        'n: expected "a", got a number (1)'
    )


def test_a_text_list_without_item_refuses_the_whole_list_on_its_line() -> None:
    r = json_fields('{"ok": ["a"],\n "bad": [\n  "x",\n  3\n]}')
    assert r.text_list("ok", item=None) == ("a",)
    err = refused(lambda: r.text_list("bad", item=None))
    assert (err.line, err.message) == (2, "bad: expected a list of strings, got a list")


@pytest.mark.parametrize(
    ("value", "day"),
    [
        (date(2026, 10, 8), date(2026, 10, 8)),
        ("2026-10-08", date(2026, 10, 8)),
        (datetime(2026, 10, 8, 1, 2), None),  # a timestamp is not a day
        ("2026-02-30", None),
        ("20261008", None),
        ("2026-10-08\n", None),
        (None, None),
    ],
)
def test_calendar_date(value: Any, day: date | None) -> None:
    assert calendar_date(value) == day


def test_a_bad_date_is_refused_with_its_kind() -> None:
    r = yaml_fields("a: 2026-10-08T10:00:00\nb: soon\n")
    assert refused(lambda: r.date("a")).message == (
        "a: expected a date YYYY-MM-DD, got a timestamp (2026-10-08T10:00:00)"
    )
    assert (
        refused(lambda: r.date("b")).message
        == "b: expected a date YYYY-MM-DD, got a string ('soon')"
    )


# --- keys, lists of mappings, naming -----------------------------------------------------------


def test_only_refuses_the_first_unknown_key_in_file_order() -> None:
    r = yaml_fields()
    err = refused(lambda: r.only(("name", "count")))
    assert str(err) == "f.yml:4: flag: unknown key (expected one of: name, count)"
    assert refused(lambda: r.only(("name",), message="not here")).message == "count: not here"
    assert r.mapping("inner").only(("x",)).integer("x") == 1


def test_require_names_the_first_missing_key() -> None:
    r = json_fields()
    r.require("name", "count")
    assert str(refused(lambda: r.require("name", "zz", "yy"))) == "f.json:1: zz: missing"
    assert refused(lambda: r.require("zz", line=42)).line == 42


@pytest.mark.parametrize("reader", [json_fields, yaml_fields], ids=["json", "yaml"])
def test_items_checks_the_list_at_once_and_each_item_when_reached(reader: Any) -> None:
    r = reader()
    rows = r.items("rows", expected="a list of rows", item="a mapping {id}")
    first = next(rows)
    assert (first.text("id"), first.path, first.name("id")) == ("r1", ("rows", 0), "rows[0].id")
    err = refused(lambda: next(rows))
    assert err.message.startswith("rows[1]: expected a mapping {id}, got a number (7)")
    assert err.line == (12 if r.doc.json else 13)
    assert refused(lambda: r.items("name", expected="a list", item="x")).message.startswith(
        "name: expected a list, got a string"
    )


def test_items_has_a_default_and_words_a_mapping_as_the_document_does() -> None:
    r = json_fields()
    assert r.items("absent", default=()) == ()
    assert refused(lambda: list(r.items("rows"))).message == (
        "rows[1]: expected an object, got a number (7)"
    )
    assert refused(lambda: r.sequence("name")).message.startswith("name: expected a list, got")


def test_sequence_and_element_without_got() -> None:
    r = json_fields('{"l": [], "m": [1]}')
    err = refused(lambda: r.sequence("l", expected="a non-empty list", non_empty=True, got=False))
    assert err.message == "l: expected a non-empty list"
    err = refused(lambda: r.element("m", 0, expected="a mapping", got=False))
    assert err.message == "m[0]: expected a mapping"


def test_dotted_names() -> None:
    assert dotted_name(()) == "(top level)"
    assert dotted_name(("lanes", "fixture", "roots", 0, "lock")) == "lanes.fixture.roots[0].lock"
    assert dotted_name(("files", 2)) == "files[2]"


def test_a_document_can_name_fields_its_own_way_and_word_messages_freely() -> None:
    def quoted(path: FieldPath) -> str:
        return "".join(f"[{p}]" if isinstance(p, int) else repr(p) for p in path)

    text = '{\n  "ids": [1]\n}'
    doc = json_document(text, "r.json", InputError, name=quoted)
    r = doc.fields(parse_json_text(text, "r.json"))
    assert (
        str(refused(lambda: r.text_list("ids")))
        == "r.json:2: 'ids'[0]: expected a string, got a number (1)"
    )
    assert str(doc.error_at(("ids",), "'ids' must be names, not [1]")) == (
        "r.json:2: 'ids' must be names, not [1]"
    )
    assert str(r.fail((), "whole", line=9)) == "r.json:9: : whole"


def test_a_document_is_plain_data() -> None:
    doc = Document("x", InputError, lambda path: len(path) or None)
    r = doc.fields({"a": {"b": 1}})
    assert r.mapping("a").line("b") == 2 and r.line() is None
    assert str(r.mapping("a").fail("b", "no")) == "x:2: a.b: no"


class Pointed(Wording):
    """A wording of another family of files, as the lane reports have one."""

    def missing(self, doc: Document, path: FieldPath) -> str:
        return f"<{doc.name(path)}> is absent"

    def wrong(self, doc: Document, path: FieldPath, expected: str, value: Any, got: bool) -> str:
        return f"<{doc.name(path)}> should be {expected}, was {value!r}"

    def out_of_range(
        self, doc: Document, path: FieldPath, expected: str, bound: str, value: float
    ) -> str:
        return f"<{doc.name(path)}> should be {expected} {bound}, was {value}"

    def mapping(self, doc: Document) -> str:
        return "a table"


def test_a_document_words_every_getters_refusal_through_its_wording() -> None:
    text = '{\n  "n": -1,\n  "s": 5,\n  "rows": [1]\n}'
    doc = json_document(text, "w.json", InputError, wording=Pointed())
    r = doc.fields(parse_json_text(text, "w.json"))
    assert str(refused(lambda: r.integer("n", lo=0))) == (
        "w.json:2: <n> should be an integer at least 0, was -1"
    )
    assert str(refused(lambda: r.string("s"))) == "w.json:3: <s> should be a string, was 5"
    assert str(refused(lambda: r.boolean("zz"))) == "w.json:1: <zz> is absent"
    assert str(refused(lambda: r.require("zz"))) == "w.json:1: <zz> is absent"
    assert str(refused(lambda: r.mapping("s"))) == "w.json:3: <s> should be a table, was 5"
    assert str(refused(lambda: next(r.items("rows")))) == (
        "w.json:4: <rows[0]> should be a table, was 1"
    )


def test_a_json_document_without_its_text_names_no_line() -> None:
    doc = json_document(None, "v.json", InputError)
    assert str(refused(lambda: doc.fields({"a": 1}).string("a"))) == (
        "v.json: a: expected a string, got a number (1)"
    )
