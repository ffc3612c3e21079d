"""The annotations of one gate's evidence: the verdict, then each finding at its file.

A property counterexample points at the property module (the failing line when the
traceback names it, else the property's ``def``), a fixture file that changed without a
lock update at that file, a replay node that failed at its test (the failing line pytest
reported, else the test's ``def``), a freeze record that fails its audit at the registry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from patchlane.ci.locate import Locator, message_line
from patchlane.ci.workflow import Annotation
from patchlane.formats.fixture_report import FixtureReport
from patchlane.formats.freeze_report import FreezeReport
from patchlane.formats.property_report import MODULE_LEVEL, Failure, PropertyReport
from patchlane.formats.replay_report import ReplayReport
from patchlane.formats.verdict_file import ACCEPT, REJECT, Verdict
from patchlane.gate.reports import Evidence
from patchlane.inputs.paths import under_any

# Findings annotated at their files, after the verdict's own annotation. GitHub shows ten
# errors and ten warnings per step; the rest are in the evidence, and a notice says so.
MAX_FINDINGS = 30
_ARGUMENTS_LIMIT = 500


def evidence_annotations(
    evidence: Evidence, verdict: Verdict, locator: Locator
) -> list[Annotation]:
    """Return the verdict's annotation, then at most ``MAX_FINDINGS`` findings, then (when
    some were left out) a notice of how many."""
    reports = evidence.reports
    findings = [
        *_property(reports.property, locator),
        *_fixture(reports.fixture, locator),
        *_freeze(reports.freeze, locator),
        *_replay(reports.replay, locator),
    ]
    out = [_verdict(verdict), *findings[:MAX_FINDINGS]]
    if len(findings) > MAX_FINDINGS:
        more = len(findings) - MAX_FINDINGS
        out.append(Annotation("notice", f"{more} more finding(s): see the evidence artifact"))
    return out


def _verdict(verdict: Verdict) -> Annotation:
    level = {REJECT: "error", ACCEPT: "notice"}.get(verdict.verdict, "warning")
    lines = [f"rule {r.rule} [{r.lane}] {r.effect}: {r.message}" for r in verdict.reasons]
    return Annotation(level, "\n".join(lines), title=f"patchlane: {verdict.verdict}")


def _property(report: PropertyReport | None, locator: Locator) -> Iterable[Annotation]:
    if report is None:
        return
    chosen: dict[tuple[str, str], Failure] = {}
    for failure in report.failures:
        key = (failure.module, failure.property)
        # The head's run is the one whose lines the pull request shows.
        if key not in chosen or failure.source == "head":
            chosen[key] = failure
    for failure in chosen.values():
        rel = locator.module_file(failure.module)
        yield Annotation(
            "error",
            _counterexample(failure),
            title=f"patchlane: property {failure.property} failed",
            file=None if rel is None else locator.shown(rel),
            line=None if rel is None else _property_line(failure, rel, locator),
        )
    for finding in report.oracle_findings:
        rel = locator.module_file(finding.module) if finding.module else None
        yield Annotation(
            "warning",
            f"{finding.property}: {finding.kind}: {finding.detail}",
            title="patchlane: a weak oracle",
            file=None if rel is None else locator.shown(rel),
            line=None if rel is None else locator.def_line(rel, _qualname(finding.property)),
        )


def _property_line(failure: Failure, rel: str, locator: Locator) -> int | None:
    if failure.source == "head":
        line = message_line(failure.message, locator.spellings(rel))
        if line is not None:
            return line
    if failure.property == MODULE_LEVEL:
        return None
    return locator.def_line(rel, _qualname(failure.property))


def _counterexample(failure: Failure) -> str:
    if failure.property == MODULE_LEVEL:
        return f"{failure.module} ({failure.source}): {failure.message}"
    case = "" if failure.case_index is None else f", case {failure.case_index}"
    return (
        f"{failure.property} ({failure.source} version) failed with seed {failure.seed}{case}"
        f", arguments {_arguments(failure.arguments)}: {failure.message}"
    )


def _arguments(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= _ARGUMENTS_LIMIT else text[: _ARGUMENTS_LIMIT - 3] + "..."


def _qualname(name: str) -> tuple[str, ...]:
    """``test_x[1-2]`` or ``Class::test_x`` as the names of the definition to find."""
    return tuple(part.split("[", 1)[0] for part in name.split("::") if part)


def _fixture(report: FixtureReport | None, locator: Locator) -> Iterable[Annotation]:
    if report is None:
        return
    title = "patchlane: fixture bytes differ from the lock"
    for path in report.changed:
        lock = _lock_of(report, path)
        yield Annotation(
            "error", f"{path} changed, but {lock} was not updated", title, locator.shown(path)
        )
    for path in report.extra:
        lock = _lock_of(report, path)
        yield Annotation("error", f"{path} is not in {lock}", title, locator.shown(path))
    for path in report.missing:
        lock = _lock_of(report, path)
        where = None if lock == "its lock" else locator.shown(lock)
        yield Annotation("error", f"{path} is in {lock} but missing", title, where)
    for unsafe in report.unsafe:
        yield Annotation("error", f"{unsafe.path}: {unsafe.problem}", title, None)
    for problem in report.lock_errors:
        yield Annotation("error", problem.problem, title, locator.shown(problem.lock))


def _lock_of(report: FixtureReport, path: str) -> str:
    for root in report.roots:
        if under_any(path, root.paths):
            return root.lock
    return "its lock"


def _freeze(report: FreezeReport | None, locator: Locator) -> Iterable[Annotation]:
    if report is None:
        return
    registry = report.registry
    for record in report.records:
        if not record.red:
            continue
        rules = ", ".join(str(n) for n in record.failed_rules)
        why = "; ".join(
            d for n, d in enumerate(record.details, 1) if n in record.failed_rules and d
        )
        yield Annotation(
            "error",
            f"freeze {record.id} ({record.nodeid}) fails rule(s) {rules}"
            + (f": {why}" if why else ""),
            title="patchlane: freeze audit",
            file=None if registry is None else locator.shown(registry),
            line=None if registry is None else _record_line(locator, registry, record.id),
        )


def _record_line(locator: Locator, registry: str, record_id: str) -> int | None:
    data = locator.read(registry)
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), 1):
        key, _, value = line.strip().lstrip("-").strip().partition(":")
        if key.strip() == "id" and value.strip().strip("'\"") == record_id:
            return number
    return None


def _replay(report: ReplayReport | None, locator: Locator) -> Iterable[Annotation]:
    if report is None:
        return
    excused = set(report.fail_at_base_too or ())
    whys = report.failed_why or {}
    for nodeid in report.failed:
        if nodeid in excused:
            continue
        rel, _, rest = nodeid.partition("::")
        why = whys.get(nodeid, "")
        line = message_line(why, (rel,)) if why else None
        if line is None:
            line = locator.def_line(rel, _qualname(rest))
        found = locator.exists(rel)
        yield Annotation(
            "error",
            f"{nodeid} failed on the replay slice" + (f": {why}" if why else ""),
            title=f"patchlane: replay failure {nodeid}",
            file=locator.shown(rel) if found else None,
            line=line if found else None,
        )
