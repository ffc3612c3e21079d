"""``python -m patchlane.ci.github``: report a gate's evidence to GitHub Actions.

Run after ``patchlane gate`` (the repository's ``action.yml`` does): appends ``review.md``
to the job summary (``$GITHUB_STEP_SUMMARY``), prints annotations (the verdict; each
property counterexample, changed fixture file, failed freeze record and failed replay node
at its file), sets the step outputs ``verdict``, ``exit-code``, ``reason`` and
``evidence-dir`` (``$GITHUB_OUTPUT``), and exits with the verdict's code. Outside GitHub
Actions (the variables unset) it only prints.

The evidence is read with the reports' own strict readers (``gate.reports``); a file that
is missing or malformed is one line and exit 2. ``--exit-code`` is the gate's own exit
code: a gate that ended 2 or 4 wrote no verdict to read (what is in the directory may be
an earlier run's), and a gate's 1 or 3 stands whatever the evidence says; a 0 stands only
when the evidence says ``accept_for_review`` (docs/how-to/ci.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from patchlane.ci.workflow import Annotation, append_env_file, output_entry, printable
from patchlane.errors import PatchlaneError, ReportError
from patchlane.infra import git
from patchlane.inputs.committed import decode_utf8
from patchlane.inputs.jsonio import read_file_bytes

if TYPE_CHECKING:
    from patchlane.ci.locate import Locator
    from patchlane.formats.verdict_file import Verdict
    from patchlane.gate.reports import Evidence

PROG = "python -m patchlane.ci.github"
NO_VERDICT = "none"
GATE_FAILURES = {2: "bad input", 4: "an internal error"}


@dataclass(frozen=True)
class Outcome:
    """What the step reports: the verdict (``none`` without one), the exit code, the first
    reason, and the summary's Markdown."""

    verdict: str
    exit_code: int
    reason: str
    summary: str


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Report a patchlane gate's evidence to GitHub Actions: append review.md "
        "to $GITHUB_STEP_SUMMARY, print annotations at the files of the findings, set the "
        "outputs verdict, exit-code, reason and evidence-dir in $GITHUB_OUTPUT, and exit with "
        "the verdict's code (0 accept_for_review, 1 reject, 3 undecided; 2 when the evidence "
        "is missing or malformed, or the gate's own 2 or 4).",
    )
    p.add_argument(
        "--out-dir",
        type=Path,
        metavar="DIR",
        help="the gate's evidence directory (default: .patchlane in --repo)",
    )
    p.add_argument(
        "--repo",
        type=Path,
        metavar="DIR",
        help="the repository the gate ran on (default: the git top level of the cwd)",
    )
    p.add_argument(
        "--exit-code",
        type=int,
        choices=range(5),
        metavar="N",
        help="the gate's own exit code (0-4): a 1, 2, 3 or 4 is the step's exit code "
        "whatever the evidence says",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks on internal errors")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the reporter; return its exit code."""
    args = build_parser().parse_args(argv)
    gate: int | None = args.exit_code
    repo = _repo(args.repo)
    out_dir = args.out_dir if args.out_dir is not None else repo / ".patchlane"
    out_dir = Path(os.path.abspath(out_dir))  # noqa: PTH100 - lexical: no link is followed
    try:
        outcome = _outcome(repo, out_dir, gate)
    except Exception as e:  # noqa: BLE001 - the one boundary: a line and a code, never a trace
        if not isinstance(e, PatchlaneError):
            if args.verbose:
                traceback.print_exc()
            message = f"internal error: {e!r} (a bug in patchlane; -v shows the traceback)"
            return _failed(message, gate, out_dir, internal=True)
        return _failed(str(e), gate, out_dir, internal=False)
    _finish(outcome, out_dir)
    return outcome.exit_code


def final_code(gate: int | None, verdict: int | None) -> int:
    """Return the step's exit code from the gate's (``None``: not given) and the
    verdict's (``None``: no readable verdict): the gate's, unless it is 0 or missing; then
    the verdict's, with 2 for no verdict and for a 0 the evidence does not confirm."""
    if gate is not None and gate != 0:
        return gate
    if verdict is None:
        return 2
    if gate == 0 and verdict != 0:
        return 2
    return verdict


def _repo(option: Path | None) -> Path:
    if option is not None:
        return option.absolute()
    try:
        return git.toplevel(Path.cwd())
    except PatchlaneError:  # outside a repository: no lines, paths as the evidence says
        return Path.cwd()


def _outcome(repo: Path, out_dir: Path, gate: int | None) -> Outcome:
    if gate in GATE_FAILURES:
        what = GATE_FAILURES[gate]
        text = (
            f"patchlane gate exited {gate} ({what}) before a verdict: "
            "its one line is in the gate step's log"
        )
        _print(Annotation("error", text, title="patchlane: no verdict"))
        return Outcome(NO_VERDICT, gate, text, f"# patchlane: no verdict\n\n{text}.\n")
    from patchlane.ci.annotate import evidence_annotations
    from patchlane.gate.reports import FILE_NAMES, read_evidence

    evidence = read_evidence(out_dir)
    verdict = _verdict_of(evidence, out_dir / FILE_NAMES["verdict"])
    review = _review(out_dir / FILE_NAMES["review"])
    code = final_code(gate, verdict.exit_code)
    if gate is not None and gate != verdict.exit_code:
        _say(
            f"the gate exited {gate} but {out_dir / FILE_NAMES['verdict']} says "
            f"{verdict.verdict}: the evidence is not this gate's; exit {code}"
        )
    for annotation in evidence_annotations(evidence, verdict, _locator(repo, evidence)):
        _print(annotation)
    first = verdict.reasons[0].message if verdict.reasons else ""
    return Outcome(verdict.verdict, code, first, review)


def _verdict_of(evidence: Evidence, path: Path) -> Verdict:
    if evidence.verdict is None:
        raise ReportError(str(path), "no such file: no gate wrote a verdict here (see --out-dir)")
    return evidence.verdict


def _review(path: Path) -> str:
    return decode_utf8(read_file_bytes(path, str(path), ReportError), str(path), ReportError)


def _locator(repo: Path, evidence: Evidence) -> Locator:
    """Read files at the patch's head commit as the reports name it (the property lane's
    ``head``, the freeze audit's, the fixture lane's checked commit, the receipt's), with
    the review map's import roots when the map at that commit can be read."""
    from patchlane.ci.locate import Locator, workspace_prefix

    reports = evidence.reports
    heads = (
        reports.property.head if reports.property else None,
        reports.freeze.head if reports.freeze else None,
        reports.fixture.commit if reports.fixture else None,
        reports.replay.head if reports.replay else None,
    )
    head = next((h for h in heads if h), None)
    return Locator(repo, head, _roots(repo, head), workspace_prefix(repo))


def _roots(repo: Path, head: str | None) -> tuple[str, ...]:
    from patchlane.project.classify import load_map_at, load_map_file
    from patchlane.project.config import DEFAULT_MAP

    try:
        if head is not None:
            review_map = load_map_at(repo, head, DEFAULT_MAP, "head")
        else:
            review_map = load_map_file(repo / DEFAULT_MAP)
    except Exception:  # noqa: BLE001 - no map, no roots beyond the defaults: lines only
        review_map = None
    extra = (
        () if review_map is None or review_map.property is None else review_map.property.pythonpath
    )
    roots = ["", "src", *(p.rstrip("/") for p in extra)]
    return tuple(dict.fromkeys(roots))


def _finish(outcome: Outcome, out_dir: Path) -> None:
    summary = outcome.summary if outcome.summary.endswith("\n") else outcome.summary + "\n"
    append_env_file("GITHUB_STEP_SUMMARY", summary + "\n")
    append_env_file(
        "GITHUB_OUTPUT",
        output_entry("verdict", outcome.verdict)
        + output_entry("exit-code", str(outcome.exit_code))
        + output_entry("reason", outcome.reason)
        + output_entry("evidence-dir", str(out_dir)),
    )
    _say(f"verdict: {outcome.verdict} (exit {outcome.exit_code})")


def _failed(message: str, gate: int | None, out_dir: Path, *, internal: bool) -> int:
    """Report a reporter that could not read the evidence (or failed): one line on stderr,
    an error annotation, the outputs; return the exit code."""
    code = gate if gate is not None and gate != 0 else (4 if internal else 2)
    line = printable(message).replace("\n", "\\n").replace("\r", "\\r")
    print(f"patchlane: {line}", file=sys.stderr, flush=True)
    _print(Annotation("error", message, title="patchlane: evidence not read"))
    append_env_file(
        "GITHUB_OUTPUT",
        output_entry("verdict", NO_VERDICT)
        + output_entry("exit-code", str(code))
        + output_entry("reason", message)
        + output_entry("evidence-dir", str(out_dir)),
    )
    append_env_file("GITHUB_STEP_SUMMARY", f"# patchlane: no verdict\n\n{line}\n\n")
    return code


def _print(annotation: Annotation) -> None:
    print(annotation.command(), flush=True)


def _say(text: str) -> None:
    print(f"patchlane: {printable(text)}".replace("\n", " ").replace("\r", " "), flush=True)


if __name__ == "__main__":
    sys.exit(main())
