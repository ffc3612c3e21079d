"""The tasks file and predictions of ``triage --tasks``: strict lines, grouping by base."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchlane.errors import InputError, UsageError
from patchlane.triage.candidates import Prediction
from patchlane.triage.tasks import (
    TasksError,
    group,
    is_url,
    load,
    read_predictions,
    read_tasks,
)

C1 = "a" * 40
C2 = "B" * 40


def _lines(path: Path, *rows: object) -> Path:
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    path.write_text(text, encoding="utf-8")
    return path


def _task(instance: str, commit: str = C1, **extra: str) -> dict[str, str]:
    return {"instance_id": instance, "repo": "repo", "base_commit": commit, **extra}


def test_a_tasks_file_is_read_with_paths_from_its_folder(tmp_path: Path) -> None:
    (tmp_path / "maps").mkdir()
    (tmp_path / "maps" / "m.yml").write_text("version: 1\n", encoding="utf-8")
    path = _lines(
        tmp_path / "tasks.jsonl",
        _task("i-1", map="maps/m.yml", test_cmd="pytest -q"),
        "",
        {"instance_id": "i-2", "repo": "https://example.invalid/r.git", "base_commit": C2},
        _task("i-3", setup="pip install -e ."),
        {"instance_id": "i-4", "repo": "git@example.invalid:o/r.git", "base_commit": C1},
        _task("i-5", python="/usr/bin/python3"),
    )
    tasks = read_tasks(path)
    assert [t.instance_id for t in tasks] == ["i-1", "i-2", "i-3", "i-4", "i-5"]
    assert [t.source for t in tasks] == [f"{path}:{n}" for n in (1, 3, 4, 5, 6)]
    first = tasks[0].base
    assert first.repo == str(tmp_path / "repo")
    assert first.map_text == "version: 1\n"
    assert first.test_cmd == "pytest -q"
    assert tasks[1].base.repo == "https://example.invalid/r.git"
    assert tasks[1].base.base_commit == "b" * 40  # one spelling of a commit, one key
    assert tasks[2].base.setup == "pip install -e ."
    assert tasks[3].base.repo == "git@example.invalid:o/r.git"
    assert tasks[4].base.python == "/usr/bin/python3"


@pytest.mark.parametrize(
    ("repo", "url"),
    [
        ("https://h/r.git", True),
        ("file:///srv/r", True),
        ("host:r.git", True),
        ("./a:b", False),
        ("dir/a:b", False),
        ("/abs/r", False),
        ("r", False),
    ],
)
def test_a_repo_is_a_url_by_gits_own_rule(repo: str, url: bool) -> None:
    assert is_url(repo) is url


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{", "not one JSON object"),
        ("[1]", "a JSON list where an object is expected"),
        (json.dumps(_task("i", extra="x")), "unknown key 'extra'"),
        (json.dumps({"instance_id": "i", "repo": "r"}), "missing key 'base_commit'"),
        (json.dumps(_task("i", commit="abc")), "not a full commit id"),
        (json.dumps(_task("i", commit="g" * 40)), "not a full commit id"),
        (json.dumps({**_task("i"), "repo": 3}), "repo must be a string, not int"),
        (json.dumps({**_task("i"), "repo": " "}), "repo must be a non-empty string"),
        (json.dumps(_task("i", setup="x", python="y")), "setup and python are alternatives"),
        (json.dumps(_task("i", map="absent.yml")), "map 'absent.yml': cannot read"),
        ('{"instance_id": "i", "instance_id": "j"}', "duplicate key"),
        (json.dumps({**_task("i"), "repo": "--upload-pack=x:y"}), "starts with '-'"),
    ],
)
def test_every_malformed_line_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = _lines(tmp_path / "tasks.jsonl", _task("ok"), line)
    with pytest.raises(TasksError) as caught:
        read_tasks(path)
    assert str(caught.value).startswith(f"{path}:2: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_repeated_instance_a_map_not_text_and_an_empty_file_are_refused(tmp_path: Path) -> None:
    path = _lines(tmp_path / "t.jsonl", _task("i"), _task("j"), _task("i", commit=C2))
    with pytest.raises(TasksError, match=r":3: instance_id 'i' repeated \(first on line 1\)"):
        read_tasks(path)
    (tmp_path / "bad.yml").write_bytes(b"\xff\xfe")
    with pytest.raises(TasksError, match=r":1: map 'bad.yml': not UTF-8"):
        read_tasks(_lines(tmp_path / "t.jsonl", _task("i", map="bad.yml")))
    (tmp_path / "e.jsonl").write_text("\n\n", encoding="utf-8")
    with pytest.raises(TasksError, match="no task in the file"):
        read_tasks(tmp_path / "e.jsonl")
    (tmp_path / "u.jsonl").write_bytes(json.dumps(_task("i")).encode() + b"\n\xff\n")
    with pytest.raises(TasksError, match=r"u.jsonl:2: not UTF-8"):
        read_tasks(tmp_path / "u.jsonl")
    with pytest.raises(TasksError, match="cannot read"):
        read_tasks(tmp_path / "absent.jsonl")


def _pred(instance: str, model: str, patch: str = "diff") -> dict[str, str]:
    return {"instance_id": instance, "model_name_or_path": model, "model_patch": patch}


def test_predictions_come_from_every_file_and_keep_the_candidate_rules(tmp_path: Path) -> None:
    a = _lines(tmp_path / "a.jsonl", _pred("i", "m1"), _pred("j", "m1"))
    b = _lines(tmp_path / "b.jsonl", _pred("i", "m2", ""))
    got = read_predictions([a, b])
    assert [(p.instance_id, p.model, p.patch, p.source) for p in got] == [
        ("i", "m1", b"diff", f"{a}:1"),
        ("j", "m1", b"diff", f"{a}:2"),
        ("i", "m2", b"", f"{b}:1"),
    ]
    bad = _lines(tmp_path / "c.jsonl", _pred("i", "m"), {"instance_id": "i"})
    with pytest.raises(InputError, match=r"c.jsonl:2: missing key 'model_name_or_path'"):
        read_predictions([a, bad])
    with pytest.raises(UsageError, match="no predictions file"):
        read_predictions([])


def test_pairs_group_by_base_in_the_predictions_order(tmp_path: Path) -> None:
    tasks = read_tasks(
        _lines(
            tmp_path / "t.jsonl",
            _task("i-1"),
            _task("i-2"),  # the same base as i-1: one unit, one preparation
            _task("i-3", commit=C2),
            _task("unused", commit="c" * 40),
        )
    )
    preds = [
        Prediction("i-3", "m", b"p1", "p:1"),
        Prediction("i-1", "m", b"p2", "p:2"),
        Prediction("i-2", "org/m", b"p3", "p:3"),
        Prediction("i-3", "n", b"p4", "p:4"),
    ]
    units = group(tasks, preds, "0.1.0", ("--cases", "5"))
    assert [u.base.base_commit for u in units] == ["b" * 40, "a" * 40]
    assert [[p.name for p in u.pairs] for u in units] == [
        ["i-3/m", "i-3/n"],
        ["i-1/m", "i-2/org-m"],
    ]
    assert units[0].pairs[0].source == "p:1"
    # The key is the content, not the names: the same patch under another model is the same
    # gate; another gate option is another.
    again = group(tasks, [Prediction("i-3", "other", b"p1", "q:9")], "0.1.0", ("--cases", "5"))
    assert again[0].pairs[0].key == units[0].pairs[0].key
    other = group(tasks, [Prediction("i-3", "m", b"p1", "p:1")], "0.1.0", ("--cases", "6"))
    assert other[0].pairs[0].key != units[0].pairs[0].key


def test_names_are_unique_ignoring_case_and_never_a_run_file(tmp_path: Path) -> None:
    tasks = read_tasks(
        _lines(
            tmp_path / "t.jsonl",
            _task("a/b"),
            _task("a-b"),
            _task("A-B"),
            _task("triage.md"),
            _task("accepted.jsonl"),
        )
    )
    preds = [
        Prediction("a/b", "m", b"1", "p:1"),
        Prediction("a-b", "m", b"2", "p:2"),
        Prediction("A-B", "M", b"3", "p:3"),
        Prediction("a/b", "M", b"4", "p:4"),
        Prediction("a/b", "m", b"5", "p:5"),
        Prediction("triage.md", "../x", b"6", "p:6"),
        Prediction("accepted.jsonl", "m", b"7", "p:7"),
    ]
    names = [p.name for u in group(tasks, preds, "v", ()) for p in u.pairs]
    assert names == [
        "a-b/m",
        "a-b-2/m",
        "A-B-3/M",
        "a-b/M-2",
        "a-b/m-3",
        "triage.md-2/x",
        "accepted.jsonl-2/m",
    ]
    assert len({n.lower() for n in names}) == len(names)


def test_a_prediction_without_a_task_names_its_line(tmp_path: Path) -> None:
    tasks = read_tasks(_lines(tmp_path / "t.jsonl", _task("i")))
    preds = read_predictions([_lines(tmp_path / "p.jsonl", _pred("i", "m"), _pred("zz", "m"))])
    with pytest.raises(InputError) as caught:
        group(tasks, preds, "v", ())
    assert (
        str(caught.value)
        == f"{tmp_path / 'p.jsonl'}:2: instance_id 'zz' has no task in the tasks file"
    )


def test_load_reads_both_and_groups(tmp_path: Path) -> None:
    tasks = _lines(tmp_path / "t.jsonl", _task("i"), _task("j", commit=C2))
    preds = _lines(tmp_path / "p.jsonl", _pred("j", "m"), _pred("i", "m"), _pred("j", "n"))
    units = load(tasks, [preds], "v", ())
    assert [[p.name for p in u.pairs] for u in units] == [["j/m", "j/n"], ["i/m"]]
