"""``patchlane init`` proposes only properties that hold at the base: each candidate (the
property module, each ``@given`` test) runs once in the sandbox, as the property lane runs
it, and one that fails there, errors, does not import or needs pytest fixtures is left out
with a line saying why; with nothing left, the code is judged by its tests alone."""

from __future__ import annotations

import json
import os

import pytest

from patchlane.main import main
from patchlane.project.config import ReviewMap, parse_review_map
from tests.gitrepo import GitRepo, run_patchlane

pytestmark = pytest.mark.slow  # every test here runs candidates in sandboxed children

CODE = "def refund(c, a):\n    return c - min(a, c)\n"

# attrs' shape: one @given test that holds, one taking a fixture, one that fails at the
# base, and a plain test (not a candidate).
MIXED = """\
from hypothesis import given, strategies as st
from shop import refund


@given(st.integers(0, 100), st.integers(0, 100))
def test_holds(charge, amount):
    assert 0 <= refund(charge, amount) <= charge


@given(st.integers(0, 100))
def test_needs_fixture(tmp_path, charge):
    assert refund(charge, 0) == charge


@given(st.integers(0, 100))
def test_fails_at_base(charge):
    assert refund(charge, 1) == charge


def test_plain():
    assert refund(3, 1) == 2
"""

ALL_HOLD = """\
from hypothesis import given, strategies as st
from shop import refund


@given(st.integers(0, 100))
def test_zero_refund(charge):
    assert refund(charge, 0) == charge
"""

BROKEN_IMPORT = """\
from hypothesis import given, strategies as st
from shop import no_such_name


@given(st.integers())
def test_never(x):
    assert no_such_name(x)
"""

FAILING_PROPS = """\
from shop import refund


def prop_refund_is_whole_charge(seed, n=200):
    assert refund(5, 1) == 5, "refund keeps the charge"


def prop_zero_refund(seed, n=200):
    assert refund(5, 0) == 5
"""


def _map(repo: GitRepo) -> ReviewMap:
    text = (repo.path / "review-map.yml").read_text("utf-8")
    return parse_review_map(text, "review-map.yml")


def _init(repo: GitRepo, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["--repo", os.fspath(repo.path), "init", *args]) == 0
    return capsys.readouterr().out


def _check(repo: GitRepo) -> None:
    """The map init wrote passes ``patchlane check`` as it is."""
    proc = run_patchlane("check", cwd=repo.path)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()


def test_only_the_given_tests_that_hold_are_adopted_each_left_out_says_why(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("src/shop/__init__.py", CODE)
    repo.write("tests/test_mixed.py", MIXED)
    repo.write("tests/test_good.py", ALL_HOLD)
    repo.write("tests/test_broken.py", BROKEN_IMPORT)
    repo.commit("project")
    out = _init(repo, capsys)
    lane = _map(repo).property
    assert lane is not None
    # A file whose @given tests all hold is named whole; the mixed one by its good node id.
    assert lane.tests == ("tests/test_good.py", "tests/test_mixed.py::test_holds")
    left = [line for line in out.splitlines() if line.startswith("left out ")]
    assert len(left) == 3, out
    # A file that does not import: each of its tests says so.
    assert left[0].startswith(
        "left out tests/test_broken.py::test_never: does not hold at the base: import failed: "
    )
    assert "no_such_name" in left[0]
    assert left[1].startswith("left out tests/test_mixed.py::test_needs_fixture: uses pytest ")
    assert "(tmp_path)" in left[1] and "the replay still runs it as a test" in left[1]
    # Needing a fixture is not failing: only the test that fails says so.
    assert "does not hold" not in left[1]
    assert left[2].startswith(
        "left out tests/test_mixed.py::test_fails_at_base: does not hold at the base: "
    )
    # The map says the same in comments, and the code is covered by the lane.
    text = (repo.path / "review-map.yml").read_text("utf-8")
    assert "#   tests/test_mixed.py::test_needs_fixture: uses pytest fixtures" in text
    assert _map(repo).replay.paths == ()
    _check(repo)
    # --json lists them too.
    data = json.loads(
        run_patchlane("--json", "init", "--force", cwd=repo.path).stdout.decode("utf-8")
    )
    assert [x["name"] for x in data["left_out"]] == [
        "tests/test_broken.py::test_never",
        "tests/test_mixed.py::test_needs_fixture",
        "tests/test_mixed.py::test_fails_at_base",
    ]
    assert data["property"]["tests"] == ["tests/test_good.py", "tests/test_mixed.py::test_holds"]


def test_a_property_module_that_fails_at_the_base_is_left_out_whole(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("src/shop/__init__.py", CODE)
    repo.write("checks/__init__.py", "")
    repo.write("checks/props.py", FAILING_PROPS)
    repo.write("tests/test_shop.py", "from shop import refund\n\n\ndef test_r():\n"
               "    assert refund(3, 1) == 2\n")  # fmt: skip
    repo.commit("project")
    out = _init(repo, capsys)
    assert "left out checks.props.prop_refund_is_whole_charge: does not hold at the base: " in out
    assert "left out checks.props: the property lane runs every prop_* function" in out
    assert "prop_zero_refund" not in out  # it held: no line of its own
    # Nothing held: the code falls back to its tests, and the seed is in the map.
    review_map = _map(repo)
    assert review_map.property is None
    assert review_map.replay.paths == ("src/shop/",)
    assert review_map.seed == 20260924
    assert "note: no property held at the base: the code (src/shop/) is judged" in out
    _check(repo)


def test_when_every_given_test_is_left_out_the_code_is_judged_by_its_tests(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("src/shop/__init__.py", CODE)
    repo.write("tests/test_broken.py", BROKEN_IMPORT)
    repo.commit("project")
    out = _init(repo, capsys)
    assert out.count("left out ") == 1
    review_map = _map(repo)
    assert review_map.property is None
    assert (review_map.replay.paths, review_map.replay.seed) == (("src/shop/",), 20260924)
    text = (repo.path / "review-map.yml").read_text("utf-8")
    assert "# No property lane: no property held at the base." in text
    assert out.splitlines()[-1].endswith("run: patchlane gate --replay local")
    _check(repo)
