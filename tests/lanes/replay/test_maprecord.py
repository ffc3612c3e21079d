"""Obtaining the base's dependency map (issue 11): a base whose suite cannot be recorded is
tried once, not on every gate; ``replay map`` records again and clears the note."""

from __future__ import annotations

from pathlib import Path

from patchlane.lanes.replay import maprecord
from patchlane.lanes.replay.depmap import Binding
from patchlane.main import main
from patchlane.ui import Output
from tests.gitrepo import GitRepo
from tests.lanes.replay.test_depmap import MAP, REVIEW_MAP

# The run child ends before the recorder writes anything: no map can come of this suite.
EXITS = "import os\n\n\ndef test_leaves():\n    os._exit(0)\n"


def test_a_recording_that_failed_is_not_tried_again_on_the_next_gate(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("review-map.yml", MAP)
    repo.write("tests/test_exit.py", EXITS)
    base = repo.commit("a suite that ends the process")
    cache = tmp_path / "cache"
    first, note = maprecord.obtain(
        repo.path, REVIEW_MAP, base, mode="auto", cache=cache, seed=3, out=Output(quiet=True)
    )
    assert first is None and "recording failed: replay map: the base's suite ended" in note
    reason = maprecord.read_failure(cache, Binding.here(base))
    assert reason is not None and "ended without writing its recording" in reason
    again, note = maprecord.obtain(
        repo.path, REVIEW_MAP, base, mode="auto", cache=cache, seed=3, out=Output(quiet=True)
    )
    assert again is None
    assert note.startswith("none (recording failed before, with these versions:")
    assert f"patchlane replay map --base {base[:12]}" in note
    # Another environment (other versions) has not failed yet.
    other = Binding(base, "3.0.0", "1.0", "1.0")
    assert maprecord.read_failure(cache, other) is None


def test_replay_map_records_again_and_forgets_the_failure(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("review-map.yml", MAP)
    repo.write("tests/test_ok.py", "def test_ok():\n    assert True\n")
    base = repo.commit("a suite that runs")
    cache = tmp_path / "cache"
    binding = Binding.here(base)
    maprecord.keep_failure(cache, binding, "a flaky machine")
    assert maprecord.read_failure(cache, binding) == "'a flaky machine'"
    argv = ["--repo", str(repo.path), "-q", "replay", "map", "--base", base]
    assert main([*argv, "--dep-cache", str(cache)]) == 0
    assert maprecord.read_failure(cache, binding) is None
    found, note = maprecord.obtain(
        repo.path, REVIEW_MAP, base, mode="auto", cache=cache, seed=3, out=Output(quiet=True)
    )
    assert "recorded now" not in note
    assert found is not None and found.tests == ("tests/test_ok.py::test_ok",)


def test_replay_map_on_a_suite_that_cannot_be_recorded_exits_2_and_keeps_the_note(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("review-map.yml", MAP)
    repo.write("tests/test_exit.py", EXITS)
    base = repo.commit("a suite that ends the process")
    cache = tmp_path / "cache"
    argv = ["--repo", str(repo.path), "-q", "replay", "map", "--base", base]
    assert main([*argv, "--dep-cache", str(cache)]) == 2
    assert maprecord.read_failure(cache, Binding.here(base)) is not None
