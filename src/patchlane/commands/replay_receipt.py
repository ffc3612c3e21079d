"""``patchlane replay run|verify|merge``: the command-line side of receipts.

Exit codes (docs/architecture.md §3): ``run`` 0 when every node passed or was skipped by a granted freeze,
1 otherwise; ``verify`` 0 pass, 1 a non-frozen failure, 3 refused; ``merge`` 0 written with no
failure, 1 written with a failure, 3 refused (nothing written). Bad input (a malformed slice,
freeze report, key or map; an unknown ref) is exit 2 via ``PatchlaneError``. A malformed
*receipt* is not bad input to ``verify``: the receipt is the host's output, so it is refused
(exit 3), which keeps the verdict at ``undecided`` rather than turning it into a usage error.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane.commands.options import publish
from patchlane.errors import Exit, InputError, UsageError
from patchlane.formats import slicefile
from patchlane.formats.freeze_report import FreezeReport
from patchlane.formats.replay_report import ReplayOutcome
from patchlane.gate.uncommitted import first_difference
from patchlane.infra import git
from patchlane.infra.ui import one_line, show, write_stdout
from patchlane.inputs.jsonio import dumps_report
from patchlane.lanes.replay import signing
from patchlane.lanes.replay.hostrun import HostRun, run_slice, split_since
from patchlane.lanes.replay.merge import Shard, merge_receipts
from patchlane.lanes.replay.receipts import issue
from patchlane.lanes.replay.run import draw_hash_seed
from patchlane.lanes.replay.runprogress import logged, shown
from patchlane.lanes.replay.testbound import bounded, default_bound
from patchlane.lanes.replay.verify import Expectations, replay_report, verify_receipt
from patchlane.project.classify import load_map_file, map_path_in_repo
from patchlane.project.config import DEFAULT_MAP

if TYPE_CHECKING:
    from patchlane.formats.freeze_report import FreezeReport
    from patchlane.main import Context
    from patchlane.project.config import ReviewMap


def _read(path: Path, error: type[InputError] = InputError) -> bytes:
    """Read a file named on the command line. Raises ``error`` (exit 2) when it cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise error(os.fspath(path), "no such file") from None
    except IsADirectoryError:
        raise error(os.fspath(path), "is a directory") from None
    except OSError as e:
        raise error(os.fspath(path), f"cannot read: {e.strerror or e}") from None


def _freeze_report(path: Path) -> FreezeReport:
    """Read a freeze report strictly (the freeze lane's one reader). Raises ``ReportError``
    (exit 2)."""
    return FreezeReport.read(path)


