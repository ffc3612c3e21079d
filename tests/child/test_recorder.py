"""The recorder (issue 20): a process started while a module is imported blinds only the
tests that imported it, and nothing when it cannot run the project's Python; reads served
from ``linecache`` are charged to every test that asked, without clearing the cache."""

from __future__ import annotations

import pytest

from patchlane.formats.depmap import DependencyMap
from patchlane.lanes.replay import maprecord
from tests.formats.test_depmap import MAP, REVIEW_MAP
from tests.gitrepo import GitRepo

PLAIN = {
    "tests/test_a.py": "def test_one():\n    pass\n\n\ndef test_two():\n    pass\n",
    "tests/test_b.py": "def test_three():\n    pass\n",
}
A = {"tests/test_a.py::test_one", "tests/test_a.py::test_two"}
EVERY = {*A, "tests/test_b.py::test_three"}


def _record(repo: GitRepo, files: dict[str, str]) -> DependencyMap:
    repo.write("review-map.yml", MAP)
    for path, text in {**PLAIN, **files}.items():
        repo.write(path, text)
    base = repo.commit("a suite")
    # Bounded: a recording that hangs fails here, not after the gate's half hour.
    return maprecord.record(repo.path, REVIEW_MAP, base, seed=3, timeout_s=120)


@pytest.mark.slow
def test_a_conftest_that_runs_a_program_of_no_python_at_import_blinds_no_test(
    repo: GitRepo,
) -> None:
    conftest = "import subprocess\n\nsubprocess.run(['true'], check=True)\n"
    dep = _record(repo, {"tests/conftest.py": conftest})
    assert dep.blind_tests == frozenset()


@pytest.mark.slow
def test_a_conftest_that_starts_python_at_import_blinds_every_test_and_says_why(
    repo: GitRepo,
) -> None:
    conftest = (
        "import subprocess, sys\n\nsubprocess.run([sys.executable, '-c', 'pass'], check=True)\n"
    )
    dep = _record(repo, {"tests/conftest.py": conftest})
    assert dep.blind_tests == EVERY
    why = dep.blind_why("tests/test_b.py::test_three")
    assert why is not None and why.startswith("subprocess.Popen: ")
    assert "-c pass" in why and "conftest" in why


@pytest.mark.slow
def test_a_shell_at_import_blinds_every_test_whatever_it_is_told(repo: GitRepo) -> None:
    # `sh -c make` names no file of the tree, yet a shell (or a build tool) runs what it
    # reads from the tree, its working directory during the recording.
    conftest = "import subprocess\n\nsubprocess.run(['sh', '-c', 'true'], check=True)\n"
    dep = _record(repo, {"tests/conftest.py": conftest})
    assert dep.blind_tests == EVERY


@pytest.mark.slow
def test_a_program_that_names_a_file_of_the_tree_blinds_like_python(repo: GitRepo) -> None:
    conftest = "import subprocess\n\nsubprocess.run(['cat', 'tests/test_b.py'], check=True)\n"
    dep = _record(repo, {"tests/conftest.py": conftest})
    assert dep.blind_tests == EVERY


@pytest.mark.slow
def test_a_module_some_tests_import_that_starts_python_blinds_only_its_importers(
    repo: GitRepo,
) -> None:
    helper = (
        "import subprocess, sys\n\n"
        "OUT = subprocess.run([sys.executable, '-c', 'print(2)'], capture_output=True).stdout\n"
    )
    importer = "import helper\n\n\ndef test_one():\n    assert helper.OUT\n\n\n"
    importer += "def test_two():\n    pass\n"
    # test_c imports it too, after test_a did: no process starts then, yet it sees OUT.
    later = "import helper\n\n\ndef test_four():\n    assert helper.OUT\n"
    files = {"helper.py": helper, "tests/test_a.py": importer, "tests/test_c.py": later}
    dep = _record(repo, files)
    assert dep.blind_tests == {*A, "tests/test_c.py::test_four"}
    why = dep.blind_why("tests/test_c.py::test_four")
    assert why is not None and "-c print(2) (while helper, test_a was imported)" in why


@pytest.mark.slow
def test_a_module_first_imported_inside_a_test_blinds_that_test(repo: GitRepo) -> None:
    helper = "import os, sys\n\nos.spawnv(os.P_WAIT, sys.executable, [sys.executable, '-V'])\n"
    late = "def test_three():\n    import helper  # noqa: F401\n"
    dep = _record(repo, {"helper.py": helper, "tests/test_b.py": late})
    # Inside a test, any start blinds that test (its context), as before.
    assert dep.blind_tests == {"tests/test_b.py::test_three"}


@pytest.mark.slow
def test_multiprocessing_at_import_without_an_audit_event_blinds_every_test(
    repo: GitRepo,
) -> None:
    conftest = (
        "import multiprocessing\n\n"
        "ctx = multiprocessing.get_context('spawn')\n"
        "if __name__ != '__mp_main__':\n"
        "    with ctx.Pool(1) as pool:\n"
        "        assert pool.map(abs, [-1]) == [1]\n"
    )
    dep = _record(repo, {"tests/conftest.py": conftest})
    assert dep.blind_tests == EVERY


