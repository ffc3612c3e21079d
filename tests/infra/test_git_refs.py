"""An unknown ref: close names for a typo, ``git fetch`` only where a remote may have it."""

from __future__ import annotations

import pytest

from patchlane.errors import GitError
from patchlane.infra import git
from tests.gitrepo import GitRepo, run_patchlane, stderr_lines


@pytest.fixture
def branches(repo: GitRepo) -> GitRepo:
    repo.commit("one")
    repo.git("branch", "adopt")
    repo.git("branch", "release/2.0")
    repo.git("tag", "v1.0")
    return repo


def message(repo: GitRepo, ref: str) -> str:
    with pytest.raises(GitError) as info:
        git.resolve_commit(repo.path, ref)
    return str(info.value)


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        (
            "adpot",
            "unknown ref 'adpot': not a branch, tag or commit in this clone; did you mean 'adopt'?",
        ),
        (
            "refs/heads/adpto",
            "unknown ref 'refs/heads/adpto': not a branch, tag or commit in this clone; did "
            "you mean 'adopt'?",
        ),
        (
            "v1.1",
            "unknown ref 'v1.1': not a branch, tag or commit in this clone; did you mean 'v1.0'?",
        ),
        (
            "zzz",
            "unknown ref 'zzz': not a branch, tag or commit in this clone (branches: adopt, "
            "main, release/2.0)",
        ),
        (  # no remote to fetch from: the local name, and a remote to add first
            "origin/main",
            "unknown ref 'origin/main': not a branch, tag or commit in this clone; did you "
            "mean 'main'? If it is on a remote, fetch it (git remote add origin URL && git "
            "fetch origin main)",
        ),
        (
            "origin/mian",
            "unknown ref 'origin/mian': not a branch, tag or commit in this clone; did you "
            "mean 'main'? If it is on a remote, fetch it (git remote add origin URL && git "
            "fetch origin mian)",
        ),
    ],
)
def test_a_clone_without_remotes_suggests_close_names_and_fetches_only_remote_refs(
    branches: GitRepo, ref: str, expected: str
) -> None:
    assert message(branches, ref) == expected


def test_with_remotes_a_typo_gets_names_and_an_unknown_name_a_fetch(branches: GitRepo) -> None:
    branches.git("remote", "add", "origin", "https://example.invalid/x.git")
    branches.git("update-ref", "refs/remotes/origin/feature-x", "HEAD")
    assert message(branches, "adpot").endswith("did you mean 'adopt'?")
    assert message(branches, "topic").endswith(
        "; if it is on a remote, fetch it (git fetch origin topic)"
    )
    assert message(branches, "origin/feature-y") == (
        "unknown ref 'origin/feature-y': not a branch, tag or commit in this clone; did you "
        "mean 'origin/feature-x'? If it is on a remote, fetch it (git fetch origin feature-y)"
    )


@pytest.mark.slow
def test_the_command_line_shows_the_suggestion_on_one_line(branches: GitRepo) -> None:
    proc = run_patchlane("classify", "--base", "adpot", cwd=branches.path)
    assert proc.returncode == 2
    assert stderr_lines(proc) == [
        "patchlane: error: unknown ref 'adpot': not a branch, tag or commit in this clone; "
        "did you mean 'adopt'?"
    ]
