"""The review note: exactly four fields, filled from the reports or marked ``not reviewed``.

Property seed and case count; fixture lock result or the lock update's reason; freeze ids
with expiries or ``none``; replay receipt hash or ``undecided``. A field that cannot be
filled from evidence says ``not reviewed`` and so does the note's header: the patch was
commented on, not reviewed. Beside the fields, what the note is about and how it was gated
(``PatchSection``): base, merge base and head, the changed files, the gate's wall time and
the isolation that ran.

Almost every value in the note comes from the repository (lock reasons, freeze ids, node
ids, paths, failure messages), which the patch may have written to forge the note. Each
piece of note text is therefore kept in two forms (``Text``): raw for ``--json`` (JSON is
already safe) and escaped by ``md_text`` for ``review.md``, where it renders as literal text
on one line. Only patchlane's own fixed wording goes into the Markdown unescaped.
"""

from __future__ import annotations

import dataclasses
import json
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patchlane.formats.status import Status
from patchlane.formats.verdict_file import ACCEPT, REJECT

if TYPE_CHECKING:
    from patchlane.formats.canary import Canary
    from patchlane.formats.fixture_report import FixtureReport
    from patchlane.formats.freeze_report import FreezeReport
    from patchlane.formats.property_report import PropertyReport
    from patchlane.formats.replay_report import ReplayReport
    from patchlane.formats.verdict_file import Reason, Verdict
    from patchlane.gate.reports import LaneReports
    from patchlane.gate.verdict import LaneEvidence
    from patchlane.project.classify import ChangedFile, ClassificationSummary

NOT_REVIEWED = "not reviewed"
# How many canary node ids the note names (the replay report lists them all).
_CANARY_SHOWN = 5
# How many skipped property tests the note names (the property report lists them all).
_SKIPPED_SHOWN = 10
# How many values copied from the tests the note names (replay-report.json lists them all).
_COPIED_SHOWN = 8
# How many changed files the note lists (classify.json lists them all).
_FILES_SHOWN = 50
# How many paths judged by the base's tests alone the property field names.
_ALONE_SHOWN = 10
# The property field for code no property covers (``lanes.replay.paths``).
TESTS_ALONE = "none: judged by the base's tests alone"

# Categories shown as escapes: control characters (CR, LF, TAB, ESC and the C1 controls),
# format characters (bidi overrides such as U+202E, zero-width spaces and joiners, U+FEFF),
# lone surrogates (os.fsdecode's stand-ins for non-UTF-8 bytes) and the Unicode line and
# paragraph separators. Each could break the one-line rule, drive a terminal, or make the
# text read differently from what it is.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Punctuation with inline meaning wherever it stands: escapes, code spans, emphasis, links
# and images, GFM tables and strikethrough, GitHub math, kramdown's ``{::comment}``, and
# ``#``/``+`` for good measure. ``_`` is handled on its own (see ``md_text``).
_ALWAYS_ESCAPED = frozenset("\\`*[]{}|~#+!$")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def md_text(value: object) -> str:
    """Return ``str(value)`` escaped so that Markdown renders it as literal text on one line.

    1. Control, format and separator characters (``_HIDDEN_CATEGORIES``: CR, LF, ESC,
       U+202E, U+200B, ...) become visible escapes such as ``\\n`` or ``\\u202e``.
    2. ``&``, ``<`` and ``>`` become HTML entities: no tag, comment or autolink survives.
    3. A backslash goes before Markdown punctuation: always before
       ``\\ ` * [ ] { } | ~ # + ! $``; before ``_`` unless it stands between two letters or
       digits (where CommonMark cannot open or close emphasis, so ``test_clamp`` stays as it
       is); before ``-`` as the first character and before ``.`` or ``)`` right after
       leading digits (list markers, should a value ever start a line). ``(``, ``)``, ``-``
       and ``.`` elsewhere have no inline meaning once ``[`` and ``]`` are escaped, and are
       left alone so that dates, ids and paths stay readable in the raw file.

    Rendered, the result shows the original text (with step 1's escapes) character for
    character. Never raises.
    """
    text = str(value)
    out: list[str] = []
    leading_digits = True
    for i, c in enumerate(text):
        if unicodedata.category(c) in _HIDDEN_CATEGORIES:
            # ascii() spells it \n, \x1b, \u202e, \udce9; its backslash is escaped in turn
            # so that Markdown shows the backslash rather than eating it.
            out.append("\\" + ascii(c)[1:-1])
        elif c in _HTML:
            out.append(_HTML[c])
        elif c in _ALWAYS_ESCAPED:
            out.append("\\" + c)
        elif c == "_":
            inside_word = 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()
            out.append(c if inside_word else "\\_")
        elif (c == "-" and i == 0) or (c in ".)" and i > 0 and leading_digits):
            out.append("\\" + c)
        else:
            out.append(c)
        leading_digits = leading_digits and c.isdigit()
    return "".join(out)


