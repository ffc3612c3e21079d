"""The worker side of a tasks run, for real: a mirror and a checkout of a real repository, a
real ``patchlane triage`` child per pair, a real killed child, a real setup command."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

import patchlane
from patchlane.triage.units import BaseSpec, Pair, RunPlan, pair_key
from patchlane.triage.work import gate_pair, prepare
from tests.gitrepo import run_patchlane
from tests.triage.project import BREAKS, make_project

GATE = ("--replay", "local", "--today", "2026-09-24")


def _plan(tmp_path: Path, timeout: float = 300.0) -> RunPlan:
    return RunPlan(GATE, str(tmp_path / "work"), 1, timeout)


def _pair(spec: BaseSpec, patch: bytes, name: str = "i-1/m") -> Pair:
    key = pair_key(patchlane.__version__, spec, GATE, patch)
    return Pair("i-1", "m", name, "p.jsonl:1", patch, key)


def _members(evidence: bytes) -> set[str]:
    with tarfile.open(fileobj=io.BytesIO(evidence)) as tar:
        return set(tar.getnames())


@pytest.mark.slow
def test_a_base_with_its_own_map_is_prepared_once_and_gates_its_pairs(tmp_path: Path) -> None:
    repo, _ = make_project(tmp_path / "repo")
    assert run_patchlane("--repo", repo.path, "-q", "init").returncode == 0
    base = repo.commit("the review map")
    spec = BaseSpec(repo=str(repo.path), base_commit=base)
    plan = _plan(tmp_path)
    prepared = prepare(spec, plan)
    assert prepared.gate_base == base  # the base has a map: gated as it is
    assert (Path(prepared.checkout) / "review-map.yml").is_file()
    maps = list((tmp_path / "work" / "maps").rglob(f"maps/{base}/*.json"))
    assert len(maps) == 1  # the dependency map, recorded once for the base

    bad = gate_pair(prepared, _pair(spec, BREAKS), plan)
    assert (bad.verdict, bad.exit_code, bad.infra) == ("reject", 1, False)
    assert "tests/test_app.py::test_add" in bad.reason
    row = json.loads(bad.row)
    assert (row["name"], row["source"], row["evidence"]) == ("i-1/m", "p.jsonl:1", "i-1/m")
    assert {"verdict.json", "receipt.json", "review.md"} <= _members(bad.evidence)

    again = prepare(spec, plan)  # a second preparation finds the first's work
    assert (again.checkout, again.gate_base) == (prepared.checkout, prepared.gate_base)
    assert len(list((tmp_path / "work" / "maps").rglob(f"maps/{base}/*.json"))) == 1
