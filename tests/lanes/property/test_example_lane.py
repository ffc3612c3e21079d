"""Issue 3's "done when", on a copy of the bundled example: a patch that lets refunds exceed
the charge is rejected with a counterexample that ``--only … --case …`` reproduces, and the
same patch with the property gutted is still rejected, from the base."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patchlane.demo.repo import copy_example
from patchlane.main import main
from tests.gitrepo import GitRepo

SEED = "20260924"
PROP = "prop_refund_never_exceeds_charge"
BILLING = "src/billing/__init__.py"
PROPS = "checks/billing_props.py"
CHECK = "    if refund_cents > charge_cents:\n        return RefundResult(net_cents=charge_cents, rejected=True)\n"
ASSERTS = (
    "        assert 0 <= result.net_cents <= charge, (seed, i, charge, refund)\n"
    "        assert result.rejected is (refund > charge), (seed, i, charge, refund)\n"
)


@pytest.fixture
def example(repo: GitRepo) -> GitRepo:
    """The bundled example committed as ``main``, with branch ``patch`` checked out."""
    copy_example(repo.path)
    repo.commit("example")
    repo.branch("patch")
    return repo


def edit(repo: GitRepo, rel: str, old: str, new: str) -> None:
    path = repo.path / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def lane(repo: GitRepo, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main(["--repo", str(repo.path), "property", "--seed", SEED, "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_the_example_is_green(example: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = lane(example, capsys, "--base", "main")
    assert code == 0, report
    assert [(p["property"], p["source"]) for p in report["properties"]] == [
        (PROP, "base"),
        (PROP, "head"),
    ]
    assert not [f for f in report["oracle_findings"] if f["property"] == PROP]


def test_refunds_above_the_charge_are_red_and_the_case_reproduces(
    example: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    edit(example, BILLING, CHECK, "")
    example.commit("agent: simplify refunds")
    code, report = lane(example, capsys, "--base", "main", "--out", str(tmp_path / "r.json"))
    assert code == 1
    assert report["status"] == "fail"
    failure = report["failures"][0]
    assert (failure["property"], failure["source"], failure["seed"]) == (PROP, "base", int(SEED))
    charge, refund = failure["arguments"]
    assert refund > charge  # the counterexample is a refund above the charge
    index = failure["case_index"]
    assert isinstance(index, int)
    assert json.loads((tmp_path / "r.json").read_text()) == report

    code, again = lane(example, capsys, "--base", "main", "--only", PROP, "--case", str(index))
    assert code == 1
    assert (again["failures"][0]["case_index"], again["failures"][0]["arguments"]) == (
        index,
        [charge, refund],
    )
    # Human output names the counterexample and the command that re-runs it.
    code = main(
        [
            "--repo",
            str(example.path),
            "property",
            "--seed",
            SEED,
            "--only",
            PROP,
            "--case",
            str(index),
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert f"case {index} arguments [{charge}, {refund}]" in out
    assert f"--only {PROP} --case {index}" in out


@pytest.mark.slow
def test_gutting_the_property_too_is_still_red_from_the_base(
    example: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(example, BILLING, CHECK, "")
    edit(example, PROPS, ASSERTS, "        pass\n")
    example.commit("agent: simplify refunds and their check")
    code, report = lane(example, capsys, "--base", "main")
    assert code == 1
    assert {(f["property"], f["source"]) for f in report["failures"]} == {(PROP, "base")}
    index = report["failures"][0]["case_index"]
    code, _ = lane(example, capsys, "--base", "main", "--only", PROP, "--case", str(index))
    assert code == 1
    # The gutted head property is what an oracle audit exists for.
    assert {(f["property"], f["kind"]) for f in report["oracle_findings"]} >= {
        (PROP, "survives_mutants")
    }
