"""``patchlane property`` through the real CLI (in-process, and once as a subprocess)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from patchlane.main import main
from patchlane.schemas import load_schema
from tests.gitrepo import GitRepo, run_patchlane, stderr_lines
from tests.lanes.property import project as P

BROKEN = "def refund(charge, amount):\n    return charge - amount\n"


def cli(repo: GitRepo, *args: str) -> int:
    return main(["--repo", str(repo.path), "property", *args])


@pytest.mark.slow
def test_green_exits_0_with_the_maps_seed_and_cases(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    P.make(repo)
    assert cli(repo, "--base", "main", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["seed"], report["cases"]) == (P.SEED, P.CASES)
    assert report["base"] == repo.git("rev-parse", "main").strip()
    assert report["head"] == repo.head()
    jsonschema.validate(report, load_schema("property-report"))
    assert cli(repo, "--base", "main") == 0
    out = capsys.readouterr().out
    assert out.startswith("property: pass: 2 property run(s) in 1 module(s) hold (seed 7, 50 cases")


@pytest.mark.slow
def test_red_exits_1_and_prints_the_counterexample_and_its_rerun(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": BROKEN})
    out_file = tmp_path / "property-report.json"
    assert cli(repo, "--base", "main", "--seed", "7", "--cases", "50", "--out", str(out_file)) == 1
    out = capsys.readouterr().out
    data = json.loads(out_file.read_text())
    failure = data["failures"][0]
    index = failure["case_index"]
    assert f"  FAIL prop_refund_bounded [checks.props, base] case {index} arguments" in out
    assert (
        f"re-run: patchlane property --seed 7 --cases 50 --base main "
        f"--only prop_refund_bounded --case {index}"
    ) in out
    # --json prints exactly what --out writes.
    assert cli(repo, "--base", "main", "--json", "--out", str(out_file)) == 1
    assert capsys.readouterr().out == out_file.read_text()


@pytest.mark.slow
def test_a_case_that_holds_exits_0(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": BROKEN})
    assert cli(repo, "--base", "main", "--json") == 1
    index = json.loads(capsys.readouterr().out)["failures"][0]["case_index"]
    args = ("--base", "main", "--only", "prop_refund_bounded")
    assert cli(repo, *args, "--case", str(index)) == 1
    assert cli(repo, *args, "--case", str(index - 1)) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--case", "1"), "--case needs --only NAME"),
        (("--only", "prop_nope"), "--only prop_nope: no property of that name in checks.props"),
        (("--cases", "0"), "--cases 0: must be an integer of at least 1"),
        (("--seed", "-1"), "--seed: must be from 0 to 4294967295, not -1"),
        (("--mutants", "-1"), "--mutants -1: must be an integer of at least 0"),
        (("--only", "prop_refund_bounded", "--case", "-1"), "--case -1: must be an integer"),
        (("--base", "no-such-ref"), "unknown ref 'no-such-ref'"),
    ],
)
def test_bad_options_exit_2_with_one_line(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    P.make(repo)
    assert cli(repo, *args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_no_seed_anywhere_exits_2(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    P.make(repo)
    repo.write("review-map.yml", P.review_map().replace(f"    seed: {P.SEED}\n", ""))
    assert cli(repo) == 2
    assert "no seed: pass --seed N or set lanes.property.seed" in capsys.readouterr().err
    assert cli(repo, "--seed", "3") == 0


def test_a_map_without_a_property_lane_exits_2(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("review-map.yml", "lanes:\n  freeze:\n    registry: f.yml\n")
    repo.commit()
    assert cli(repo, "--seed", "1") == 2
    assert "no property lane" in capsys.readouterr().err


def test_the_base_map_decides(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    # The patch points its map at a module of its own; the base's map still lists checks.props.
    P.make(repo)
    P.patch(
        repo,
        {
            "src/shop/__init__.py": BROKEN,
            "review-map.yml": P.review_map(modules=("checks.mine",)),
            "checks/mine.py": "def prop_ok(seed, n=200):\n    pass\n",
        },
    )
    assert cli(repo, "--base", "main", "--json") == 1
    report = json.loads(capsys.readouterr().out)
    assert report["modules"] == ["checks.props"]


@pytest.mark.slow
def test_head_without_base_runs_that_commit(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": BROKEN})
    assert cli(repo, "--head", "main") == 0
    assert "no base, oracles from head" in capsys.readouterr().out
    assert cli(repo, "--head", "patch") == 1


@pytest.mark.slow
def test_as_a_subprocess(repo: GitRepo) -> None:
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": BROKEN})
    proc = run_patchlane("--repo", repo.path, "property", "--base", "main", "--json")
    assert proc.returncode == 1, stderr_lines(proc)
    report = json.loads(proc.stdout)
    assert report["failures"][0]["kind"] == "assertion"
    # Off a terminal only the lane's clock speaks (once the run passes a second): its start
    # and its time, never the per-module lines a terminal or -v shows.
    for line in stderr_lines(proc):
        assert line == "patchlane: property lane ..." or line.startswith(
            "patchlane: property lane: "
        ), line
    assert (
        stderr_lines(run_patchlane("-q", "--repo", repo.path, "property", "--base", "main")) == []
    )
