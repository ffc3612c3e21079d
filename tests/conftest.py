from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo
from tests.sample import make_billing_repo

# What pytest-xdist puts in a worker's environment. The replay's children inherit the
# environment they are started from, as they would on a user's machine, so a worker removes
# these and its children see what they see in a serial run (pytest-benchmark, for one, turns
# itself off with a warning when it finds them, and a project's ``filterwarnings = error``
# makes that warning an internal error of its collection).
XDIST_WORKER_ENV = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        for name in XDIST_WORKER_ENV:
            os.environ.pop(name, None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the ``slow`` tests first (in their own order), so that under ``-n`` the longest
    runs start at once and the short tests fill the workers up at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """An empty git repository with fixed author, committer and dates."""
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def billing(repo: GitRepo, request: pytest.FixtureRequest) -> GitRepo:
    """The sample project on ``main``, with the patch branch ``agent`` checked out; its
    review map is the seed-shaped one, or the text of the test's ``review_map`` mark."""
    marker = request.node.get_closest_marker("review_map")
    if marker is None:
        make_billing_repo(repo)
    else:
        make_billing_repo(repo, review_map=marker.args[0])
    repo.branch("agent")
    return repo