@dataclass(frozen=True)
class Text:
    """A piece of note text in both forms: ``plain`` (raw, for JSON) and ``md`` (safe
    Markdown for ``review.md``)."""

    plain: str
    md: str

    def __add__(self, other: Text) -> Text:
        return Text(self.plain + other.plain, self.md + other.md)


def fmt(wording: str, *values: object) -> Text:
    """Return patchlane's own ``wording`` with each ``{}`` replaced by the next value.

    A value that is a ``Text`` goes in as it is (both forms); any other value is repository
    text: raw in ``plain``, through ``md_text`` in ``md``. The wording itself is never
    escaped, so it must be plain Markdown-neutral prose. Raises ``ValueError`` when the
    number of ``{}`` and of values differ (a bug).
    """
    pieces = wording.split("{}")
    if len(pieces) != len(values) + 1:
        raise ValueError(f"{wording!r} has {len(pieces) - 1} slots for {len(values)} values")
    plain, md = [pieces[0]], [pieces[0]]
    for value, piece in zip(values, pieces[1:], strict=True):
        if isinstance(value, Text):
            plain.append(value.plain)
            md.append(value.md)
        else:
            plain.append(str(value))
            md.append(md_text(value))
        plain.append(piece)
        md.append(piece)
    return Text("".join(plain), "".join(md))


def join(separator: str, items: Iterable[Text]) -> Text:
    """Return ``items`` joined by patchlane's own ``separator`` (both forms)."""
    listed = list(items)
    return Text(separator.join(t.plain for t in listed), separator.join(t.md for t in listed))


@dataclass(frozen=True)
class Field:
    """One of the four fields: ``text`` is raw (JSON), ``markdown`` escaped (review.md)."""

    name: str
    text: str
    filled: bool
    markdown: str


def _field(name: str, text: Text, filled: bool) -> Field:
    return Field(name, text.plain, filled, text.md)


