"""``split``: the patch's own test files are collected and run in processes of their own;
on real trees and real pytest children."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from patchlane.infra.sandbox import isolation
from patchlane.lanes.replay import results as replay_run
from patchlane.lanes.replay import split
from patchlane.lanes.replay.chosen import Scope
from patchlane.lanes.replay.collect import Collected, CollectionError
from patchlane.lanes.replay.results import FAILED, PASSED, NodeResult, Runner
from patchlane.lanes.replay.split import own_test_files, run_apart, union
from patchlane.project.testmodules import ModulePatterns
from tests.lanes.replay.trees import live_children, open_fds, split_and_run, write_tree

LIMITS = "LIMIT = 10\n"
BASE_TEST = (
    "import limits\n\n\ndef test_limit():\n    assert limits.LIMIT == 10\n"
    "\n\ndef test_other():\n    pass\n"
)
# The patch's module: changes what the base's test sees, at import, and logs that import
# where it can (in the sandbox, only a test run's tree is writable: a collection's is not).
PATCH_TEST = (
    "import limits\nfrom pathlib import Path\n\ntry:\n"
    "    with Path(__file__).with_name('log.txt').open('a') as f:\n"
    "        f.write('imported\\n')\nexcept OSError:\n    pass\nlimits.LIMIT = 3\n\n\n"
    "def test_low():\n    assert limits.LIMIT == 3\n"
)
SCOPE = Scope(("tests",), (), None)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    return write_tree(tmp_path / "tree", {"src/limits.py": LIMITS, **files})


@pytest.mark.slow
def test_the_base_tests_run_in_a_process_without_the_patchs_module(tmp_path: Path) -> None:
    log = tmp_path / "tree" / "tests" / "log.txt"
    tree = _tree(tmp_path, {"tests/test_base.py": BASE_TEST, "tests/test_new.py": PATCH_TEST})
    seen: list[Collected] = []

    def choose(collected: Collected) -> tuple[str, ...]:
        seen.append(collected)
        return tuple(sorted(collected.nodeids))

    ran = split_and_run(tree, SCOPE, choose, ["tests/test_new.py"], Runner(3, 120))
    # One choice, from both collections as one.
    (collected,) = seen
    assert sorted(collected.nodeids) == [
        "tests/test_base.py::test_limit",
        "tests/test_base.py::test_other",
        "tests/test_new.py::test_low",
    ]
    assert ran.run is not None
    # Apart, the base's test passes and the patch's own passes in its own process; run
    # together, as the project's suite runs them, the base's test sees LIMIT = 3 and fails:
    # a node fails if it fails either way.
    limit = ran.run.results["tests/test_base.py::test_limit"]
    assert limit.outcome == FAILED and "in one process" in limit.why
    assert {n: r for n, r in ran.run.results.items() if n != "tests/test_base.py::test_limit"} == {
        "tests/test_base.py::test_other": NodeResult(PASSED),
        "tests/test_new.py::test_low": NodeResult(PASSED),
    }
    assert ran.run.problems == ()
    # Never imported in the base's process: in the tree it runs in, only the collection's
    # import is logged, where the collection may write; the patch's own run and the run
    # together (the failure above) each had a copy of the tree of their own.
    logged = log.read_text().splitlines() if log.exists() else []
    assert logged == ([] if isolation().sandboxed else ["imported"])


@pytest.mark.slow
def test_a_base_test_the_patch_breaks_fails_in_its_own_process(tmp_path: Path) -> None:
    # The patch lowers LIMIT and restores it from its own test module at import.
    tree = _tree(
        tmp_path,
        {
            "src/limits.py": "LIMIT = 9\n",
            "tests/test_base.py": BASE_TEST,
            "tests/test_zz.py": "import limits\n\nlimits.LIMIT = 10\n\n\ndef test_z():\n    pass\n",
        },
    )
    ran = split_and_run(
        tree,
        SCOPE,
        lambda c: tuple(c.nodeids),
        ["tests/test_zz.py"],
        Runner(3, 120),
    )
    assert ran.run is not None
    assert ran.run.results["tests/test_base.py::test_limit"].outcome == FAILED
    assert ran.run.results["tests/test_zz.py::test_z"].outcome == PASSED


@pytest.mark.slow
def test_only_the_patchs_files_chosen_run_nothing_in_the_base_process(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"tests/test_base.py": BASE_TEST, "tests/test_new.py": PATCH_TEST})
    ran = split_and_run(
        tree,
        SCOPE,
        lambda c: ("tests/test_new.py::test_low",),
        ["tests/test_new.py"],
        Runner(3, 120),
    )
    assert ran.run is not None
    assert ran.run.results == {"tests/test_new.py::test_low": NodeResult(PASSED)}
    assert ran.run.problems == ()


@pytest.mark.slow
def test_a_file_that_clashes_with_the_patchs_module_is_judged_beside_it(tmp_path: Path) -> None:
    # pytest imports both by the bare name test_q: beside each other, one does not collect.
    tree = _tree(
        tmp_path,
        {"tests/test_q.py": BASE_TEST, "tests/new/test_q.py": "def test_n():\n    pass\n"},
    )
    seen: list[Collected] = []

    def choose(collected: Collected) -> tuple[str, ...]:
        seen.append(collected)
        return (*collected.nodeids, *(e.nodeid for e in collected.errors))

    ran = split_and_run(tree, SCOPE, choose, ["tests/new/test_q.py"], Runner(3, 120))
    (collected,) = seen
    broken = [e.nodeid for e in collected.errors]
    assert len(broken) == 1
    assert ran.run is not None
    assert ran.run.results[broken[0]].outcome == FAILED


@pytest.mark.slow
def test_no_file_of_the_patchs_runs_as_one_child(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"tests/test_base.py": BASE_TEST})
    ran = split_and_run(tree, SCOPE, lambda c: tuple(c.nodeids), [], Runner(3, 120))
    assert ran.run is not None
    assert sorted(ran.run.ids(PASSED)) == [
        "tests/test_base.py::test_limit",
        "tests/test_base.py::test_other",
    ]


def test_the_patchs_own_test_files_by_the_bases_python_files(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "tests/check_a.py": "",
            "tests/test_b.py": "",
            "tests/helpers.py": "",
            "tests/conftest.py": "",
            "tests/__init__.py": "",
            "tests/cases.txt": ">>> 1\n1\n",
            "src/doc.py": '"""\n>>> 1\n1\n"""\n',
            "src/plain.py": "X = 1\n",
        },
    )
    changed = [
        "tests/check_a.py",
        "tests/test_b.py",
        "tests/helpers.py",
        "tests/conftest.py",
        "tests/__init__.py",
        "tests/cases.txt",
        "src/doc.py",
        "src/plain.py",
        "tests/gone.py",
    ]
    scope = Scope(("tests",), ("src/doc.py", "src/plain.py"), None)
    patterns = ModulePatterns(("check_*.py",))
    assert own_test_files(tree, changed, scope, patterns) == (
        "src/doc.py",
        "tests/cases.txt",
        "tests/check_a.py",
    )


def test_the_union_keeps_every_outcome_and_names_the_second_runs_problems() -> None:
    first = replay_run.TestRun({"a::t": NodeResult(PASSED)}, ("a::t",), (), 0, (), False, b"one ")
    second = replay_run.TestRun(
        {"b::t": NodeResult(FAILED, "no outcome")}, (), (), 2, ("pytest was interrupted",), False,
        b"two",
    )  # fmt: skip
    both = union(first, second)
    assert both.results == {"a::t": NodeResult(PASSED), "b::t": NodeResult(FAILED, "no outcome")}
    assert both.exit_code == 2
    assert both.problems == ("the run of the patch's own test files: pytest was interrupted",)
    assert both.output_tail == b"one two"


@pytest.mark.slow
def test_a_slice_chosen_elsewhere_runs_the_patchs_files_apart(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "src/limits.py": "LIMIT = 9\n",
            "tests/test_base.py": BASE_TEST,
            "tests/test_zz.py": "import limits\n\nlimits.LIMIT = 10\n\n\ndef test_z():\n    pass\n",
        },
    )
    ids = [
        "tests/test_base.py::test_limit",
        "tests/test_base.py::test_other",
        "tests/test_zz.py::test_z",
    ]
    run = run_apart(tree, ids, frozenset({"tests/test_zz.py"}), Runner(3, 120))
    assert run.results["tests/test_base.py::test_limit"].outcome == FAILED
    assert run.ids(PASSED) == ("tests/test_base.py::test_other", "tests/test_zz.py::test_z")
    assert run.problems == ()


@pytest.mark.slow
def test_what_the_patchs_test_leaves_behind_fails_the_base_test_run_together(
    tmp_path: Path,
) -> None:
    # The project's suite runs every test in one process: a new test that sets a variable
    # makes a later base test fail there. Apart, the base's test would pass.
    base_test = "import os\n\n\ndef test_clean():\n    assert 'MODE' not in os.environ\n"
    leaks = "import os\n\n\ndef test_sets():\n    os.environ['MODE'] = 'x'\n"
    tree = _tree(tmp_path, {"tests/test_b.py": base_test, "tests/test_a_new.py": leaks})
    ran = split_and_run(
        tree, SCOPE, lambda c: tuple(sorted(c.nodeids)), ["tests/test_a_new.py"],
        Runner(3, 120),
    )  # fmt: skip
    assert ran.run is not None
    clean = ran.run.results["tests/test_b.py::test_clean"]
    assert clean.outcome == FAILED
    assert "in one process, as the project's suite runs" in clean.why
    assert ran.run.results["tests/test_a_new.py::test_sets"].outcome == PASSED


@pytest.mark.slow
def test_a_patch_collection_that_breaks_is_the_error_told_and_nothing_runs(
    tmp_path: Path,
) -> None:
    # The patch's own collection runs beside the base's: when the patch's test module ends
    # its collection child at import, that child's error is the one told (as when it ran
    # first), the base's child is stopped before it runs anything, and no choice is made.
    kills = "import os\n\nos._exit(3)\n\n\ndef test_never():\n    pass\n"
    ran_log = (
        "from pathlib import Path\n\n\ndef test_logs():\n    Path('ran.txt').write_text('x')\n"
    )
    tree = _tree(tmp_path, {"tests/test_base.py": ran_log, "tests/test_new.py": kills})
    seen: list[Collected] = []

    def choose(collected: Collected) -> tuple[str, ...]:
        seen.append(collected)
        return tuple(sorted(collected.nodeids))

    with pytest.raises(CollectionError, match="test collection failed"):
        split_and_run(tree, SCOPE, choose, ["tests/test_new.py"], Runner(3, 120))
    assert seen == []
    assert not (tree / "ran.txt").exists()


WRITES_MARKER = (
    "from pathlib import Path\n\n\ndef test_writes():\n"
    "    Path(__file__).with_name('marker.txt').write_text('x')\n"
)
NO_MARKER = (
    "from pathlib import Path\n\n\ndef test_no_marker_yet():\n"
    "    assert not Path(__file__).with_name('marker.txt').exists()\n"
)


@pytest.mark.slow
def test_no_run_sees_what_another_run_wrote_in_the_tree(tmp_path: Path) -> None:
    # The project's suite runs once: its first test file runs before the patch's own test
    # writes the marker. The patch's own run and the run together each have a copy of the
    # tree, so the run together does not see the marker the patch's own run wrote.
    tree = _tree(tmp_path, {"tests/test_a.py": NO_MARKER, "tests/test_z.py": WRITES_MARKER})
    ran = split_and_run(
        tree, SCOPE, lambda c: tuple(sorted(c.nodeids)), ["tests/test_z.py"], Runner(3, 120),
    )  # fmt: skip
    assert ran.run is not None
    assert ran.run.results == {
        "tests/test_a.py::test_no_marker_yet": NodeResult(PASSED),
        "tests/test_z.py::test_writes": NodeResult(PASSED),
    }
    assert not (tree / "tests" / "marker.txt").exists()  # the base's process never wrote it


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_split_session_left_after_its_collections_ends_every_child(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"tests/test_base.py": BASE_TEST, "tests/test_new.py": PATCH_TEST})
    children, fds = live_children(), open_fds()
    started = time.monotonic()
    with split.start(tree, SCOPE, ["tests/test_new.py"], Runner(3, 120)) as session:
        collected = session.collected()
        assert sorted(collected.nodeids) == [
            "tests/test_base.py::test_limit",
            "tests/test_base.py::test_other",
            "tests/test_new.py::test_low",
        ]
        assert live_children() - children  # the first child waits for its answer
    # Never asked to run: every child is gone at once, nothing left open.
    assert time.monotonic() - started < 60
    assert live_children() <= children
    assert open_fds() == fds
