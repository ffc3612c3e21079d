"""Fixtures of the tasks run's tests: one real local Ray cluster for the slow tier."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.triage.raycluster import Cluster, start_cluster


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Cluster]:
    """One real local Ray cluster with 2 CPUs, started once per test session (under ``-n``,
    once per worker that runs a Ray test: they are one ``xdist_group``, so one worker) and
    shut down at its end, its files (Ray's session dir too) in a temp dir removed then: a
    short one, as Ray's socket paths must stay under 108 bytes. The token the cluster was
    started with is this process's until then (``start_cluster``)."""
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    with tempfile.TemporaryDirectory(prefix="plray-", ignore_cleanup_errors=True) as temp:
        cluster = start_cluster(Path(temp))
        try:
            yield cluster
        finally:
            cluster.stop()
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
