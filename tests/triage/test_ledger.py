"""The resume ledger of a tasks run: the out dir's ``triage.jsonl`` read back, so that a
second run gates nothing judged; infrastructure rows, torn lines and rows of another kind
are gated again; the same content under another name is one gate."""

from __future__ import annotations

import json
from pathlib import Path

from patchlane import __version__
from patchlane.triage import tasks
from patchlane.triage.engines.local import LocalEngine
from patchlane.triage.fleet import FleetOptions, _plan, run_tasks
from patchlane.triage.ledger import PAIR_KEYS, append, pair_row, read_ledger
from patchlane.triage.units import PairResult, RunPlan, Unit

BASE = "a" * 40
GATE = ("--seed", "7", "--replay", "local")


def units(tmp_path: Path, *lines: tuple[str, str, str]) -> list[Unit]:
    """Units over a repository that does not exist: gating any pair of them is an
    infrastructure failure, so a row that comes back judged came from the ledger."""
    task_file = tmp_path / "tasks.jsonl"
    ids = sorted({i for i, _, _ in lines})
    task_file.write_text(
        "".join(
            json.dumps({"instance_id": i, "repo": "no-such-repo", "base_commit": BASE}) + "\n"
            for i in ids
        )
    )
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"instance_id": i, "model_name_or_path": m, "model_patch": p}) + "\n"
            for i, m, p in lines
        )
    )
    read = tasks.read_tasks(task_file)
    return tasks.group(read, tasks.read_predictions([preds]), __version__, GATE)


def judged(unit: Unit, index: int, verdict: str = "reject", infra: bool = False) -> PairResult:
    pair = unit.pairs[index]
    return PairResult(
        key=pair.key,
        instance_id=pair.instance_id,
        model=pair.model,
        name=pair.name,
        verdict=verdict,
        exit_code={"reject": 1, "undecided": 3, "accept_for_review": 0}[verdict],
        reason="property: property red" if verdict == "reject" else "infrastructure: lost",
        infra=infra,
        attempts=2 if infra else 1,
        seconds=1.5,
    )


def plan(tmp_path: Path) -> RunPlan:
    return RunPlan(GATE, str(tmp_path / "work"), 1, 60.0)


def test_a_row_has_triages_keys_and_the_pairs_own(tmp_path: Path) -> None:
    (unit,) = units(tmp_path, ("inst-1", "model-a", "diff a\n"))
    row = pair_row(unit.pairs[0], unit.base, judged(unit, 0), None)
    assert list(row)[:13] == [
        "name",
        "source",
        "kind",
        "head",
        "verdict",
        "exit_code",
        "reason",
        "slice_count",
        "suite_size",
        "slice_added",
        "seconds",
        "evidence",
        "same_as",
    ]
    assert tuple(list(row)[13:]) == PAIR_KEYS
    assert (row["name"], row["instance_id"], row["model_name_or_path"]) == (
        "inst-1/model-a",
        "inst-1",
        "model-a",
    )
    assert (row["base_commit"], row["infra"], row["attempts"]) == (BASE, False, 1)
    assert str(row["repo"]).endswith("no-such-repo")


def test_the_ledger_keeps_judged_rows_and_drops_the_rest(tmp_path: Path) -> None:
    (unit,) = units(tmp_path, ("i", "a", "diff a\n"), ("i", "b", "diff b\n"))
    path = tmp_path / "triage.jsonl"
    append(path, pair_row(unit.pairs[0], unit.base, judged(unit, 0), None))
    append(path, pair_row(unit.pairs[1], unit.base, judged(unit, 1, "undecided", True), None))
    with path.open("a") as f:
        f.write('{"name": "x", "verdict": "reject"}\n')  # a row of a run without --tasks
        f.write("[1, 2]\n")
        f.write('{"name": "i/b", "key": "')  # a driver killed while writing
    got = read_ledger(path)
    assert list(got) == [unit.pairs[0].key]
    assert read_ledger(tmp_path / "none.jsonl") == {}


def test_a_later_row_of_a_key_wins(tmp_path: Path) -> None:
    (unit,) = units(tmp_path, ("i", "a", "diff a\n"))
    path = tmp_path / "triage.jsonl"
    append(path, pair_row(unit.pairs[0], unit.base, judged(unit, 0), None))
    append(path, pair_row(unit.pairs[0], unit.base, judged(unit, 0, "accept_for_review"), None))
    assert read_ledger(path)[unit.pairs[0].key]["verdict"] == "accept_for_review"


def test_the_plan_gates_each_content_once_and_nothing_judged(tmp_path: Path) -> None:
    us = units(
        tmp_path,
        ("i", "a", "diff a\n"),
        ("i", "b", "diff a\n"),  # the same patch under another model name
        ("i", "c", "diff c\n"),
        ("i", "d", "diff d\n"),
    )
    (unit,) = us
    out = tmp_path / "out"
    (out / "i" / "c").mkdir(parents=True)
    path = out / "triage.jsonl"
    append(path, pair_row(unit.pairs[2], unit.base, judged(unit, 2), "i/c"))
    # d was judged, but its evidence folder is gone: gated again.
    append(path, pair_row(unit.pairs[3], unit.base, judged(unit, 3), "i/d"))
    todo, shares = _plan(us, read_ledger(path), out)
    assert [p.name for u in todo for p in u.pairs] == ["i/a", "i/d"]
    assert shares == {"i/b": "i/a", "i/c": ""}


def test_a_second_run_over_the_same_out_dir_gates_nothing_again(tmp_path: Path) -> None:
    us = units(tmp_path, ("i", "a", "diff a\n"), ("i", "b", "diff a\n"), ("j", "a", "diff j\n"))
    out = tmp_path / "out"
    out.mkdir()
    path = out / "triage.jsonl"
    for u in us:
        for i, pair in enumerate(u.pairs):
            if pair.name != "i/b":  # i/b is i/a's patch: the ledger has it by content
                append(path, pair_row(pair, u.base, judged(u, i), None))
    # The real engine: had it been asked, the missing repository would give infra rows.
    rows = run_tasks(FleetOptions(tuple(us), out, plan(tmp_path)), LocalEngine())
    assert [r["name"] for r in rows] == ["i/a", "i/b", "j/a"]
    assert [r["verdict"] for r in rows] == ["reject"] * 3
    assert not any(r["infra"] for r in rows)
    assert rows[1]["same_as"] == "i/a" and rows[0]["same_as"] is None
    assert (out / "triage.md").is_file()
    written = [json.loads(line) for line in path.read_text().splitlines()]
    assert written == rows  # rewritten whole, in the predictions' order


def test_a_row_of_its_own_gate_wins_over_one_that_shares_it(tmp_path: Path) -> None:
    (unit,) = units(tmp_path, ("i", "a", "diff a\n"), ("i", "b", "diff a\n"))
    path = tmp_path / "triage.jsonl"
    own = pair_row(unit.pairs[0], unit.base, judged(unit, 0), "i/a")
    append(path, own)
    append(path, {**own, "name": "i/b", "same_as": "i/a"})
    assert read_ledger(path)[unit.pairs[0].key]["name"] == "i/a"
