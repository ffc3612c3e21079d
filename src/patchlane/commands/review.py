"""``patchlane review``: render the four-field note from the reports in a directory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchlane.errors import Exit
from patchlane.infra.ui import write_stdout

if TYPE_CHECKING:
    from patchlane.main import Context


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Render the review note (Markdown; JSON with --json) from classify.json, "
        "the lane reports and verdict.json in --dir. Four fields: property seed and case "
        "count; fixture lock result or the lock update's reason; freezes with expiries or "
        "none; replay receipt hash or undecided. A field without evidence says 'not "
        "reviewed'. Beside them: the base, merge base and head, the changed files, the "
        "gate's wall time and the isolation that ran. Exit 0 when every field is filled, 3 "
        "when the note says not reviewed.",
    )
    p.add_argument(
        "--dir",
        type=Path,
        metavar="DIR",
        help="where the reports are (default: .patchlane/ in the repo)",
    )
    p.add_argument("--out", type=Path, metavar="FILE", help="write the note here instead of stdout")


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Run ``review``; return 0 when every field of the note is filled, 3 when it says not
    reviewed.

    Raises ``ReportError`` (exit 2 at the boundary) for an evidence file that exists but
    cannot be read or is not well formed.
    """
    from patchlane.gate.reports import read_evidence
    from patchlane.gate.review import build_note
    from patchlane.inputs.jsonio import atomic_write_text, dumps_report

    directory = args.dir if args.dir is not None else ctx.repo() / ".patchlane"
    evidence = read_evidence(directory)
    note = build_note(evidence.classification, evidence.reports, evidence.verdict)
    text = dumps_report(note.to_json()) if ctx.out.json else note.to_markdown()
    if args.out:
        atomic_write_text(args.out, text)
    elif not ctx.out.quiet or ctx.out.json:
        write_stdout(text)
    return Exit.GREEN if note.reviewed else Exit.UNDECIDED
