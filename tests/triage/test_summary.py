"""The summary: rows best first in triage.md, in the given order in triage.jsonl, the exit code."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from patchlane.triage.summary import Row, exit_code, ranked, to_markdown, write


def row(name: str, verdict: str, code: int, reason: str = "why") -> Row:
    gated = verdict in ("accept_for_review", "undecided", "reject")
    return Row(
        name=name,
        source=name,
        kind="ref",
        head="0" * 40 if gated else None,
        verdict=verdict,
        exit_code=code,
        reason=reason,
        slice_count=3 if gated else None,
        suite_size=9 if gated else None,
        seconds=1.25,
        evidence=name if gated else None,
    )


ROWS = [
    row("c", "reject", 1),
    row("e", "does_not_apply", 2),
    row("b", "undecided", 3),
    row("a", "reject", 1),
    row("d", "accept_for_review", 0),
    row("f", "error", 2),
    row("g", "empty_patch", 2),
]


def test_rows_rank_best_first_then_by_name() -> None:
    assert [r.name for r in ranked(ROWS)] == ["d", "b", "a", "c", "e", "g", "f"]


def test_the_exit_code_is_the_best_verdicts() -> None:
    assert exit_code(ROWS) == 0
    assert exit_code([r for r in ROWS if r.name != "d"]) == 3
    assert exit_code([r for r in ROWS if r.verdict not in ("accept_for_review", "undecided")]) == 1
    assert exit_code([r for r in ROWS if r.name in "efg"]) == 2  # nothing was gated
    assert exit_code([*ROWS, row("h", "error", 4)]) == 4  # a bug is never hidden


def test_the_table_escapes_repository_text_and_links_the_evidence() -> None:
    text = to_markdown([row("a", "reject", 1, "property: x | y <b>\nz"), row("e", "error", 2)])
    lines = text.splitlines()
    assert lines[2] == "2 candidate(s): 1 reject, 1 error."
    assert lines[6] == r"| [a](a/) | reject | property: x \| y &lt;b&gt;\\nz | 3 of 9 | 1.2 s |"
    assert lines[7] == "| e | error | why |  | 1.2 s |"


def test_files_are_written_with_jsonl_in_the_given_order(tmp_path: Path) -> None:
    write(tmp_path, ROWS)
    got = [json.loads(x) for x in (tmp_path / "triage.jsonl").read_text("utf-8").splitlines()]
    assert [r["name"] for r in got] == [r.name for r in ROWS]
    assert got[0] == ROWS[0].to_json()
    assert (tmp_path / "triage.md").read_text("utf-8") == to_markdown(ROWS)


def test_the_slice_column_counts_added_tests_apart() -> None:
    added = dataclasses.replace(row("a", "accept_for_review", 0), slice_count=5, slice_added=2)
    assert "| 3 of 9 (+2 added) |" in to_markdown([added])
    assert added.to_json()["slice_added"] == 2
