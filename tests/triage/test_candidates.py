"""Candidates from the command line: what each argument is, names, and strict predictions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchlane.errors import InputError, UsageError
from patchlane.triage.candidates import (
    PredictionsError,
    collect,
    read_predictions,
    safe_name,
    unique_names,
)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("agent/b", "agent-b"),
        ("../../etc/passwd", "etc-passwd"),
        (".hidden", "hidden"),
        ("gpt-4o__django__django-11099", "gpt-4o__django__django-11099"),
        ("a b\nc", "a-b-c"),
        ("///", "candidate"),
        ("é" * 3, "candidate"),
        ("x" * 200, "x" * 80),
    ],
)
def test_a_name_is_one_safe_file_name(text: str, name: str) -> None:
    assert safe_name(text) == name


def test_names_are_unique_ignoring_case_and_never_the_summary_files() -> None:
    assert unique_names(["a", "A", "a", "triage.md", "b"]) == [
        "a",
        "A-2",
        "a-3",
        "triage.md-2",
        "b",
    ]


def test_arguments_are_directories_jsonl_files_then_refs(tmp_path: Path) -> None:
    folder = tmp_path / "diffs"
    folder.mkdir()
    (folder / "z.patch").write_bytes(b"z")
    (folder / "a.diff").write_bytes(b"a")
    (folder / "readme.txt").write_bytes(b"no")
    (tmp_path / "one.diff").write_bytes(b"one")
    preds = tmp_path / "p.jsonl"
    preds.write_text(
        json.dumps({"instance_id": "i-1", "model_name_or_path": "org/m", "model_patch": "p"})
        + "\n",
        encoding="utf-8",
    )
    got = collect([str(folder), str(tmp_path / "one.diff"), str(preds), "feature/x", "a"])
    assert [(c.name, c.kind) for c in got] == [
        ("a", "patch"),
        ("z", "patch"),
        ("one", "patch"),
        ("org-m__i-1", "patch"),
        ("feature-x", "ref"),
        ("a-2", "ref"),
    ]
    assert [c.patch for c in got[:4]] == [b"a", b"z", b"one", b"p"]
    assert got[3].source == f"{preds}:1"
    assert got[4].ref == "feature/x"


def test_a_directory_without_diffs_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="without any"):
        collect([str(tmp_path)])


def test_an_empty_model_patch_is_a_candidate_and_extra_keys_are_allowed(tmp_path: Path) -> None:
    preds = tmp_path / "p.jsonl"
    row = {"instance_id": "i", "model_name_or_path": "m", "model_patch": "", "cost": 0.1}
    preds.write_text(json.dumps(row) + "\n\n", encoding="utf-8")
    (candidate,) = read_predictions(preds)
    assert candidate.patch == b""


@pytest.mark.parametrize(
    ("content", "line", "what"),
    [
        (b'{"instance_id": "i", "model_name_or_path": "m", "model_patch": "x"}\n{', 2, "JSON"),
        (b'\n\n"just a string"\n', 3, "a JSON str where an object"),
        (b'{"instance_id": "i", "model_name_or_path": "m"}', 1, "missing key 'model_patch'"),
        (b'{"instance_id": "i", "model_name_or_path": "m", "model_patch": null}', 1, "string"),
        (b'{"instance_id": "i", "instance_id": "j"}', 1, "duplicate key"),
        (b'{"a": 1}\n\xff\n', 2, "not UTF-8"),
    ],
)
def test_a_malformed_line_names_the_file_and_the_line(
    tmp_path: Path, content: bytes, line: int, what: str
) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_bytes(content)
    with pytest.raises(PredictionsError) as caught:
        read_predictions(preds)
    assert isinstance(caught.value, InputError)
    assert caught.value.line == line
    assert str(caught.value).startswith(f"{preds}:{line}: ")
    assert what in str(caught.value)


def test_a_file_without_predictions_is_refused(tmp_path: Path) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(PredictionsError, match="no prediction"):
        read_predictions(preds)
