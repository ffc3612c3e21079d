from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from patchlane.infra.cachekey import CacheKey, load_or_create_key
from tests.gitrepo import GitRepo
from tests.sample import SEED_MAP, make_billing_repo

# A gate records the base's dependency map on first use, which runs the base's whole suite
# once more: tests ask for it where they test it (``--dep-map auto``), and no test writes
# into the user's own cache.
os.environ["PATCHLANE_DEP_MAP"] = "off"
# Where a test records one, a recording that hangs fails the test in minutes, not after the
# gate's half hour (a tests' suite records in seconds).
os.environ["PATCHLANE_DEP_MAP_TIMEOUT"] = "300"
# The canary (a random sample of the tests outside the slice) would make every slice of the
# tests' small projects their whole suite: tests ask for it where they test it (a map that
# sets ``replay.canary``).
os.environ["PATCHLANE_CANARY"] = "off"
# Tests read plain output; a CI that sets FORCE_COLOR for its own log would colour it. The
# colour tests set it where they test it.
os.environ.pop("FORCE_COLOR", None)
os.environ["PATCHLANE_CACHE_DIR"] = tempfile.mkdtemp(prefix="patchlane-test-cache-")
atexit.register(shutil.rmtree, os.environ["PATCHLANE_CACHE_DIR"], ignore_errors=True)
# The cache key (``patchlane.infra.cachekey``) too: never the user's own, never in the cache.
os.environ["PATCHLANE_KEY_DIR"] = tempfile.mkdtemp(prefix="patchlane-test-key-")
atexit.register(shutil.rmtree, os.environ["PATCHLANE_KEY_DIR"], ignore_errors=True)


def pytest_report_header(config: pytest.Config) -> str | None:
    """Say which tier runs: the default ``-m 'not slow'`` (pyproject.toml) is the fast one."""
    if config.option.markexpr == "not slow":
        return "patchlane: the fast tier; the slow tier: -m slow; every test: -m ''"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the ``slow`` tests first (in their own order), so that under ``-n`` the longest
    runs start at once and the short tests fill the workers up at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def cache_key() -> CacheKey:
    """The user's cache key as patchlane loads it (here: in the tests' own key directory)."""
    return load_or_create_key()


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """An empty git repository with fixed author, committer and dates."""
    return GitRepo(tmp_path / "repo")


@pytest.fixture(scope="session")
def _billing_templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, GitRepo]:
    """The sample project, built once per test run for each review map (tests copy it)."""
    return {}


@pytest.fixture
def billing(
    tmp_path: Path, request: pytest.FixtureRequest, _billing_templates: dict[str, GitRepo]
) -> GitRepo:
    """The sample project on ``main``, with the patch branch ``agent`` checked out; its
    review map is the seed-shaped one, or the text of the test's ``review_map`` mark. Each
    test gets its own copy of a repository built once per run: the same commit ids."""
    marker = request.node.get_closest_marker("review_map")
    review_map = SEED_MAP if marker is None else str(marker.args[0])
    template = _billing_templates.get(review_map)
    if template is None:
        where = request.getfixturevalue("tmp_path_factory").mktemp("billing-template")
        template = GitRepo(where / "repo")
        make_billing_repo(template, review_map=review_map)
        template.branch("agent")
        _billing_templates[review_map] = template
    return GitRepo.copy_of(template, tmp_path / "repo")
