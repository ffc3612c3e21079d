"""The fixture lane's report (``fixture-report.json``) and its strict reader: what the gate,
the verdict, the freeze audit and the review note read.

Every field but ``timings`` is a function of the inputs, so two runs on the same state give
byte-identical JSON apart from that one field.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from patchlane.errors import LockError
from patchlane.formats.envelope import (
    ENVELOPE_KEYS,
    REVIEW_EVENTS,
    envelope,
    read_report,
    report_document,
)
from patchlane.formats.status import Status
from patchlane.inputs.fields import Document, Fields
from patchlane.inputs.model import from_fields, spec, to_data
from patchlane.inputs.paths import under_any

LANE = "fixture"
SOURCES = ("worktree", "commit")
# A key written only by a lane that checked something (``source`` is not none).
_CHECKED = spec(when="source")


@dataclass(frozen=True)
class CheckoutAttribute:
    """One checkout attribute that applies to a fixture path, as git reports it (``value``
    is ``set`` or the attribute's value); ``review`` is false when the base already gave
    the path the same attribute files (not the patch's doing)."""

    path: str
    attribute: str
    value: str
    review: bool = field(default=True, metadata=spec(required=True))

    def to_json(self) -> dict[str, object]:
        """Return the attribute as JSON-ready data, keys in a fixed order."""
        return to_data(self)


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
    """A lock the patch changed, with the reason it gives (shown in the review note;
    ``None`` only in a report read back without one)."""

    lock: str
    reason: str | None = field(metadata=spec(absent=None))


@dataclass(frozen=True)
class RootResult:
    """One root as checked: its paths and lock, how many files it holds, its lock, and
    whether it is clean (``ok``: see ``root_ok``). A report read back may leave out every
    key but ``paths``, ``lock`` and ``ok``: they read as none, false or zero."""

    paths: tuple[str, ...] = field(metadata=spec(item=None))
    lock: str
    canonical_json: bool = field(metadata=spec(absent=False))
    files: int = field(metadata=spec(absent=0, lo=0))
    lock_sha256: str | None = field(metadata=spec(absent=None))
    lock_changed: bool = field(metadata=spec(absent=False))
    lock_reason: str | None = field(metadata=spec(absent=None))
    ok: bool = field(
        metadata=spec(
            description="no changed, missing, extra or unsafe path (nor case collision) lies "
            "under this root's paths, and its lock had no error"
        )
    )

    def to_json(self) -> dict[str, object]:
        """Return the root as JSON-ready data, keys in a fixed order."""
        return to_data(self)


def root_ok(
    paths: tuple[str, ...], lock: str, red_paths: Collection[str], red_locks: Collection[str]
) -> bool:
    """Return whether one root (its ``paths`` and ``lock``) is clean: no path of
    ``red_paths`` (changed, missing, extra, unsafe or case-colliding) lies under its paths,
    and its lock is not among ``red_locks`` (those with an error).

    The freeze audit (rule 4) judges each record's named lock by this, so a red file
    under another root cannot condemn it, and a red file under this root always does.
    Overlapping roots share the union lists: a path red for one lock is red for both.
    """
    return lock not in red_locks and not any(under_any(path, paths) for path in red_paths)


@dataclass(frozen=True)
class Timings:
    """How long the check took and how many files were hashed or taken from the cache."""

    seconds: float = 0.0
    hashed: int = field(default=0, metadata=spec(lo=0))
    cached: int = field(default=0, metadata=spec(lo=0))


@dataclass(frozen=True)
class FixtureReport:
    """The fixture lane's report. ``status`` is ``pass`` or ``fail`` (the gate may relabel
    it with ``dataclasses.replace``); everything but ``timings`` is deterministic.

    ``source`` is ``worktree`` or ``commit``; ``None`` for a lane that checked nothing
    (``not_applicable``: the map has no fixture lane), whose file holds only ``lane``,
    ``status``, ``reason`` and ``review_events``.

    ``checkout_attributes`` are the ``.gitattributes`` attributes that make a checkout of a
    fixture path hold other bytes than the ones hashed; ``review_events`` say what a person
    must look at (verdict rule 6: ``undecided``, never a pass). Neither changes ``status``:
    the bytes git stores did match, or did not.
    """

    status: Status
    reason: str
    source: str | None = field(
        default=None, metadata=spec(when="source", choices=SOURCES, null=False)
    )
    commit: str | None = field(default=None, metadata=_CHECKED)
    roots: tuple[RootResult, ...] = field(default=(), metadata=_CHECKED)
    missing: tuple[str, ...] = field(default=(), metadata=spec(when="source", item=None))
    extra: tuple[str, ...] = field(default=(), metadata=spec(when="source", item=None))
    changed: tuple[str, ...] = field(default=(), metadata=spec(when="source", item=None))
    unsafe: tuple[Unsafe, ...] = field(default=(), metadata=_CHECKED)
    case_collisions: tuple[tuple[str, str], ...] = field(
        default=(), metadata=spec(when="source", read=lambda top, key: _pairs(top, key))
    )
    lock_errors: tuple[LockProblem, ...] = field(default=(), metadata=_CHECKED)
    lock_updates: tuple[LockUpdate, ...] = field(default=(), metadata=_CHECKED)
    timings: Timings = field(
        default=Timings(),
        metadata=spec(
            when="source", description="what the check cost: not a function of the inputs"
        ),
    )
    checkout_attributes: tuple[CheckoutAttribute, ...] = field(
        default=(), metadata=spec(write="nonempty")
    )
    review_events: tuple[str, ...] = field(default=(), metadata=REVIEW_EVENTS)

    @classmethod
    def not_applicable(cls, reason: str) -> FixtureReport:
        """Return the report of a lane that checked nothing, saying ``reason``."""
        return cls(Status.NOT_APPLICABLE, reason)

    @property
    def lane(self) -> str:
        """The lane's name, ``fixture``."""
        return LANE

    @property
    def ok(self) -> bool:
        """Return whether the lane is green."""
        return self.status == Status.PASS

    def to_json(self) -> dict[str, object]:
        """Return the report as JSON-ready data, keys in a fixed order: a lane that checked
        nothing writes only ``lane``, ``status``, ``reason`` and any review events, and
        ``checkout_attributes`` and ``review_events`` are present only when there is one."""
        return to_data(self, {"lane": LANE})

    @classmethod
    def from_json(cls, data: object, label: str) -> FixtureReport:
        """Return the report that the JSON value ``data`` holds.

        Raises ``ReportError`` naming ``label`` for a value that is not a fixture report: a
        missing or mistyped ``lane``, ``status`` or ``reason``, a root without ``paths``,
        ``lock`` or ``ok``, any other key of the format with a value of the wrong type, or a
        key the format does not have.
        """
        return _parse(report_document(label), data)

    @classmethod
    def read(cls, path: Path, label: str | None = None) -> FixtureReport:
        """Read and strictly check the report file ``path`` (``label`` names it in
        messages). Raises ``ReportError``, ``FILE[:LINE]: what is wrong``."""
        return read_report(path, label, _parse)


def _parse(doc: Document, value: object) -> FixtureReport:
    top, status, reason = envelope(doc, value, LANE)
    given = {"status": status, "reason": reason}
    return from_fields(FixtureReport, top, given=given, extra=ENVELOPE_KEYS)


def _pairs(top: Fields, key: str) -> tuple[tuple[str, str], ...]:
    """The case collisions: pairs of paths that a case-insensitive file system stores as one."""
    pairs = []
    for index, value in enumerate(top.sequence(key)):
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(p, str) for p in value)
        ):
            raise top.doc.error_at(
                (*top.path, key, index), "a case collision must be a list of two paths"
            )
        pairs.append((value[0], value[1]))
    return tuple(pairs)


def report_for_lock_error(
    err: LockError, *, source: str = "commit", commit: str | None = None
) -> FixtureReport:
    """Return a red report for a lock that cannot be read safely (verdict rule 2).

    The gate uses it where ``fixture check`` would exit 2: for the gate an unreadable lock
    is evidence against the patch, not a usage error.
    """
    where = err.message if err.line is None else f"line {err.line}: {err.message}"
    return FixtureReport(
        status=Status.FAIL,
        reason=f"a fixture lock cannot be read safely: {err}",
        source=source,
        commit=commit,
        lock_errors=(LockProblem(err.file, where),),
    )
