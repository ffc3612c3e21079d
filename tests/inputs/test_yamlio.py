"""Strict YAML loading: line numbers, duplicate keys, aliases, bad scalars, no tracebacks."""

from __future__ import annotations

import pytest

from patchlane.errors import InputError, MapError
from patchlane.inputs.yamlio import YamlList, YamlMap, load_yaml


def _error(text: str, error: type[InputError] = InputError) -> InputError:
    with pytest.raises(error) as info:
        load_yaml(text, "f.yml", error)
    return info.value


def test_values_remember_their_lines() -> None:
    doc = load_yaml("# comment\na: 1\nb:\n  - x\n  - y: 2\n    z: [3, 4]\n", "f.yml")
    assert doc == {"a": 1, "b": ["x", {"y": 2, "z": [3, 4]}]}
    assert isinstance(doc, YamlMap)
    assert doc.line == 2
    assert doc.key_lines == {"a": 2, "b": 3}
    seq = doc["b"]
    assert isinstance(seq, YamlList)
    assert seq.item_lines == [4, 5]
    inner = seq[1]
    assert isinstance(inner, YamlMap)
    assert inner.key_lines == {"y": 5, "z": 6}
    assert isinstance(inner["z"], YamlList)


def test_empty_document_is_none() -> None:
    assert load_yaml("", "f.yml") is None
    assert load_yaml("# only a comment\n", "f.yml") is None


def test_duplicate_key_names_both_lines() -> None:
    e = _error("a: 1\nb: 2\na: 3\n")
    assert e.line == 3
    assert str(e) == "f.yml:3: duplicate key 'a' (first on line 1)"


def test_nested_duplicate_key() -> None:
    e = _error("lanes:\n  fixture:\n    lock: a\n    paths: []\n    lock: b\n")
    assert e.line == 5
    assert "duplicate key 'lock'" in str(e)


def test_error_class_is_the_callers() -> None:
    e = _error("a: 1\na: 2\n", MapError)
    assert isinstance(e, MapError)
    assert e.file == "f.yml"


@pytest.mark.parametrize(
    "text",
    [
        "base: &b {x: 1}\nother: *b\n",
        "base: &b [1, 2]\nother: *b\n",
        "seed: &s 20260924\nother: *s\n",  # an alias of a scalar is still an alias
        "name: &n hello\nlist: [*n, *n]\n",
    ],
)
def test_aliases_are_refused(text: str) -> None:
    e = _error(text)
    assert "aliases are not allowed" in str(e)
    assert e.line == 2


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: !!set {x: null}\n",
        "a: 1\nb: !!omap [{x: 1}]\n",
        "a: 1\nb: !!python/object:os.system {x: 1}\n",
    ],
)
def test_tagged_collections_are_refused(text: str) -> None:
    e = _error(text)
    assert e.line == 2
    assert "tag" in str(e)


def test_merge_keys_are_refused_with_line() -> None:
    e = _error("a: 1\nb:\n  <<: {x: 1}\n")
    assert e.line == 3
    assert "merge keys" in str(e)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: 1\nb: [1, 2\nc: 3\n", 3),
        ("a: 1\n  b: 2\n", 2),
        ("a: 1\nb: 'unterminated\n", 3),
        ("a:\n  - x\n - y\n", 3),
        ("a: 1\n\tb: 2\n", 2),
    ],
)
def test_syntax_errors_name_the_line(text: str, line: int) -> None:
    e = _error(text)
    assert e.line == line
    assert str(e).startswith(f"f.yml:{line}: YAML syntax error")
    assert "\n" not in str(e)


def test_several_documents_are_refused() -> None:
    e = _error("a: 1\n---\nb: 2\n")
    assert e.line == 2
    assert "\n" not in str(e)


def test_non_string_key_is_refused_with_line() -> None:
    e = _error("a: 1\n2: b\n")
    assert e.line == 2
    assert "not a string" in str(e)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nexpires: 2026-02-30\n",  # looks like a date, is not one
        "a: 1\nseed: !!int twelve\n",
        "a: 1\nflag: !!bool maybe\n",
        "a: 1\nwhen: !!timestamp soon\n",
        "a: 1\nratio: !!float half\n",
        "a: 1\ndata: !!binary 'abc'\n",  # bad base64 padding
    ],
)
def test_bad_scalar_values_are_input_errors_with_line(text: str) -> None:
    e = _error(text)
    assert e.line == 2
    assert "\n" not in str(e)


def test_unsafe_tags_are_refused_on_one_line() -> None:
    e = _error("a: 1\nb: !!python/object/apply:os.system ['true']\n")
    assert e.line == 2
    assert "\n" not in str(e)
    assert "python/object" in str(e)


@pytest.mark.parametrize("depth", [2_000, 200_000])
def test_deep_nesting_is_an_input_error(depth: int) -> None:
    # 2 000 levels overflowed Python's recursion limit; 200 000 crashed the C composer.
    # PyYAML 6.0.4 refuses deep nesting itself ("exceeded maximum nesting depth"); older
    # releases reach our own pre-pass ("nested more than 64 levels deep"). Either way it is
    # one input error on the right line.
    e = _error("a:\n  " + "[" * depth + "]" * depth + "\n")
    assert e.line == 2
    assert "nest" in str(e)
    assert "\n" not in str(e)


def test_moderate_nesting_loads() -> None:
    assert load_yaml("a: " + "[" * 30 + "]" * 30 + "\n", "f.yml") is not None


def test_plain_scalars_keep_yaml_types() -> None:
    doc = load_yaml("i: 7\nf: 1.5\nb: true\nn: null\ns: '7'\n", "f.yml")
    assert doc == {"i": 7, "f": 1.5, "b": True, "n": None, "s": "7"}
    assert type(doc["b"]) is bool
