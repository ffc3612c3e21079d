"""``patchlane triage --tasks FILE PREDICTIONS...``: the command-line side of a tasks run
(``triage.fleet``): its options checked, the gate options made the words every pair's
gate takes, the engine chosen, the summary printed.

Exit codes are triage's: 0 when a candidate is ``accept_for_review``, else 3 when one is
``undecided`` (an infrastructure failure included), else 1; 2 for bad input (a malformed
tasks or predictions line, ``--base`` with ``--tasks``, Ray asked for but not installed)
or when no candidate could be gated; 4 when a candidate met a bug in patchlane.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane import __version__
from patchlane.commands.options import PAIR_TIMEOUT_S
from patchlane.errors import Exit, InputError, UsageError
from patchlane.infra.cache import default_cache
from patchlane.infra.ui import one_line, show, write_stdout
from patchlane.inputs.jsonio import dumps_report
from patchlane.project.replay_command import parse_replay
from patchlane.triage import tasks
from patchlane.triage.engines import engine
from patchlane.triage.fleet import FleetOptions, run_tasks, stderr_line
from patchlane.triage.ledger import as_row
from patchlane.triage.summary import MD_NAME, exit_code
from patchlane.triage.units import RunPlan

if TYPE_CHECKING:
    from patchlane.main import Context

DEFAULT_TASKS_OUT = Path(".patchlane") / "tasks"


def run_tasks_command(args: argparse.Namespace, ctx: Context) -> int:
    """Run ``triage --tasks``; return its exit code. Raises ``UsageError`` or
    ``InputError`` (exit 2) for bad options or input, before any base is prepared."""

    if args.base is not None:
        raise UsageError("--base with --tasks: each task names its own base_commit")
    if args.jobs < 1:
        raise UsageError(f"-j {args.jobs}: must be at least 1")
    if ctx.map_option is not None:
        raise UsageError("--map with --tasks: a task's map is its base's, or its own 'map' key")
    gate_argv = gate_words(args)
    chosen = engine(args.engine, args.address)  # Ray missing: exit 2 before reading anything
    read = tasks.read_tasks(args.tasks)
    predictions = tasks.read_predictions([Path(c) for c in args.candidates])
    units = tasks.group(read, predictions, __version__, gate_argv)
    out_dir = Path.cwd() / (args.out_dir if args.out_dir is not None else DEFAULT_TASKS_OUT)
    _make_dir(out_dir, "--out-dir")
    work_dir = _work_dir(args.work_dir)
    plan = RunPlan(
        gate_argv=gate_argv,
        work_dir=os.fspath(work_dir),
        jobs=args.jobs,
        pair_timeout_s=args.pair_timeout or PAIR_TIMEOUT_S,
    )
    opts = FleetOptions(
        tuple(units),
        out_dir,
        plan,
        args.seed,
        task_ids=tuple(t.instance_id for t in read),
        order=tuple(p.source for p in predictions),
    )
    rows = run_tasks(opts, chosen, None if ctx.out.quiet else stderr_line)
    if ctx.out.json:
        write_stdout(dumps_report(rows))
    else:
        for r in rows:
            infra = " [infrastructure]" if r["infra"] else ""
            ctx.out.say(one_line(f"{r['name']}  {r['verdict']}{infra}  {str(r['reason'])[:100]}"))
        ctx.out.say(f"summary: {show(str(out_dir))}/triage.md (one folder per candidate)")
    code = exit_code([as_row(r) for r in rows])
    if code == Exit.BAD_INPUT:
        where = show(str(out_dir / MD_NAME))
        print(
            one_line(f"patchlane: error: no candidate could be gated (see {where})"),
            file=sys.stderr,
        )
    return code


def gate_words(args: argparse.Namespace) -> tuple[str, ...]:
    """Return the gate options given as the command-line words each pair's gate takes
    (paths made absolute). Raises ``UsageError`` for a value out of range."""

    parse_replay(args.replay)
    if args.cases is not None and args.cases < 1:
        raise UsageError(f"--cases {args.cases}: must be at least 1")
    if args.mutants is not None and args.mutants < 0:
        raise UsageError(f"--mutants {args.mutants}: must not be negative")
    if args.failure_log is not None:
        raise UsageError("--failure-log with --tasks: a failure log belongs to one base")
    if args.dep_cache is not None:
        raise UsageError("--dep-cache with --tasks: each worker keeps the maps in --work-dir")
    words: list[str] = []
    for flag, value in (
        ("--seed", args.seed),
        ("--cases", args.cases),
        ("--today", args.today),
        ("--mutants", args.mutants),
        ("--test-timeout", args.test_timeout),
        ("--dep-map-timeout", args.dep_map_timeout),
    ):
        if value is not None:
            words += [flag, str(value)]
    if args.public_key is not None:
        words += ["--public-key", os.path.abspath(args.public_key)]  # noqa: PTH100
    words += ["--replay", args.replay, "--property-cache", args.property_cache]
    return tuple(words)


def _work_dir(given: Path | None) -> Path:
    path = Path.cwd() / given if given is not None else default_cache() / "tasks"
    _make_dir(path, "--work-dir")
    return path


def _make_dir(path: Path, option: str) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(os.fspath(path), f"{option}: cannot create: {e.strerror or e}") from e
