"""Fixtures of the tasks run's tests: one real local Ray cluster for the slow tier."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.triage.raycluster import Cluster, start_cluster


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Cluster]:
    """One real local Ray cluster with 2 CPUs, started once per test session (under ``-n``,
    once per worker that runs a Ray test: they are one ``xdist_group``, so one worker) and
    shut down at its end. A short temp dir: Ray's socket paths must stay under 108 bytes."""
    with tempfile.TemporaryDirectory(prefix="plray-") as temp:
        cluster = start_cluster(Path(temp))
        try:
            yield cluster
        finally:
            cluster.stop()
