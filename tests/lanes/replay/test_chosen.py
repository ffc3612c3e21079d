"""``chosen``: one pytest child collects, this process chooses, the child runs the choice;
on real trees and real pytest children."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from patchlane.lanes.replay import chosen
from patchlane.lanes.replay.chosen import ChosenRun, Scope
from patchlane.lanes.replay.collect import Collected, CollectionError, collect
from patchlane.lanes.replay.results import FAILED, PASSED, NodeResult, Runner
from tests.lanes.replay.trees import collect_and_run, live_children, open_fds, write_tree


def _logging_tests(log: Path, name: str) -> str:
    """A test module that logs its import and each test it runs to ``log``."""
    return (
        f"LOG = {str(log)!r}\n"
        f"open(LOG, 'a').write('import {name}\\n')\n\n\n"
        f"def test_one():\n    open(LOG, 'a').write('ran {name}::test_one\\n')\n\n\n"
        f"def test_two():\n    open(LOG, 'a').write('ran {name}::test_two\\n')\n"
        "    assert False, 'two fails'\n"
    )


def _run(
    tree: Path, choose: object, *, only: Sequence[str] | None = None, doctests: Sequence[str] = ()
) -> ChosenRun:
    scope = Scope(("tests",), tuple(doctests), None if only is None else tuple(only))
    return collect_and_run(tree, scope, choose, Runner(3, 120))  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_child_runs_exactly_the_choice_after_one_collection(tmp_path: Path) -> None:
    log = tmp_path / "tree" / "log.txt"
    tree = write_tree(
        tmp_path / "tree",
        {"tests/test_a.py": _logging_tests(log, "a"), "tests/test_b.py": _logging_tests(log, "b")},
    )
    seen: list[Collected] = []

    def choose(collected: Collected) -> tuple[str, ...]:
        seen.append(collected)
        return ("tests/test_a.py::test_one",)

    ran = _run(tree, choose)
    assert list(seen[0].nodeids) == [
        "tests/test_a.py::test_one",
        "tests/test_a.py::test_two",
        "tests/test_b.py::test_one",
        "tests/test_b.py::test_two",
    ]
    assert ran.run is not None
    assert {n: r.outcome for n, r in ran.run.results.items()} == {
        "tests/test_a.py::test_one": PASSED
    }
    # Each module imported once (one collection, not two), and only the choice ran.
    assert log.read_text().splitlines() == ["import a", "import b", "ran a::test_one"]
    assert ran.collect_s > 0 and ran.choose_s >= 0


@pytest.mark.slow
def test_only_the_candidate_files_are_collected_and_failures_fold_as_in_a_run(
    tmp_path: Path,
) -> None:
    log = tmp_path / "tree" / "log.txt"
    tree = write_tree(
        tmp_path / "tree",
        {"tests/test_a.py": _logging_tests(log, "a"), "tests/test_b.py": _logging_tests(log, "b")},
    )
    ran = _run(tree, lambda c: c.nodeids, only=["tests/test_b.py"])
    assert ran.run is not None
    outcomes = {n: r.outcome for n, r in ran.run.results.items()}
    assert outcomes == {"tests/test_b.py::test_one": PASSED, "tests/test_b.py::test_two": FAILED}
    assert "AssertionError" in ran.run.results["tests/test_b.py::test_two"].why
    assert "import a" not in log.read_text()


@pytest.mark.slow
def test_a_choice_of_nothing_runs_nothing(tmp_path: Path) -> None:
    log = tmp_path / "tree" / "log.txt"
    tree = write_tree(tmp_path / "tree", {"tests/test_a.py": _logging_tests(log, "a")})
    ran = _run(tree, lambda c: None)
    assert ran.run is None
    assert log.read_text().splitlines() == ["import a"]


@pytest.mark.slow
def test_a_chosen_id_the_child_did_not_collect_fails(tmp_path: Path) -> None:
    tree = write_tree(
        tmp_path / "tree", {"tests/test_a.py": _logging_tests(tmp_path / "tree" / "l", "a")}
    )
    ran = _run(tree, lambda c: ("tests/test_a.py::test_gone",))
    assert ran.run is not None
    assert ran.run.results["tests/test_a.py::test_gone"] == NodeResult(FAILED, "not collected")


@pytest.mark.slow
def test_what_the_child_collects_is_what_collect_collects(tmp_path: Path) -> None:
    # Doctests of a changed module: its doctests are candidates, its test_* function is not;
    # a file that does not import is a file error, as collect reports it.
    files = {
        "pytest.ini": "[pytest]\npythonpath = src\naddopts = --doctest-modules\n",
        "src/pkg/__init__.py": "",
        "src/pkg/mod.py": (
            "def double(x):\n    '''\n    >>> double(2)\n    4\n    '''\n    return 2 * x\n\n\n"
            "def test_not_a_test():\n    pass\n"
        ),
        "tests/test_ok.py": "from pkg.mod import double\n\n\ndef test_d():\n    assert double(1) == 2\n",
        "tests/test_broken.py": "import no_such_module_here\n",
    }
    tree = write_tree(tmp_path / "tree", files)
    seen: list[Collected] = []

    def choose(collected: Collected) -> None:
        seen.append(collected)

    _run(tree, choose, doctests=["src/pkg/mod.py"])
    expected = collect(tree, ["tests"], doctest_only=["src/pkg/mod.py"])
    assert sorted(seen[0].nodeids) == sorted(expected.nodeids)
    assert "src/pkg/mod.py::pkg.mod.double" in seen[0].nodeids
    assert [(e.nodeid, e.missing) for e in seen[0].errors] == [
        (e.nodeid, e.missing) for e in expected.errors
    ]
    assert seen[0].errors[0].missing == "no_such_module_here"


@pytest.mark.slow
def test_a_conftest_that_breaks_pytest_is_a_collection_error(tmp_path: Path) -> None:
    tree = write_tree(
        tmp_path / "tree",
        {"conftest.py": "raise RuntimeError('broken harness')\n", "tests/test_a.py": ""},
    )

    def choose(collected: Collected) -> None:
        raise AssertionError("asked although pytest could not collect")

    with pytest.raises(CollectionError, match="test collection failed"):
        _run(tree, choose)


@pytest.mark.slow
def test_what_the_choice_raises_reaches_the_caller(tmp_path: Path) -> None:
    log = tmp_path / "tree" / "log.txt"
    tree = write_tree(tmp_path / "tree", {"tests/test_a.py": _logging_tests(log, "a")})

    def choose(collected: Collected) -> None:
        raise LookupError("cannot choose")

    with pytest.raises(LookupError, match="cannot choose"):
        _run(tree, choose)
    assert "ran" not in log.read_text()


@pytest.mark.slow
def test_a_candidates_record_the_projects_code_sends_at_import_does_not_stand(
    tmp_path: Path,
) -> None:
    # The test module finds the child's writer and sends a list without its failing test;
    # the plugin's own record, sent just before it asks, is the one read. (The child's
    # modules are off ``sys.modules``: an import would make a fresh copy of the class, so the
    # writer is found by its class's name.)
    forger = (
        "import gc\n\n"
        "writer = next(o for o in gc.get_objects() if type(o).__name__ == 'ResultWriter')\n"
        "writer.emit({'candidates': ['tests/test_a.py::test_one']})\n\n\n"
        "def test_one():\n    pass\n\n\ndef test_two():\n    assert False\n"
    )
    tree = write_tree(tmp_path / "tree", {"tests/test_a.py": forger})
    seen: list[Collected] = []

    def choose(collected: Collected) -> tuple[str, ...]:
        seen.append(collected)
        return collected.nodeids

    ran = _run(tree, choose)
    assert seen[0].nodeids == ("tests/test_a.py::test_one", "tests/test_a.py::test_two")
    assert ran.run is not None
    assert ran.run.results["tests/test_a.py::test_two"].outcome == FAILED


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_session_left_after_its_collection_ends_its_child_unanswered(tmp_path: Path) -> None:
    log = tmp_path / "tree" / "log.txt"
    tree = write_tree(tmp_path / "tree", {"tests/test_a.py": _logging_tests(log, "a")})
    children, fds = live_children(), open_fds()
    started = time.monotonic()
    with chosen.start(tree, Scope(("tests",), (), None), Runner(3, 120)) as session:
        collected = session.collected()
        assert collected.nodeids == ("tests/test_a.py::test_one", "tests/test_a.py::test_two")
        assert live_children() - children  # the child waits for its answer
    # Never asked to run: the child is gone at once (not at its 120 s clock), nothing of
    # it is left open, and no test ran.
    assert time.monotonic() - started < 60
    assert live_children() <= children
    assert open_fds() == fds
    assert log.read_text().splitlines() == ["import a"]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_an_error_after_the_collection_ends_the_child_and_reaches_the_caller(
    tmp_path: Path,
) -> None:
    log = tmp_path / "tree" / "log.txt"
    tree = write_tree(tmp_path / "tree", {"tests/test_a.py": _logging_tests(log, "a")})
    children, fds = live_children(), open_fds()
    with (
        pytest.raises(LookupError, match="no choice"),
        chosen.start(tree, Scope(("tests",), (), None), Runner(3, 120)) as session,
    ):
        session.collected()
        raise LookupError("no choice")
    assert live_children() <= children
    assert open_fds() == fds
    assert log.read_text().splitlines() == ["import a"]
