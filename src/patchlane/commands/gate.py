"""``patchlane gate``: the whole gate in one command (docs/architecture.md §3)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchlane.commands.freeze import review_date
from patchlane.commands.options import (
    DEP_MAP_ENV,
    add_dep_map_options,
    add_diff_options,
    add_property_cache_option,
    add_test_timeout_option,
    base_ref,
    dep_map_timeout,
    property_cache_enabled,
    seed_value,
)
from patchlane.infra.ui import one_line, write_stdout

if TYPE_CHECKING:
    from patchlane.gate.run import GateOptions
    from patchlane.gate.verdict import LaneEvidence
    from patchlane.main import Context


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Classify the patch, run the property, fixture and freeze lanes on the "
        "head commit, replay only when every local lane is green, and write the evidence, "
        "verdict.json and review.md into --out-dir. Exits with the verdict: 0 "
        "accept_for_review, 1 reject, 3 undecided (2 bad input, 4 internal error, 130 "
        "interrupted).",
    )
    add_diff_options(p)
    # ``None`` tells "HEAD by default" from a --head the user gave (which --patch excludes).
    p.set_defaults(head=None)
    p.add_argument(
        "--patch",
        metavar="FILE|-",
        help="judge this patch instead of a commit: a unified diff, git diff --binary or "
        "git format-patch (mbox) output ('-': standard input), applied to --base as a commit "
        "object; the work tree, index and branches are left alone",
    )
    add_gate_options(p)


def add_gate_options(p: argparse.ArgumentParser) -> None:
    """Add the options that shape one gate run (seed, cases, review date, failure log,
    mutants, replay, public key, out dir, dependency map, test timeout, property cache);
    ``triage`` takes them too."""
    p.add_argument(
        "--seed",
        type=seed_value,
        metavar="N",
        help="property seed (default: the map's lanes.property.seed, else lanes.replay.seed)",
    )
    p.add_argument(
        "--cases", type=int, metavar="N", help="property cases (default: the map's, else 200)"
    )
    p.add_argument(
        "--today",
        type=review_date,
        metavar="YYYY-MM-DD",
        help="review date for freeze expiry (default: today, UTC)",
    )
    p.add_argument(
        "--failure-log",
        type=Path,
        metavar="FILE",
        help="pytest JUnit XML or text with FAILED lines",
    )
    p.add_argument(
        "--mutants",
        type=int,
        metavar="N",
        help="mutants per property for the oracle audit (0 turns mutation off)",
    )
    p.add_argument(
        "--replay",
        default="none",
        metavar="MODE",
        help="none (stop at undecided, the default), local (run the slice here), or a "
        "command with {slice} and {receipt} placeholders that submits it to your runner; it "
        "runs in a copy of the base commit, with {head}, {base} (commit ids) and {repo}",
    )
    p.add_argument(
        "--public-key",
        type=Path,
        metavar="FILE",
        help="Ed25519 public key (PEM) that receipts must be signed with",
    )
    p.add_argument(
        "--out-dir",
        type=Path,
        metavar="DIR",
        help="where the evidence goes (default: .patchlane/ in the repo)",
    )
    add_dep_map_options(p)
    add_test_timeout_option(
        p,
        "default: 10 x the slowest test of the base's dependency map, at least 60; 120 without one",
    )
    add_property_cache_option(p)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from patchlane.gate.review import summary_lanes, summary_reasons
    from patchlane.gate.run import run_gate
    from patchlane.infra.ui import show
    from patchlane.inputs.jsonio import dumps_report

    # The default lives in the repository; a directory given on the command line is
    # relative to where the user stands, like every other path argument.
    out_dir = Path(".patchlane") if args.out_dir is None else Path.cwd() / args.out_dir
    repo = ctx.repo()
    defaulted = _default_base(args, repo, ctx)  # every use below reads the resolved ref
    head, applied_from = _head(args, repo, defaulted)
    opts = gate_options(args, ctx, head=head, out_dir=out_dir)
    opts = dataclasses.replace(opts, applied_from=applied_from)
    if applied_from is None:
        _check_uncommitted(args, ctx, repo, head)
    result = run_gate(repo, opts, ctx.out)
    verdict = result.verdict
    applied = {} if applied_from is None else {"head": head, "applied_from": applied_from}
    if ctx.out.json:
        write_stdout(dumps_report({**verdict.to_json(), "out_dir": str(result.out_dir), **applied}))
    else:
        if applied_from is not None:
            ctx.out.say(one_line(f"head: {head} (applied from {applied_from})"))
        # Reasons quote repository text (paths, node ids, lock reasons, failure messages):
        # one_line keeps a newline, CR or ANSI escape in it from forging or hiding a line.
        ctx.out.say(f"verdict: {ctx.out.paint(verdict.verdict)}")
        # A replay skipped because a local lane is red is left out of a reject's summary.
        for reason in summary_reasons(verdict, result.reports.replay):
            message = one_line(reason.message)
            ctx.out.say(f"  rule {reason.rule} [{reason.lane}] {reason.effect}: {message}")
        for report in summary_lanes(verdict, result.reports):
            ctx.out.say(_lane_line(ctx, report))
        ctx.out.say(f"evidence: {show(str(result.out_dir))}/ (review.md is the note for a person)")
    return verdict.exit_code


def _lane_line(ctx: Context, report: LaneEvidence) -> str:
    """One lane's summary line. A replay that did not run (``--replay none``, a harness
    change pytest cannot collect) says so rather than showing its status, ``error``: no
    evidence, but nothing went wrong."""
    from patchlane.formats.replay_report import ReplayOutcome

    reason = one_line(report.reason)
    not_run = "replay not run"
    if getattr(report, "outcome", None) == ReplayOutcome.NOT_RUN and reason.startswith(not_run):
        return f"{report.lane}: not run{reason[len(not_run) :]}"
    # paint after one_line: its escape codes are ours, not the repository's.
    return f"{report.lane}: {ctx.out.paint(report.status)} ({reason})"


def gate_options(
    args: argparse.Namespace, ctx: Context, *, head: str, out_dir: Path
) -> GateOptions:
    """Return the ``GateOptions`` of the parsed ``add_gate_options`` (and ``--base``) for
    ``head``, evidence in ``out_dir``. Raises ``UsageError`` for a value out of range."""
    from patchlane.errors import UsageError
    from patchlane.gate.run import GateOptions, today_utc
    from patchlane.project.replay_command import parse_replay

    parse_replay(args.replay)  # a bad command is exit 2 before any work
    if args.cases is not None and args.cases < 1:
        raise UsageError(f"--cases {args.cases}: must be at least 1")
    if args.mutants is not None and args.mutants < 0:
        raise UsageError(f"--mutants {args.mutants}: must not be negative")
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed {args.seed}: must not be negative")
    if args.dep_map not in ("auto", "off"):  # argparse checks choices, not defaults
        raise UsageError(f"${DEP_MAP_ENV}={args.dep_map!r}: expected auto or off")
    if args.failure_log is not None and not args.failure_log.is_file():
        raise UsageError(f"--failure-log {args.failure_log}: no such file")
    return GateOptions(
        base=args.base,
        head=head,
        seed=args.seed,
        cases=args.cases,
        today=args.today or today_utc(),
        failure_log=args.failure_log,
        mutants=args.mutants,
        replay=args.replay,
        public_key=args.public_key,
        out_dir=out_dir,
        map_option=ctx.map_option,
        dep_map=args.dep_map,
        dep_cache=args.dep_cache,
        dep_map_timeout_s=dep_map_timeout(args.dep_map_timeout),
        test_timeout_s=args.test_timeout,
        property_cache=property_cache_enabled(args.property_cache),
    )


def _default_base(args: argparse.Namespace, repo: Path, ctx: Context) -> str | None:
    """Resolve ``args.base`` in place: as given, else the default branch (``base_ref``),
    never the branch the user happens to be on, which may be the agent's own (its map and
    conftest would then judge its patch). Returns how a default was chosen, said on
    stderr, or ``None`` when ``--base`` was given. Raises ``UsageError`` when there is no
    default."""
    if args.base is not None:
        return None
    args.base = base_ref(repo, None)
    why = "the default branch"
    ctx.out.progress(f"base: {args.base} ({why}; --base REF for another)")
    return why


def _head(args: argparse.Namespace, repo: Path, defaulted: str | None) -> tuple[str, str | None]:
    """Return the head to judge and the patch file it was applied from (``None``: the head
    is a commit the user named). With ``--patch`` the patch is applied to ``--base`` as a
    new commit object (``inputs.patchfile``). Raises ``UsageError`` for ``--patch`` with
    ``--head``, ``PatchApplyError`` for a patch that does not apply (naming the base when
    it was a default, so that the user sees which one was tried)."""
    from patchlane.errors import PatchApplyError, UsageError

    if args.patch is None:
        return args.head or "HEAD", None
    if args.head is not None:
        raise UsageError(
            "--patch with --head: the patch applied to --base is the head; give one of them"
        )
    from patchlane.inputs.patchfile import apply_patch, read_source

    data, label = read_source(args.patch)
    try:
        return apply_patch(repo, args.base, data, label), label
    except PatchApplyError as e:
        if defaulted is None:
            raise
        told = f"{e.message} (base {args.base}: {defaulted}; --base REF for another)"
        raise PatchApplyError(e.file, told, e.line) from e


def _check_uncommitted(args: argparse.Namespace, ctx: Context, repo: Path, head: str) -> None:
    """Say on stderr (unless ``-q``) that the gate judges commits when the work tree holds
    uncommitted changes ``head`` leaves out (``gate.uncommitted``). Raises ``UsageError``
    when nothing is committed and everything is in the work tree."""
    import sys

    from patchlane.gate.uncommitted import GateCommand, check_worktree
    from patchlane.infra.ui import one_line

    given = [
        ("--seed", args.seed),
        ("--cases", args.cases),
        ("--today", args.today),
        ("--failure-log", args.failure_log),
        ("--mutants", args.mutants),
        ("--replay", None if args.replay == "none" else args.replay),
        ("--public-key", args.public_key),
        ("--test-timeout", args.test_timeout),
        ("--out-dir", args.out_dir),
    ]
    command = GateCommand(
        repo_option=ctx.repo_option,
        base=args.base,
        options=tuple(
            item
            for flag, value in (("--repo", ctx.repo_option), ("--map", ctx.map_option))
            if value is not None
            for item in (flag, value)
        ),
        gate_options=tuple(item for flag, v in given if v is not None for item in (flag, str(v))),
    )
    note = check_worktree(repo, head, ctx.map_option, command)
    if note is not None and not ctx.out.quiet:
        print(one_line(f"patchlane: {note}"), file=sys.stderr, flush=True)
