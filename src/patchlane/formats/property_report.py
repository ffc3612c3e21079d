"""The property lane's report (``property-report.json``) and its strict reader.

Every field but ``timings`` is a function of the repository state, its seed, case count
and mutation bound, so two runs give byte-identical JSON apart from that field.
The report validates against ``schemas/property-report.schema.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchlane.formats.envelope import (
    ENVELOPE_KEYS,
    REVIEW_EVENTS,
    envelope,
    read_report,
    report_document,
)
from patchlane.formats.status import Status
from patchlane.inputs.fields import Document, Fields
from patchlane.inputs.model import Group, Spec, from_fields, spec, to_data

LANE = "property"
MODULE_LEVEL = "(module)"  # the ``property`` of a failure that concerns a whole module
# A failure's ``kind``: the property's own assertion; any other exception; the wall clock;
# a result channel that cannot be trusted (exit, crash, garbage, missing result); a blocked
# network or process attempt; a module that is missing, unparsable or shadowed.
KINDS = ("assertion", "error", "timeout", "protocol", "sandbox", "module")
ORACLE_KINDS = ("mirrors_implementation", "survives_mutants")
SOURCES = ("base", "head")
STYLES = ("seed", "hypothesis", "check", "unknown")
OUTCOMES = ("pass", "fail", "error", "timeout")
# "unchanged": the patch changes no property module and nothing they import, so an audit
# would repeat the base's (the gate's rule;
# docs/explanation/decisions/0005-properties-base-and-head.md).
# ``stopped``: the verdict was red before the audit ended, so it was not waited for.
STOPPED = "stopped"
ORACLE_AUDITS = ("ran", "not available", "not run", "unchanged", STOPPED)
NETWORKS = ("bwrap+audit", "netns+audit", "audit")


@dataclass(frozen=True)
class Failure:
    """One counterexample or failure. ``arguments`` is JSON-ready data (or ``None``)."""

    property: str
    module: str
    source: str = field(metadata=spec(choices=SOURCES))  # base | head
    seed: int
    case_index: int | None
    arguments: Any
    message: str
    kind: str = field(metadata=spec(absent=""))  # one of KINDS ("" in a report read back without)

    def to_json(self) -> dict[str, object]:
        """Return the failure as JSON-ready data, keys in a fixed order."""
        return to_data(self)


@dataclass(frozen=True)
class PropertyRun:
    """One property run from one module version: its style and outcome
    (``pass``, ``fail``: its assertion failed, ``error``, or ``timeout``)."""

    module: str
    property: str
    source: str = field(metadata=spec(choices=SOURCES))
    style: str = field(metadata=spec(choices=STYLES))
    outcome: str = field(metadata=spec(choices=OUTCOMES))

    def to_json(self) -> dict[str, object]:
        """Return the run as JSON-ready data, keys in a fixed order."""
        return to_data(self)


@dataclass(frozen=True, kw_only=True)
class OracleFinding:
    """A reason to doubt a property as an oracle (shown to the reviewer; never red).
    ``module``, optional in the format, reads as empty when absent. Built by keyword: the
    file names the property first."""

    property: str
    module: str = field(metadata=spec(absent=""))
    kind: str = field(metadata=spec(choices=ORACLE_KINDS))
    detail: str

    def to_json(self) -> dict[str, object]:
        """Return the finding as JSON-ready data, keys in a fixed order."""
        return to_data(self)


@dataclass(frozen=True)
class Mutation:
    """How many mutants of the code under test one head property killed (or why the audit
    of that property could not finish: ``error``). ``ratio`` is ``killed / mutants``
    rounded to 4 places (``None`` without mutants): a report read back has it checked for
    its type and recomputed."""

    module: str
    property: str
    mutants: int = field(metadata=spec(lo=0))
    killed: int = field(metadata=spec(lo=0))
    ratio: float | None = field(init=False, metadata=spec(lo=0, hi=1))
    error: str | None = field(default=None, metadata=spec(write="notnone", null=False))

    def __post_init__(self) -> None:
        ratio = round(self.killed / self.mutants, 4) if self.mutants else None
        object.__setattr__(self, "ratio", ratio)

    def to_json(self) -> dict[str, object]:
        """Return the entry as JSON-ready data, keys in a fixed order."""
        return to_data(self)


# Fixed wording of what every child's process and environment are.
PROCESS = "own session; the process group is killed (SIGKILL) when it ends"
ENVIRONMENT = "minimal, PYTHONHASHSEED=0, empty HOME"


@dataclass(frozen=True)
class IsolationInfo:
    """Which isolation layers the children had (the same on the same machine);
    ``process`` and ``environment`` are fixed wording, checked to be strings."""

    network: str = field(metadata=spec(choices=NETWORKS))  # bwrap+audit | netns+audit | audit
    process: str = field(default=PROCESS, init=False, metadata=spec(required=True))
    environment: str = field(default=ENVIRONMENT, init=False, metadata=spec(required=True))
    timeout_s: float = field(metadata=spec(above=0))

    def to_json(self) -> dict[str, object]:
        """Return the layers as JSON-ready data, keys in a fixed order."""
        return to_data(self)


@dataclass(frozen=True)
class ChildTiming:
    """Wall-clock seconds of one child (``mode`` run, audit, or import: the base import
    that tells an environment's missing package from the patch's). ``cached``: no child
    started, the run's result came from the result cache (``seconds`` is the lookup's)."""

    module: str
    source: str
    mode: str
    seconds: float = field(metadata=spec(lo=0, dump=lambda s: round(s, 6)))
    cached: bool = field(
        default=False,
        metadata=spec(
            description="no child started: the run's result came from the result cache "
            "(seconds: the lookup's)"
        ),
    )

    def to_json(self) -> dict[str, object]:
        """Return the timing as JSON-ready data, keys in a fixed order."""
        return to_data(self)


@dataclass(frozen=True)
class CacheUse:
    """What the result cache did for one lane run: runs whose result it gave (``hits``),
    runs it did not have (``misses``: a child ran), runs stored for next time, and entries
    whose MAC did not verify (``unverified``: not used, removed)."""

    hits: int = field(metadata=spec(lo=0))
    misses: int = field(metadata=spec(lo=0))
    stored: int = field(metadata=spec(lo=0))
    unverified: int = field(
        default=0,
        metadata=spec(
            lo=0,
            description="cache entries whose MAC did not verify under the user's key: not "
            "used, removed",
        ),
    )

    def to_json(self) -> dict[str, object]:
        """Return the counts as JSON-ready data, keys in a fixed order."""
        return to_data(self)


# The object that holds what the run cost.
TIMINGS = Group("timings", "what the run cost: not a function of the inputs")
_SKIPPED_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"test": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["test", "reason"],
        "additionalProperties": False,
    },
}


def _timing(**settings: Any) -> dict[str, Spec]:
    """The metadata of a key inside ``timings``, written only by a run that started a child."""
    return spec(when="isolation", group=TIMINGS, **settings)


@dataclass(frozen=True)
class PropertyReport:
    """The property lane's report.

    ``status`` is ``pass`` (every property run holds), ``fail`` (a property failed, errored,
    timed out or could not be trusted), ``error`` (a listed module could not be evaluated
    at all: unparsable, shadowed, without properties) or ``not_applicable`` (the lane did
    not run: see ``not_applicable``). ``seed`` and ``cases`` are ``None`` only in a report
    read back without them.

    The fields after ``oracle_findings`` describe a run: ``isolation`` is ``None`` for a
    lane that started no child, and its file then holds only the fields before.
    ``base``/``head`` are commit ids, ``None`` for the work tree. ``oracle_audit`` is
    ``ran``, ``not available`` (the oracle audit is not installed) or ``not run``.
    ``review_events`` are read from a file that has them (the lane raises none): the verdict
    honours them in every report.
    """

    status: Status
    reason: str
    seed: int | None = field(metadata=spec(absent=None))
    cases: int | None = field(metadata=spec(absent=None))
    modules: tuple[str, ...] = field(default=(), metadata=spec(item=None))
    base: str | None = field(
        default=None,
        metadata=spec(
            when="isolation",
            description="the base commit whose property modules ran (null: no base)",
        ),
    )
    head: str | None = field(
        default=None,
        metadata=spec(
            when="isolation", description="the head commit whose code ran (null: the work tree)"
        ),
    )
    properties: tuple[PropertyRun, ...] = field(
        default=(),
        metadata=spec(
            when="isolation",
            description="every property run: one per property and module version (base, head)",
        ),
    )
    # Tests the map names (``lanes.property.tests``) that do not run: (node id, why).
    skipped_tests: tuple[tuple[str, str], ...] = field(
        default=(),
        metadata=spec(
            write="nonempty",
            read=lambda top, key: _skipped(top, key),
            dump=lambda pairs: [{"test": t, "reason": r} for t, r in pairs],
            schema=_SKIPPED_SCHEMA,
            description="tests the map names (lanes.property.tests) that do not run as "
            "properties, with why (not a @given test, a file with none)",
        ),
    )
    failures: tuple[Failure, ...] = ()
    oracle_findings: tuple[OracleFinding, ...] = ()
    mutation: tuple[Mutation, ...] = field(
        default=(),
        metadata=spec(
            when="isolation",
            description="kill ratios of the oracle audit's mutants, per head property",
        ),
    )
    oracle_audit: str = field(
        default="not run", metadata=spec(when="isolation", choices=ORACLE_AUDITS)
    )
    isolation: IsolationInfo | None = field(
        default=None, metadata=spec(when="isolation", null=False)
    )
    seconds: float = field(default=0.0, metadata=_timing(lo=0, dump=lambda s: round(s, 6)))
    children: tuple[ChildTiming, ...] = field(default=(), metadata=_timing())
    cache: CacheUse | None = field(
        default=None,
        metadata=_timing(description="what the property result cache did (null: not used)"),
    )
    review_events: tuple[str, ...] = field(default=(), metadata=REVIEW_EVENTS)

    @classmethod
    def not_applicable(
        cls, reason: str, seed: int | None, cases: int, modules: tuple[str, ...]
    ) -> PropertyReport:
        """Return the report of a lane that did not run (the patch gives it nothing to look
        at, or the map has no property lane), saying ``reason``."""
        return cls(Status.NOT_APPLICABLE, reason, seed, cases, modules)

    @property
    def lane(self) -> str:
        """The lane's name, ``property``."""
        return LANE

    @property
    def ok(self) -> bool:
        """Whether the lane is green."""
        return self.status == Status.PASS

    def to_json(self) -> dict[str, object]:
        """Return the report as JSON-ready data, keys in a fixed order: a lane that started
        no child (``isolation`` none) writes only the keys up to ``oracle_findings``."""
        return to_data(self, {"lane": LANE})

    @classmethod
    def from_json(cls, data: object, label: str) -> PropertyReport:
        """Return the report that the JSON value ``data`` holds.

        Raises ``ReportError`` naming ``label`` for a value that is not a property report:
        a missing or mistyped ``lane``, ``status`` or ``reason``, or any other key of the
        format with a value of the wrong type, or a key the format does not have. (A key the
        report lacks reads as empty, as ``patchlane verdict`` always took it.)
        """
        return _parse(report_document(label), data)

    @classmethod
    def read(cls, path: Path, label: str | None = None) -> PropertyReport:
        """Read and strictly check the report file ``path`` (``label`` names it in
        messages). Raises ``ReportError``, ``FILE[:LINE]: what is wrong``."""
        return read_report(path, label, _parse)


