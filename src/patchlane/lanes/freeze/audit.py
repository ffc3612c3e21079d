"""Audit rules 1-6 (docs/architecture.md §4) over the base's freeze registry.

Every record is audited and every rule is reported by number. Rule 5 decides whether a
record is in play for this patch (its test file is changed, or it failed on the last run);
a record not in play skips nothing and cannot turn the lane red, however stale it is. A
record in play that fails any other rule turns the lane red.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING

from patchlane.formats.freeze_report import RULES, RecordResult
from patchlane.formats.property_report import MODULE_LEVEL
from patchlane.formats.status import Status
from patchlane.lanes.freeze.history import History
from patchlane.lanes.freeze.registry import FreezeRecord
from patchlane.lanes.freeze.source import Registry
from patchlane.project.config import FreezeLane

if TYPE_CHECKING:
    from patchlane.formats.fixture_report import FixtureReport
    from patchlane.formats.property_report import PropertyReport


@dataclass(frozen=True)
class PropertyEvidence:
    """What the property report says about each (module, property): its runs' outcomes,
    and which properties and whole modules failed."""

    outcomes: dict[tuple[str, str], tuple[str, ...]]
    failed: frozenset[tuple[str, str]]
    failed_modules: frozenset[str]
    why_empty: str | None  # why the report knows no property at all

    @classmethod
    def of(cls, report: PropertyReport | None) -> PropertyEvidence:
        """Read a property report (``None``: no report)."""
        if report is None:
            return cls({}, frozenset(), frozenset(), "there is no property report")
        if report.status == Status.NOT_APPLICABLE:
            why = f"the property lane is not_applicable: {report.reason}"
            return cls({}, frozenset(), frozenset(), why)
        outcomes: dict[tuple[str, str], list[str]] = {}
        for run in report.properties:
            outcomes.setdefault((run.module, run.property), []).append(run.outcome)
        failed = frozenset((f.module, f.property) for f in report.failures)
        modules = frozenset(f.module for f in report.failures if f.property == MODULE_LEVEL)
        return cls({k: tuple(v) for k, v in outcomes.items()}, failed, modules, None)

    def judge(self, name: str) -> str | None:
        """Return why the required property ``name`` (``prop`` or ``module.prop``) does
        not hold, or ``None`` when it is known and every run of it passed."""
        module, _, prop = name.rpartition(".")
        keys = [k for k in self.outcomes if k[1] == prop and (not module or k[0] == module)]
        if not keys:
            return f"{name} is unknown to the property report" + (
                f" ({self.why_empty})" if self.why_empty else ""
            )
        for key in keys:
            bad = sorted({o for o in self.outcomes[key] if o != "pass"})
            if bad or key in self.failed or key[0] in self.failed_modules:
                what = ", ".join(bad) if bad else "listed in failures"
                return f"{name} failed in {key[0]} ({what})"
        return None


@dataclass(frozen=True)
class LockEvidence:
    """What the fixture report says about each lock: ``True`` only for a root whose
    ``ok`` is true and whose lock is not among ``lock_errors``."""

    locks: dict[str, bool]
    errors: frozenset[str]
    present: bool

    @classmethod
    def of(cls, report: FixtureReport | None) -> LockEvidence:
        """Read a fixture report (``None``: no report)."""
        if report is None:
            return cls({}, frozenset(), False)
        locks: dict[str, bool] = {}
        for root in report.roots:
            locks[root.lock] = locks.get(root.lock, True) and root.ok
        return cls(locks, frozenset(e.lock for e in report.lock_errors), True)


# --- the rules: each returns (holds, one line saying why) ---------------------------------


def rule_expiry(r: FreezeRecord, today: date, max_age_days: int) -> tuple[bool, str]:
    """Rule 1: ``expires`` present, not before ``today``, not after today + max age."""
    if r.expires is None:
        return False, "no expires: a freeze without an expiry is a permanent skip"
    try:
        latest = today + timedelta(days=max_age_days)
    except OverflowError:
        latest = date.max
    if r.expires < today:
        return False, f"expired on {r.expires} (review date {today})"
    if r.expires > latest:
        return False, (
            f"expires {r.expires}, later than {latest} "
            f"(review date {today} + max_age_days {max_age_days})"
        )
    return True, f"expires {r.expires}, within {max_age_days} days of {today}"


def rule_properties_listed(r: FreezeRecord) -> tuple[bool, str]:
    """Rule 2: at least one required property."""
    if not r.required_properties:
        return False, "required_properties is empty: a freeze must keep a property mandatory"
    return True, f"requires {', '.join(r.required_properties)}"


def rule_properties_hold(r: FreezeRecord, props: PropertyEvidence) -> tuple[bool, str]:
    """Rule 3: every required property is known to the property report and passed."""
    if not r.required_properties:
        return True, "no required property to check (see rule 2)"
    problems = [p for p in (props.judge(name) for name in r.required_properties) if p]
    if problems:
        return False, "; ".join(problems)
    return True, f"{', '.join(r.required_properties)} passed"


def rule_lock(r: FreezeRecord, locks: LockEvidence) -> tuple[bool, str]:
    """Rule 4: the record's fixture lock (if it names one) passed in the fixture report."""
    lock = r.fixture_lock
    if lock is None:
        return True, "names no fixture lock"
    if not locks.present:
        return False, f"{lock}: there is no fixture report"
    if lock in locks.errors:
        return False, f"{lock} has an error in the fixture report"
    if lock not in locks.locks:
        return False, f"{lock} is unknown to the fixture report"
    if not locks.locks[lock]:
        return False, f"{lock} failed in the fixture report"
    return True, f"{lock} passed in the fixture report"