def main_run(args: argparse.Namespace, ctx: Context) -> int:
    """``replay run``: run the slice with pytest here and write the receipt.

    Returns 0 when nothing failed, 1 otherwise. Raises ``PatchlaneError`` (exit 2) for a
    malformed or empty slice, a malformed freeze report or signing key, a bad timeout.
    """
    data = _read(args.slice, slicefile.SliceError)
    nodeids = slicefile.parse(data, os.fspath(args.slice))
    if not nodeids:
        raise UsageError(f"{args.slice}: the slice is empty: nothing to run (never evidence)")
    if not args.timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {args.timeout}")
    if args.freeze_report is not None:
        _freeze_report(args.freeze_report)
    if not args.host_role or not args.host_role.isprintable():
        raise UsageError("--host-role must be a non-empty one-line name")
    key = signing.configured_private_key(args.signing_key)  # before the run: fail fast
    repo = ctx.repo()
    head = git.resolve_commit(repo, "HEAD")
    _refuse_a_dirty_tree(repo, (args.slice, args.out, args.freeze_report))
    split = split_since(repo, args.base, head)
    # Drawn afresh unless a person reproduces a receipt's run (docs/architecture.md §4).
    hash_seed = draw_hash_seed() if args.hash_seed is None else args.hash_seed
    ctx.out.progress(
        f"replay run: {len(nodeids)} node id(s), seed {args.seed}, hash seed {hash_seed}"
    )
    bound = default_bound(args.test_timeout, None)  # no map here: the fallback
    # Tests done of the slice and the one running, every 10 s.
    with shown(logged(ctx.out)), bounded(bound):
        result = run_slice(
            repo,
            nodeids,
            slicefile.sha256(data),
            HostRun(
                seed=args.seed,
                head=head,
                host_role=args.host_role,
                freeze_report=args.freeze_report,
                timeout_s=args.timeout,
                split=split,
                hash_seed=hash_seed,
            ),
        )
    receipt = issue(result.receipt, key, Path(args.out))
    if ctx.out.verbose:
        ctx.out.debug("pytest output (tail):\n" + result.output_tail.decode("utf-8", "replace"))
    if ctx.out.json:
        write_stdout(receipt.render().decode("utf-8"))
    else:
        out = ctx.out
        for problem in result.run.problems:
            out.say(f"replay run: {one_line(problem)}")
        out.say(
            f"replay run: {len(receipt.passed_nodeids or ())} passed, "
            f"{len(receipt.failed_nodeids)} failed, {len(receipt.skipped_by_freeze)} skipped "
            f"by freeze, {len(receipt.skipped_nodeids or ())} skipped by the suite "
            f"({'signed' if key is not None else 'unsigned'}) -> {show(str(args.out))}"
        )
        results = result.run.results
        for nodeid in receipt.failed_nodeids:
            out.say(f"  failed: {show(nodeid)}: {one_line(results[nodeid].why)}")
        for nodeid in receipt.skipped_by_freeze:
            out.say(f"  skipped by freeze: {show(nodeid)}")
        for nodeid in receipt.skipped_nodeids or ():
            out.say(f"  skipped by the suite: {show(nodeid)}: {one_line(results[nodeid].why)}")
    return Exit.RED if receipt.failed_nodeids else Exit.GREEN


def _refuse_a_dirty_tree(repo: Path, given: tuple[Path | None, ...]) -> None:
    """Raise ``UsageError`` (exit 2, naming the first offending path) when the work tree
    ``replay run`` tests holds anything its ``HEAD`` does not: the receipt names ``HEAD``, so
    an uncommitted fix or an untracked ``conftest.py`` would vouch for a commit that was
    never tested (docs/architecture.md §2). The evidence directory and the files given on
    the command line do not count."""
    top = repo.resolve()
    exempt: list[str] = []
    for path in given:
        if path is None:
            continue
        absolute = Path(os.path.abspath(path))  # noqa: PTH100 - lexical, keeps the last link
        try:
            exempt.append((absolute.parent.resolve() / absolute.name).relative_to(top).as_posix())
        except ValueError:
            continue  # outside the repository: git status never lists it
    found = first_difference(repo, exempt)
    if found is None:
        return
    code, where = found
    what = "is untracked" if code == "??" else f"differs from HEAD (git status {code.strip()})"
    raise UsageError(
        f"{show(where)} {what}: replay run tests this work tree and names its HEAD in the "
        "receipt, so the tree must hold HEAD and nothing else; commit or stash it "
        "(git stash -u), ignore it (.gitignore, .git/info/exclude), or run on a clean "
        "checkout of the head (git worktree add --detach DIR HEAD)"
    )


