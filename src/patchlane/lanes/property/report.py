"""The property lane's report (``property-report.json``).

Every field but ``timings`` is a function of the repository state, the seed, the case
count and the mutation bound, so two runs give byte-identical JSON apart from that field.
The report validates against ``schemas/property-report.schema.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LANE = "property"
MODULE_LEVEL = "(module)"  # the ``property`` of a failure that concerns a whole module
# A failure's ``kind``: the property's own assertion; any other exception; the wall clock;
# a result channel that cannot be trusted (exit, crash, garbage, missing result); a blocked
# network or process attempt; a module that is missing, unparsable or shadowed.
KINDS = ("assertion", "error", "timeout", "protocol", "sandbox", "module")
ORACLE_KINDS = ("mirrors_implementation", "survives_mutants")


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
    kind: str

    def to_json(self) -> dict[str, Any]:
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


@dataclass(frozen=True)
class PropertyRun:
    """One property run from one module version: its style and outcome
    (``pass``, ``fail``: its assertion failed, ``error``, or ``timeout``)."""

    module: str
    property: str
    source: str
    style: str
    outcome: str

    def to_json(self) -> dict[str, Any]:
        """Return the run as JSON-ready data, keys in a fixed order."""
        return {
            "module": self.module,
            "property": self.property,
            "source": self.source,
            "style": self.style,
            "outcome": self.outcome,
        }


@dataclass(frozen=True)
class OracleFinding:
    """A reason to doubt a property as an oracle (shown to the reviewer; never red)."""

    module: str
    property: str
    kind: str
    detail: str

    def to_json(self) -> dict[str, Any]:
        """Return the finding as JSON-ready data, keys in a fixed order."""
        return {
            "property": self.property,
            "module": self.module,
            "kind": self.kind,
            "detail": self.detail,
        }


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

    def to_json(self) -> dict[str, Any]:
        """Return the entry as JSON-ready data, keys in a fixed order."""
        data: dict[str, Any] = {
            "module": self.module,
            "property": self.property,
            "mutants": self.mutants,
            "killed": self.killed,
            "ratio": self.ratio(),
        }
        if self.error is not None:
            data["error"] = self.error
        return data


@dataclass(frozen=True)
class IsolationInfo:
    """Which isolation layers the children had (the same on the same machine)."""

    network: str  # netns+audit | audit
    timeout_s: float

    def to_json(self) -> dict[str, Any]:
        """Return the layers as JSON-ready data, keys in a fixed order."""
        return {
            "network": self.network,
            "process": "own session; the process group is killed (SIGKILL) when it ends",
            "environment": "minimal, PYTHONHASHSEED=0, empty HOME",
            "timeout_s": self.timeout_s,
        }


@dataclass(frozen=True)
class ChildTiming:
    """Wall-clock seconds of one child (``mode`` run, audit, or import: the base import
    that tells an environment's missing package from the patch's)."""

    module: str
    source: str
    mode: str
    seconds: float


@dataclass(frozen=True)
class PropertyReport:
    """The property lane's report.

    ``status`` is ``pass`` (every property run holds), ``fail`` (a property failed, errored,
    timed out or could not be trusted) or ``error`` (a listed module could not be
    evaluated at all: missing at base and head, unparsable, shadowed, without properties).
    ``base``/``head`` are commit ids, ``None`` for the work tree. ``oracle_audit`` is
    ``ran``, ``not available`` (the oracle audit is not installed) or ``not run``.
    """

    status: str
    reason: str
    seed: int
    cases: int
    modules: tuple[str, ...]
    base: str | None
    head: str | None
    properties: tuple[PropertyRun, ...]
    failures: tuple[Failure, ...]
    oracle_findings: tuple[OracleFinding, ...]
    mutation: tuple[Mutation, ...]
    oracle_audit: str
    isolation: IsolationInfo
    seconds: float
    children: tuple[ChildTiming, ...]

    @property
    def ok(self) -> bool:
        """Whether the lane is green."""
        return self.status == "pass"

    def to_json(self) -> dict[str, Any]:
        """Return the report as JSON-ready data, keys in a fixed order."""
        return {
            "lane": LANE,
            "status": self.status,
            "reason": self.reason,
            "seed": self.seed,
            "cases": self.cases,
            "modules": list(self.modules),
            "base": self.base,
            "head": self.head,
            "properties": [p.to_json() for p in self.properties],
            "failures": [f.to_json() for f in self.failures],
            "oracle_findings": [f.to_json() for f in self.oracle_findings],
            "mutation": [m.to_json() for m in self.mutation],
            "oracle_audit": self.oracle_audit,
            "isolation": self.isolation.to_json(),
            "timings": {
                "seconds": round(self.seconds, 6),
                "children": [
                    {
                        "module": c.module,
                        "source": c.source,
                        "mode": c.mode,
                        "seconds": round(c.seconds, 6),
                    }
                    for c in self.children
                ],
            },
        }


def status_and_reason(
    failures: tuple[Failure, ...],
    runs: tuple[PropertyRun, ...],
    seed: int,
    cases: int,
    where: str,
) -> tuple[str, str]:
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
        return "fail", (
            f"{failed} of {len(runs)} property run(s) failed; first: {first.property} "
            f"({first.module}, {first.source}){case}: {_clip(first.message)}"
        )
    if module_level:
        first = module_level[0]
        return "error", f"{first.module} ({first.source}): {_clip(first.message)}"
    if not runs:
        return "error", "no property ran"
    modules = len({r.module for r in runs})
    return "pass", (
        f"{len(runs)} property run(s) in {modules} module(s) hold "
        f"(seed {seed}, {cases} cases; {where})"
    )


def _clip(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
