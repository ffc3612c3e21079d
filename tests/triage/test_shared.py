"""The base's work shared between gates: a gate takes the dependency map it is handed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchlane.demo import patches as demo_patches
from patchlane.demo import repo as demo_repo
from patchlane.demo import scenarios as demo
from patchlane.gate.run import GateOptions, SharedBase, run_gate, share_map
from patchlane.infra import git
from patchlane.infra.ui import Output

pytestmark = pytest.mark.slow


def _options(repo: Path, tmp_path: Path) -> GateOptions:
    return GateOptions(
        base="main",
        head="good",
        seed=demo.DEMO_SEED,
        cases=20,
        today=demo.DEMO_TODAY,
        replay="local",
        out_dir=tmp_path / "ev",
        dep_map="auto",
        dep_cache=tmp_path / "cache",
    )


@pytest.fixture
def example(tmp_path: Path) -> Path:
    repo = demo_repo.make_repo(tmp_path)
    repo.git("checkout", "-q", "-b", "good", demo_repo.BASE_BRANCH)
    demo_patches.refactor_billing(repo.path)
    repo.commit("agent: refactor")
    return repo.path


def test_a_gate_uses_the_shared_map_and_obtains_none_itself(example: Path, tmp_path: Path) -> None:
    opts = _options(example, tmp_path)
    merge_base = git.resolve_commit(example, "main")
    # Shared as obtained, without a map, for this merge base: the gate records none itself.
    shared = SharedBase({merge_base: (None, "no map here")})
    result = run_gate(
        example, GateOptions(**{**opts.__dict__, "shared": shared}), Output(quiet=True)
    )
    assert result.verdict.verdict == "accept_for_review"
    assert not (tmp_path / "cache" / "maps").exists()
    report = json.loads((tmp_path / "ev" / "replay-report.json").read_text("utf-8"))
    assert report["dependency_map"] == "no map here"  # the shared note, not a lookup's


def test_share_map_records_the_base_map_once_before_any_gate(example: Path, tmp_path: Path) -> None:
    opts = _options(example, tmp_path)
    merge_base, obtained = share_map(example, opts, Output(quiet=True))
    assert merge_base == git.resolve_commit(example, "main")
    assert obtained is not None and obtained[0] is not None
    maps = list((tmp_path / "cache" / "maps").rglob("*.json"))
    assert len(maps) == 1
    assert not (tmp_path / "ev").exists()  # nothing of the head ran, no evidence yet