@dataclass(frozen=True)
class PatchSection:
    """What the note is about and how it was gated: the base, merge base and head commits,
    the changed files (``ChangedFile``: status, path, old path), the gate's wall time in seconds
    and the isolation that ran (``kind``: ``bwrap`` is the kernel sandbox; ``detail``: its
    line); ``None`` for what the evidence does not say."""

    base: str | None = None
    merge_base: str | None = None
    head: str | None = None
    files: tuple[ChangedFile, ...] = ()
    wall_seconds: float | None = None
    isolation: tuple[str, str] | None = None

    def to_json(self) -> dict[str, object]:
        """Return the section as JSON-ready data, keys in a fixed order."""
        return {
            "base": self.base,
            "merge_base": self.merge_base,
            "head": self.head,
            "files": [
                {"status": f.status, "path": f.path, "old_path": f.old_path} for f in self.files
            ],
            "wall_seconds": self.wall_seconds,
            "isolation": None
            if self.isolation is None
            else {"kind": self.isolation[0], "detail": self.isolation[1]},
        }

    def markdown_lines(self) -> list[str]:
        """Return the section's Markdown lines, every repository value through
        ``md_text``."""
        lines = ["", "Patch and gate:"]
        if self.base is not None:
            merge = f" (merge base {md_text(self.merge_base)})" if self.merge_base else ""
            lines.append(f"- base: {md_text(self.base)}{merge}")
        if self.head is not None:
            lines.append(f"- head: {md_text(self.head)}")
        if self.wall_seconds is not None:
            lines.append(f"- gate wall time: {self.wall_seconds:.1f} s")
        if self.isolation is not None:
            # The fallback's line says "no kernel sandbox" itself; the sandbox's is named.
            ran = "; the bubblewrap kernel sandbox ran" if self.isolation[0] == "bwrap" else ""
            lines.append(f"- isolation: {md_text(self.isolation[1])}{ran}")
        if self.files:
            lines.append(f"- changed files ({len(self.files)}):")
            for f in self.files[:_FILES_SHOWN]:
                moved = f"{md_text(f.old_path)} -> " if f.old_path is not None else ""
                lines.append(f"  - {md_text(f.status)} {moved}{md_text(f.path)}")
            if len(self.files) > _FILES_SHOWN:
                more = len(self.files) - _FILES_SHOWN
                lines.append(f"  - and {more} more (classify.json lists them)")
        return lines if len(lines) > 2 else []


@dataclass(frozen=True)
class ReviewNote:
    verdict: str | None
    fields: tuple[Field, ...]
    control_plane: tuple[tuple[str, str], ...]
    notes: tuple[Text, ...]
    patch: PatchSection = PatchSection()

    @property
    def reviewed(self) -> bool:
        return self.verdict is not None and all(f.filled for f in self.fields)

    def to_json(self) -> dict[str, object]:
        """Return the note as JSON-ready data, every value raw (JSON needs no escaping)."""
        return {
            "verdict": self.verdict,
            "reviewed": self.reviewed,
            "fields": {f.name: {"text": f.text, "filled": f.filled} for f in self.fields},
            "control_plane": [{"path": p, "kind": k} for p, k in self.control_plane],
            "notes": [n.plain for n in self.notes],
            "patch": self.patch.to_json(),
        }

    def to_markdown(self) -> str:
        """Return the note as Markdown: every repository value through ``md_text``, so each
        field, control-plane change and note is exactly one line of literal text."""
        head = md_text(self.verdict) if self.verdict is not None else "no verdict"
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
        lines += [f"- **{titles[f.name]}:** {f.markdown}" for f in self.fields]
        lines += self.patch.markdown_lines()
        if self.control_plane:
            lines += ["", "Control-plane changes (a person must look at these):"]
            # Not in a code span: escapes do not work inside one, and a path may hold
            # backticks; md_text keeps it literal instead.
            lines += [f"- {md_text(p)} ({md_text(k)})" for p, k in self.control_plane]
        if self.notes:
            lines += [""] + [f"> {n.md}" for n in self.notes]
        return "\n".join(lines) + "\n"


def _tests_alone_text(paths: tuple[str, ...]) -> Text:
    """The property field's words for code no property covers that the map leaves to the
    replay (``lanes.replay.paths``): never blank, never a pass."""
    shown = join(", ", (fmt("{}", p) for p in paths[:_ALONE_SHOWN]))
    if len(paths) > _ALONE_SHOWN:
        shown += fmt(" and {} more (classify.json lists them)", len(paths) - _ALONE_SHOWN)
    return fmt("{} ({})", TESTS_ALONE, shown)


def _property_field(report: PropertyReport | None, tests_alone: tuple[str, ...] = ()) -> Field:
    """The property field; ``tests_alone``: the changed paths under ``lanes.replay.paths``
    that no property covers, named as judged by the base's tests alone."""
    field = _property_run_field(report)
    if not tests_alone or report is None or not field.filled:
        return field
    alone = _tests_alone_text(tests_alone)
    if report.status == Status.NOT_APPLICABLE:
        return _field("property", alone, True)
    text = Text(field.text, field.markdown) + fmt("; for the rest, {}", alone)
    return _field("property", text, True)


