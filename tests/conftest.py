from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitrepo import GitRepo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """An empty git repository with fixed author, committer and dates."""
    return GitRepo(tmp_path / "repo")
