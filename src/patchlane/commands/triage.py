"""``patchlane triage``: gate many candidate patches against one base (docs/architecture.md §3)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchlane.commands.gate import add_gate_options, gate_options
from patchlane.commands.options import add_base_option, add_tasks_options, base_ref
from patchlane.errors import Exit, UsageError
from patchlane.infra.ui import one_line, show, write_stdout

if TYPE_CHECKING:
    from patchlane.main import Context
    from patchlane.triage.summary import Row

DEFAULT_OUT = Path(".patchlane") / "triage"


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Gate every candidate against --base, doing the base's work once (its "
        "dependency map, property runs the candidate leaves unchanged) and up to -j "
        "candidates at a time. A candidate is a git ref, a diff file (unified, git diff "
        "--binary, git format-patch), a directory (each *.diff and *.patch in it), or a "
        "predictions .jsonl (instance_id, model_name_or_path, model_patch per line). Each "
        "candidate's evidence goes to --out-dir/NAME/ (default: .patchlane/triage/ in the "
        "repo); triage.md (best first) and "
        "triage.jsonl sum up. A diff that does not apply or is empty is a row, not an "
        "abort. Exits with the best verdict: 0 when a candidate is accept_for_review, else "
        "3 when one is undecided, else 1 (all rejected); 2 bad input or no candidate could "
        "be gated, 4 an internal error in any candidate. With --tasks FILE the candidates "
        "are predictions .jsonl files, grouped by instance_id against the tasks' bases "
        "(each base prepared once, where its candidates are gated); the exit codes are the "
        "same, an infrastructure failure counting as undecided.",
    )
    p.add_argument(
        "candidates", nargs="+", metavar="CANDIDATE", help="ref, diff file, directory or .jsonl"
    )
    add_base_option(p, "the revision every candidate is judged against")
    add_tasks_options(p)
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="gate N candidates at a time (default: 1)",
    )
    add_gate_options(p)


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.tasks is not None:
        from patchlane.commands.triage_tasks import run_tasks_command

        return run_tasks_command(args, ctx)
    for option in ("engine", "address", "pair_timeout", "work_dir"):
        if getattr(args, option) not in (None, "local"):
            flag = "--" + option.replace("_", "-")
            raise UsageError(f"{flag} goes with --tasks FILE (a benchmark's tasks)")
    from patchlane.gate.run import prepare_out_dir
    from patchlane.triage.batch import TriageOptions, triage
    from patchlane.triage.candidates import collect
    from patchlane.triage.summary import JSONL_NAME, MD_NAME, exit_code, write

    if args.jobs < 1:
        raise UsageError(f"-j {args.jobs}: must be at least 1")
    repo = ctx.repo()
    args.base = base_ref(repo, args.base)  # every use below reads the resolved ref
    # Like gate: the default lives in the repository, a given directory is the user's.
    out_dir = DEFAULT_OUT if args.out_dir is None else Path.cwd() / args.out_dir
    template = gate_options(args, ctx, head="HEAD", out_dir=out_dir)
    candidates = collect(args.candidates)
    root = prepare_out_dir(repo, out_dir)
    for name in (MD_NAME, JSONL_NAME):  # a summary left from an earlier run is not this one's
        (root / name).unlink(missing_ok=True)
    opts = TriageOptions(gate=template, out_dir=root, jobs=args.jobs)
    progress = None if ctx.out.quiet else _progress_line
    rows = triage(repo, candidates, opts, ctx.out, progress)
    write(root, rows)
    if ctx.out.json:
        from patchlane.inputs.jsonio import dumps_report

        write_stdout(dumps_report([r.to_json() for r in rows]))
    else:
        _say_summary(ctx, rows, root)
    code = exit_code(rows)
    if code == Exit.BAD_INPUT:
        where = show(str(root / MD_NAME))
        print(
            one_line(f"patchlane: error: no candidate could be gated (see {where})"),
            file=sys.stderr,
        )
    return code


def _progress_line(row: Row, done: int, total: int) -> None:
    reason = f" ({row.reason[:120]})" if row.reason else ""
    same = f" [the same patch as {row.same_as}: one gate]" if row.same_as is not None else ""
    line = one_line(f"[{done}/{total}] {row.name}: {row.verdict}{reason}{same} {row.seconds:.1f} s")
    print(f"patchlane: {line}", file=sys.stderr, flush=True)


def _say_summary(ctx: Context, rows: list[Row], root: Path) -> None:
    from patchlane.triage.summary import ranked

    width = max(len(r.name) for r in rows)
    for r in ranked(rows):
        same = f" [the same patch as {r.same_as}]" if r.same_as is not None else ""
        ctx.out.say(one_line(f"{r.name.ljust(width)}  {r.verdict:<17}  {r.reason[:100]}{same}"))
    ctx.out.say(f"summary: {show(str(root))}/triage.md (one folder per candidate beside it)")