def _property_run_field(report: PropertyReport | None) -> Field:
    if report is None:
        return _field("property", fmt(f"{NOT_REVIEWED} (no property report)"), False)
    seed, cases = report.seed, report.cases
    reason = report.reason
    run = fmt("seed {}, {} cases", seed, cases)
    if report.status == Status.ERROR and seed is None:
        return _field("property", fmt(NOT_REVIEWED + " ({})", reason), False)
    if report.status == Status.NOT_APPLICABLE:
        return _field("property", fmt("not applicable: {}", reason), True)
    if seed is None or cases is None:
        text = fmt(f"{NOT_REVIEWED} (the report has no seed or case count)")
        return _field("property", text, False)
    findings = _findings_text(report)
    if report.status == Status.PASS:
        return _field("property", fmt("{}: every property holds{}", run, findings), True)
    if not report.failures:
        return _field("property", fmt("{}: RED, {}{}", run, reason, findings), True)
    first = report.failures[0]
    case = fmt(" case {}", first.case_index) if first.case_index is not None else fmt("")
    example = fmt(
        "{} ({}) seed {}{} arguments {}: {}",
        first.property,
        first.source,
        first.seed,
        case,
        _compact(first.arguments),
        first.message,
    )
    text = fmt(
        "{}: RED, {} failed run(s); counterexample: {}{}",
        run,
        len(report.failures),
        example,
        findings,
    )
    return _field("property", text, True)


def _findings_text(report: PropertyReport) -> Text:
    if not report.oracle_findings:
        return fmt("")
    listed = join(", ", (fmt("{} {}", f.property, f.kind) for f in report.oracle_findings))
    return fmt("; oracle findings for a person: {}", listed)


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, sort_keys=True)
    return text if len(text) <= 200 else text[:197] + "..."


def _fixture_field(report: FixtureReport | None) -> Field:
    if report is None:
        return _field("fixture", fmt(f"{NOT_REVIEWED} (no fixture report)"), False)
    reason = report.reason
    update_text = join(
        "; ", (fmt("lock {} updated: {}", u.lock, u.reason) for u in report.lock_updates)
    )
    if report.status.green:
        if report.status == Status.NOT_APPLICABLE:
            return _field("fixture", fmt("not applicable: {}", reason), True)
        counts = join(", ", (fmt("{} matches ({} files)", r.lock, r.files) for r in report.roots))
        text = update_text if update_text.plain else counts if counts.plain else fmt("{}", reason)
        return _field("fixture", text, True)
    if report.status == Status.FAIL:
        text = fmt("RED, {}", reason)
        return _field(
            "fixture", fmt("{}; {}", text, update_text) if update_text.plain else text, True
        )
    return _field("fixture", fmt(NOT_REVIEWED + " ({})", reason), False)


def _freeze_field(report: FreezeReport | None) -> Field:
    if report is None:
        return _field("freeze", fmt(f"{NOT_REVIEWED} (no freeze report)"), False)
    reason = report.reason
    if report.status == Status.ERROR:
        return _field("freeze", fmt(NOT_REVIEWED + " ({})", reason), False)
    listed = join(
        ", ",
        (
            fmt("{} (expires {})", r.id, None if r.expires is None else r.expires.isoformat())
            for r in report.records
            if r.in_play
        ),
    )
    if report.status == Status.FAIL:
        text = fmt("RED, {}", reason)
        return _field(
            "freeze", fmt("{}; in play: {}", text, listed) if listed.plain else text, True
        )
    return _field("freeze", listed if listed.plain else fmt("none"), True)


