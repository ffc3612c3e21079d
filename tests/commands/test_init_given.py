"""``patchlane init`` proposes a project's existing Hypothesis tests as properties, and the
map it writes runs them: a gate on a breaking patch rejects with the shrunk example."""

from __future__ import annotations

import json
import os

import pytest

from patchlane.main import main
from patchlane.project.config import parse_review_map
from tests.gitrepo import GitRepo

GIVEN_TEST = """\
from hypothesis import given, strategies as st
from shop import refund


@given(st.integers(0, 100), st.integers(0, 100))
def test_refund_bounded(charge, amount):
    assert 0 <= refund(charge, amount) <= charge


def test_plain():
    assert refund(3, 1) == 2
"""


def _project(repo: GitRepo, *, code: bool = True, props: bool = False) -> None:
    if code:
        repo.write("src/shop/__init__.py", "def refund(c, a):\n    return c - min(a, c)\n")
    if props:
        repo.write("checks/__init__.py", "")
        repo.write("checks/props.py", "def prop_ok(seed, n=200):\n    pass\n")
    repo.write("tests/test_shop.py", GIVEN_TEST)
    repo.write("tests/test_other.py", "def test_other():\n    assert True\n")
    # Mentions Hypothesis but defines no @given test; and a copy in a virtual environment.
    repo.write("tests/test_mention.py", "# hypothesis: given nothing here\n")
    repo.write(".venv/lib/test_vendored.py", GIVEN_TEST)
    repo.commit("project")


def _init(repo: GitRepo, *args: str) -> int:
    return main(["--repo", os.fspath(repo.path), "init", *args])


@pytest.mark.slow  # init runs the @given test once in the sandbox
def test_init_proposes_given_tests_as_the_property_lane(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo)
    assert _init(repo) == 0
    out = capsys.readouterr().out
    assert (
        "note: Hypothesis (@given) tests that held at the work tree run as properties "
        "(lanes.property.tests): tests/test_shop.py\n"
    ) in out
    assert "\nleft out " not in out and "judged by the base's tests alone" not in out
    text = (repo.path / "review-map.yml").read_text(encoding="utf-8")
    lane = parse_review_map(text, "review-map.yml").property
    assert lane is not None
    assert lane.tests == ("tests/test_shop.py",)
    assert lane.modules == ()
    assert lane.paths == ("src/shop/",)


@pytest.mark.slow
def test_init_adds_given_tests_beside_a_property_module_and_in_json(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo, props=True)
    assert main(["--repo", os.fspath(repo.path), "--json", "init"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["property"]["module"] == "checks.props"
    assert data["property"]["tests"] == ["tests/test_shop.py"]
    text = (repo.path / "review-map.yml").read_text(encoding="utf-8")
    lane = parse_review_map(text, "review-map.yml").property
    assert lane is not None and lane.modules == ("checks.props",)
    assert lane.tests == ("tests/test_shop.py",)


def test_without_code_paths_the_tests_are_proposed_in_a_comment(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo, code=False)
    assert _init(repo) == 0
    assert "proposed as lanes.property.tests in a comment" in capsys.readouterr().out
    text = (repo.path / "review-map.yml").read_text(encoding="utf-8")
    assert '  #   tests: ["tests/test_shop.py"]' in text
    assert parse_review_map(text, "review-map.yml").property is None


@pytest.mark.slow
def test_the_scaffolded_map_runs_the_given_test_and_rejects_a_regression(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo)
    assert _init(repo) == 0
    repo.write(".gitignore", ".patchlane/\n")
    repo.commit("scaffold")
    repo.branch("patch")
    repo.checkout("patch")
    repo.write("src/shop/__init__.py", "def refund(c, a):\n    return c - a\n")
    repo.commit("broken refund")
    capsys.readouterr()
    gate = ["--repo", os.fspath(repo.path), "gate", "--base", "main", "--seed", "3"]
    assert main([*gate, "--cases", "50"]) == 1
    report = json.loads((repo.path / ".patchlane" / "property-report.json").read_text())
    failure = report["failures"][0]
    assert failure["property"] == "tests/test_shop.py::test_refund_bounded"
    assert failure["arguments"] == {"charge": 0, "amount": 1}
    assert "assert 0 <= -1 where -1 = refund(charge, amount)" in failure["message"]
