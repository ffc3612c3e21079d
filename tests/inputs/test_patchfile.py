"""``apply_patch``: a diff or a mailbox becomes a commit object on the base, in real repos,
and the user's work tree, index and refs stay as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.errors import GitError, PatchApplyError
from patchlane.inputs.patchfile import apply_patch
from tests.gitrepo import GitRepo

CALC = "".join(f"line {n}\n" for n in range(1, 21))


def state(repo: GitRepo) -> tuple[str, str, str, str]:
    """What the user owns: HEAD, the refs, the index entries and the work tree's status."""
    return (
        repo.git("rev-parse", "HEAD"),
        repo.git("for-each-ref", "--format=%(refname) %(objectname)"),
        repo.git("ls-files", "--stage"),
        repo.git("status", "--porcelain", "--untracked-files=all"),
    )


@pytest.fixture
def calc(repo: GitRepo) -> GitRepo:
    """A repo with ``src/calc.py`` on ``main`` and a branch ``agent`` checked out."""
    repo.write("src/calc.py", CALC)
    repo.write("README.md", "readme\n")
    repo.commit("base")
    repo.branch("agent")
    return repo


def agent_commit(repo: GitRepo, edits: dict[str, str | bytes], message: str = "edit") -> str:
    for path, content in edits.items():
        repo.write(path, content)
    return repo.commit(message)


def test_a_unified_diff_becomes_a_commit_on_the_base_with_the_same_tree(calc: GitRepo) -> None:
    agent = agent_commit(calc, {"src/calc.py": CALC.replace("line 12\n", "line twelve\n")})
    diff = calc.git("diff", "main", "agent").encode()
    calc.checkout("main")
    before = state(calc)
    commit = apply_patch(calc.path, "main", diff, "agent.diff")
    assert state(calc) == before
    assert calc.git("rev-parse", f"{commit}^{{tree}}") == calc.git("rev-parse", f"{agent}^{{tree}}")
    assert calc.git("rev-parse", f"{commit}^") == calc.git("rev-parse", "main")
    # No ref points at it: the commit is an object, not a branch.
    assert commit not in calc.git("for-each-ref", "--format=%(objectname)")


def test_the_same_patch_gives_the_same_commit_whatever_its_name(calc: GitRepo) -> None:
    agent_commit(calc, {"src/calc.py": CALC.replace("line 3\n", "line three\n")})
    diff = calc.git("diff", "main", "agent").encode()
    first = apply_patch(calc.path, "main", diff, "agent.diff")
    assert apply_patch(calc.path, "main", diff, "elsewhere/other.patch") == first
    # A different patch is a different commit.
    other = diff.replace(b"+line three", b"+line THREE")
    assert apply_patch(calc.path, "main", other, "agent.diff") != first


def test_a_binary_diff_applies_byte_for_byte(calc: GitRepo) -> None:
    blob = bytes(range(256)) * 4 + b"\0\0PNG"
    agent_commit(calc, {"assets/logo.png": blob})
    diff = calc.git("diff", "--binary", "main", "agent").encode("utf-8", "surrogateescape")
    commit = apply_patch(calc.path, "main", diff, "agent.diff")
    shown = calc.git("cat-file", "blob", f"{commit}:assets/logo.png")
    assert shown.encode("utf-8", "surrogateescape") == blob


def test_a_binary_change_without_its_data_is_refused_saying_how_to_make_one(
    calc: GitRepo,
) -> None:
    agent_commit(calc, {"assets/logo.png": b"\0\1\2binary"})
    diff = calc.git("diff", "main", "agent").encode()
    assert b"Binary files" in diff
    with pytest.raises(PatchApplyError) as caught:
        apply_patch(calc.path, "main", diff, "agent.diff")
    assert str(caught.value) == (
        "agent.diff: assets/logo.png: a binary change without its data "
        "(make the patch with git diff --binary or git format-patch)"
    )


def test_a_format_patch_of_two_commits_applies_both_in_order(calc: GitRepo) -> None:
    agent_commit(calc, {"src/calc.py": CALC.replace("line 5\n", "line five\n")}, "first step")
    second = agent_commit(
        calc, {"src/calc.py": CALC.replace("line 5\n", "line 5.0\n")}, "second step\n\nwhy it is"
    )
    mbox = calc.git("format-patch", "--stdout", "main..agent").encode()
    before = state(calc)
    commit = apply_patch(calc.path, "main", mbox, "agent.mbox")
    assert state(calc) == before
    log = calc.git("log", "--format=%s|%an|%ae|%cn|%ce", f"main..{commit}").splitlines()
    # The mails' authors and messages, committed by patchlane, oldest first.
    assert log == [
        "second step|Agent Smith|agent@example.invalid|patchlane|patchlane@invalid",
        "first step|Agent Smith|agent@example.invalid|patchlane|patchlane@invalid",
    ]
    assert calc.git("log", "-1", "--format=%B", commit) == "second step\n\nwhy it is\n\n"
    assert calc.git("rev-parse", f"{commit}^{{tree}}") == calc.git(
        "rev-parse", f"{second}^{{tree}}"
    )
    assert apply_patch(calc.path, "main", mbox, "agent.mbox") == commit


