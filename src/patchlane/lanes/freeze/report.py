"""The freeze lane's report (``freeze-report.json``).

Every field but ``timings`` is a function of the repository, the review date, the other
lanes' reports and the failure log, so two runs give byte-identical JSON apart from that
field. The report validates against ``schemas/freeze-report.schema.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

LANE = "freeze"
RULES = (1, 2, 3, 4, 5, 6)
IN_PLAY_RULE = 5


@dataclass(frozen=True)
class RecordResult:
    """One audited record: whether it is in play (rule 5 holds), which rules failed, and
    one line per rule (1 to 6, pass or fail) saying why."""

    id: str
    nodeid: str
    owner: str
    expires: date | None
    failed_rules: tuple[int, ...]
    details: tuple[str, ...]  # details[i] explains rule i + 1

    @property
    def in_play(self) -> bool:
        """Whether the record concerns this patch (rule 5 holds)."""
        return IN_PLAY_RULE not in self.failed_rules

    @property
    def ok(self) -> bool:
        """Whether every rule holds: only then may the record's node id be skipped."""
        return not self.failed_rules

    @property
    def red(self) -> bool:
        """Whether the record turns the lane red: in play, and another rule fails."""
        return self.in_play and not self.ok

    def to_json(self) -> dict[str, Any]:
        """Return the record as JSON-ready data, keys in a fixed order."""
        return {
            "id": self.id,
            "nodeid": self.nodeid,
            "owner": self.owner,
            "expires": None if self.expires is None else self.expires.isoformat(),
            "in_play": self.in_play,
            "ok": self.ok,
            "failed_rules": list(self.failed_rules),
            "details": {str(rule): text for rule, text in zip(RULES, self.details, strict=True)},
        }


@dataclass(frozen=True)
class FreezeReport:
    """The freeze lane's report.

    ``status`` is ``pass`` (no in-play record fails), ``fail`` (one does, or the patch's
    registry cannot be read) or ``not_applicable`` (no freeze lane, or no registry at base
    or head). ``registry_source`` is ``base`` or ``none``. ``skippable`` holds the node ids
    of the records in play that pass every rule: the only node ids anything may skip.
    """

    status: str
    reason: str
    today: date
    registry: str | None
    registry_source: str
    max_age_days: int | None
    max_extensions: int | None
    base: str | None
    head: str | None
    merge_base: str | None
    records: tuple[RecordResult, ...]
    added_by_patch: tuple[str, ...]
    changed_by_patch: tuple[str, ...]
    removed_by_patch: tuple[str, ...]
    head_registry_problem: str | None
    history_versions: int
    notes: tuple[str, ...]
    seconds: float

    @property
    def ok(self) -> bool:
        """Whether the lane is green (``pass`` or ``not_applicable``)."""
        return self.status != "fail"

    @property
    def skippable(self) -> tuple[str, ...]:
        """The node ids of the records in play that pass every rule, in registry order."""
        return tuple(r.nodeid for r in self.records if r.in_play and r.ok)

    @property
    def in_play(self) -> tuple[str, ...]:
        """The ids of the records in play (rule 5 holds), in registry order."""
        return tuple(r.id for r in self.records if r.in_play)

    def to_json(self) -> dict[str, Any]:
        """Return the report as JSON-ready data, keys in a fixed order."""
        return {
            "lane": LANE,
            "status": self.status,
            "reason": self.reason,
            "today": self.today.isoformat(),
            "registry": self.registry,
            "registry_source": self.registry_source,
            "max_age_days": self.max_age_days,
            "max_extensions": self.max_extensions,
            "base": self.base,
            "head": self.head,
            "merge_base": self.merge_base,
            "records": [r.to_json() for r in self.records],
            "added_by_patch": list(self.added_by_patch),
            "changed_by_patch": list(self.changed_by_patch),
            "removed_by_patch": list(self.removed_by_patch),
            "head_registry_problem": self.head_registry_problem,
            "skippable": list(self.skippable),
            "history_versions": self.history_versions,
            "notes": list(self.notes),
            "timings": {"seconds": round(self.seconds, 6)},
        }