def _replay_field(report: ReplayReport | None) -> Field:
    if report is None:
        return _field("replay", fmt("undecided (no replay report)"), True)
    if report.skipped:
        return _field("replay", fmt("skipped: an earlier lane is red, so no replay ran"), True)
    digest = report.receipt_sha256
    if report.status in (Status.PASS, Status.FAIL) and digest is not None:
        extra = fmt("")
        sized = report.slice_text()  # patchlane's own wording and numbers only
        if sized is not None:
            extra += fmt(f"; slice {sized}")
            if report.slice_rules:
                rules = join(
                    ", ", (fmt("{} {}", r, n) for r, n in sorted(report.slice_rules.items()))
                )
                extra += fmt(" (selected by: {})", rules)
            if report.dependency_map is not None:
                extra += fmt("; dependency map: {}", report.dependency_map)
        if report.skipped_by_freeze:
            skipped = join(", ", (fmt("{}", n) for n in report.skipped_by_freeze))
            extra += fmt("; skipped by freeze: {}", skipped)
        status = report.status.value
        # The hash seed the run drew (not the public one): what reproducing it needs.
        drawn = fmt("") if report.hash_seed is None else fmt(", hash seed {}", report.hash_seed)
        return _field(
            "replay", fmt("receipt sha256 {}{} ({}{})", digest, drawn, status, extra), True
        )
    return _field("replay", fmt("undecided ({})", report.reason), True)


def _canary_note(canary: Canary) -> Text:
    """The note's line about the canary: how many of how many, and the first node ids."""
    line = fmt(canary.note_line())  # patchlane's own wording and numbers only
    shown = canary.nodeids[:_CANARY_SHOWN]
    if not shown:
        return line
    line += fmt(": ") + join(", ", (fmt("{}", n) for n in shown))
    if len(canary.nodeids) > len(shown):
        more = len(canary.nodeids) - len(shown)
        line += fmt(" and {} more (replay-report.json lists them)", more)
    return line


def _vacuity_note(replay: ReplayReport) -> Text:
    """The note's line about the tests that ran the changed code: how many were judged,
    their variants (and how many count), repeats, the witness's calls (made again outside
    the tests) and the values copied from the tests."""
    counts = replay.vacuity_counts or {}
    at_base = (
        fmt("; {} fail at the base and count", counts["variants_failing_at_base"])
        if "variants_failing_at_base" in counts
        else fmt("; the base's run was not needed")
    )
    line = fmt(
        "tests that cannot fail: {} test(s) that ran the changed code judged; {} impossible "
        "variant(s) ({} fail at the head{}), {} repeat(s); {} passing at the head, "
        "{} changing on a second run",
        counts.get("tests", 0),
        counts.get("variants", 0),
        counts.get("variants_failing_at_head", 0),
        at_base,
        counts.get("repeats", 0),
        len(replay.cannot_fail or ()),
        len(replay.order_dependent or ()),
    )
    if "calls_recorded" in counts:
        line += fmt(
            "; {} call(s) of the changed code made again outside the tests ({} compared, "
            "{} answering otherwise)",
            counts.get("calls_recorded", 0),
            counts.get("calls_witnessed", 0),
            counts.get("calls_differing", 0),
        )
    copied = replay.copied_values or ()
    if copied:
        shown = join(", ", (fmt("{}", v) for v in copied[:_COPIED_SHOWN]))
        more = len(copied) - _COPIED_SHOWN
        line += fmt("; values the patch copied from the tests into the code: ") + shown
        if more > 0:
            line += fmt(" and {} more (replay-report.json lists them)", more)
    return line


