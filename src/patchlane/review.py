"""The review note: exactly four fields, filled from the reports or marked ``not reviewed``.

Property seed and case count; fixture lock result or the lock update's reason; freeze ids
with expiries or ``none``; replay receipt hash or ``undecided``. A field that cannot be
filled from evidence says ``not reviewed`` and so does the note's header: the patch was
commented on, not reviewed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patchlane.ui import one_line, show

NOT_REVIEWED = "not reviewed"


@dataclass(frozen=True)
class Field:
    name: str
    text: str
    filled: bool


@dataclass(frozen=True)
class ReviewNote:
    verdict: str | None
    fields: tuple[Field, ...]
    control_plane: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]

    @property
    def reviewed(self) -> bool:
        return self.verdict is not None and all(f.filled for f in self.fields)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reviewed": self.reviewed,
            "fields": {f.name: {"text": f.text, "filled": f.filled} for f in self.fields},
            "control_plane": [{"path": p, "kind": k} for p, k in self.control_plane],
            "notes": list(self.notes),
        }

    def to_markdown(self) -> str:
        head = self.verdict or "no verdict"
        lines = [f"# patchlane review: {head}", ""]
        if not self.reviewed:
            missing = [f.name for f in self.fields if not f.filled] or ["verdict"]
            lines += [f"**{NOT_REVIEWED}**: no evidence for {', '.join(missing)}.", ""]
        titles = {
            "property": "Property seed and case count",
            "fixture": "Fixture lock",
            "freeze": "Freezes",
            "replay": "Replay receipt",
        }
        # Each field is one line whatever a report's text holds (an assertion message may
        # span lines), so the note always has exactly four fields.
        lines += [f"- **{titles[f.name]}:** {one_line(f.text)}" for f in self.fields]
        if self.control_plane:
            lines += ["", "Control-plane changes (a person must look at these):"]
            lines += [f"- `{show(p)}` ({k})" for p, k in self.control_plane]
        if self.notes:
            lines += [""] + [f"> {one_line(n)}" for n in self.notes]
        return "\n".join(lines) + "\n"


def _property_field(report: dict[str, Any] | None) -> Field:
    if report is None:
        return Field("property", f"{NOT_REVIEWED} (no property report)", False)
    seed, cases = report.get("seed"), report.get("cases")
    status = report.get("status")
    run = f"seed {seed}, {cases} cases"
    if report.get("not_built") or (status == "error" and seed is None):
        return Field(
            "property", f"{NOT_REVIEWED} ({report.get('reason', 'no reason given')})", False
        )
    if status == "not_applicable":
        return Field("property", f"not applicable: {report.get('reason')}", True)
    if not isinstance(seed, int) or not isinstance(cases, int):
        return Field("property", f"{NOT_REVIEWED} (the report has no seed or case count)", False)
    findings = _findings_text(report)
    if status == "pass":
        return Field("property", f"{run}: every property holds{findings}", True)
    failures = [f for f in report.get("failures") or [] if isinstance(f, dict)]
    if not failures:
        return Field("property", f"{run}: RED, {report.get('reason')}{findings}", True)
    first = failures[0]
    case = f" case {first.get('case_index')}" if first.get("case_index") is not None else ""
    example = (
        f"{first.get('property')} ({first.get('source')}) seed {first.get('seed')}{case} "
        f"arguments {_compact(first.get('arguments'))}: {first.get('message')}"
    )
    text = f"{run}: RED, {len(failures)} failed run(s); counterexample: {example}{findings}"
    return Field("property", text, True)


def _findings_text(report: dict[str, Any]) -> str:
    findings = [f for f in report.get("oracle_findings") or [] if isinstance(f, dict)]
    if not findings:
        return ""
    listed = ", ".join(f"{f.get('property')} {f.get('kind')}" for f in findings)
    return f"; oracle findings for a person: {listed}"


def _compact(value: Any) -> str:
    import json

    text = json.dumps(value, ensure_ascii=True, sort_keys=True)
    return text if len(text) <= 200 else text[:197] + "..."


def _fixture_field(report: dict[str, Any] | None) -> Field:
    if report is None:
        return Field("fixture", f"{NOT_REVIEWED} (no fixture report)", False)
    status = report.get("status")
    updates = report.get("lock_updates") or []
    update_text = "; ".join(
        f"lock {show(str(u.get('lock')))} updated: {u.get('reason')}"
        for u in updates
        if isinstance(u, dict)
    )
    if status in ("pass", "not_applicable"):
        roots = report.get("roots") or []
        counts = ", ".join(
            f"{show(str(r.get('lock')))} matches ({r.get('files')} files)"
            for r in roots
            if isinstance(r, dict)
        )
        text = update_text or counts or str(report.get("reason"))
        if status == "not_applicable":
            text = f"not applicable: {report.get('reason')}"
        return Field("fixture", text, True)
    if status == "fail":
        text = f"RED, {report.get('reason')}"
        return Field("fixture", f"{text}; {update_text}" if update_text else text, True)
    return Field("fixture", f"{NOT_REVIEWED} ({report.get('reason')})", False)


def _freeze_field(report: dict[str, Any] | None) -> Field:
    if report is None:
        return Field("freeze", f"{NOT_REVIEWED} (no freeze report)", False)
    status = report.get("status")
    if report.get("not_built") or status == "error":
        return Field("freeze", f"{NOT_REVIEWED} ({report.get('reason')})", False)
    records = [r for r in report.get("records") or [] if isinstance(r, dict) and r.get("in_play")]
    listed = ", ".join(f"{r.get('id')} (expires {r.get('expires')})" for r in records)
    if status == "fail":
        return Field(
            "freeze",
            f"RED, {report.get('reason')}" + (f"; in play: {listed}" if listed else ""),
            True,
        )
    return Field("freeze", listed or "none", True)


def _replay_field(report: dict[str, Any] | None) -> Field:
    if report is None:
        return Field("replay", "undecided (no replay report)", True)
    digest = report.get("receipt_sha256")
    if report.get("status") in ("pass", "fail") and isinstance(digest, str):
        skipped = [str(n) for n in report.get("skipped_by_freeze") or []]
        extra = ""
        if report.get("slice_count") is not None:
            extra += f"; slice {report.get('slice_count')} of {report.get('suite_size')} tests"
        if skipped:
            extra += f"; skipped by freeze: {', '.join(skipped)}"
        return Field("replay", f"receipt sha256 {digest} ({report.get('status')}{extra})", True)
    return Field("replay", f"undecided ({report.get('reason')})", True)


def build_note(
    classification: dict[str, Any] | None,
    reports: dict[str, dict[str, Any] | None],
    verdict: dict[str, Any] | None,
) -> ReviewNote:
    """Build the note from parsed reports (any may be ``None`` when its file is missing)."""
    fields = (
        _property_field(reports.get("property")),
        _fixture_field(reports.get("fixture")),
        _freeze_field(reports.get("freeze")),
        _replay_field(reports.get("replay")),
    )
    control: list[tuple[str, str]] = []
    notes: list[str] = []
    if classification is None:
        notes.append(
            "no classification: changed files, map coverage and control-plane changes unknown"
        )
    else:
        for item in classification.get("control_plane_details") or []:
            if isinstance(item, dict):
                control.append((str(item.get("path")), str(item.get("kind"))))
        map_info = classification.get("map") or {}
        if isinstance(map_info, dict) and map_info.get("source") == "head":
            notes.append("the base had no review map; the patch's own (head) map was used")
        elif isinstance(map_info, dict) and map_info.get("changed_by_patch"):
            notes.append("the patch changes the review map; the base's map governed this verdict")
        for path in classification.get("unmapped") or []:
            notes.append(f"unmapped: {show(str(path))} (extend the map)")
    verdict_name = verdict.get("verdict") if verdict else None
    if verdict:
        for reason in verdict.get("reasons") or []:
            if isinstance(reason, dict) and reason.get("effect") != "accept_for_review":
                notes.append(f"rule {reason.get('rule')}: {reason.get('message')}")
    return ReviewNote(
        verdict=verdict_name if isinstance(verdict_name, str) else None,
        fields=fields,
        control_plane=tuple(control),
        notes=tuple(notes),
    )
