"""Reading lane reports, classifications and verdicts back from disk, strictly.

``patchlane verdict`` and ``patchlane review`` take files a user (or a script) hands them;
they are parsed and checked before anything in them is believed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from patchlane.errors import ReportError
from patchlane.gate.verdict import BLOCKING_KINDS, LaneResult, PatchFacts
from patchlane.inputs.jsonio import load_json_file

STATUSES = frozenset({"pass", "fail", "not_applicable", "error"})

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


def _object(path: Path) -> dict[str, Any]:
    value, _ = load_json_file(path, str(path), ReportError)
    if not isinstance(value, dict):
        raise ReportError(str(path), "expected a JSON object", 1)
    return value


def load_lane_report(path: Path, lane: str) -> tuple[dict[str, Any], LaneResult]:
    """Read a ``*-report.json`` of ``lane``.

    Returns the raw object and the ``LaneResult`` the verdict reads. Raises ``ReportError``
    when the file is unreadable, not strict JSON, of another lane, or lacks
    ``status``/``reason``.
    """
    data = _object(path)
    label = str(path)
    if data.get("lane") != lane:
        raise ReportError(label, f"'lane' is {data.get('lane')!r}, expected {lane!r}")
    status = data.get("status")
    if status not in STATUSES:
        raise ReportError(label, f"'status' is {status!r}, expected one of {sorted(STATUSES)}")
    reason = data.get("reason")
    if not isinstance(reason, str):
        raise ReportError(label, "'reason' must be a string")
    not_built = data.get("not_built", False)
    if not isinstance(not_built, bool):
        raise ReportError(label, "'not_built' must be true or false")
    events = data.get("review_events", [])
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise ReportError(label, "'review_events' must be a list of strings")
    return data, LaneResult(
        lane=lane,
        status=status,
        reason=reason,
        not_built=not_built,
        review_events=tuple(events),
    )


def load_classification(path: Path) -> tuple[dict[str, Any], PatchFacts]:
    """Read ``classify.json``. Returns the raw object and the facts the verdict needs.

    Raises ``ReportError`` when a needed field is missing or of the wrong type.
    """
    data = _object(path)
    label = str(path)
    complete = data.get("map_complete")
    if not isinstance(complete, bool):
        raise ReportError(label, "'map_complete' must be true or false")
    details = data.get("control_plane_details", [])
    if not isinstance(details, list) or not all(
        isinstance(d, dict) and isinstance(d.get("path"), str) and isinstance(d.get("kind"), str)
        for d in details
    ):
        raise ReportError(label, "'control_plane_details' must be a list of {path, kind}")
    harness = tuple(
        f"{d['path']} ({d['kind']}: {d['why']})"
        if isinstance(d.get("why"), str)
        else f"{d['path']} ({d['kind']})"
        for d in details
        if d["kind"] in BLOCKING_KINDS
    )
    if data.get("harness_changed") is True and not harness:
        raise ReportError(label, "'harness_changed' is true but no harness file is listed")
    reason = data.get("map_reason", "")
    return data, PatchFacts(
        map_complete=complete,
        map_reason=reason if isinstance(reason, str) else "",
        harness_changed=harness,
    )


def load_optional(path: Path) -> dict[str, Any] | None:
    """Read a JSON object if the file exists; ``None`` if it does not.

    Raises ``ReportError`` for a file that exists but is malformed.
    """
    if not path.exists():
        return None
    return _object(path)
