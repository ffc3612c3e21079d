"""Obtaining the base's dependency map (issue 11): a base whose suite cannot be recorded is
tried once, not on every gate; ``replay map`` records again and clears the note. An entry
whose MAC does not verify (issue 19) is not used, is said on stderr and in the note once,
and the map is recorded again."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.formats.depmap import Binding, DependencyMap
from patchlane.infra.cachekey import CacheKey
from patchlane.infra.ui import Output
from patchlane.lanes.replay import maprecord
from patchlane.main import main
from tests.formats.test_depmap import MAP, REVIEW_MAP, _forge
from tests.gitrepo import GitRepo

# The run child ends before the recorder writes anything: no map can come of this suite.
EXITS = "import os\n\n\ndef test_leaves():\n    os._exit(0)\n"


@pytest.mark.slow
def test_a_recording_that_failed_is_not_tried_again_on_the_next_gate(
    repo: GitRepo, tmp_path: Path, cache_key: CacheKey
) -> None:
    repo.write("review-map.yml", MAP)
    repo.write("tests/test_exit.py", EXITS)
    base = repo.commit("a suite that ends the process")
    cache = tmp_path / "cache"
    first, note = maprecord.obtain(
        repo.path, REVIEW_MAP, base, mode="auto", cache=cache, seed=3, out=Output(quiet=True)
    )
    assert first is None and "recording failed: replay map: the base's suite ended" in note
    reason = maprecord.read_failure(cache, Binding.here(base), cache_key)
    assert reason is not None and "ended without writing its recording" in reason
    again, note = maprecord.obtain(
        repo.path, REVIEW_MAP, base, mode="auto", cache=cache, seed=3, out=Output(quiet=True)
    )
    assert again is None
    assert note.startswith("none (recording failed before, with these versions:")
    assert f"patchlane replay map --base {base[:12]}" in note
    # Another environment (other versions) has not failed yet.
    other = Binding(base, "3.0.0", "1.0", "1.0")
    assert maprecord.read_failure(cache, other, cache_key) is None


@pytest.mark.slow
def test_replay_map_records_again_and_forgets_the_failure(
    repo: GitRepo, tmp_path: Path, cache_key: CacheKey
) -> None:
    repo.write("review-map.yml", MAP)
    repo.write("tests/test_ok.py", "def test_ok():\n    assert True\n")
    base = repo.commit("a suite that runs")
    cache = tmp_path / "cache"
    binding = Binding.here(base)
    maprecord.keep_failure(cache, binding, "a flaky machine", cache_key)
    assert maprecord.read_failure(cache, binding, cache_key) == "'a flaky machine'"
    argv = ["--repo", str(repo.path), "-q", "replay", "map", "--base", base]
    assert main([*argv, "--dep-cache", str(cache)]) == 0
    assert maprecord.read_failure(cache, binding, cache_key) is None
    found, note = maprecord.obtain(
        repo.path, REVIEW_MAP, base, mode="auto", cache=cache, seed=3, out=Output(quiet=True)
    )
    assert "recorded now" not in note
    assert found is not None and found.tests == ("tests/test_ok.py::test_ok",)


@pytest.mark.slow
def test_replay_map_on_a_suite_that_cannot_be_recorded_exits_2_and_keeps_the_note(
    repo: GitRepo, tmp_path: Path, cache_key: CacheKey
) -> None:
    repo.write("review-map.yml", MAP)
    repo.write("tests/test_exit.py", EXITS)
    base = repo.commit("a suite that ends the process")
    cache = tmp_path / "cache"
    argv = ["--repo", str(repo.path), "-q", "replay", "map", "--base", base]
    assert main([*argv, "--dep-cache", str(cache)]) == 2
    assert maprecord.read_failure(cache, Binding.here(base), cache_key) is not None


def _obtain(repo: GitRepo, base: str, cache: Path) -> tuple[object, str]:
    return maprecord.obtain(
        repo.path, REVIEW_MAP, base, mode="auto", cache=cache, seed=3, out=Output(verbose=True)
    )


@pytest.mark.slow
def test_a_map_a_patch_rewrote_is_not_used_is_reported_once_and_is_recorded_again(
    repo: GitRepo, tmp_path: Path, cache_key: CacheKey, capsys: pytest.CaptureFixture[str]
) -> None:
    # The hostile pass's route: a test of one patch emptied the base's map and named it by
    # its new bytes, so that the next patch would get a slice of nothing.
    repo.write("review-map.yml", MAP)
    repo.write("tests/test_ok.py", "def test_ok():\n    assert True\n")
    base = repo.commit("a suite")
    cache = tmp_path / "cache"
    first, _ = _obtain(repo, base, cache)
    (path,) = cache.glob("maps/*/*.json")
    forged = _forge(path, {"lines": {}, "tests": [], "uses": [], "passed": []})
    capsys.readouterr()
    again, note = _obtain(repo, base, cache)
    entry = f"maps/{base[:12]}/{forged.name}"
    assert note.endswith(f"recorded now; cache entry {entry} did not verify: not used")
    # Recorded again from the base, not the forged one.
    assert isinstance(first, DependencyMap) and isinstance(again, DependencyMap)
    assert again.tests == first.tests == ("tests/test_ok.py::test_ok",)
    assert again.lines == first.lines != {}
    assert f"replay: cache entry {entry} did not verify: not used" in capsys.readouterr().err
    _, note = _obtain(repo, base, cache)
    assert "did not verify" not in note and "recorded now" not in note
    assert "did not verify" not in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("sealed_by", [None, CacheKey(bytes(32))], ids=["no-mac", "other-key"])
def test_a_failure_note_that_does_not_verify_is_not_used(
    repo: GitRepo, tmp_path: Path, cache_key: CacheKey, sealed_by: CacheKey | None
) -> None:
    # Planted by code running as the user, it would keep selection to the static rules (the
    # safe side) on every later gate; it is not the user's note, so the map is recorded.
    repo.write("review-map.yml", MAP)
    repo.write("tests/test_ok.py", "def test_ok():\n    assert True\n")
    base = repo.commit("a suite")
    cache, binding = tmp_path / "cache", Binding.here(base)
    maprecord.keep_failure(cache, binding, "a planted reason", sealed_by or cache_key)
    (note_file,) = cache.glob("maps/*/failed-*")
    if sealed_by is None:
        note_file.write_text("a planted reason\n")
    assert maprecord.read_failure(cache, binding, cache_key) is None
    found, note = _obtain(repo, base, cache)
    assert found is not None
    assert f"; cache entry maps/{base[:12]}/{note_file.name} did not verify: not used" in note
    assert not note_file.exists()
