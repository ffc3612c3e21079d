"""Hypothesis tests in the replay slice (issues 11, 19): seeded by the hash seed each run draws
afresh and records in its receipt (the recorded one reproduces the examples), run under more
seeds when they pass, and drawing from the project's constants, not patchlane's."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.formats import slicefile
from patchlane.lanes.replay import results as replay_run
from patchlane.lanes.replay.hostrun import HostRun, run_slice
from patchlane.lanes.replay.results import FAILED, PASSED
from patchlane.lanes.replay.run import run_tests
from tests.lanes.replay.trees import write_tree


def _outcomes(run: replay_run.TestRun) -> dict[str, str]:
    return {nodeid: result.outcome for nodeid, result in run.results.items()}


def _draws(log: Path) -> str:
    test = (
        "from hypothesis import given, settings, strategies as st\n\n\n"
        "@settings(max_examples=5, database=None)\n@given(st.integers())\n"
        f"def test_draws(n):\n    with open({str(log)!r}, 'a') as f:\n"
        "        f.write(f'{n}\\n')\n"
    )
    return test


CI_VARIABLES = ("CI", "GITHUB_ACTIONS", "TF_BUILD", "BUILDKITE", "CIRCLECI", "CIRRUS_CI")


def _draw(tree: Path, log: Path, hash_seed: int | None) -> tuple[int, str]:
    """One ``run_slice`` of the draws test: the hash seed its receipt records, what it drew."""
    log.unlink(missing_ok=True)
    data = slicefile.render(["tests/test_draws.py::test_draws"])
    result = run_slice(
        tree,
        slicefile.parse(data, "slice"),
        slicefile.sha256(data),
        HostRun(
            seed=5,
            head=None,
            host_role="test",
            freeze_report=None,
            timeout_s=60,
            hash_seed=hash_seed,
        ),
    )
    assert _outcomes(result.run) == {"tests/test_draws.py::test_draws": PASSED}
    assert result.receipt.seed == 5 and result.receipt.hash_seed is not None
    return result.receipt.hash_seed, log.read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("ci", [None, "CI", "GITHUB_ACTIONS"])
def test_each_run_draws_its_own_seed_and_the_recorded_one_draws_the_same_examples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    # The public seed (5) is the same for every run; the examples are not tied to it. On a
    # CI runner Hypothesis loads its "ci" profile by itself, which derandomizes: the seed
    # would be ignored there and a reproduction would draw other examples than the run.
    for name in CI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    if ci is not None:
        monkeypatch.setenv(ci, "true")
    log = tmp_path / "tree" / "draws.txt"
    tree = write_tree(tmp_path / "tree", {"tests/test_draws.py": _draws(log)})
    first_seed, first = _draw(tree, log, None)
    second_seed, second = _draw(tree, log, None)
    assert first_seed != second_seed  # drawn afresh (a 2**-32 chance of a tie)
    assert first != second
    again_seed, again = _draw(tree, log, first_seed)  # replay run --hash-seed FIRST
    assert again_seed == first_seed
    assert again == first


@pytest.mark.slow
def test_a_derandomizing_profile_the_project_loads_itself_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    conftest = (
        "from hypothesis import settings\n"
        "settings.register_profile('fixed', derandomize=True)\n"
        "settings.load_profile('fixed')\n"
    )
    log = tmp_path / "tree" / "draws.txt"
    tree = write_tree(
        tmp_path / "tree", {"conftest.py": conftest, "tests/test_draws.py": _draws(log)}
    )
    seen = []
    for seed in (5, 6):
        log.unlink(missing_ok=True)
        run = run_tests(
            tree, nodeids=["tests/test_draws.py::test_draws"], hash_seed=seed, timeout_s=60
        )
        assert _outcomes(run) == {"tests/test_draws.py::test_draws": PASSED}
        seen.append(log.read_text(encoding="utf-8"))
    assert seen[0] == seen[1]


RUNS = """\
from pathlib import Path

from hypothesis import given, settings, strategies as st

LOG = Path({log!r})


@settings(max_examples=1, database=None)
@given(st.integers())
def test_third_run_fails(n):
    runs = LOG.read_text().count("first\\n") if LOG.exists() else 0
    with LOG.open("a") as f:
        f.write("first\\n")
    assert runs < 2, "the third seed found it"


def test_plain():
    with LOG.open("a") as f:
        f.write("plain\\n")
"""


@pytest.mark.slow
def test_a_passing_hypothesis_test_runs_again_under_two_more_seeds_and_fails_there(
    tmp_path: Path,
) -> None:
    log = tmp_path / "tree" / "runs.txt"
    tree = write_tree(tmp_path / "tree", {"tests/test_runs.py": RUNS.format(log=str(log))})
    ids = ["tests/test_runs.py::test_third_run_fails", "tests/test_runs.py::test_plain"]
    run = run_tests(tree, nodeids=ids, hash_seed=3, timeout_s=60)
    assert _outcomes(run) == {ids[0]: FAILED, ids[1]: PASSED}
    assert b"the third seed found it" in run.output_tail
    assert log.read_text(encoding="utf-8").count("plain\n") == 1  # not a Hypothesis test


CONSTANTS = """\
from hypothesis.internal.conjecture.providers import _get_local_constants


def test_constants():
    import pkg

    strings = _get_local_constants().strings
    assert "pkg-constant" in strings
    assert "patchlane-no-rerun" not in strings, sorted(strings)  # run_child's, as __main__
    assert "rerunfailures" not in strings, sorted(strings)
"""


@pytest.mark.slow
def test_hypothesis_draws_from_the_projects_constants_not_patchlanes(tmp_path: Path) -> None:
    tree = write_tree(
        tmp_path / "tree",
        {
            "src/pkg/__init__.py": "KIND = 'pkg-constant'\n",
            "tests/test_constants.py": CONSTANTS,
        },
    )
    run = run_tests(
        tree, nodeids=["tests/test_constants.py::test_constants"], hash_seed=1, timeout_s=60
    )
    assert _outcomes(run) == {"tests/test_constants.py::test_constants": PASSED}, run.output_tail
