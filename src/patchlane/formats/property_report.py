"""The property lane's report (``property-report.json``) and its strict reader.

Every field but ``timings`` is a function of the repository state, its seed, case count
and mutation bound, so two runs give byte-identical JSON apart from that field.
The report validates against ``schemas/property-report.schema.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchlane.formats.envelope import (
    ENVELOPE_KEYS,
    envelope,
    read_report,
    report_document,
    review_events,
)
from patchlane.formats.status import Status
from patchlane.inputs.fields import Document, Fields

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
# The keys ``to_json`` can write at the top and in ``timings``; the reader refuses any other
# (each item's keys are named where it is read).
TOP_KEYS = (
    *ENVELOPE_KEYS,
    "seed",
    "cases",
    "modules",
    "base",
    "head",
    "properties",
    "skipped_tests",
    "failures",
    "oracle_findings",
    "mutation",
    "oracle_audit",
    "isolation",
    "timings",
    "review_events",
)
TIMING_KEYS = ("seconds", "children", "cache")


@dataclass(frozen=True)
class Failure:
    """One counterexample or failure. ``arguments`` is JSON-ready data (or ``None``)."""

    property: str
    module: str
    source: str  # base | head
    seed: int
    case_index: int | None
    arguments: Any
    message: str
    kind: str  # one of KINDS ("" in a report read back without one)

    def to_json(self) -> dict[str, object]:
        """Return the failure as JSON-ready data, keys in a fixed order."""
        return {
            "property": self.property,
            "module": self.module,
            "source": self.source,
            "seed": self.seed,
            "case_index": self.case_index,
            "arguments": self.arguments,
            "message": self.message,
            "kind": self.kind,
        }

    @classmethod
    def parse(cls, item: Fields) -> Failure:
        """Read one entry of ``failures``. Raises ``ReportError``."""
        item.only(
            ("property", "module", "source", "seed", "case_index", "arguments", "message", "kind")
        )
        return cls(
            property=item.string("property"),
            module=item.string("module"),
            source=item.choice("source", SOURCES),
            seed=item.integer("seed"),
            case_index=item.integer("case_index", null=True),
            arguments=_raw(item, "arguments"),
            message=item.string("message"),
            kind=item.string("kind", default=""),
        )


@dataclass(frozen=True)
class PropertyRun:
    """One property run from one module version: its style and outcome
    (``pass``, ``fail``: its assertion failed, ``error``, or ``timeout``)."""

    module: str
    property: str
    source: str
    style: str
    outcome: str

    def to_json(self) -> dict[str, object]:
        """Return the run as JSON-ready data, keys in a fixed order."""
        return {
            "module": self.module,
            "property": self.property,
            "source": self.source,
            "style": self.style,
            "outcome": self.outcome,
        }

    @classmethod
    def parse(cls, item: Fields) -> PropertyRun:
        """Read one entry of ``properties``. Raises ``ReportError``."""
        item.only(("module", "property", "source", "style", "outcome"))
        return cls(
            module=item.string("module"),
            property=item.string("property"),
            source=item.choice("source", SOURCES),
            style=item.choice("style", STYLES),
            outcome=item.choice("outcome", OUTCOMES),
        )


@dataclass(frozen=True)
class OracleFinding:
    """A reason to doubt a property as an oracle (shown to the reviewer; never red)."""

    module: str
    property: str
    kind: str
    detail: str

    def to_json(self) -> dict[str, object]:
        """Return the finding as JSON-ready data, keys in a fixed order."""
        return {
            "property": self.property,
            "module": self.module,
            "kind": self.kind,
            "detail": self.detail,
        }

    @classmethod
    def parse(cls, item: Fields) -> OracleFinding:
        """Read one entry of ``oracle_findings`` (``module``, optional in the format, reads
        as empty when absent). Raises ``ReportError``."""
        item.only(("property", "module", "kind", "detail"))
        return cls(
            module=item.string("module", default=""),
            property=item.string("property"),
            kind=item.choice("kind", ORACLE_KINDS),
            detail=item.string("detail"),
        )


@dataclass(frozen=True)
class Mutation:
    """How many mutants of the code under test one head property killed (or why the audit
    of that property could not finish: ``error``)."""

    module: str
    property: str
    mutants: int
    killed: int
    error: str | None = None

    def ratio(self) -> float | None:
        """Return ``killed / mutants`` rounded to 4 places; ``None`` without mutants."""
        return round(self.killed / self.mutants, 4) if self.mutants else None

    def to_json(self) -> dict[str, object]:
        """Return the entry as JSON-ready data, keys in a fixed order."""
        data: dict[str, object] = {
            "module": self.module,
            "property": self.property,
            "mutants": self.mutants,
            "killed": self.killed,
            "ratio": self.ratio(),
        }
        if self.error is not None:
            data["error"] = self.error
        return data

    @classmethod
    def parse(cls, item: Fields) -> Mutation:
        """Read one entry of ``mutation`` (``ratio`` is checked for its type and otherwise
        recomputed). Raises ``ReportError``."""
        item.only(("module", "property", "mutants", "killed", "ratio", "error"))
        ratio = _raw(item, "ratio")
        if ratio is not None and (not isinstance(ratio, int | float) or isinstance(ratio, bool)):
            raise item.wrong("ratio", "a number or null", ratio)
        return cls(
            module=item.string("module"),
            property=item.string("property"),
            mutants=item.integer("mutants", lo=0),
            killed=item.integer("killed", lo=0),
            error=item.string("error", default=None),
        )


@dataclass(frozen=True)
class IsolationInfo:
    """Which isolation layers the children had (the same on the same machine)."""

    network: str  # bwrap+audit | netns+audit | audit
    timeout_s: float

    def to_json(self) -> dict[str, object]:
        """Return the layers as JSON-ready data, keys in a fixed order."""
        return {
            "network": self.network,
            "process": "own session; the process group is killed (SIGKILL) when it ends",
            "environment": "minimal, PYTHONHASHSEED=0, empty HOME",
            "timeout_s": self.timeout_s,
        }

    @classmethod
    def parse(cls, item: Fields) -> IsolationInfo:
        """Read ``isolation`` (``process`` and ``environment`` are fixed wording, checked to
        be strings). Raises ``ReportError``."""
        item.only(("network", "process", "environment", "timeout_s"))
        item.string("process")
        item.string("environment")
        timeout = item.number("timeout_s")
        if timeout <= 0:
            raise item.wrong("timeout_s", "a number above 0", timeout)
        return cls(network=item.choice("network", NETWORKS), timeout_s=timeout)


@dataclass(frozen=True)
class ChildTiming:
    """Wall-clock seconds of one child (``mode`` run, audit, or import: the base import
    that tells an environment's missing package from the patch's). ``cached``: no child
    started, the run's result came from the result cache (``seconds`` is the lookup's)."""

    module: str
    source: str
    mode: str
    seconds: float
    cached: bool = False

    def to_json(self) -> dict[str, object]:
        """Return the timing as JSON-ready data, keys in a fixed order."""
        return {
            "module": self.module,
            "source": self.source,
            "mode": self.mode,
            "seconds": round(self.seconds, 6),
            "cached": self.cached,
        }

    @classmethod
    def parse(cls, item: Fields) -> ChildTiming:
        """Read one entry of ``timings.children`` (``cached`` reads as false when absent).
        Raises ``ReportError``."""
        item.only(("module", "source", "mode", "seconds", "cached"))
        return cls(
            module=item.string("module"),
            source=item.string("source"),
            mode=item.string("mode"),
            seconds=item.number("seconds"),
            cached=item.boolean("cached", default=False),
        )


@dataclass(frozen=True)
class CacheUse:
    """What the result cache did for one lane run: runs whose result it gave (``hits``),
    runs it did not have (``misses``: a child ran), runs stored for next time, and entries
    whose MAC did not verify (``unverified``: not used, removed)."""

    hits: int
    misses: int
    stored: int
    unverified: int = 0

    def to_json(self) -> dict[str, object]:
        """Return the counts as JSON-ready data, keys in a fixed order."""
        return {
            "hits": self.hits,
            "misses": self.misses,
            "stored": self.stored,
            "unverified": self.unverified,
        }

    @classmethod
    def parse(cls, item: Fields) -> CacheUse:
        """Read ``timings.cache``. Raises ``ReportError``."""
        item.only(("hits", "misses", "stored", "unverified"))
        return cls(
            hits=item.integer("hits", lo=0),
            misses=item.integer("misses", lo=0),
            stored=item.integer("stored", lo=0),
            unverified=item.integer("unverified", lo=0, default=0),
        )


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
    seed: int | None
    cases: int | None
    modules: tuple[str, ...] = ()
    failures: tuple[Failure, ...] = ()
    oracle_findings: tuple[OracleFinding, ...] = ()
    base: str | None = None
    head: str | None = None
    properties: tuple[PropertyRun, ...] = ()
    mutation: tuple[Mutation, ...] = ()
    oracle_audit: str = "not run"
    isolation: IsolationInfo | None = None
    seconds: float = 0.0
    children: tuple[ChildTiming, ...] = ()
    cache: CacheUse | None = None
    review_events: tuple[str, ...] = ()
    # Tests the map names (``lanes.property.tests``) that do not run: (node id, why).
    skipped_tests: tuple[tuple[str, str], ...] = ()

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
        """Return the report as JSON-ready data, keys in a fixed order."""
        data: dict[str, object] = {
            "lane": LANE,
            "status": self.status.value,
            "reason": self.reason,
            "seed": self.seed,
            "cases": self.cases,
            "modules": list(self.modules),
        }
        if self.isolation is not None:
            data.update(
                {
                    "base": self.base,
                    "head": self.head,
                    "properties": [p.to_json() for p in self.properties],
                }
            )
        if self.skipped_tests:
            data["skipped_tests"] = [{"test": t, "reason": r} for t, r in self.skipped_tests]
        data["failures"] = [f.to_json() for f in self.failures]
        data["oracle_findings"] = [f.to_json() for f in self.oracle_findings]
        if self.isolation is not None:
            data.update(
                {
                    "mutation": [m.to_json() for m in self.mutation],
                    "oracle_audit": self.oracle_audit,
                    "isolation": self.isolation.to_json(),
                    "timings": {
                        "seconds": round(self.seconds, 6),
                        "children": [c.to_json() for c in self.children],
                        "cache": None if self.cache is None else self.cache.to_json(),
                    },
                }
            )
        if self.review_events:
            data["review_events"] = list(self.review_events)
        return data

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


def _raw(item: Fields, key: str) -> Any:
    """Return the value at ``key``, whatever it is. Raises ``ReportError`` when absent."""
    item.require(key)
    return item.get(key)


def _parse(doc: Document, value: object) -> PropertyReport:
    top, status, reason = envelope(doc, value, LANE)
    top.only(TOP_KEYS)
    timings = top.mapping("timings", default=None)
    if timings is not None:
        timings.only(TIMING_KEYS)
    return PropertyReport(
        status=status,
        reason=reason,
        seed=top.integer("seed", null=True, default=None),
        cases=top.integer("cases", null=True, default=None),
        modules=top.text_list("modules", item=None, default=()),
        failures=tuple(Failure.parse(f) for f in top.items("failures", default=())),
        oracle_findings=tuple(
            OracleFinding.parse(f) for f in top.items("oracle_findings", default=())
        ),
        base=top.string("base", null=True, default=None),
        head=top.string("head", null=True, default=None),
        properties=tuple(PropertyRun.parse(p) for p in top.items("properties", default=())),
        mutation=tuple(Mutation.parse(m) for m in top.items("mutation", default=())),
        oracle_audit=top.choice("oracle_audit", ORACLE_AUDITS, default="not run"),
        isolation=IsolationInfo.parse(top.mapping("isolation")) if top.has("isolation") else None,
        seconds=0.0 if timings is None else timings.number("seconds", default=0.0),
        children=()
        if timings is None
        else tuple(ChildTiming.parse(c) for c in timings.items("children", default=())),
        cache=_cache_use(timings),
        review_events=review_events(top),
        skipped_tests=tuple(
            (item.only(("test", "reason")).string("test"), item.string("reason"))
            for item in top.items("skipped_tests", default=())
        ),
    )


def _cache_use(timings: Fields | None) -> CacheUse | None:
    """Read ``timings.cache`` (absent or null: the result cache was not used)."""
    if timings is None or timings.get("cache") is None:
        return None
    return CacheUse.parse(timings.mapping("cache"))


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