def build_note(
    classification: ClassificationSummary | None,
    reports: LaneReports,
    verdict: Verdict | None,
) -> ReviewNote:
    """Build the note from the classification, the lane reports and the verdict (any may
    be missing: ``None``).

    Returns the ``ReviewNote``; its values stay raw until ``to_markdown`` escapes them.
    """
    alone = () if classification is None else classification.tests_alone
    fields = (
        _property_field(reports.property, alone),
        _fixture_field(reports.fixture),
        _freeze_field(reports.freeze),
        _replay_field(reports.replay),
    )
    control: list[tuple[str, str]] = []
    notes: list[Text] = []
    if classification is None:
        notes.append(
            fmt("no classification: changed files, map coverage and control-plane changes unknown")
        )
    else:
        if classification.applied_from is not None:
            # The head is a commit patchlane made from a file: say which, so that a person
            # can find the patch the evidence is about.
            head = classification.head or "unknown"
            notes.append(fmt("head: {} (applied from {})", head, classification.applied_from))
        for item in classification.control_plane:
            # The route by which the file reaches the run (``imported by ...``).
            kind = f"{item.kind}: {item.why}" if item.why else item.kind
            control.append((item.path, kind))
        if classification.map_source == "head":
            notes.append(fmt("the base had no review map; the patch's own (head) map was used"))
        elif classification.map_changed:
            notes.append(
                fmt("the patch changes the review map; the base's map governed this verdict")
            )
        for path in classification.unmapped:
            notes.append(fmt("unmapped: {} (extend the map)", path))
    prop = reports.property
    if prop is not None and prop.skipped_tests:
        # Tests the map names that the lane did not run (stateful machines, plain tests):
        # a person should know that no property stood for them.
        shown = join(", ", (fmt("{}", t) for t, _ in prop.skipped_tests[:_SKIPPED_SHOWN]))
        more = len(prop.skipped_tests) - _SKIPPED_SHOWN
        notes.append(
            fmt(
                "property: not run as properties ({} named by lanes.property.tests; the "
                "property report's skipped_tests says why): {}{}",
                len(prop.skipped_tests),
                shown,
                fmt(" and {} more", more) if more > 0 else fmt(""),
            )
        )
    replay = reports.replay
    if replay is not None and replay.canary is not None and not replay.skipped:
        notes.append(_canary_note(replay.canary))
    if replay is not None and replay.vacuity_counts is not None:
        notes.append(_vacuity_note(replay))
    if verdict is not None:
        for reason in summary_reasons(verdict, reports.replay):
            if reason.effect != ACCEPT:
                notes.append(fmt("rule {}: {}", reason.rule, reason.message))
    return ReviewNote(
        verdict=None if verdict is None else verdict.verdict,
        fields=fields,
        control_plane=tuple(control),
        notes=tuple(notes),
        patch=_patch_section(classification, verdict),
    )


def _patch_section(
    classification: ClassificationSummary | None, verdict: Verdict | None
) -> PatchSection:
    """The base, merge base and head, the changed files, the gate's wall time (the
    verdict's ``total``) and which isolation the patch's code ran under: the sandbox, or
    the named fallback."""
    wall = None if verdict is None or verdict.timings is None else verdict.timings.get("total")
    ran = None if verdict is None else verdict.isolation
    section = PatchSection(
        wall_seconds=wall, isolation=None if ran is None else (ran.kind, ran.detail)
    )
    if classification is None:
        return section
    return dataclasses.replace(
        section,
        base=classification.base,
        merge_base=classification.merge_base,
        head=classification.head,
        files=classification.changed,
    )


def summary_reasons(verdict: Verdict, replay: ReplayReport | None) -> tuple[Reason, ...]:
    """Return the verdict's reasons as a summary (stdout, the note) shows them: a reject
    leaves out the replay that was skipped because an earlier lane is red. It never ran,
    so it adds nothing beside the red lane; ``verdict.json`` keeps every reason."""
    if verdict.verdict != REJECT or replay is None or not replay.skipped:
        return verdict.reasons
    return tuple(r for r in verdict.reasons if r.lane != replay.lane)


def summary_lanes(verdict: Verdict, reports: LaneReports) -> list[LaneEvidence]:
    """Return the lane reports a summary lists, in reading order: on a reject, without
    the replay that was skipped (see ``summary_reasons``)."""
    skipped = reports.replay is not None and reports.replay.skipped
    return [
        report
        for report in reports.present()
        if not (skipped and verdict.verdict == REJECT and report is reports.replay)
    ]
