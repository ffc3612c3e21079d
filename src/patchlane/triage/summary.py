"""A triage run's summary: one row per candidate, ``triage.md`` and ``triage.jsonl``.

``triage.jsonl`` lists the candidates in the order they were given (the same for any
``-j``); ``triage.md`` sorts them best first, so that the top of the table is what a person
reviews first: ``accept_for_review``, ``undecided``, ``reject``, then the candidates that
were not gated (``does_not_apply``, ``empty_patch``, ``error``), by name within a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import Exit
from patchlane.gate.review import md_text
from patchlane.inputs.jsonio import atomic_write_text

GATED = ("accept_for_review", "undecided", "reject")
DOES_NOT_APPLY = "does_not_apply"
EMPTY_PATCH = "empty_patch"
ERROR = "error"
NOT_GATED = (DOES_NOT_APPLY, EMPTY_PATCH, ERROR)
_RANK = {verdict: i for i, verdict in enumerate(GATED + NOT_GATED)}
MD_NAME = "triage.md"
JSONL_NAME = "triage.jsonl"


@dataclass(frozen=True)
class Row:
    """What triage found for one candidate. ``verdict`` is a gate's verdict or one of
    ``NOT_GATED``; ``exit_code`` is what ``gate`` would have exited with (2 for a patch
    that does not apply or is empty, 2 or 4 for an error); ``reason`` is the first reason
    (``lane: message``) or the error; ``evidence`` is the candidate's folder relative to
    the out dir (``None`` when nothing was gated)."""

    name: str
    source: str
    kind: str
    head: str | None
    verdict: str
    exit_code: int
    reason: str
    slice_count: int | None
    suite_size: int | None
    seconds: float
    evidence: str | None
    # The candidate whose gate this row shares (the same head commit: the same
    # patch), or ``None`` when the row's own gate ran (or none did).
    same_as: str | None = None
    # Of ``slice_count``, the tests the patch adds (not in the suite of ``suite_size``).
    slice_added: int = 0

    def to_json(self) -> dict[str, object]:
        """Return the row as JSON-ready data, keys in a fixed order."""
        return {
            "name": self.name,
            "source": self.source,
            "kind": self.kind,
            "head": self.head,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "slice_count": self.slice_count,
            "suite_size": self.suite_size,
            "slice_added": self.slice_added,
            "seconds": round(self.seconds, 3),
            "evidence": self.evidence,
            "same_as": self.same_as,
        }


def ranked(rows: Sequence[Row]) -> list[Row]:
    """Return ``rows`` best first (the order of ``triage.md``)."""
    return sorted(rows, key=lambda r: (_RANK.get(r.verdict, len(_RANK)), r.name))


def exit_code(rows: Sequence[Row]) -> int:
    """Return triage's exit code: that of the best verdict any candidate earned (0 when one
    is ``accept_for_review``, else 3 when one is ``undecided``, else 1 when one is a
    ``reject``), 2 when no candidate could be gated at all; 4 whenever a candidate met an
    internal error (a bug must not pass as a verdict)."""
    if any(r.exit_code == Exit.INTERNAL for r in rows):
        return int(Exit.INTERNAL)
    best = ranked(rows)[0] if rows else None
    if best is None or best.verdict not in GATED:
        return int(Exit.BAD_INPUT)
    return best.exit_code


def to_markdown(rows: Sequence[Row]) -> str:
    """Return ``triage.md``: a count per verdict and the table, best first."""

    counts = {v: sum(r.verdict == v for r in rows) for v in GATED + NOT_GATED}
    shown = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    lines = [
        "# patchlane triage",
        "",
        f"{len(rows)} candidate(s): {shown}.",
        "",
        "| candidate | verdict | first reason | slice | time |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in ranked(rows):
        size = "" if r.slice_count is None else str(r.slice_count - r.slice_added)
        if r.slice_count is not None and r.suite_size is not None:
            size += f" of {r.suite_size}"
        if r.slice_count is not None and r.slice_added:
            size += f" (+{r.slice_added} added)"
        where = md_text(r.name) if r.evidence is None else f"[{md_text(r.name)}]({r.evidence}/)"
        if r.same_as is not None:
            where += f" (the same patch as {md_text(r.same_as)}: one gate)"
        cells = (where, r.verdict, md_text(r.reason), size, f"{r.seconds:.1f} s")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Each gated candidate's evidence (review.md first) is in its folder."]
    if any(r.same_as is not None for r in rows):
        lines.append(
            "Candidates that are the same head commit were "
            "gated once; each names the candidate whose gate and evidence it shares."
        )
    return "\n".join(lines) + "\n"


def to_jsonl(rows: Sequence[Row]) -> str:
    """Return ``triage.jsonl``: one compact JSON object per row, in the given order."""

    return "".join(
        json.dumps(r.to_json(), ensure_ascii=False, allow_nan=False) + "\n" for r in rows
    )


def write(out_dir: Path, rows: Sequence[Row]) -> None:
    """Write ``triage.jsonl`` and ``triage.md`` into ``out_dir``, each atomically."""

    atomic_write_text(out_dir / JSONL_NAME, to_jsonl(rows))
    atomic_write_text(out_dir / MD_NAME, to_markdown(rows))
