"""The fixture lane's report: what the gate, the verdict and the review note read.

Every field but ``timings`` is a function of the inputs, so two runs on the same state give
byte-identical JSON apart from that one field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patchlane.errors import LockError
from patchlane.lanes.fixture_attributes import CheckoutAttribute
from patchlane.paths import under_any

LANE = "fixture"


@dataclass(frozen=True)
class Unsafe:
    """A path under a root that is not a regular file that can be hashed, and why."""

    path: str
    problem: str


@dataclass(frozen=True)
class LockProblem:
    """A lock whose update breaks a rule (deleted, changed without a new reason)."""

    lock: str
    problem: str


@dataclass(frozen=True)
class LockUpdate:
    """A lock the patch changed, with the reason it gives (shown in the review note)."""

    lock: str
    reason: str


@dataclass(frozen=True)
class RootResult:
    """One root as checked: its paths and lock, how many files it holds, and its lock."""

    paths: tuple[str, ...]
    lock: str
    canonical_json: bool
    files: int
    lock_sha256: str | None
    lock_changed: bool
    lock_reason: str | None

    def to_json(self) -> dict[str, Any]:
        """Return the root as JSON-ready data, keys in a fixed order."""
        return {
            "paths": list(self.paths),
            "lock": self.lock,
            "canonical_json": self.canonical_json,
            "files": self.files,
            "lock_sha256": self.lock_sha256,
            "lock_changed": self.lock_changed,
            "lock_reason": self.lock_reason,
        }


@dataclass(frozen=True)
class Timings:
    """How long the check took and how many files were hashed or taken from the cache."""

    seconds: float
    hashed: int
    cached: int


@dataclass(frozen=True)
class FixtureReport:
    """The fixture lane's report. ``status`` is ``pass`` or ``fail`` (the gate may relabel
    it with ``dataclasses.replace``); everything but ``timings`` is deterministic.

    ``checkout_attributes`` are the ``.gitattributes`` attributes that make a checkout of a
    fixture path hold other bytes than the ones hashed; ``review_events`` say what a person
    must look at (verdict rule 6: ``undecided``, never a pass). Neither changes ``status``:
    the bytes git stores did match, or did not.
    """

    status: str
    reason: str
    source: str
    commit: str | None
    roots: tuple[RootResult, ...]
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    changed: tuple[str, ...]
    unsafe: tuple[Unsafe, ...]
    case_collisions: tuple[tuple[str, str], ...]
    lock_errors: tuple[LockProblem, ...]
    lock_updates: tuple[LockUpdate, ...]
    timings: Timings
    checkout_attributes: tuple[CheckoutAttribute, ...] = ()
    review_events: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Return whether the lane is green."""
        return self.status == "pass"

    def root_ok(self, root: RootResult) -> bool:
        """Return whether one root is clean: no changed, missing, extra or unsafe path (nor
        case collision) lies under its paths, and its lock had no error.

        The freeze audit (rule 4) judges each record's named lock by this, so a red file
        under another root cannot condemn it, and a red file under this root always does.
        Overlapping roots share the union lists: a path red for one lock is red for both.
        """
        if any(e.lock == root.lock for e in self.lock_errors):
            return False
        bad = (*self.changed, *self.missing, *self.extra, *(u.path for u in self.unsafe))
        bad += tuple(p for pair in self.case_collisions for p in pair)
        return not any(under_any(path, root.paths) for path in bad)

    def to_json(self) -> dict[str, Any]:
        """Return the report as JSON-ready data, keys in a fixed order.

        ``checkout_attributes`` and ``review_events`` are present only when there is one:
        a report without them has the shape it always had.
        """
        data: dict[str, Any] = {
            "lane": LANE,
            "status": self.status,
            "reason": self.reason,
            "source": self.source,
            "commit": self.commit,
            "roots": [{**root.to_json(), "ok": self.root_ok(root)} for root in self.roots],
            "missing": list(self.missing),
            "extra": list(self.extra),
            "changed": list(self.changed),
            "unsafe": [{"path": u.path, "problem": u.problem} for u in self.unsafe],
            "case_collisions": [list(pair) for pair in self.case_collisions],
            "lock_errors": [{"lock": e.lock, "problem": e.problem} for e in self.lock_errors],
            "lock_updates": [{"lock": u.lock, "reason": u.reason} for u in self.lock_updates],
            "timings": {
                "seconds": self.timings.seconds,
                "hashed": self.timings.hashed,
                "cached": self.timings.cached,
            },
        }
        if self.checkout_attributes:
            data["checkout_attributes"] = [a.to_json() for a in self.checkout_attributes]
        if self.review_events:
            data["review_events"] = list(self.review_events)
        return data


def report_for_lock_error(
    err: LockError, *, source: str = "commit", commit: str | None = None
) -> FixtureReport:
    """Return a red report for a lock that cannot be read safely (verdict rule 2).

    The gate uses it where ``fixture check`` would exit 2: for the gate an unreadable lock
    is evidence against the patch, not a usage error.
    """
    where = err.message if err.line is None else f"line {err.line}: {err.message}"
    return FixtureReport(
        status="fail",
        reason=f"a fixture lock cannot be read safely: {err}",
        source=source,
        commit=commit,
        roots=(),
        missing=(),
        extra=(),
        changed=(),
        unsafe=(),
        case_collisions=(),
        lock_errors=(LockProblem(err.file, where),),
        lock_updates=(),
        timings=Timings(0.0, 0, 0),
    )
