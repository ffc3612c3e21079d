"""A tasks run whose base cannot be prepared (a repository that does not exist: git really
fails): every pair of it is ``undecided`` for the infrastructure after a second try, the
other units go on, the exit code is 3, and a rerun tries those pairs again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchlane.main import main

pytestmark = pytest.mark.slow  # git run eight times: about a second

BASE = "c" * 40


def write_inputs(tmp_path: Path) -> tuple[Path, Path]:
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text(
        "".join(
            json.dumps({"instance_id": i, "repo": f"missing-{i}", "base_commit": BASE}) + "\n"
            for i in ("i-1", "i-2")
        )
    )
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"instance_id": i, "model_name_or_path": m, "model_patch": m}) + "\n"
            for i, m in (("i-1", "a"), ("i-2", "a"), ("i-2", "b/c"))
        )
    )
    return task_file, preds


def rows(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "triage.jsonl").read_text().splitlines()]


def test_a_base_that_cannot_be_prepared_is_infrastructure_and_is_retried(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_file, preds = write_inputs(tmp_path)
    out = tmp_path / "out"
    argv = ["triage", "--tasks", str(task_file), "-j", "2", "--out-dir", str(out),
            "--work-dir", str(tmp_path / "work"), str(preds)]  # fmt: skip
    assert main(argv) == 3
    err = capsys.readouterr().err
    got = rows(out)
    assert [r["name"] for r in got] == ["i-1/a", "i-2/a", "i-2/b-c"]
    for r in got:
        assert (r["verdict"], r["infra"], r["attempts"], r["exit_code"]) == (
            "undecided",
            True,
            2,
            3,
        )
        assert str(r["reason"]).startswith("infrastructure: set-up failed: git")
    assert "bases 0/2 ready, 2 failed; pairs 3/3 done (3 undecided); 3 infrastructure" in err
    assert "3 of them undecided for the infrastructure" in (out / "triage.md").read_text()
    # A rerun over the same out dir gates them again (the line counts them as this run's).
    assert main(argv) == 3
    assert "pairs 3/3 done" in capsys.readouterr().err