def test_a_mailbox_keeps_the_carriage_returns_of_a_crlf_file(repo: GitRepo) -> None:
    repo.write("win.txt", b"one\r\ntwo\r\n")
    repo.commit("base")
    repo.branch("agent")
    agent = agent_commit(repo, {"win.txt": b"one\r\n2\r\n"})
    mbox = repo.git("format-patch", "--stdout", "main..agent").encode()
    commit = apply_patch(repo.path, "main", mbox, "agent.mbox")
    assert repo.git("rev-parse", f"{commit}^{{tree}}") == repo.git("rev-parse", f"{agent}^{{tree}}")


def test_a_patch_that_does_not_apply_names_its_first_failing_hunk(calc: GitRepo) -> None:
    agent_commit(calc, {"src/calc.py": CALC.replace("line 12\n", "line twelve\n")})
    diff = calc.git("diff", "main", "agent").encode()
    calc.checkout("main")
    calc.write("src/calc.py", CALC.replace("line 12\n", "line 12 moved on\n"))
    calc.commit("main moved on")
    calc.write("README.md", "an uncommitted edit\n")
    before = state(calc)
    with pytest.raises(PatchApplyError) as caught:
        apply_patch(calc.path, "main", diff, "agent.diff")
    assert str(caught.value) == (
        "agent.diff: does not apply: src/calc.py hunk @@ -9,7 +9,7 @@ (patch does not apply)"
    )
    assert state(calc) == before


def test_the_failing_patch_of_a_series_is_named_with_its_subject(calc: GitRepo) -> None:
    agent_commit(calc, {"notes.txt": "new\n"}, "add notes")
    agent_commit(calc, {"README.md": "agent readme\n"}, "reword readme")
    mbox = calc.git("format-patch", "--stdout", "main..agent").encode()
    calc.checkout("main")
    calc.write("README.md", "someone else's readme\n")
    calc.commit("main moved on")
    with pytest.raises(PatchApplyError) as caught:
        apply_patch(calc.path, "main", mbox, "agent.mbox")
    assert str(caught.value) == (
        "agent.mbox: patch 2 of 2 (reword readme): does not apply: README.md hunk "
        "@@ -1 +1 @@ (patch does not apply)"
    )


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (b"", "agent.diff: empty patch: nothing to apply"),
        (b"\n  \n", "agent.diff: empty patch: nothing to apply"),
        (
            b"please fix the bug in calc.py\n",
            "agent.diff: not a patch: git apply found no diff in it (expected a unified "
            "diff, git diff --binary or git format-patch output)",
        ),
        (
            b"--- a/gone.py\n+++ b/gone.py\n@@ -1 +1 @@\n-a\n+b\n",
            "agent.diff: does not apply: gone.py does not exist at the base",
        ),
        (
            b"--- /dev/null\n+++ b/README.md\n@@ -0,0 +1 @@\n+new\n",
            "agent.diff: does not apply: README.md already exists at the base",
        ),
        (
            b"--- a/README.md\n+++ b/README.md\n@@ -1,5 +1,5 @@\n-readme\n+x\n",
            "agent.diff: corrupt patch at line 6 of its diff",
        ),
    ],
)
def test_input_that_is_no_applicable_patch_gets_one_clear_line(
    calc: GitRepo, patch: bytes, message: str
) -> None:
    before = state(calc)
    with pytest.raises(PatchApplyError) as caught:
        apply_patch(calc.path, "main", patch, "agent.diff")
    assert str(caught.value) == message
    assert state(calc) == before


def test_a_mail_without_a_diff_is_not_a_patch(calc: GitRepo) -> None:
    mail = b"From: Ann <ann@example.invalid>\nSubject: hello\n\nno diff here\n"
    with pytest.raises(PatchApplyError) as caught:
        apply_patch(calc.path, "main", mail, "agent.mbox")
    assert str(caught.value) == "agent.mbox: not a patch: no mail in it carries a diff"


def test_an_unknown_base_is_a_git_error(calc: GitRepo) -> None:
    with pytest.raises(GitError):
        apply_patch(calc.path, "no-such-branch", b"--- a/x\n", "agent.diff")


def test_a_patch_cannot_write_into_the_git_directory(calc: GitRepo, tmp_path: Path) -> None:
    patch = b"--- /dev/null\n+++ b/.git/hooks/post-checkout\n@@ -0,0 +1 @@\n+echo owned\n"
    with pytest.raises(PatchApplyError):
        apply_patch(calc.path, "main", patch, "agent.diff")
    assert not (calc.path / ".git" / "hooks" / "post-checkout").exists()
