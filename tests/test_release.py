"""The release's promises: the version lives in one place, ``src/patchlane/__init__.py``;
CHANGELOG.md's newest released version is that version; the changelog is written for users
(Keep a Changelog's headings and categories, an ``Unreleased`` section on top, no issue
numbers or internal refactors). CONTRIBUTING.md's "Cutting a release" says how to keep them
so."""

from __future__ import annotations

import ast
import re
import tomllib
from datetime import date
from pathlib import Path

import patchlane

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = ROOT / "CHANGELOG.md"
# "## [Unreleased]" or "## [1.2.3] - 2026-12-08": every version heading of the file.
VERSION_HEADING = re.compile(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", re.MULTILINE)
CATEGORIES = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def _headings() -> list[tuple[str, str | None]]:
    text = CHANGELOG.read_text(encoding="utf-8")
    return [(m.group(1), m.group(2)) for m in VERSION_HEADING.finditer(text)]


def test_the_newest_released_version_is_the_package_version() -> None:
    released = [(v, d) for v, d in _headings() if v != "Unreleased"]
    assert released, "CHANGELOG.md has no released version"
    version, day = released[0]
    assert version == patchlane.__version__
    assert day is not None, f"[{version}] has no date"
    date.fromisoformat(day)  # a real date, YYYY-MM-DD


def test_unreleased_comes_first_and_versions_descend_with_their_dates() -> None:
    headings = _headings()
    assert headings[0] == ("Unreleased", None)
    released = headings[1:]
    assert all(v != "Unreleased" for v, _ in released)
    numbers = [tuple(int(p) for p in v.split(".")) for v, _ in released]
    assert numbers == sorted(numbers, reverse=True)
    assert len(set(numbers)) == len(numbers)
    days = [date.fromisoformat(d) for _, d in released if d is not None]
    assert len(days) == len(released)
    assert days == sorted(days, reverse=True)


def test_entries_are_grouped_by_keep_a_changelog_categories_only() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    categories = re.findall(r"^### (.+)$", text, re.MULTILINE)
    assert categories
    assert set(categories) <= CATEGORIES


def test_the_changelog_is_written_for_users() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    assert re.search(r"\b[Ii]ssues? \d+", text) is None
    assert "Internal:" not in text


def test_the_version_lives_in_one_place() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"]
    assert pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["hatch"]["version"]["path"] == "src/patchlane/__init__.py"
    assigned = []
    for path in sorted((ROOT / "src" / "patchlane").rglob("*.py")):
        if "example" in path.relative_to(ROOT / "src" / "patchlane").parts:
            continue  # the demo's example is a project of its own
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "__version__" for t in targets):
                    assigned.append(path.relative_to(ROOT).as_posix())
    assert assigned == ["src/patchlane/__init__.py"]


def test_contributing_says_how_a_release_is_cut() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## Cutting a release", 1)[1].split("\n## ", 1)[0]
    for needed in ("src/patchlane/__init__.py", "[Unreleased]", "git tag", "tests/test_release.py"):
        assert needed in section