def _parse(doc: Document, value: object) -> PropertyReport:
    top, status, reason = envelope(doc, value, LANE)
    given = {"status": status, "reason": reason}
    return from_fields(PropertyReport, top, given=given, extra=ENVELOPE_KEYS)


def _skipped(top: Fields, key: str) -> tuple[tuple[str, str], ...]:
    """``skipped_tests``: each a test's node id and why it does not run."""
    return tuple(
        (item.only(("test", "reason")).string("test"), item.string("reason"))
        for item in top.items(key)
    )


def status_and_reason(
    failures: tuple[Failure, ...],
    runs: tuple[PropertyRun, ...],
    seed: int,
    cases: int,
    where: str,
) -> tuple[Status, str]:
    """Return the lane's ``status`` and one-line ``reason`` for these results.

    ``where`` says where the oracles came from (``oracles from base X and head Y``, or
    ``no base, oracles from the work tree``).
    """
    module_level = [f for f in failures if f.property == MODULE_LEVEL]
    property_level = [f for f in failures if f.property != MODULE_LEVEL]
    if property_level:
        first = property_level[0]
        case = f" at case {first.case_index}" if first.case_index is not None else ""
        failed = len({(f.module, f.property, f.source) for f in property_level})
        return Status.FAIL, (
            f"{failed} of {len(runs)} property run(s) failed; first: {first.property} "
            f"({first.module}, {first.source}){case}: {_clip(first.message)}"
        )
    if module_level:
        first = module_level[0]
        return Status.ERROR, f"{first.module} ({first.source}): {_clip(first.message)}"
    if not runs:
        return Status.ERROR, "no property ran"
    modules = len({r.module for r in runs})
    return Status.PASS, (
        f"{len(runs)} property run(s) in {modules} module(s) hold "
        f"(seed {seed}, {cases} cases; {where})"
    )


def _clip(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
