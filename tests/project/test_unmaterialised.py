"""Head entries the gate cannot replay: which are review events, and what they say."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.infra.tree import materialise
from patchlane.project.config import parse_review_map
from patchlane.project.unmaterialised import (
    collected_or_covered,
    covered_roots,
    doctest_globs,
    name_problem,
    review_events,
)
from tests.gitrepo import GitRepo, add_gitlink, add_symlink, commit_staged
from tests.sample import SEED_MAP

REVIEW_MAP = parse_review_map(SEED_MAP, "review-map.yml")
TAIL = "the real checkout has it and pytest may collect it; the gate could not replay it"


def sorted_out(repo: GitRepo, tmp_path: Path) -> tuple[list[str], list[str]]:
    root = tmp_path / "tree"
    done = materialise(repo.path, repo.head(), root)
    return review_events(done.skipped, root, REVIEW_MAP)


def test_the_maps_roots_are_the_test_roots_and_every_lanes_paths() -> None:
    roots = covered_roots(REVIEW_MAP)
    assert "tests/" in roots
    assert REVIEW_MAP.property is not None
    assert set(REVIEW_MAP.property.paths) <= set(roots)
    assert REVIEW_MAP.fixture is not None
    assert set(REVIEW_MAP.fixture.paths) <= set(roots)


@pytest.mark.parametrize(
    ("path", "covered"),
    [
        ("tests/test_x.py", True),
        ("tests/data/blob.bin", True),
        ("tools/gen.py", True),  # a Python file anywhere: pytest may collect it
        ("tests", True),  # a submodule or a link where the test root is
        ("docs/notes.md", False),
        ("README", False),
    ],
)
def test_what_pytest_may_collect_or_a_lane_covers(path: str, covered: bool) -> None:
    assert collected_or_covered(path, covered_roots(REVIEW_MAP)) is covered


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("tests/test_a::b.py", "'::' in the path, pytest's node-id separator"),
        ("tests/a::b/test_x.py", "'::' in the path, pytest's node-id separator"),
        ("tests/test_a\nb.py", "unprintable character"),
        ("tests/test_\udcff.py", "unprintable character"),
        ("tests/test_a\\b.py", "backslash"),
        ("tests/test_ok.py", None),
    ],
)
def test_names_no_node_id_can_carry(path: str, problem: str | None) -> None:
    found = name_problem(path)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_skipped_entries_under_the_tests_are_events_the_rest_notes(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    add_symlink(repo, "tests/test_out.py", "../../outside.py")
    add_symlink(repo, "tests/test_gone.py", "nowhere.py")
    add_symlink(repo, "docs/out.md", "../../outside.md")
    repo.write("tests/__pycache__/test_ok.cpython-312.pyc", b"\0")
    repo.commit()
    add_gitlink(repo, "tests/vendored")
    add_gitlink(repo, "docs/theme")
    commit_staged(repo)
    events, notes = sorted_out(repo, tmp_path)
    assert events == [
        f"tests/test_gone.py is not materialised (symlink to tests/nowhere.py, which is not "
        f"in the materialised tree): {TAIL}",
        f"tests/test_out.py is not materialised (symlink target leaves the repository): {TAIL}",
        f"tests/vendored is not materialised (submodule): {TAIL}",
    ]
    assert notes == [
        "not materialised: docs/out.md (symlink target leaves the repository)",
        "not materialised: docs/theme (submodule (not materialised))",
        "not materialised: tests/__pycache__/test_ok.cpython-312.pyc (bytecode: never "
        "materialised)",
    ]


def test_written_names_no_node_id_can_carry_are_events_where_pytest_may_collect_them(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("tests/test_a::b.py", "def test_x():\n    pass\n")
    repo.write("docs/a::b/notes.md", "# notes\n")  # '::': wherever it is
    repo.write(b"tests/test_\xff.py", "def test_x():\n    pass\n")
    repo.write("tests/test_a\nb.py", "def test_x():\n    pass\n")
    repo.write("tools\x01/test_gen.py", "def test_x():\n    pass\n")
    repo.write("tools\x01/more/test_gen.py", "def test_x():\n    pass\n")
    repo.write("docs/Icon\r", "")  # far from anything pytest collects: harmless
    repo.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    repo.commit()
    events, notes = sorted_out(repo, tmp_path)
    assert notes == []
    assert [e.split(" has a name ", 1)[0] for e in events] == [
        "docs/a::b",  # the directory stands for its files
        "'tests/test_a\\nb.py'",
        "tests/test_a::b.py",
        "'tests/test_\\udcff.py'",
        "'tools\\x01'",
    ]
    assert all(e.isprintable() for e in events)
    assert [e.endswith(TAIL) for e in events] == [False, True, False, True, True]
    assert events[2] == (
        "tests/test_a::b.py has a name the slice and node-id format cannot carry ('::' in the "
        "path, pytest's node-id separator): the real checkout has it and pytest may collect "
        "it; the gate cannot tell its tests from another file's, so its replay is no evidence"
    )


@pytest.mark.parametrize(("path", "event"), [("tests/a\\b.md", True), ("docs/a\\b.md", False)])
def test_a_backslash_name_is_skipped_and_an_event_under_the_tests(
    repo: GitRepo, tmp_path: Path, path: str, event: bool
) -> None:
    repo.write(path, "# notes\n")
    repo.commit()
    events, notes = sorted_out(repo, tmp_path)
    found = events if event else notes
    assert len(found) == 1 and len(events + notes) == 1
    assert path in found[0] and "not materialised" in found[0] and "backslash in " in found[0]


def test_a_kept_directory_link_with_a_name_no_node_id_can_carry_is_an_event(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("tests/real/test_x.py", "def test_x():\n    pass\n")
    add_symlink(repo, "tests/via::link", "real")
    repo.commit()
    events, notes = sorted_out(repo, tmp_path)
    assert (tmp_path / "tree/tests/via::link").is_symlink()  # kept: it stays in the tree
    assert notes == []
    assert [e.split(" has a name ", 1)[0] for e in events] == ["tests/via::link"]


def test_the_doctest_globs_are_pytests_default_and_every_configured_one(tmp_path: Path) -> None:
    assert doctest_globs(tmp_path) == ("test*.txt",)
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -q --doctest-glob=*.md\n")
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\naddopts = --doctest-glob '*.rst'\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = ["--doctest-glob", "guide*.txt"]\n'
    )
    (tmp_path / "tox.ini").write_bytes(b"\xff[pytest")  # unreadable: adds nothing
    assert doctest_globs(tmp_path) == ("test*.txt", "*.md", "*.rst", "guide*.txt")


def test_a_skipped_text_doctest_outside_the_tests_is_an_event(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("pytest.ini", "[pytest]\naddopts = --doctest-glob=*.md\n")
    add_symlink(repo, "docs/guide.md", "../../elsewhere/guide.md")
    add_symlink(repo, "docs/test_notes.txt", "gone.txt")  # pytest's default glob
    add_symlink(repo, "docs/notes.rst", "gone.rst")
    repo.commit()
    events, notes = sorted_out(repo, tmp_path)
    assert [e.split(" is not materialised ", 1)[0] for e in events] == [
        "docs/guide.md",
        "docs/test_notes.txt",
    ]
    assert notes == [
        "not materialised: docs/notes.rst (symlink to docs/gone.rst, which is not in the "
        "materialised tree)"
    ]
