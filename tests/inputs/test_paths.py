"""Repository-relative POSIX paths: what is refused, prefix matching, symlinks on the way."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.inputs.paths import path_problem, symlink_on_way, to_fs, under, under_any


@pytest.mark.parametrize(
    "path",
    ["a", "src/billing/", "tests/fixtures/billing/LOCK.json", "a b/c\td", "café/é.json", ".hidden"],
)
def test_safe_paths_are_accepted(path: str) -> None:
    assert path_problem(path) is None


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("", "empty"),
        ("/etc/passwd", "absolute"),
        ("/", "absolute"),
        ("..", "'..'"),
        ("../x", "'..'"),
        ("a/../../x", "'..'"),
        ("a/..", "'..'"),
        ("src\\billing", "backslash"),
        ("C:\\x", "backslash"),
        ("a//b", "empty or '.'"),
        ("./a", "empty or '.'"),
        ("a/./b", "empty or '.'"),
        (".", "empty or '.'"),
        ("a//", "empty or '.'"),
        ("a\x00b", "NUL"),
    ],
)
def test_unsafe_paths_are_refused(path: str, words: str) -> None:
    problem = path_problem(path)
    assert problem is not None
    assert words in problem


def test_directory_paths_can_be_refused_where_a_file_is_needed() -> None:
    assert path_problem("tests/LOCK.json", directory_ok=False) is None
    problem = path_problem("tests/", directory_ok=False)
    assert problem is not None and "directory" in problem
    assert path_problem("tests/") is None


@pytest.mark.parametrize(
    ("path", "prefix", "expected"),
    [
        ("src/billing/x.py", "src/billing/", True),
        ("src/billing/deep/x.py", "src/billing/", True),
        ("src/billing", "src/billing/", False),
        ("src/billing_v2.py", "src/billing/", False),
        ("src/billing/x.py", "src/billing", True),
        ("src/billing", "src/billing", True),
        ("src/billing_v2.py", "src/billing", False),
        ("src/billing.py", "src/billing", False),
        ("docs/a.md", "docs/", True),
        ("xdocs/a.md", "docs/", False),
    ],
)
def test_under(path: str, prefix: str, expected: bool) -> None:
    assert under(path, prefix) is expected


def test_under_any() -> None:
    assert under_any("src/quota/x.py", ("src/billing/", "src/quota/"))
    assert not under_any("src/other/x.py", ("src/billing/", "src/quota/"))
    assert not under_any("anything", ())


def test_to_fs(tmp_path: Path) -> None:
    assert to_fs(tmp_path, "a/b/c.txt") == tmp_path / "a" / "b" / "c.txt"
    assert to_fs(tmp_path, "a/b/") == tmp_path / "a" / "b"


def test_symlink_on_way(tmp_path: Path) -> None:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "real" / "sub" / "f.txt").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "inner").symlink_to("sub")
    assert symlink_on_way(tmp_path, "real/sub/f.txt") is None
    assert symlink_on_way(tmp_path, "link/sub/f.txt") == "link"
    assert symlink_on_way(tmp_path, "real/inner/f.txt") == "real/inner"
    assert symlink_on_way(tmp_path, "real/inner/") == "real/inner"
    assert symlink_on_way(tmp_path, "missing/link/f.txt") is None
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert symlink_on_way(tmp_path, "dangling") == "dangling"
