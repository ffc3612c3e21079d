from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitrepo import GitRepo
from tests.sample import make_billing_repo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """An empty git repository with fixed author, committer and dates."""
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def billing(repo: GitRepo) -> GitRepo:
    """The sample project on ``main``, with the patch branch ``agent`` checked out."""
    make_billing_repo(repo)
    repo.branch("agent")
    return repo
