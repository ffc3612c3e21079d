"""The public verdict function: ``patchlane.verdict.lane_verdict`` (docs/architecture.md §1).

The gate's own reading of lane reports, with every reason, is ``patchlane.gate.verdict``;
this module keeps the proposal's small pure function at the import path scripts use.
"""

from __future__ import annotations


def lane_verdict(prop_ok: bool, fixture_ok: bool, freeze_ok: bool, replay: str) -> str:
    """The proposal's pure verdict function, with exactly its behaviour.

    Returns ``"reject"``, ``"undecided"`` or ``"accept_for_review"``. Raises ``ValueError``
    for a ``replay`` state other than ``"pass"``, ``"fail"`` or ``"not_run"``.
    """
    if replay not in {"pass", "fail", "not_run"}:
        raise ValueError(replay)
    if not (prop_ok and fixture_ok and freeze_ok):
        return "reject"
    if replay == "not_run":
        return "undecided"
    if replay == "fail":
        return "reject"
    return "accept_for_review"