@pytest.mark.slow
def test_threads_started_together_are_all_traced_and_the_recording_ends(
    repo: GitRepo,
) -> None:
    # CPython 3.11 refuses two trace installs at once, and the recorder's audit hook runs in
    # each; a pool's handler thread that died so left the run hung (python/cpython#98257).
    # A tiny switch interval hands the GIL over inside nearly every install.
    conftest = (
        "import sys\nfrom multiprocessing.pool import ThreadPool\n\n"
        "sys.setswitchinterval(1e-6)\n"
        "for _ in range(40):\n"
        "    with ThreadPool(4) as pool:\n"
        "        assert pool.map(abs, [-1, -2]) == [1, 2]\n"
        "sys.setswitchinterval(0.005)\n"
    )
    threads = (
        "import threading\n\nimport calc\n\n\n"
        "def test_in_threads():\n"
        "    threads = [threading.Thread(target=calc.double, args=(i,)) for i in range(8)]\n"
        "    for t in threads:\n        t.start()\n"
        "    for t in threads:\n        t.join()\n"
    )
    files = {
        "tests/conftest.py": conftest,
        "calc.py": "def double(x):\n    return 2 * x\n",
        "tests/test_threads.py": threads,
    }
    dep = _record(repo, files)
    # The threads' line of calc, charged to the test that started them.
    assert dep.ran_lines("calc.py", [2]) == {"tests/test_threads.py::test_in_threads"}
    assert "tests/test_threads.py::test_in_threads" in dep.passed_at_base


@pytest.mark.slow
def test_getsource_in_two_tests_records_the_read_for_both(repo: GitRepo) -> None:
    source = "def f():\n    return 1\n"
    reader = (
        "import inspect\n\nimport shop\n\n\n"
        "def test_one():\n    assert 'return 1' in inspect.getsource(shop.f)\n\n\n"
        "def test_two():\n    assert 'return 1' in inspect.getsource(shop)\n"
    )
    dep = _record(repo, {"shop.py": source, "tests/test_a.py": reader})
    assert dep.tests_of(dep.opened["shop.py"]) == A
    assert dep.blind_tests == frozenset()


@pytest.mark.slow
def test_an_in_memory_sqlite_database_is_no_read_and_a_file_uri_is(repo: GitRepo) -> None:
    # A ``mode=memory`` URI names no file (coverage.py's own database is one): its name,
    # resolved against the tree, was charged as a read to the test that opened it.
    tests = (
        "import sqlite3\n\n\n"
        "def test_one():\n"
        "    sqlite3.connect('file:scratch?mode=memory&cache=shared', uri=True).close()\n\n\n"
        "def test_two():\n"
        "    sqlite3.connect('file:tests/data.db?mode=ro', uri=True).close()\n"
    )
    dep = _record(repo, {"tests/test_a.py": tests, "tests/data.db": ""})
    assert "scratch" not in dep.opened
    assert dep.tests_of(dep.opened["tests/data.db"]) == {"tests/test_a.py::test_two"}
    assert dep.passed_at_base == EVERY


@pytest.mark.slow
def test_lines_run_in_a_test_its_fixture_and_at_import_are_each_charged_apart(
    repo: GitRepo,
) -> None:
    # The recorder keeps coverage's lines per context itself (no dynamic contexts): every
    # switch charges what ran since to the context it leaves, a thread's lines included.
    calc = "X = 1\n\n\ndef f(n):\n    if n:\n        return 1\n    return 2\n"
    tests = (
        "import threading\n\nimport pytest\n\nimport calc\n\n\n"
        "@pytest.fixture(scope='session')\ndef made():\n    return calc.f(0)\n\n\n"
        "def test_one(made):\n    assert made == 2\n\n\n"
        "def test_two():\n"
        "    t = threading.Thread(target=calc.f, args=(1,))\n    t.start()\n    t.join()\n"
    )
    dep = _record(repo, {"calc.py": calc, "tests/test_a.py": tests})
    one, two = "tests/test_a.py::test_one", "tests/test_a.py::test_two"
    assert dep.ran_lines("calc.py", [7]) == {one}  # through the session fixture only
    assert dep.ran_lines("calc.py", [6]) == {two}  # in the test's thread
    assert dep.ran_lines("calc.py", [5]) == {one, two}
    assert 1 in dep.import_lines["calc.py"] and 1 not in dep.lines["calc.py"]
    assert 7 not in dep.import_lines["calc.py"]


def test_a_coverage_that_keeps_its_lines_elsewhere_leaves_the_recorder_its_contexts() -> None:
    import coverage

    from patchlane.child.recorder import _raw_lines

    # Not started: no collector, no live sets; the recorder then switches coverage's
    # dynamic contexts instead (its SQLite flush at each switch).
    assert _raw_lines(coverage.Coverage(data_file=None, config_file=False)) is None
    cov = coverage.Coverage(data_file=None, config_file=False, include=["/nowhere/*"])
    cov.start()
    try:
        assert isinstance(_raw_lines(cov), dict)
    finally:
        cov.stop()