def rule_in_play(
    r: FreezeRecord, changed_paths: frozenset[str], failure_log: frozenset[str]
) -> tuple[bool, str]:
    """Rule 5: the test file is changed by the patch, or the node id is in the failure log
    (matched exactly: no prefix, no parametrised sibling)."""
    if r.test_file in changed_paths:
        return True, f"{r.test_file} is changed by the patch"
    if r.nodeid in failure_log:
        return True, "the node id is in the failure log"
    return False, (
        f"not in play: {r.test_file} is not changed by the patch and the node id is not "
        "in the failure log"
    )


def rule_extensions(r: FreezeRecord, history: History, max_extensions: int) -> tuple[bool, str]:
    """Rule 6: every extension of ``expires`` came with a new failure log, and there were
    at most ``max_extensions`` of them (history read from git on the base side)."""
    extensions = history.of(r.id)
    problems = [
        f"extended {e.old} -> {e.new} in {e.commit[:12]} without a new failure_log"
        for e in extensions
        if not e.new_log
    ]
    if len(extensions) > max_extensions:
        problems.append(f"extended {len(extensions)} times (max_extensions {max_extensions})")
    if problems:
        return False, "; ".join(problems)
    if not extensions:
        return True, "never extended"
    return True, (
        f"extended {len(extensions)} time(s) (max_extensions {max_extensions}), "
        "each with a new failure_log"
    )


def judge_record(
    r: FreezeRecord,
    lane: FreezeLane,
    *,
    today: date,
    props: PropertyEvidence,
    locks: LockEvidence,
    changed_paths: frozenset[str],
    failure_log: frozenset[str],
    history: History,
) -> RecordResult:
    """Apply rules 1-6 to one record and return its result."""
    verdicts = (
        rule_expiry(r, today, lane.max_age_days),
        rule_properties_listed(r),
        rule_properties_hold(r, props),
        rule_lock(r, locks),
        rule_in_play(r, changed_paths, failure_log),
        rule_extensions(r, history, lane.max_extensions),
    )
    failed = tuple(rule for rule, (holds, _) in zip(RULES, verdicts, strict=True) if not holds)
    return RecordResult(
        id=r.id,
        nodeid=r.nodeid,
        owner=r.owner,
        expires=r.expires,
        failed_rules=failed,
        details=tuple(text for _, text in verdicts),
    )


def records_in_play(
    registry: Registry, changed_paths: frozenset[str], failure_log: frozenset[str]
) -> tuple[str, ...]:
    """Return the ids of the registry's records that pass rule 5 (in play), in order."""
    return tuple(r.id for r in registry.records if rule_in_play(r, changed_paths, failure_log)[0])
