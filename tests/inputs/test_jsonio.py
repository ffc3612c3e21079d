"""Strict JSON reading with line numbers, and atomic, byte-exact writing."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchlane.errors import InputError, LockError, PatchlaneError, UnsafeWriteError
from patchlane.inputs.jsonio import (
    DuplicateKeyError,
    atomic_write_bytes,
    atomic_write_text,
    dumps_report,
    line_for,
    load_json_file,
    loads_strict,
    parse_json_text,
    write_json,
)


def _error(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        parse_json_text(text, "f.json")
    return info.value


# --- reading -------------------------------------------------------------------------------


def test_loads_strict_reads_plain_json() -> None:
    assert loads_strict('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


def test_duplicate_key_is_refused() -> None:
    with pytest.raises(DuplicateKeyError):
        loads_strict('{"a": 1, "a": 2}')


def test_duplicate_key_names_its_line() -> None:
    e = _error('{\n  "files": [],\n  "reason": "x",\n  "files": []\n}\n')
    assert e.line == 4
    assert str(e) == "f.json:4: duplicate key 'files'"


def test_nested_duplicate_key_names_the_right_key_and_line() -> None:
    text = '{\n  "a": 1,\n  "files": [\n    {"path": "x",\n     "path": "y"}\n  ]\n}\n'
    e = _error(text)
    assert e.line == 5
    assert "'path'" in str(e)


def test_duplicate_key_message_and_line_agree_when_outer_dup_comes_first() -> None:
    # The strict decoder finishes the inner object first; the message must still name the
    # key on the line it reports.
    text = '{\n"a": 1,\n"a": {\n  "b": 1,\n  "b": 2\n}\n}\n'
    e = _error(text)
    reported_key = str(e).split("duplicate key ")[1]
    line_text = text.splitlines()[e.line - 1] if e.line else ""
    assert reported_key.strip("'") in line_text


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('{\n  "a": NaN\n}', 2),
        ('{\n  "a": [1,\n    Infinity]\n}', 3),
        ("[\n-Infinity\n]", 2),
    ],
)
def test_nan_and_infinity_are_refused_with_line(text: str, line: int) -> None:
    with pytest.raises(ValueError):
        loads_strict(text)
    e = _error(text)
    assert e.line == line
    assert "not valid JSON" in str(e)


def test_a_number_too_large_for_a_float_is_refused() -> None:
    # Python reads 1e400 as inf: the same non-finite value NaN/Infinity refuse, by another door.
    with pytest.raises(ValueError):
        loads_strict('{"a": 1e400}')
    e = _error('{\n  "a": -1e400\n}')
    assert e.line == 2


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('{\n  "a": 1,\n}\n', 3),
        ('{\n  "a": 1\n  "b": 2\n}\n', 3),
        ("\n\n[1, 2", 3),
        ("{\"a\": 'x'}", 1),
        ("", 1),
    ],
)
def test_syntax_errors_name_the_line(text: str, line: int) -> None:
    e = _error(text)
    assert e.line == line
    assert str(e).startswith(f"f.json:{line}: invalid JSON")


def test_deep_nesting_is_an_input_error() -> None:
    e = _error("[" * 100_000 + "]" * 100_000)
    assert "nested" in str(e)
    assert isinstance(e, PatchlaneError)


def test_line_for_finds_values_and_nearest_parent() -> None:
    text = (
        "{\n"
        '  "files": [\n'
        "    {\n"
        '      "path": "a",\n'
        '      "sha256": "x"\n'
        "    },\n"
        '    {"path": "b", "sha256": "y"}\n'
        "  ],\n"
        '  "reason": "r"\n'
        "}\n"
    )
    assert line_for(text, ()) == 1
    assert line_for(text, ("files",)) == 2
    assert line_for(text, ("files", 0)) == 3
    assert line_for(text, ("files", 0, "sha256")) == 5
    assert line_for(text, ("files", 1, "sha256")) == 7
    assert line_for(text, ("reason",)) == 9
    assert line_for(text, ("files", 0, "missing")) == 3  # the nearest parent
    assert line_for(text, ("nope", 3)) == 1


def test_line_for_on_bad_or_deep_text_does_not_raise() -> None:
    assert line_for('{"a": [1, 2', ("a", 1)) == 1
    assert line_for("[" * 100_000, (0, 0)) in (1, None)


def test_load_json_file_returns_value_and_text(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_bytes(b'{"a": "\xc3\xa9"}')
    value, text = load_json_file(p, "x.json")
    assert value == {"a": "é"}
    assert text == '{"a": "é"}'


def test_load_json_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(LockError, match=r"^L\.json: no such file$"):
        load_json_file(tmp_path / "missing.json", "L.json", LockError)
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(LockError, match=r"^L\.json: not UTF-8 \(byte 7\)$"):
        load_json_file(bad, "L.json", LockError)
    with pytest.raises(LockError, match="cannot read"):
        load_json_file(tmp_path, "L.json", LockError)
    broken = tmp_path / "broken.json"
    broken.write_text('{\n"a": 1,,\n}')
    with pytest.raises(LockError) as info:
        load_json_file(broken, "L.json", LockError)
    assert info.value.line == 2


# --- writing -------------------------------------------------------------------------------


def test_dumps_report_is_deterministic_two_space_utf8() -> None:
    assert dumps_report({"b": [1], "a": "é"}) == '{\n  "b": [\n    1\n  ],\n  "a": "é"\n}\n'
    with pytest.raises(ValueError):
        dumps_report({"x": float("nan")})


def test_atomic_write_replaces_content_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "out" / "deeper" / "report.json"
    atomic_write_bytes(target, b"first")
    assert target.read_bytes() == b"first"
    atomic_write_bytes(target, b"second, longer content")
    assert target.read_bytes() == b"second, longer content"
    atomic_write_text(target, "thi\u00e9rd")
    assert target.read_bytes() == "thiérd".encode()
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.json"]


def test_atomic_write_refuses_a_symlink_and_leaves_both_sides(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me")
    link = tmp_path / "dir" / "lock.json"
    link.parent.mkdir()
    link.symlink_to(outside)
    with pytest.raises(UnsafeWriteError, match="is a symbolic link"):
        atomic_write_bytes(link, b"new")
    assert outside.read_bytes() == b"keep me"
    assert link.is_symlink()


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("umask")
def test_atomic_write_gives_an_ordinary_file_mode(tmp_path: Path) -> None:
    # A temp file is created 0600; the written report or lock must be readable like any
    # file the user creates (0666 less the umask), not private to its writer.
    target = tmp_path / "report.json"
    atomic_write_bytes(target, b"x")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    os.umask(0o077)
    atomic_write_bytes(tmp_path / "private.json", b"x")
    assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600


def test_write_failure_is_a_clear_input_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_bytes(b"")
    with pytest.raises(PatchlaneError) as info:
        write_json(blocker / "classify.json", {"a": 1})
    assert "cannot write" in str(info.value)
    assert str(blocker / "classify.json") in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-dir"]


def test_writing_over_a_directory_fails_cleanly(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.mkdir()
    with pytest.raises(PatchlaneError, match="cannot write"):
        write_json(target, {"a": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    assert target.is_dir()


@pytest.mark.parametrize(
    "raw",
    [
        b"caf\xe9.txt",
        b"tests/fixtures/\xff\xfe/x.json",
        b"a\\\xe9",  # a backslash right before the escaped byte
        b"\xe9\\udce9",  # the escape's own text next to a real byte
        "naïve/日本.json".encode(),
        b'line\nbreak\t"quoted"',
    ],
)
def test_non_utf8_paths_round_trip_exactly(tmp_path: Path, raw: bytes) -> None:
    path = os.fsdecode(raw)
    target = tmp_path / "r.json"
    write_json(target, {"files": [{"path": path}], path: 1})
    data = target.read_bytes()
    data.decode("utf-8")  # the file itself is valid UTF-8
    value = json.loads(data)
    assert os.fsencode(value["files"][0]["path"]) == raw
    assert [os.fsencode(k) for k in value if k != "files"] == [raw]
    # and the strict reader agrees
    assert os.fsencode(loads_strict(data.decode("utf-8"))["files"][0]["path"]) == raw
