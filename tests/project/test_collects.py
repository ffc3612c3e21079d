"""What the project's pytest collects, read from a commit's configuration (``project.collects``)."""

from __future__ import annotations

import pytest

from patchlane.project.collects import collects_at
from tests.gitrepo import GitRepo

PYPROJECT = """\
[tool.pytest.ini_options]
testpaths = ["tests", "./docs/"]
addopts = "--doctest-glob=*.md -q"
"""


def committed(repo: GitRepo, files: dict[str, str]) -> str:
    for path, content in {"README.md": "x\n", **files}.items():
        repo.write(path, content)
    return repo.commit("base")


def test_without_configuration_pytests_defaults_hold_everywhere(repo: GitRepo) -> None:
    suite = collects_at(repo.path, committed(repo, {}))
    assert suite.testpaths == ()
    assert suite.why("docs/test_api.py") == "a test module by python_files (test_*.py *_test.py)"
    assert suite.why("docs/test_guide.txt") == "a text doctest by --doctest-glob test*.txt"
    assert suite.why("docs/guide.md") is None
    assert suite.why("docs/conf.py") is None


def test_testpaths_and_doctest_globs_of_the_configuration(repo: GitRepo) -> None:
    suite = collects_at(repo.path, committed(repo, {"pyproject.toml": PYPROJECT, "docs/a.md": ""}))
    assert suite.testpaths == ("tests", "docs")
    assert suite.why("docs/guide.md") == "a text doctest by --doctest-glob *.md"
    assert suite.is_test_file("tests/deep/test_x.py")
    assert not suite.is_test_file("notes/guide.md")  # outside testpaths
    assert not suite.is_test_file("src/test_inline.py")


def test_the_file_pytest_uses_decides_testpaths_and_python_files(repo: GitRepo) -> None:
    # pytest.ini wins over pyproject.toml for its options; --doctest-glob is read from
    # every root file's addopts (more, never fewer).
    ini = "[pytest]\ntestpaths = checks\npython_files = check_*.py\n"
    suite = collects_at(
        repo.path,
        committed(repo, {"pytest.ini": ini, "pyproject.toml": PYPROJECT, "checks/a.py": ""}),
    )
    assert suite.testpaths == ("checks",)
    assert suite.is_test_file("checks/check_a.py")
    assert not suite.is_test_file("checks/test_a.py")
    assert suite.is_test_file("checks/guide.md")


@pytest.mark.parametrize(
    ("testpaths", "inside", "outside"),
    [
        ("docs/*", "docs/a/guide.md", "src/guide.md"),  # a glob: matched, wider across "/"
        (".", "src/guide.md", None),  # the root itself
        ("missing", "src/guide.md", None),  # names nothing: pytest collects from the root
    ],
)
def test_testpaths_globs_the_root_and_entries_that_name_nothing(
    repo: GitRepo, testpaths: str, inside: str, outside: str | None
) -> None:
    config = f"[pytest]\ntestpaths = {testpaths}\naddopts = --doctest-glob=*.md\n"
    suite = collects_at(repo.path, committed(repo, {"pytest.ini": config, "docs/a/x.md": ""}))
    assert suite.is_test_file(inside)
    if outside is not None:
        assert not suite.is_test_file(outside)
