"""What the gate cannot replay, and a head map the base cannot read, are review events.

Each test commits a project on ``main`` whose full suite passes, then a patch on ``agent``
that would earn ``accept_for_review`` but for one thing the real checkout has and the gate
cannot materialise or name (issue 19, class 5), or a review map of its own that does not
load. ``patchlane gate --replay local`` must say ``undecided`` and name the path and why in
``verdict.json``; never ``accept_for_review``, nor the bad-input exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patchlane.main import main
from tests.gate.evidence import gate, load
from tests.gitrepo import GitRepo, add_gitlink, add_symlink, commit_staged
from tests.sample import LOCK, SEED_MAP, make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a real local replay

CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = "from billing.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
LANES = ("property", "fixture", "freeze", "replay")
RED_TEST = "def test_red():\n    assert False\n"


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/billing/calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.commit("calc and its test")
    repo.branch("agent")
    # A change the replay reaches and passes: alone, it earns accept_for_review.
    repo.write("src/billing/calc.py", CALC + "\n# tidy\n")
    return repo


def reasons(out: Path) -> list[dict[str, Any]]:
    found = load(out, "verdict.json")["reasons"]
    assert isinstance(found, list)
    return found


def test_the_patch_alone_is_accepted(project: GitRepo, tmp_path: Path) -> None:
    project.commit("tidy")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("../../outside/test_evil.py", "symlink target leaves the repository"),
        ("/usr/lib/python3/test_evil.py", "symlink to an absolute path leaves the repository"),
        ("test_gone.py", "symlink to tests/test_gone.py, which is not in the materialised tree"),
    ],
    ids=["escaping", "absolute", "dangling"],
)
def test_a_symlink_under_the_tests_the_gate_cannot_write_is_undecided(
    project: GitRepo, tmp_path: Path, target: str, why: str
) -> None:
    add_symlink(project, "tests/test_evil.py", target)
    project.commit("tidy, and a test file that is a link")
    out = tmp_path / "ev"
    assert gate(project, out) == 3, reasons(out)
    assert load(out, "verdict.json")["verdict"] == "undecided"
    # The one reason: nothing else stands between this patch and accept_for_review.
    assert [(r["rule"], r["lane"], r["message"]) for r in reasons(out)] == [
        (
            6,
            "replay",
            f"tests/test_evil.py is not materialised ({why}): the real checkout has it and "
            "pytest may collect it; the gate could not replay it",
        )
    ]


def test_a_gitlink_under_the_tests_is_undecided(project: GitRepo, tmp_path: Path) -> None:
    project.git("add", "src")
    add_gitlink(project, "tests/vendored", project.head())
    commit_staged(project, "tidy, and a submodule of tests")
    assert "160000 commit" in project.git("ls-tree", "HEAD", "tests/vendored")
    out = tmp_path / "ev"
    assert gate(project, out) == 3, reasons(out)
    assert [(r["rule"], r["lane"], r["message"].split(": ", 1)[0]) for r in reasons(out)] == [
        (6, "replay", "tests/vendored is not materialised (submodule)")
    ]


@pytest.mark.parametrize(
    ("name", "shown", "why"),
    [
        ("tests/test_a\\b.py", "tests/test_a\\b.py", "backslash"),
        ("tests/test_a::b.py", "tests/test_a::b.py", "'::' in the path"),
        ("tests/test_a\nb.py", "'tests/test_a\\nb.py'", "unprintable character"),
        (b"tests/test_\xff.py", "'tests/test_\\udcff.py'", "unprintable character"),
    ],
    ids=["backslash", "separator", "newline", "not-utf8"],
)
def test_a_test_file_named_beyond_the_node_id_format_is_undecided(
    project: GitRepo, tmp_path: Path, name: str | bytes, shown: str, why: str
) -> None:
    project.write(name, RED_TEST)
    project.commit("tidy, and a red test with an odd name")
    out = tmp_path / "ev"
    assert gate(project, out) == 3, reasons(out)
    assert load(out, "verdict.json")["verdict"] == "undecided"
    assert {(r["rule"], r["lane"]) for r in reasons(out)} == {(6, "replay")}
    messages = [r["message"] for r in reasons(out)]
    # A '::' file may even run, but its node ids read as another file's.
    tail = "so its replay is no evidence" if "::" in shown else "the gate could not replay it"
    assert any(m.startswith(f"{shown} ") and why in m and m.endswith(tail) for m in messages), (
        messages
    )
    assert all(m.isprintable() for m in messages)


def test_a_dangling_text_doctest_the_project_collects_is_undecided(
    project: GitRepo, tmp_path: Path
) -> None:
    # pytest would collect docs/guide.md as a doctest in the real checkout, and fail on it.
    project.git("checkout", "-q", "--", "src/billing/calc.py")
    project.git("checkout", "-q", "main")
    project.write("pytest.ini", "[pytest]\npythonpath = src\naddopts = --doctest-glob=*.md\n")
    project.commit("doctests in the docs")
    project.git("checkout", "-q", "agent")
    project.git("merge", "-q", "--ff-only", "main")
    project.write("src/billing/calc.py", CALC + "\n# tidy\n")
    add_symlink(project, "docs/guide.md", "../../elsewhere/guide.md")
    project.commit("tidy, and a guide that is a link out of the tree")
    out = tmp_path / "ev"
    assert gate(project, out) == 3, reasons(out)
    assert [(r["rule"], r["lane"], r["message"].split(" (", 1)[0]) for r in reasons(out)] == [
        (6, "replay", "docs/guide.md is not materialised")
    ]


def test_a_link_outside_every_collected_or_mapped_path_is_no_event(
    project: GitRepo, tmp_path: Path
) -> None:
    # Not a Python file, under no test root and no lane's path: pytest does not collect it.
    add_symlink(project, "docs/elsewhere.md", "../../elsewhere/notes.md")
    project.commit("tidy, and a docs link out of the tree")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)


# --- a head review map the base cannot read -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (b"lanes: [this is: not valid\n", "review-map.yml:"),
        (b"x: &a [1, 1]\ny: [*a, *a]\n" + SEED_MAP.encode(), "anchors and aliases"),
        (SEED_MAP.encode() + b"bogus: 1\n", "bogus"),
        (b"\xff\xfe" + SEED_MAP.encode(), "UTF-8"),
    ],
    ids=["yaml-error", "alias-bomb", "unknown-key", "not-utf8"],
)
def test_a_head_map_that_does_not_load_is_undecided_not_exit_2(
    project: GitRepo, tmp_path: Path, text: bytes, why: str
) -> None:
    project.write("review-map.yml", text)
    project.commit("tidy, and a map of the patch's own")
    out = tmp_path / "ev"
    assert gate(project, out) == 3, reasons(out)
    assert load(out, "classify.json")["map"]["source"] == "base"
    assert [(r["rule"], r["lane"]) for r in reasons(out)] == [(6, "classify")]
    messages = [r["message"] for r in reasons(out)]
    assert any(
        m.startswith("the patch's review map cannot be read: review-map.yml") and why in m
        for m in messages
    ), messages
    # ``patchlane verdict`` on the written evidence reads the same reason from classify.json.
    again = tmp_path / "again.json"
    argv = [f"--{lane}-report={out / f'{lane}-report.json'}" for lane in LANES]
    argv += [f"--classify={out / 'classify.json'}", f"--out={again}"]
    assert main(["-q", "verdict", *argv]) == 3
    assert json.loads(again.read_text("utf-8"))["reasons"] == reasons(out)


def test_a_bad_head_map_is_the_input_when_the_base_has_none(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_billing_repo(repo)
    repo.git("rm", "-q", "review-map.yml")
    repo.git("commit", "-q", "-m", "no map")
    repo.branch("agent")
    repo.write("review-map.yml", "x: &a [1]\ny: *a\n")
    repo.commit("a map of the patch's own")
    assert gate(repo, tmp_path / "ev") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("patchlane: review-map.yml:") or "review-map.yml:" in err[-1]
    assert "anchors and aliases" in err[-1]


@pytest.mark.parametrize("text", [b"\xff\xfe{}", b'{"files": [], "files": []}'])
def test_a_head_lock_that_does_not_load_is_already_a_fixture_red(
    project: GitRepo, tmp_path: Path, text: bytes
) -> None:
    project.write(LOCK, text)
    project.commit("tidy, and a lock of the patch's own")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    first = reasons(out)[0]
    assert (first["rule"], first["lane"], first["effect"]) == (2, "fixture", "reject")
    assert LOCK in first["message"]
