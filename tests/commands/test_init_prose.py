"""``patchlane init`` knows prose: the top-level changelog, authors, readme and licence files
and the documentation folders become ``ignore`` entries with reasons, so a commit that
touches only them is covered by the map; ``.patchlane/`` is appended to an existing
``.gitignore`` once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from patchlane.main import main
from patchlane.project.config import parse_review_map
from tests.gitrepo import GitRepo

PROSE = (
    "AUTHORS", "CHANGELOG.md", "CHANGES", "CONTRIBUTORS.md", "COPYING", "HISTORY.rst",
    "LICENSE.txt", "NEWS", "README.rst", "readme.md",
)  # fmt: skip


def _init(repo: GitRepo, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["--repo", os.fspath(repo.path), *args, "init"]) == 0
    return capsys.readouterr().out


def _base(repo: GitRepo) -> None:
    repo.write("pkg/__init__.py", "def f():\n    return 1\n")
    repo.write("tests/test_pkg.py", "from pkg import f\n\n\ndef test_f():\n    assert f() == 1\n")


def test_prose_files_and_doc_folders_are_ignore_entries_with_reasons(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _base(repo)
    for name in PROSE:
        repo.write(name, "prose\n")
    repo.write("docs/index.md", "# docs\n")
    repo.write("doc/guide.txt", "guide\n")
    repo.write("changelog.d/123.bugfix.md", "fixed\n")
    # Not prose: a folder with Python in it, a link, a file that only contains the word.
    repo.write("news/__init__.py", "")
    repo.write("news/feed.py", "X = 1\n")
    (repo.path / "HISTORY-link").symlink_to(tmp_path)
    repo.write("my_readme_tool.py", "")
    repo.commit("a project with prose")
    out = _init(repo, capsys)
    text = (repo.path / "review-map.yml").read_text("utf-8")
    entries = parse_review_map(text, "review-map.yml").ignore
    assert [e.path for e in entries] == [
        *PROSE[:9],
        "changelog.d/",
        "doc/",
        "docs/",
        "readme.md",
    ]
    reasons = {e.path: e.reason for e in entries}
    assert reasons["CHANGELOG.md"] == "release notes: prose, no code runs it"
    assert reasons["AUTHORS"] == "the list of authors: prose, no code runs it"
    assert reasons["docs/"].startswith("documentation: prose")
    assert "Delete an entry to have changes there reviewed" in text
    assert "note: prose and tools written as ignore entries (AUTHORS, CHANGELOG.md" in out
    assert main(["--repo", os.fspath(repo.path), "-q", "check"]) == 0


def test_the_prose_a_code_commit_touches_is_covered_by_the_map(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _base(repo)
    repo.write("CHANGELOG.md", "## 1.0\n")
    repo.write("AUTHORS", "someone\n")
    repo.commit("project")
    _init(repo, capsys)
    repo.commit("patchlane init")
    repo.branch("fix")
    repo.write("pkg/__init__.py", "def f():\n    return 1  # fixed\n")
    repo.write("CHANGELOG.md", "## 1.1\n- fixed a bug\n")
    repo.write("AUTHORS", "someone\nsomeone else\n")
    repo.commit("a fix, its changelog entry, a new author")
    main(["--repo", os.fspath(repo.path), "--json", "classify", "--base", "main"])
    data = json.loads(capsys.readouterr().out)
    # The prose needs no entry by hand: neither file is unmapped (whether the code is
    # covered is lanes.replay.paths's business, not the prose's).
    assert not {"CHANGELOG.md", "AUTHORS"} & set(data["unmapped"])
    ignored = {f["path"]: f.get("ignored") for f in data["files"]}
    assert ignored["CHANGELOG.md"] == "release notes: prose, no code runs it"
    assert ignored["AUTHORS"] == "the list of authors: prose, no code runs it"


def test_patchlane_folder_is_appended_to_gitignore_once(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _base(repo)
    repo.write(".gitignore", "*.pyc")  # no newline at the end
    repo.commit("project")
    out = _init(repo, capsys)
    assert "wrote .gitignore: appended .patchlane/ (gate's evidence)" in out
    gitignore = (repo.path / ".gitignore").read_text()
    assert gitignore == "*.pyc\n# patchlane gate's evidence\n.patchlane/\n"
    # Git now ignores what a gate writes.
    (repo.path / ".patchlane").mkdir()
    (repo.path / ".patchlane" / "verdict.json").write_text("{}")
    assert ".patchlane" not in repo.git("status", "--porcelain")
    # Again, with --force: never a second rule.
    assert main(["--repo", os.fspath(repo.path), "init", "--force"]) == 0
    out = capsys.readouterr().out
    assert ".gitignore" not in out
    assert (repo.path / ".gitignore").read_text() == gitignore


def test_any_spelling_git_honours_counts_as_already_ignored(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _base(repo)
    repo.write(".gitignore", "/.patch*/\n")
    repo.commit("project")
    out = _init(repo, capsys)
    assert ".gitignore" not in out
    assert (repo.path / ".gitignore").read_text() == "/.patch*/\n"


def test_without_a_gitignore_none_is_made_and_the_note_says_so(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _base(repo)
    repo.commit("project")
    out = _init(repo, capsys)
    assert not (repo.path / ".gitignore").exists()
    assert "add .patchlane/ to .gitignore" in out


def test_a_symlinked_gitignore_is_never_written_through(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _base(repo)
    outside = tmp_path / "elsewhere.gitignore"
    outside.write_text("*.pyc\n")
    (repo.path / ".gitignore").symlink_to(outside)
    repo.commit("project")
    out = _init(repo, capsys)
    assert "wrote .gitignore" not in out
    assert outside.read_text() == "*.pyc\n"


def test_tool_folders_and_build_files_no_code_or_test_names_are_ignore_entries(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _base(repo)
    repo.write("benchmarks/bench_f.py", "from pkg import f\n\nprint(f())\n")
    repo.write("Makefile", "bench:\n\tpython benchmarks/bench_f.py\n")
    # Named by a test: the suite runs the examples, so they stay judged.
    repo.write("examples/demo.py", "print('demo')\n")
    repo.write(
        "tests/test_examples.py",
        "import pathlib, runpy\n\n\ndef test_demo():\n"
        "    runpy.run_path(str(pathlib.Path(__file__).parents[1] / 'examples' / 'demo.py'))\n",
    )
    # Not a tool folder by its name: left to the user (rule 5 says so at the gate).
    repo.write("helpers/h.py", "X = 1\n")
    repo.commit("a project with tools")
    _init(repo, capsys)
    entries = parse_review_map((repo.path / "review-map.yml").read_text("utf-8"), "m").ignore
    reasons = {e.path: e.reason for e in entries}
    assert "benchmarks/" in reasons and "neither the code nor the tests" in reasons["benchmarks/"]
    assert "Makefile" in reasons
    assert "examples/" not in reasons
    assert "helpers/" not in reasons


def test_a_tool_folder_the_code_imports_stays_judged(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write(
        "pkg/__init__.py", "from scripts import helper\n\n\ndef f():\n    return helper.ONE\n"
    )
    repo.write("scripts/__init__.py", "")
    repo.write("scripts/helper.py", "ONE = 1\n")
    repo.write("tests/test_pkg.py", "from pkg import f\n\n\ndef test_f():\n    assert f() == 1\n")
    repo.commit("code that imports its scripts folder")
    _init(repo, capsys)
    entries = parse_review_map((repo.path / "review-map.yml").read_text("utf-8"), "m").ignore
    assert "scripts/" not in {e.path for e in entries}
