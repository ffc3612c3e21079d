"""The recorded scenarios as the fast tests read them: their directories and evidence."""

from __future__ import annotations

from pathlib import Path

from patchlane.gate.reports import Evidence, read_evidence
from tests.recorded.regenerate import HERE, SCENARIOS, Scenario

NAMES = tuple(s.name for s in SCENARIOS)
BY_NAME = {s.name: s for s in SCENARIOS}


def directory(name: str) -> Path:
    """The checked-in evidence directory of the scenario ``name``."""
    return HERE / name


def evidence(name: str) -> Evidence:
    """The scenario ``name``'s evidence, read by the package's strict readers."""
    return read_evidence(directory(name))


def scenario(name: str) -> Scenario:
    """The scenario ``name`` (its patch, verdict and deciding rule)."""
    return BY_NAME[name]
