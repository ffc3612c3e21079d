"""The witness's parts (``child.calls``, ``child.witness``, ``vacuity.witness``), for real.

What is recorded in a real pytest child and what a real witness child answers, in a real
git checkout under the sandbox; the gate end to end is ``tests/gate/test_witness.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.lanes.replay.run import Also, run_tests
from patchlane.lanes.replay.vacuity.witness import (
    Call,
    Where,
    Witnessed,
    compare,
    recorded,
    watched,
    witnessed,
)
from patchlane.project.testmodules import DEFAULT_PATTERNS
from tests.gitrepo import GitRepo

MODULE = '''\
import functools
import os
import sys


def tell(n):
    """Exact only under a test run."""
    if "PYTEST_CURRENT_TEST" in os.environ and "pytest" in sys.modules:
        return n * 2
    return n * 3


def honest(n):
    return n * 2


def nothing(n):
    return None


def fails(n):
    raise ValueError(n)


def numbers(n):
    yield n


def nested(n):
    def inner(m):
        return m + 1

    return inner(n)


@functools.lru_cache(maxsize=None)
def cached(n):
    return n + 100


class Box:
    def __init__(self, v):
        self.v = v

    def get(self, k):
        return self.v + k

    @staticmethod
    def twice(n):
        return n * 2

    @classmethod
    def make(cls, n):
        return n - 1
'''

TESTS = """\
from pkg.mod import Box, cached, fails, honest, nested, nothing, numbers, tell


def test_all():
    assert tell(2) == 4
    assert honest(2) == 4
    assert nothing(1) is None
    try:
        fails(1)
    except ValueError:
        pass
    assert list(numbers(1)) == [1]
    assert nested(1) == 2
    assert cached(1) == 101
    assert Box(1).get(2) == 3
    assert Box.twice(3) == 6
    assert Box.make(3) == 2
"""

NAMES = ["Box.get", "Box.make", "Box.twice", "cached", "fails", "honest", "nested"]
NAMES += ["nothing", "numbers", "tell"]


def test_watched_names_changed_and_new_functions_and_methods_not_nested_ones() -> None:
    base = b"def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\nclass C:\n    def m(self):\n        return 3\n"
    head = base.replace(b"return 2", b"return 20").replace(b"return 3", b"return 30")
    head += b"\n\ndef d():\n    def inner():\n        return 4\n    return inner()\n"
    assert watched({"m.py": (base, head)}) == {"m.py": ["C.m", "b", "d"]}
    assert watched({"new.py": (None, b"def x():\n    pass\n")}) == {"new.py": ["x"]}
    assert watched({"m.py": (base, base)}) == {}
    assert watched({"bad.py": (base, b"def (:\n")}) == {}


def _call(name: str, result: str, args: str = "A") -> Call:
    return Call("pkg.mod", name, args, result)


def test_compare_judges_bytes_skipping_nondeterminism_and_calls_not_made() -> None:
    calls = (
        _call("same", "X"),
        _call("differs", "X"),
        _call("random", "X"),
        _call("raises", "X"),
        _call("args", "X"),
    )
    answers = (("X", "X"), ("Y", "Y"), ("Y", "Z"), ("!raised", "!raised"), ("!args", "!args"))
    judged = compare(Witnessed(calls, answers))
    assert [c.qualname for c in judged.unexcused] == ["differs", "raises"]
    assert judged.counts == {"calls_recorded": 5, "calls_witnessed": 3, "calls_differing": 2}
    # The base shows the same difference for the same function and arguments: excused;
    # another argument is not the same call.
    base = Witnessed(
        (_call("differs", "B"), _call("raises", "B", args="other")), (("C", "C"), ("C", "C"))
    )
    judged = compare(Witnessed(calls, answers), base)
    assert [c.qualname for c in judged.unexcused] == ["raises"]
    assert judged.counts["calls_differing"] == 1


@pytest.mark.slow
def test_recorded_calls_are_made_again_outside_any_test_run(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/pkg/__init__.py", "")
    repo.write("src/pkg/mod.py", MODULE)
    repo.write("tests/test_mod.py", TESTS)
    commit = repo.commit("a module and its test")
    tree = tmp_path / "tree"
    from patchlane.infra import git

    git.checkout_detached(repo.path, commit, tree)
    run = run_tests(
        tree,
        nodeids=["tests/test_mod.py::test_all"],
        hash_seed=7,
        timeout_s=60,
        also=Also(watch={"src/pkg/mod.py": NAMES}),
    )
    assert run.ids("passed") == ("tests/test_mod.py::test_all",)
    calls = recorded(run.calls)
    # Not recorded: a None result, an exception, a generator, a nested function; a
    # decorated function is recorded by its own code, the methods by their qualified names.
    assert sorted(c.qualname for c in calls) == [
        "Box.get",
        "Box.make",
        "Box.twice",
        "cached",
        "honest",
        "nested",
        "tell",
    ]
    where = Where(repo.path, commit, None, ("tests",), DEFAULT_PATTERNS)
    found = witnessed(where, calls, run, hash_seed=7, timeout_s=60)
    assert found.problem == ""
    judged = compare(found)
    # Only the code that tells a test run apart answers otherwise where none runs.
    assert [c.qualname for c in judged.unexcused] == ["tell"]
    assert judged.counts["calls_witnessed"] == len(calls)


@pytest.mark.slow
def test_the_witness_sees_its_tree_where_the_checks_run_does(repo: GitRepo, tmp_path: Path) -> None:
    """The witness's tree is shown at the repository's path, as the check's run's is: an
    honest function that answers with its working directory answers the same there."""
    from patchlane.lanes.replay.vacuity.check import checkout

    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/pkg/__init__.py", "")
    repo.write("src/pkg/place.py", "import os\n\n\ndef where(n):\n    return (n, os.getcwd())\n")
    repo.write(
        "tests/test_place.py",
        "from pkg.place import where\n\n\ndef test_where():\n    assert where(1)[0] == 1\n",
    )
    commit = repo.commit("a module that answers with its place")
    tree = tmp_path / "tree"
    checkout(repo.path, commit, tree)
    run = run_tests(
        tree,
        nodeids=["tests/test_place.py::test_where"],
        hash_seed=7,
        timeout_s=60,
        also=Also(watch={"src/pkg/place.py": ["where"]}),
    )
    calls = recorded(run.calls)
    assert [c.qualname for c in calls] == ["where"]
    where = Where(repo.path, commit, None, ("tests",), DEFAULT_PATTERNS)
    found = witnessed(where, calls, run, hash_seed=7, timeout_s=60)
    assert found.problem == ""
    judged = compare(found)
    assert judged.counts["calls_witnessed"] == 1 and judged.unexcused == (), judged
