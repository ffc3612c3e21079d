"""``patchlane init`` finds where a project's tests and code really are: pytest's
``testpaths`` (pluggy's ``testing/``), test folders found by walking, test modules at the
top level, nested test folders, the project's ``python_files``; ``src/`` and flat layouts
and namespace packages (never the placeholder ``PACKAGE/``). Every map it writes passes
``patchlane check`` as written."""

from __future__ import annotations

import os

import pytest

from patchlane.commands.init_layout import find_code_paths
from patchlane.commands.init_roots import find_test_roots
from patchlane.main import main
from patchlane.project.config import ReviewMap, parse_review_map
from tests.gitrepo import GitRepo

PASSING = "def test_ok():\n    assert True\n"


def _init_and_check(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> tuple[str, ReviewMap]:
    """Run ``patchlane init`` then ``patchlane check`` on ``repo``; return init's stdout
    and the map it wrote (which check passed)."""
    assert main(["--repo", os.fspath(repo.path), "init"]) == 0
    out = capsys.readouterr().out
    text = (repo.path / "review-map.yml").read_text("utf-8")
    assert "PACKAGE" not in text
    assert main(["--repo", os.fspath(repo.path), "check"]) == 0, capsys.readouterr()
    return out, parse_review_map(text, "review-map.yml")


def test_testpaths_of_the_pytest_configuration_decide_pluggy_testing(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("src/pluggy/__init__.py", "")
    repo.write("testing/conftest.py", "")
    repo.write("testing/test_hooks.py", PASSING)
    # A test-named script elsewhere that pytest, told testpaths, never collects.
    repo.write("scripts/test_release.py", PASSING)
    repo.write("tox.ini", "[tox]\nenvlist = py\n\n[pytest]\ntestpaths = testing\n")
    repo.commit("pluggy's layout")
    assert find_test_roots(repo.path) == ("testing/",)
    out, review_map = _init_and_check(repo, capsys)
    assert review_map.replay.tests == ("testing/",)
    assert review_map.replay.paths == ("src/pluggy/",)
    # The registry goes where the tests are, not into a new tests/ folder.
    assert review_map.freeze is not None
    assert review_map.freeze.registry == "testing/flaky-freeze.yml"
    assert not (repo.path / "tests").exists()
    assert "note: the tests are in testing/: lanes.replay.tests" in out


def test_a_testpaths_entry_that_names_nothing_is_passed_over(repo: GitRepo) -> None:
    repo.write("pkg/__init__.py", "")
    repo.write("testing/test_a.py", PASSING)
    repo.write("pyproject.toml", '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    repo.commit("stale testpaths")
    assert find_test_roots(repo.path) == ("testing/",)


def test_without_configuration_test_folders_and_top_level_modules_are_found(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("app.py", "def f():\n    return 1\n")
    repo.write("test_app.py", "from app import f\n\n\ndef test_f():\n    assert f() == 1\n")
    repo.write("tests/unit/deep/test_nested.py", PASSING)  # nested: tests/ is the root
    repo.write("docs/test_snippet.py", PASSING)  # documentation: not the suite
    repo.write(".venv/lib/test_vendored.py", PASSING)  # hidden: never searched
    repo.commit("root-level and nested tests")
    assert find_code_paths(repo.path) == ("app.py",)
    _, review_map = _init_and_check(repo, capsys)
    assert review_map.replay.tests == ("test_app.py", "tests/")
    assert review_map.replay.paths == ("app.py",)


def test_only_top_level_test_modules(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.write("calc.py", "def add(a, b):\n    return a + b\n")
    repo.write("test_calc.py", PASSING)
    repo.write("test_more.py", PASSING)
    repo.commit("flat, tests beside the module")
    _, review_map = _init_and_check(repo, capsys)
    assert review_map.replay.tests == ("test_calc.py", "test_more.py")


def test_python_files_of_the_configuration_say_what_a_test_is(repo: GitRepo) -> None:
    repo.write("pkg/__init__.py", "")
    repo.write("spec/check_pkg.py", PASSING)
    repo.write("pytest.ini", "[pytest]\npython_files = check_*.py\n")
    repo.commit("custom python_files")
    assert find_test_roots(repo.path) == ("spec/",)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # src/ns/ has no __init__.py: its packages are the code, never src/ns/ alone.
        (("src/ns/pkg/__init__.py", "src/ns/other/__init__.py"), ("src/ns/other/", "src/ns/pkg/")),
        # two namespace levels
        (("src/a/b/pkg/__init__.py",), ("src/a/b/pkg/",)),
        # a PEP 420 package of modules: the folder itself
        (("src/nsmod/core.py",), ("src/nsmod/",)),
        # a namespace holding only tests is not code
        (("src/pkg/__init__.py", "src/ns/tests/__init__.py"), ("src/pkg/",)),
    ],
    ids=["namespace", "two-levels", "modules", "tests-only"],
)
def test_namespace_packages_under_src(
    repo: GitRepo, files: tuple[str, ...], expected: tuple[str, ...]
) -> None:
    for name in files:
        repo.write(name, "")
    assert find_code_paths(repo.path) == expected


def test_a_namespace_package_gets_its_real_paths_and_check_passes(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("src/acme/billing/__init__.py", "def net(c, r):\n    return c - r\n")
    repo.write("tests/test_billing.py", PASSING)
    repo.commit("namespace package")
    out, review_map = _init_and_check(repo, capsys)
    assert review_map.replay.paths == ("src/acme/billing/",)
    assert '#   paths: ["src/acme/billing/"]' in (repo.path / "review-map.yml").read_text()
    assert "the code (src/acme/billing/) is judged by the base's tests alone" in out


def test_no_code_found_writes_no_placeholder(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("tests/test_x.py", PASSING)
    repo.commit("tests only")
    out, review_map = _init_and_check(repo, capsys)
    assert review_map.replay.paths == ()
    assert review_map.seed == 20260924
    assert "no package or module found" in out
