"""Selection with a recorded map where one test can see what another test's run left
(issue 11): a value shared through a fixture wider than a function, and the modules a test
imported first. Real recordings on real repositories."""

from __future__ import annotations

import pytest

from patchlane.lanes.replay import maprecord
from tests.formats.test_depmap import MAP, REVIEW_MAP, _select
from tests.gitrepo import GitRepo

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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_process_started_while_a_conftest_is_imported_blinds_every_test(repo: GitRepo) -> None:
    # Any test may talk to that process, which runs untraced project code.
    repo.write("review-map.yml", MAP)
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/app.py", "def handle(x):\n    return x\n")
    repo.write(
        "tests/conftest.py",
        "import subprocess\nimport sys\n\nDONE = subprocess.run([sys.executable, '-c', 'pass'])\n",
    )
    repo.write("tests/test_a.py", "from pkg.app import handle\n\n\ndef test_a():\n    handle(1)\n")
    repo.write("tests/test_b.py", "def test_b():\n    pass\n")
    base = repo.commit("a conftest that starts a process at import")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    assert dep.blind_tests == {"tests/test_a.py::test_a", "tests/test_b.py::test_b"}


SETUP_CLASS = {
    "pkg/__init__.py": "",
    "pkg/cart.py": "def add(items, item):\n    items.append(item)\n",
    "tests/test_cart.py": (
        "import unittest\n\nfrom pkg.cart import add\n\n\n"
        "class CartTests(unittest.TestCase):\n"
        "    @classmethod\n    def setUpClass(cls):\n        cls.items = []\n\n"
        "    def test_a_adds(self):\n        add(self.items, 1)\n\n"
        "    def test_b_counts(self):\n        self.assertEqual(len(self.items), 1)\n"
    ),
    "tests/test_other.py": "from pkg.cart import add\n\n\ndef test_other():\n    add([], 2)\n",
}


@pytest.mark.slow
def test_the_users_of_a_unittest_classs_setupclass_share_its_state(repo: GitRepo) -> None:
    # test_b_counts never ran add(); it reads the list test_a_adds's add() filled.
    repo.write("review-map.yml", MAP)
    for path, text in SETUP_CLASS.items():
        repo.write(path, text)
    base = repo.commit("a unittest class with state set up once")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    repo.write("pkg/cart.py", SETUP_CLASS["pkg/cart.py"].replace("append(item)", "extend([])"))
    repo.commit("lose the item")
    assert set(_select(repo, base, dep).nodeids) == {
        "tests/test_cart.py::CartTests::test_a_adds",
        "tests/test_cart.py::CartTests::test_b_counts",
        "tests/test_other.py::test_other",
    }