def main_verify(args: argparse.Namespace, ctx: Context) -> int:
    """``replay verify``: check a receipt; write ``replay-report.json``.

    Returns 0 (pass), 1 (a valid receipt shows a non-frozen failure) or 3 (refused). Raises
    ``PatchlaneError`` (exit 2) for a malformed slice, freeze report, key or map, an unknown
    ref, or a missing receipt file (nothing came back: that is the caller's to report).
    """
    slice_bytes = _read(args.slice, slicefile.SliceError)
    slicefile.parse(slice_bytes, os.fspath(args.slice))
    receipt_bytes = _read(args.receipt)
    freeze = _freeze_report(args.freeze_report)
    public_key = None if args.public_key is None else signing.load_public_key(args.public_key)
    repo = ctx.repo()
    review_map = _work_tree_map(repo, ctx)
    seed = args.seed
    if seed is None:
        if review_map.seed is None:
            raise UsageError(
                "--seed is required: the map has no lanes.property.seed or lanes.replay.seed"
            )
        seed = review_map.seed
    head = git.resolve_commit(repo, args.head)
    verification = verify_receipt(
        slice_bytes,
        receipt_bytes,
        freeze,
        Expectations(
            seed=seed,
            head=head,
            require_signature=review_map.replay.require_signature,
            public_key=public_key,
        ),
        label=os.fspath(args.receipt),
        slice_label=os.fspath(args.slice),
    )
    report = replay_report(
        verification, slice_sha256=slicefile.sha256(slice_bytes), seed=seed, head=head
    )

    def summary() -> None:
        refused = verification.outcome == ReplayOutcome.REFUSED
        ctx.out.say(f"replay: {ctx.out.paint(report.status)}: {one_line(report.reason)}")
        for reason in verification.reasons[1:] if refused else ():
            ctx.out.say(f"  also: {one_line(reason)}")
        ctx.out.say(f"receipt sha256: {verification.receipt_sha256}")

    publish(ctx.out, report.to_json(), args.out, summary)
    exits = {"pass": Exit.GREEN, "fail": Exit.RED}
    return exits.get(verification.outcome, Exit.UNDECIDED)


def _work_tree_map(repo: Path, ctx: Context) -> ReviewMap:
    """The review map that configures ``verify`` (``--map``, else the work tree's)."""
    rel, outside = map_path_in_repo(repo, ctx.map_option)
    if outside is not None:
        return load_map_file(outside)
    rel = rel or DEFAULT_MAP
    return load_map_file(repo / rel, rel)


def main_merge(args: argparse.Namespace, ctx: Context) -> int:
    """``replay merge``: combine shard receipts into one receipt for the whole slice.

    Returns 0 (written, nothing failed), 1 (written, a node failed) or 3 (refused, nothing
    written). Raises ``PatchlaneError`` (exit 2) for an unreadable or malformed slice or key, or
    a missing receipt file.
    """
    whole = _read(args.slice, slicefile.SliceError)
    shards = [
        Shard(
            slice_label=os.fspath(sub),
            slice_bytes=_read(sub, slicefile.SliceError),
            receipt_label=os.fspath(receipt),
            receipt_bytes=_read(receipt),
        )
        for sub, receipt in args.shard
    ]
    public_key = None if args.public_key is None else signing.load_public_key(args.public_key)
    key = signing.configured_private_key(args.signing_key)
    merged = merge_receipts(whole, shards, public_key=public_key, whole_label=os.fspath(args.slice))
    if merged.receipt is None:
        for refusal in merged.refusals:
            ctx.out.say(f"replay merge: refused: {one_line(refusal)}")
        if ctx.out.json:
            write_stdout(dumps_refusal(merged.refusals))
        return Exit.UNDECIDED
    receipt = issue(merged.receipt, key, Path(args.out))
    if ctx.out.json:
        write_stdout(receipt.render().decode("utf-8"))
    else:
        ctx.out.say(
            f"replay merge: {len(shards)} shard(s), {len(receipt.failed_nodeids)} failed, "
            f"{len(receipt.skipped_by_freeze)} skipped by freeze -> {show(str(args.out))}"
        )
    return Exit.RED if receipt.failed_nodeids else Exit.GREEN


def dumps_refusal(refusals: tuple[str, ...]) -> str:
    """The ``--json`` output of a refused merge."""
    return dumps_report({"outcome": ReplayOutcome.REFUSED, "refusals": list(refusals)})
