"""The fixture lane's report (``fixture-report.json``) and its strict reader: what the gate,
the verdict, the freeze audit and the review note read.

Every field but ``timings`` is a function of the inputs, so two runs on the same state give
byte-identical JSON apart from that one field.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import LockError
from patchlane.formats.envelope import (
    ENVELOPE_KEYS,
    envelope,
    read_report,
    report_document,
    review_events,
)
from patchlane.formats.status import Status
from patchlane.inputs.fields import Document, Fields
from patchlane.inputs.paths import under_any

LANE = "fixture"
SOURCES = ("worktree", "commit")
# The keys ``to_json`` can write, at each level; the reader refuses any other.
TOP_KEYS = (
    *ENVELOPE_KEYS,
    "source",
    "commit",
    "roots",
    "missing",
    "extra",
    "changed",
    "unsafe",
    "case_collisions",
    "lock_errors",
    "lock_updates",
    "timings",
    "checkout_attributes",
    "review_events",
)
ROOT_KEYS = (
    "paths",
    "lock",
    "canonical_json",
    "files",
    "lock_sha256",
    "lock_changed",
    "lock_reason",
    "ok",
)
ATTRIBUTE_KEYS = ("path", "attribute", "value", "review")
TIMING_KEYS = ("seconds", "hashed", "cached")


@dataclass(frozen=True)
class CheckoutAttribute:
    """One checkout attribute that applies to a fixture path, as git reports it (``value``
    is ``set`` or the attribute's value); ``review`` is false when the base already gave
    the path the same attribute files (not the patch's doing)."""

    path: str
    attribute: str
    value: str
    review: bool = True

    def to_json(self) -> dict[str, object]:
        """Return the attribute as JSON-ready data, keys in a fixed order."""
        return {
            "path": self.path,
            "attribute": self.attribute,
            "value": self.value,
            "review": self.review,
        }


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
    reason: str | None


@dataclass(frozen=True)
class RootResult:
    """One root as checked: its paths and lock, how many files it holds, its lock, and
    whether it is clean (``ok``: see ``root_ok``)."""

    paths: tuple[str, ...]
    lock: str
    canonical_json: bool
    files: int
    lock_sha256: str | None
    lock_changed: bool
    lock_reason: str | None
    ok: bool

    def to_json(self) -> dict[str, object]:
        """Return the root as JSON-ready data, keys in a fixed order."""
        return {
            "paths": list(self.paths),
            "lock": self.lock,
            "canonical_json": self.canonical_json,
            "files": self.files,
            "lock_sha256": self.lock_sha256,
            "lock_changed": self.lock_changed,
            "lock_reason": self.lock_reason,
            "ok": self.ok,
        }

    @classmethod
    def parse(cls, item: Fields) -> RootResult:
        """Read one entry of ``roots`` (the keys the format leaves optional read as none,
        false or zero when absent). Raises ``ReportError``."""
        item.only(ROOT_KEYS)
        return cls(
            paths=item.text_list("paths", item=None),
            lock=item.string("lock"),
            canonical_json=item.boolean("canonical_json", default=False),
            files=item.integer("files", lo=0, default=0),
            lock_sha256=item.string("lock_sha256", null=True, default=None),
            lock_changed=item.boolean("lock_changed", default=False),
            lock_reason=item.string("lock_reason", null=True, default=None),
            ok=item.boolean("ok"),
        )


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

    seconds: float
    hashed: int
    cached: int


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
    source: str | None = None
    commit: str | None = None
    roots: tuple[RootResult, ...] = ()
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    unsafe: tuple[Unsafe, ...] = ()
    case_collisions: tuple[tuple[str, str], ...] = ()
    lock_errors: tuple[LockProblem, ...] = ()
    lock_updates: tuple[LockUpdate, ...] = ()
    timings: Timings = Timings(0.0, 0, 0)
    checkout_attributes: tuple[CheckoutAttribute, ...] = ()
    review_events: tuple[str, ...] = ()

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
        """Return the report as JSON-ready data, keys in a fixed order.

        ``checkout_attributes`` and ``review_events`` are present only when there is one:
        a report without them has the shape it always had.
        """
        data: dict[str, object] = {"lane": LANE, "status": self.status.value, "reason": self.reason}
        if self.source is not None:
            data.update(
                {
                    "source": self.source,
                    "commit": self.commit,
                    "roots": [root.to_json() for root in self.roots],
                    "missing": list(self.missing),
                    "extra": list(self.extra),
                    "changed": list(self.changed),
                    "unsafe": [{"path": u.path, "problem": u.problem} for u in self.unsafe],
                    "case_collisions": [list(pair) for pair in self.case_collisions],
                    "lock_errors": [
                        {"lock": e.lock, "problem": e.problem} for e in self.lock_errors
                    ],
                    "lock_updates": [
                        {"lock": u.lock, "reason": u.reason} for u in self.lock_updates
                    ],
                    "timings": {
                        "seconds": self.timings.seconds,
                        "hashed": self.timings.hashed,
                        "cached": self.timings.cached,
                    },
                }
            )
        if self.checkout_attributes:
            data["checkout_attributes"] = [a.to_json() for a in self.checkout_attributes]
        if self.review_events:
            data["review_events"] = list(self.review_events)
        return data

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
    top.only(TOP_KEYS)
    timings = top.mapping("timings", default=None)
    return FixtureReport(
        status=status,
        reason=reason,
        source=top.choice("source", SOURCES, default=None),
        commit=top.string("commit", null=True, default=None),
        roots=tuple(RootResult.parse(r) for r in top.items("roots", default=())),
        missing=top.text_list("missing", item=None, default=()),
        extra=top.text_list("extra", item=None, default=()),
        changed=top.text_list("changed", item=None, default=()),
        unsafe=tuple(
            Unsafe(u.only(("path", "problem")).string("path"), u.string("problem"))
            for u in top.items("unsafe", default=())
        ),
        case_collisions=tuple(
            _pair(top, i, v) for i, v in enumerate(top.sequence("case_collisions", default=()))
        ),
        lock_errors=tuple(
            LockProblem(e.only(("lock", "problem")).string("lock"), e.string("problem"))
            for e in top.items("lock_errors", default=())
        ),
        lock_updates=tuple(
            LockUpdate(
                u.only(("lock", "reason")).string("lock"),
                u.string("reason", null=True, default=None),
            )
            for u in top.items("lock_updates", default=())
        ),
        timings=Timings(0.0, 0, 0)
        if timings is None
        else Timings(
            timings.only(TIMING_KEYS).number("seconds", default=0.0),
            timings.integer("hashed", lo=0, default=0),
            timings.integer("cached", lo=0, default=0),
        ),
        checkout_attributes=tuple(
            CheckoutAttribute(
                a.only(ATTRIBUTE_KEYS).string("path"),
                a.string("attribute"),
                a.string("value"),
                a.boolean("review"),
            )
            for a in top.items("checkout_attributes", default=())
        ),
        review_events=review_events(top),
    )


def _pair(top: Fields, index: int, value: object) -> tuple[str, str]:
    """One case collision: two paths that a case-insensitive file system stores as one."""
    if not isinstance(value, list) or len(value) != 2 or not all(isinstance(p, str) for p in value):
        where = (*top.path, "case_collisions", index)
        raise top.doc.error_at(where, "a case collision must be a list of two paths")
    return value[0], value[1]


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
