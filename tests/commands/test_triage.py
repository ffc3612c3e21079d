"""``patchlane triage`` end to end: the bundled example in a real git repository, candidates as
refs, diff files, a directory and a predictions JSONL, real gates in real subprocesses."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from patchlane.demo import patches as demo_patches
from patchlane.demo import repo as demo_repo
from patchlane.demo import scenarios as demo
from tests.gitrepo import run_patchlane, stderr_lines

pytestmark = pytest.mark.slow

SEED = str(demo.DEMO_SEED)


@dataclass(frozen=True)
class Example:
    """The example committed as ``main``, with the branches ``good`` (a refactor), ``broken``
    (breaks a property) and ``drifted`` (an edit on top of another edit); diffs of each."""

    path: Path
    good: bytes
    broken: bytes
    stale: bytes  # applies to ``drifted~1``, not to main: does not apply


def _branch(repo: demo_repo.DemoRepo, name: str, *edits: Any) -> None:
    repo.git("checkout", "-q", "-b", name, demo_repo.BASE_BRANCH)
    for edit in edits:
        edit(repo.path)
        repo.commit(f"agent: {name}")
    repo.git("checkout", "-q", demo_repo.BASE_BRANCH)


@pytest.fixture
def example(tmp_path: Path) -> Example:
    repo = demo_repo.make_repo(tmp_path)
    _branch(repo, "good", demo_patches.refactor_billing)
    _branch(repo, "broken", demo_patches.allow_refund_over_charge)
    _branch(repo, "drifted", demo_patches.refactor_billing, demo_patches.allow_refund_over_charge)

    def diff(spec: str) -> bytes:
        return subprocess.run(
            ["git", "-C", str(repo.path), "diff", "--binary", spec],
            capture_output=True,
            check=True,
        ).stdout

    return Example(repo.path, diff("main..good"), diff("main..broken"), diff("drifted~1..drifted"))


def triage(example: Example, out: Path, *args: str | Path) -> subprocess.CompletedProcess[bytes]:
    return run_patchlane(
        "--repo",
        example.path,
        "triage",
        "--base",
        "main",
        "--seed",
        SEED,
        "--cases",
        "30",
        "--today",
        "2026-09-24",
        "--out-dir",
        out,
        *args,
    )


def rows(out: Path) -> list[dict[str, Any]]:
    text = (out / "triage.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def prediction(instance: str, model: str, patch: bytes) -> str:
    return json.dumps(
        {"instance_id": instance, "model_name_or_path": model, "model_patch": patch.decode()}
    )


def test_a_predictions_jsonl_gets_one_verdict_per_candidate_and_a_summary(
    example: Example, tmp_path: Path
) -> None:
    preds = tmp_path / "preds.jsonl"
    lines = [
        prediction("billing-1", "agent-a", example.good),
        prediction("billing-1", "agent-b", example.broken),
        prediction("billing-1", "agent/c", example.stale),
        prediction("billing-1", "agent-d", b""),
    ]
    preds.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "triage"
    proc = triage(example, out, preds, "--replay", "local")
    assert proc.returncode == 0, proc.stderr  # one candidate is accept_for_review
    got = {r["name"]: r for r in rows(out)}
    assert list(got) == [
        "agent-a__billing-1",
        "agent-b__billing-1",
        "agent-c__billing-1",
        "agent-d__billing-1",
    ]
    good, broken, stale, empty = got.values()
    assert (good["verdict"], good["exit_code"]) == ("accept_for_review", 0)
    assert good["slice_count"] > 0 and good["suite_size"] >= good["slice_count"]
    assert (broken["verdict"], broken["exit_code"]) == ("reject", 1)
    assert broken["reason"].startswith("property: property red")
    assert broken["slice_count"] is None  # a red local lane: no replay
    assert (stale["verdict"], stale["head"], stale["evidence"]) == ("does_not_apply", None, None)
    assert "src/billing/__init__.py" in stale["reason"]  # the first failing file and hunk
    assert empty["verdict"] == "empty_patch"
    assert [r["source"] for r in got.values()] == [f"{preds}:{n}" for n in (1, 2, 3, 4)]
    for row in (good, broken):
        verdict = json.loads((out / row["evidence"] / "verdict.json").read_text("utf-8"))
        assert verdict["verdict"] == row["verdict"]
        classified = json.loads((out / row["evidence"] / "classify.json").read_text("utf-8"))
        assert classified["head"] == row["head"]
    table = (out / "triage.md").read_text(encoding="utf-8")
    order = [line.split(" | ")[1] for line in table.splitlines() if line.startswith("| [")]
    assert order == ["accept_for_review", "reject"]  # best first; ungated rows after them
    assert table.index("reject") < table.index("does_not_apply") < table.index("empty_patch")
    progress = [line for line in stderr_lines(proc) if line.startswith("patchlane: [")]
    assert len(progress) == 4 and progress[-1].startswith("patchlane: [4/4] ")


def test_refs_a_diff_file_and_a_directory_are_candidates_side_by_side(
    example: Example, tmp_path: Path
) -> None:
    (tmp_path / "broken.diff").write_bytes(example.broken)
    folder = tmp_path / "more"
    folder.mkdir()
    (folder / "b-good.patch").write_bytes(example.good)
    (folder / "a-stale.diff").write_bytes(example.stale)
    (folder / "notes.txt").write_text("not a candidate\n")
    out = tmp_path / "triage"
    proc = triage(example, out, "good", "broken", tmp_path / "broken.diff", folder, "--json")
    assert proc.returncode == 3, proc.stderr  # best: undecided (--replay none)
    got = rows(out)
    assert json.loads(proc.stdout) == got
    assert [(r["name"], r["kind"], r["verdict"]) for r in got] == [
        ("good", "ref", "undecided"),
        ("broken", "ref", "reject"),
        ("broken-2", "patch", "reject"),  # unique within the run
        ("a-stale", "patch", "does_not_apply"),  # the directory's files, sorted
        ("b-good", "patch", "undecided"),
    ]
    # A ref is gated as it is; the same change as a diff is a new commit on the base with
    # the same tree.
    tree = {
        r["name"]: subprocess.run(
            ["git", "-C", str(example.path), "rev-parse", f"{r['head']}^{{tree}}"],
            capture_output=True,
            check=True,
            text=True,
        ).stdout
        for r in got
        if r["head"]
    }
    assert tree["good"] == tree["b-good"] and tree["broken"] == tree["broken-2"]
    assert got[0]["source"] == "good" and got[4]["source"] == str(folder / "b-good.patch")


def test_two_jobs_give_the_same_results_as_one(example: Example, tmp_path: Path) -> None:
    (tmp_path / "good.diff").write_bytes(example.good)
    (tmp_path / "stale.diff").write_bytes(example.stale)
    args = ("good", "broken", tmp_path / "good.diff", tmp_path / "stale.diff")
    one = triage(example, tmp_path / "j1", *args, "--replay", "local", "-j", "1")
    two = triage(example, tmp_path / "j2", *args, "--replay", "local", "-j", "2")
    assert one.returncode == two.returncode == 0, (one.stderr, two.stderr)

    def comparable(out: Path) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows(out)]

    assert comparable(tmp_path / "j1") == comparable(tmp_path / "j2")
    assert [r["verdict"] for r in rows(tmp_path / "j2")] == [
        "accept_for_review",
        "reject",
        "accept_for_review",
        "does_not_apply",
    ]
    # good.diff makes the branch good's tree, but as another commit (the branch's message
    # is not the diff's, and a test may read it): a gate of its own.
    assert [r["same_as"] for r in rows(tmp_path / "j2")] == [None, None, None, None]
    for name in ("good", "broken"):
        for evidence in ("verdict.json", "replay-report.json", "property-report.json"):
            a = json.loads((tmp_path / "j1" / name / evidence).read_text("utf-8"))
            b = json.loads((tmp_path / "j2" / name / evidence).read_text("utf-8"))
            # Clocks, the receipt's times, and the hash seed each run draws afresh.
            for volatile in ("timings", "receipt_sha256", "hash_seed"):
                a.pop(volatile, None), b.pop(volatile, None)
            assert a == b, (name, evidence)


def test_the_dependency_map_is_recorded_once_for_every_candidate(
    example: Example, tmp_path: Path
) -> None:
    (tmp_path / "good.diff").write_bytes(example.good)
    cache = tmp_path / "cache"
    out = tmp_path / "triage"
    proc = triage(
        example,
        out,
        "good",
        tmp_path / "good.diff",
        "broken",
        "--replay",
        "local",
        "--dep-map",
        "auto",
        "--dep-cache",
        cache,
        "-j",
        "2",
    )
    assert proc.returncode == 0, proc.stderr
    maps = sorted((cache / "maps").rglob("*.json"))
    assert len(maps) == 1, maps
    used = {
        json.loads((out / r["evidence"] / "replay-report.json").read_text("utf-8"))[
            "dependency_map"
        ].split(" ", 1)[0]
        for r in rows(out)
        if r["verdict"] == "accept_for_review"
    }
    assert used == {maps[0].stem[:12]}  # both accepted candidates selected with that map


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"instance_id": "x", "model_name_or_path": "m"', "not one JSON object"),
        ('["x", "m", ""]', "a JSON list where an object is expected"),
        ('{"instance_id": "x", "model_patch": ""}', "missing key 'model_name_or_path'"),
        ('{"instance_id": 7, "model_name_or_path": "m", "model_patch": ""}', "instance_id must"),
        ('{"instance_id": "", "model_name_or_path": "m", "model_patch": ""}', "must not be empty"),
    ],
)
def test_a_malformed_predictions_line_is_exit_2_naming_the_line(
    example: Example, tmp_path: Path, line: str, expected: str
) -> None:
    preds = tmp_path / "preds.jsonl"
    ok = prediction("billing-1", "agent-a", example.good)
    preds.write_text(f"{ok}\n\n{line}\n{ok}\n", encoding="utf-8")
    out = tmp_path / "triage"
    proc = triage(example, out, preds)
    assert proc.returncode == 2, proc.stderr
    lines = stderr_lines(proc)
    assert len(lines) == 1 and lines[0].startswith(f"patchlane: error: {preds}:3: "), lines
    assert expected in lines[0]
    assert "Traceback" not in proc.stderr.decode()
    assert not out.exists()  # nothing was gated


def test_an_unknown_ref_or_no_seed_is_exit_2_before_anything_runs(
    example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "triage"
    proc = triage(example, out, "good", "no-such-branch")
    assert proc.returncode == 2
    assert "no-such-branch" in stderr_lines(proc)[0]
    assert not (out / "good").exists()
    proc = run_patchlane("--repo", example.path, "triage", "--base", "main", "good")
    assert proc.returncode == 2
    assert stderr_lines(proc) == [
        "patchlane: error: no seed: pass --seed N or set lanes.property.seed in the review map"
    ]


def test_when_no_candidate_can_be_gated_the_summary_is_written_and_exit_is_2(
    example: Example, tmp_path: Path
) -> None:
    (tmp_path / "stale.diff").write_bytes(example.stale)
    (tmp_path / "empty.diff").write_bytes(b"\n")
    out = tmp_path / "triage"
    proc = triage(example, out, tmp_path / "stale.diff", tmp_path / "empty.diff", "-q")
    assert proc.returncode == 2
    assert stderr_lines(proc) == [
        f"patchlane: error: no candidate could be gated (see {out / 'triage.md'})"
    ]  # -q: no progress lines
    assert [(r["name"], r["verdict"], r["exit_code"]) for r in rows(out)] == [
        ("stale", "does_not_apply", 2),
        ("empty", "empty_patch", 2),
    ]


def test_identical_candidates_are_gated_once_and_reported_for_each_name(
    example: Example, tmp_path: Path
) -> None:
    # The same patch three times: a diff file, a copy of it (one commit: the same bytes),
    # and the branch it came from (the same tree under another commit: gated on its own).
    (tmp_path / "a.diff").write_bytes(example.good)
    (tmp_path / "b.diff").write_bytes(example.good)
    (tmp_path / "c.diff").write_bytes(example.broken)
    out = tmp_path / "triage"
    args = (tmp_path / "a.diff", tmp_path / "b.diff", "good", tmp_path / "c.diff")
    proc = triage(example, out, *args, "--replay", "none")
    got = {r["name"]: r for r in rows(out)}
    assert list(got) == ["a", "b", "good", "c"], proc.stderr
    a, b, good, c = got.values()
    assert a["same_as"] is None and c["same_as"] is None and good["same_as"] is None
    assert b["same_as"] == "a"
    assert (b["verdict"], b["reason"], b["evidence"]) == (a["verdict"], a["reason"], a["evidence"])
    assert good["verdict"] == a["verdict"]
    assert good["head"] != a["head"] == b["head"]
    assert c["verdict"] == "reject"
    gated = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert gated == ["a", "c", "good"]  # three gates for four candidates
    assert "(the same patch as a: one gate)" in (out / "triage.md").read_text("utf-8")
    progress = [line for line in stderr_lines(proc) if line.startswith("patchlane: [")]
    assert len(progress) == 4
    assert sum("[the same patch as a: one gate]" in line for line in progress) == 1
