"""Selection with a recorded map where one test can see what another test's run left
(issue 11): a value shared through a fixture wider than a function, and the modules a test
imported first. Real recordings on real repositories."""

from __future__ import annotations

from patchlane.lanes.replay import maprecord
from tests.gitrepo import GitRepo
from tests.lanes.replay.test_depmap import MAP, REVIEW_MAP, _select

SHARED = {
    "pkg/__init__.py": "",
    "pkg/counter.py": (
        "class Counter:\n    def __init__(self):\n        self.n = 0\n\n"
        "    def bump(self):\n        self.n += 1\n\n"
        "    def value(self):\n        return self.n\n"
    ),
    "tests/conftest.py": (
        "import pytest\n\nfrom pkg.counter import Counter\n\n\n"
        "@pytest.fixture(scope='session')\ndef counter():\n    return Counter()\n"
    ),
    "tests/test_a_bumps.py": "def test_bumps(counter):\n    counter.bump()\n",
    "tests/test_b_reads.py": "def test_reads(counter):\n    assert counter.value() == 1\n",
    "tests/test_c_other.py": (
        "from pkg.counter import Counter\n\n\ndef test_other():\n    assert Counter().n == 0\n"
    ),
}


def test_a_change_run_by_one_user_of_a_shared_fixture_selects_every_user(repo: GitRepo) -> None:
    # test_reads never ran bump(); it reads what test_bumps's bump() left in the one value.
    repo.write("review-map.yml", MAP)
    for path, text in SHARED.items():
        repo.write(path, text)
    base = repo.commit("a counter shared by a session fixture")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    assert dep.ran_file("pkg/counter.py") >= {"tests/test_a_bumps.py::test_bumps"}
    repo.write("pkg/counter.py", SHARED["pkg/counter.py"].replace("n += 1", "n += 2"))
    repo.commit("bump by two")
    selection = _select(repo, base, dep)
    assert set(selection.nodeids) == {
        "tests/test_a_bumps.py::test_bumps",
        "tests/test_b_reads.py::test_reads",
    }


FIRST = {
    "pkg/__init__.py": "",
    "pkg/calc.py": "def double(n):\n    return n * 2\n",
    "pkg/other.py": "VALUE = 1\n",
    "tests/test_a_source.py": (
        "from pathlib import Path\n\nimport pkg\n\n\ndef test_source():\n"
        "    from pkg import other\n\n"
        "    text = (Path(pkg.__file__).parent / 'calc.py').read_text()\n"
        "    assert 'def double' in text and other.VALUE == 1\n"
    ),
    "tests/test_b_runs.py": (
        "from pkg.calc import double\n\n\ndef test_runs():\n    assert double(2) == 4\n"
    ),
    "tests/test_c_other.py": (
        "def test_other():\n    from pkg import other\n\n    assert other.VALUE == 1\n"
    ),
}


def test_only_a_test_that_ran_the_change_brings_in_the_importers_of_what_it_imported_first(
    repo: GitRepo,
) -> None:
    # test_source read calc.py's text and imported pkg.other first, but ran no line of
    # calc.py: the importers of pkg.other (test_other) cannot have seen the change.
    repo.write("review-map.yml", MAP)
    for path, text in FIRST.items():
        repo.write(path, text)
    base = repo.commit("a test that reads a module's source")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    assert "pkg.other" in dep.first_imports["tests/test_a_source.py::test_source"]
    repo.write("pkg/calc.py", FIRST["pkg/calc.py"].replace("n * 2", "n + n"))
    repo.commit("add instead")
    assert set(_select(repo, base, dep).nodeids) == {
        "tests/test_a_source.py::test_source",
        "tests/test_b_runs.py::test_runs",
    }
