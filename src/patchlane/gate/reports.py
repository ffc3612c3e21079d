"""The evidence files: their names, the four lane reports as one value, and reading an
evidence directory back from disk, strictly.

``patchlane verdict`` and ``patchlane review`` take files a user (or a script) hands them;
each is read by its format's one strict reader (``from_json``/``read`` of its type) before
anything in it is believed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from patchlane.formats.fixture_report import FixtureReport
from patchlane.formats.freeze_report import FreezeReport
from patchlane.formats.property_report import PropertyReport
from patchlane.formats.replay_report import ReplayReport
from patchlane.formats.verdict_file import Verdict
from patchlane.gate.verdict import LaneEvidence
from patchlane.project.classify import ClassificationSummary

FILE_NAMES = {
    "classify": "classify.json",
    "property": "property-report.json",
    "fixture": "fixture-report.json",
    "freeze": "freeze-report.json",
    "replay_slice": "replay-slice.txt",
    "receipt": "receipt.json",
    "replay": "replay-report.json",
    "verdict": "verdict.json",
    "review": "review.md",
}

T = TypeVar("T")


@dataclass(frozen=True)
class LaneReports:
    """The four lanes' reports (``None``: that report is missing)."""

    property: PropertyReport | None = None
    fixture: FixtureReport | None = None
    freeze: FreezeReport | None = None
    replay: ReplayReport | None = None

    def present(self) -> list[LaneEvidence]:
        """Return the reports there are, in the verdict's reading order."""
        reports: list[LaneEvidence | None] = [self.property, self.fixture, self.freeze, self.replay]
        return [r for r in reports if r is not None]


@dataclass(frozen=True)
class Evidence:
    """An evidence directory as ``gate`` writes it (``None``: that file is missing)."""

    classification: ClassificationSummary | None
    reports: LaneReports
    verdict: Verdict | None


def _optional(path: Path, read: Callable[[Path], T]) -> T | None:
    return read(path) if path.exists() else None


def read_evidence(directory: Path) -> Evidence:
    """Read the classification, the lane reports and the verdict in ``directory``; a file
    that does not exist is ``None``.

    Returns the ``Evidence``. Raises ``ReportError`` for a file that exists but cannot be
    read or is not well formed.
    """
    return Evidence(
        classification=_optional(directory / FILE_NAMES["classify"], ClassificationSummary.read),
        reports=LaneReports(
            property=_optional(directory / FILE_NAMES["property"], PropertyReport.read),
            fixture=_optional(directory / FILE_NAMES["fixture"], FixtureReport.read),
            freeze=_optional(directory / FILE_NAMES["freeze"], FreezeReport.read),
            replay=_optional(directory / FILE_NAMES["replay"], ReplayReport.read),
        ),
        verdict=_optional(directory / FILE_NAMES["verdict"], Verdict.read),
    )
