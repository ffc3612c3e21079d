"""The values of slice selection: the patch as selection takes it (``SliceRequest``) and the
slice it selected (``Selection``), which the replay's pipelines pass along (``select``
builds them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from patchlane.formats.canary import Canary
from patchlane.formats.depmap import DependencyMap
from patchlane.lanes.replay.results import CollectError


@dataclass(frozen=True)
class Selection:
    """A selected slice and what it took to choose it.

    ``reasons``: node id -> why it is in the slice (one line each). ``private``: (path, why)
    for every needed file that keeps the slice off shared hosts. ``suite_size``: the number
    of tests in the suite the slice was drawn from (with a dependency map, the base's tests
    it recorded; without one, what pytest collects under ``replay.tests`` at the head);
    ``added``: the slice's node ids that suite does not hold (tests the patch adds), so
    that ``len(nodeids) - len(added) <= suite_size``. ``files_needed``: the selected test
    files, their ``conftest.py`` files, the project modules they import (transitively) and
    the data files they name. ``notes``: what a reviewer should know (e.g. a failure-log
    node id that pytest no longer collects).
    """

    nodeids: tuple[str, ...]
    slice_bytes: bytes
    sha256: str
    private: tuple[tuple[str, str], ...]
    reasons: dict[str, list[str]]
    suite_size: int
    files_needed: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    added: tuple[str, ...] = field(default=())
    # Every node id pytest collected at the head, and the test files it could not collect.
    collected: tuple[str, ...] = field(default=())
    collect_errors: tuple[CollectError, ...] = field(default=())
    # Changed path -> the test files that reach it (import, name, or are it; "*" for the
    # whole suite under --all). A changed source file no test file reaches has no evidence.
    reached_by: dict[str, frozenset[str]] = field(default_factory=dict)
    # Files of the head's tree pytest held as plugins after collecting the suite.
    plugin_files: tuple[str, ...] = field(default=())
    # One line per head entry the gate cannot materialise or name (``unmaterialised``) and
    # per test file whose selected node ids the slice format cannot carry (left out of the
    # slice, so not replayed): each a review event for the gate.
    not_replayed: tuple[str, ...] = field(default=())
    # Rule -> how many tests of the slice it selected (a test may count under several).
    rule_counts: dict[str, int] = field(default_factory=dict)
    # Node id -> the rules that chose it, the one of its first reason first.
    rules_of: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Whether a dependency map was used, and which (or why none was).
    dependency_map: str = "none"
    # The random sample of the tests outside the selection, part of ``nodeids``
    # (``canary``); ``None`` under --all (the slice is the suite) and for an empty selection.
    canary: Canary | None = None

    def reason_lines(self) -> dict[str, str]:
        """Return, for each node id of the slice, ``RULE: why`` (its first rule and reason)."""
        out: dict[str, str] = {}
        for nodeid in self.nodeids:
            rules, whys = self.rules_of.get(nodeid, ()), self.reasons.get(nodeid, [])
            rule = rules[0] if rules else "unknown rule"
            why = whys[0] if whys else "no reason recorded"
            # A reason may already lead with its rule (the canary's).
            out[nodeid] = why if why.startswith(f"{rule}: ") else f"{rule}: {why}"
        return out

    def to_json(self, slice_path: str) -> dict[str, object]:
        """Return the ``--json`` form: ``{slice, sha256, count, suite_size, added, private,
        reasons, rules, rules_of, dependency_map, canary, notes}``."""
        return {
            "slice": slice_path,
            "sha256": self.sha256,
            "count": len(self.nodeids),
            "suite_size": self.suite_size,
            "added": len(self.added),
            "private": [{"path": p, "why": w} for p, w in self.private],
            "reasons": {n: list(self.reasons[n]) for n in self.nodeids},
            "rules": dict(sorted(self.rule_counts.items())),
            "rules_of": {n: list(self.rules_of.get(n, ())) for n in self.nodeids},
            "dependency_map": self.dependency_map,
            "canary": None if self.canary is None else self.canary.to_json(),
            "notes": list(self.notes),
        }


def file_of(nodeid: str) -> str:
    """Return the file part of a node id (``tests/x.py`` of ``tests/x.py::T::t[1]``).

    A head path holding ``::`` would be split wrong; it is a review event of its own
    (``unmaterialised``), so no verdict rests on that split."""
    return nodeid.split("::", 1)[0]


# Which of some test files (or directories) that do not collect at the head collect at the
# base (``basecheck.collects_at_base``, bound to a repository and a base).
CollectsAtBase = Callable[[Sequence[str]], frozenset[str]]


@dataclass(frozen=True)
class SliceRequest:
    """What a slice is selected for: the patch ``merge_base..head`` and what changed in it
    (``changed_paths``, both sides of renames), the node ids that failed before
    (``failure_log``), whether every test is selected (``all_tests``), and ``dep_map``: the
    dependency map of ``merge_base`` (``lanes.replay.maprecord.find``), which narrows the
    slice where it can (``mapselect``), with ``dep_map_note`` saying which map it is, or
    why there is none."""

    head: str
    merge_base: str
    changed_paths: frozenset[str]
    failure_log: frozenset[str]
    all_tests: bool
    dep_map: DependencyMap | None = None
    dep_map_note: str = "none"
