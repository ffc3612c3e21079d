"""``patchlane replay select`` and ``patchlane replay split``: the command-line side.

The parsers live in ``patchlane.commands.replay``; these functions get its ``args``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane.commands.options import DEP_MAP_ENV, base_ref, dep_map_timeout
from patchlane.errors import Exit, InputError, UsageError
from patchlane.formats import slicefile
from patchlane.formats.property_report import PropertyReport
from patchlane.infra.steps import Steps
from patchlane.infra.ui import one_line, show, write_stdout
from patchlane.inputs.jsonio import atomic_write_bytes, dumps_report
from patchlane.lanes.freeze.failure_log import read_failure_log
from patchlane.lanes.replay.checks import unreached_code
from patchlane.lanes.replay.maprecord import obtain
from patchlane.lanes.replay.run import draw_hash_seed
from patchlane.lanes.replay.select import select_slice
from patchlane.lanes.replay.selection import SliceRequest
from patchlane.project.classify import classify

if TYPE_CHECKING:
    from patchlane.lanes.replay.selection import Selection
    from patchlane.main import Context
    from patchlane.project.classify import Classification

from patchlane.formats.slicefile import split_slice

__all__ = ["main_select", "main_split", "shard_name", "split_slice"]

# More shards than this is a typo (or a disk filler), not a CI matrix.
MAX_SHARDS = 1000
EMPTY_WARNING = (
    "the slice is empty: no test reaches the change, and an empty slice is never evidence "
    "(the verdict stays undecided)"
)


def _warn(text: str) -> None:
    # Always shown, also with -q: these say the slice must not go to a shared host, or
    # is no evidence; a script that ignores stdout must still see them.
    print(f"patchlane: warning: {one_line(text)}", file=sys.stderr, flush=True)


def main_select(args: argparse.Namespace, ctx: Context) -> int:
    """Run ``replay select``: write the slice to ``--out`` and print its sha256.

    Returns 0 (also for an empty slice, with a warning). Raises ``UsageError`` without
    ``--out``; ``ReportError`` for a ``--property-report`` that is not a property report;
    ``InputError`` for a bad failure log; ``GitError``/``MapError`` for refs and the map;
    ``CollectionError`` when pytest cannot collect the head's tests (all exit 2).
    """
    if args.out is None:
        raise UsageError("replay select: --out FILE is required (where to write the slice)")
    # The files named on the command line first: a typo is reported before git is asked.
    if args.property_report is not None:
        # Accepted for the contract (docs/architecture.md §3) and checked to be a property report;
        # the selection itself reads the diff, not the report.
        PropertyReport.read(args.property_report)
    failed = read_failure_log(args.failure_log) if args.failure_log else frozenset()
    if args.dep_map not in ("auto", "off"):  # argparse checks choices, not defaults
        raise UsageError(f"${DEP_MAP_ENV}={args.dep_map!r}: expected auto or off")
    repo = ctx.repo()
    steps = Steps(ctx.out)  # each step said on stderr once the command runs a while
    # The same refs, merge base, changed paths and deciding map as every other lane.
    with steps.step("classify"):
        cls = classify(repo, base_ref(repo, args.base), args.head, ctx.map_option)
    seed = review_map_seed(cls)
    with steps.step("replay: dependency map"):
        dep_map, note = obtain(
            repo,
            cls.map_source.review_map,
            cls.merge_base,
            mode="off" if args.all else args.dep_map,
            cache=args.dep_cache,
            timeout_s=dep_map_timeout(args.dep_map_timeout),
            seed=seed or 0,
            out=ctx.out,
        )
    with steps.step("replay: selection"):
        request = SliceRequest(
            head=cls.head,
            merge_base=cls.merge_base,
            changed_paths=cls.changed_paths,
            failure_log=failed,
            all_tests=bool(args.all),
            dep_map=dep_map,
            dep_map_note=note,
        )
        selection = select_slice(
            repo,
            cls.map_source.review_map,
            request,
            base=cls.base,
            out=ctx.out,
            # Collected in the environment `replay run` gives the tests, under a hash seed
            # of its own as the run draws one (never the map's seed, which a patch could be
            # tuned to): a node id that depends on it fails the run as not collected.
            seed=draw_hash_seed(),
        )
    out_path = Path(args.out)
    atomic_write_bytes(out_path, selection.slice_bytes)
    _warn_about(selection, cls)
    if ctx.out.json:
        write_stdout(dumps_report(selection.to_json(str(out_path))))
    elif ctx.out.quiet:
        print(selection.sha256, flush=True)  # -q: the hash alone, for scripts
    else:
        _print_summary(selection, ctx)
    return Exit.GREEN


def _warn_about(selection: Selection, cls: Classification) -> None:
    """Warn on stderr about private files, an empty slice and code no test reaches."""
    for path, why in selection.private:
        _warn(f"private: {show(path)}: {why}")
    if selection.private:
        _warn(
            "the slice needs private files: run it locally or on your own runner, never on a shared host"
        )
    if not selection.nodeids:
        _warn(EMPTY_WARNING)
    for path in unreached_code(cls, selection):
        _warn(f"no test in the slice reaches {show(path)}: the replay is no evidence for it")


def review_map_seed(cls: Classification) -> int | None:
    """The map's seed (``ReviewMap.seed``), the default ``--seed`` of a replay run
    (``None``: none)."""
    return cls.map_source.review_map.seed


def _print_summary(selection: Selection, ctx: Context) -> None:
    """The sha256 first (scripts read the first line), then the counts and reasons."""
    out = ctx.out
    out.say(selection.sha256)
    size, added = selection.suite_size, len(selection.added)
    drawn = len(selection.nodeids) - added
    # Counted against the suite the slice was drawn from; the patch's own tests apart.
    share = f" ({drawn / size:.0%} of {size})" if size else f" (of {size})"
    more = f" (+{added} added by the patch)" if added else ""
    out.say(f"slice: {drawn} node ids{share}{more}")
    rules = ", ".join(f"{rule} {n}" for rule, n in sorted(selection.rule_counts.items()))
    out.say(f"selected by: {rules or 'nothing'}; dependency map: {selection.dependency_map}")
    if selection.canary is not None:
        out.say(selection.canary.note_line())
    if out.verbose:
        for nodeid in selection.nodeids:
            out.say(f"  {show(nodeid)}: {'; '.join(selection.reasons[nodeid])}")
    for note in selection.notes:
        out.say(f"note: {one_line(note)}")


def shard_name(index: int, shards: int) -> str:
    """Return the file name of shard ``index`` (1-based) of ``shards``."""
    return f"slice-{index}-of-{shards}.txt"


def main_split(args: argparse.Namespace, ctx: Context) -> int:
    """Run ``replay split``: write ``--out-dir/slice-K-of-N.txt`` for K = 1..N.

    Prints ``sha256  path`` per shard (``--json``: the whole slice's hash and each shard's
    index, path, count and sha256). Returns 0. Raises ``UsageError`` for N outside
    1..MAX_SHARDS, ``SliceError`` for a malformed slice, ``InputError`` when a file cannot
    be read or written (all exit 2).
    """
    shards = int(args.shards)
    if not 1 <= shards <= MAX_SHARDS:
        raise UsageError(f"--shards {shards}: must be between 1 and {MAX_SHARDS}")
    label = str(args.slice)
    try:
        data = Path(args.slice).read_bytes()
    except OSError as e:
        raise InputError(label, f"cannot read: {e.strerror or e}") from e
    nodeids = slicefile.parse(data, label)
    out_dir = Path(args.out_dir)
    listed = []
    for index, part in enumerate(slicefile.split_slice(nodeids, shards), start=1):
        shard_bytes = slicefile.render(part)
        path = out_dir / shard_name(index, shards)
        atomic_write_bytes(path, shard_bytes)
        digest = slicefile.sha256(shard_bytes)
        listed.append({"index": index, "path": str(path), "count": len(part), "sha256": digest})
        ctx.out.say(f"{digest}  {show(str(path))}")
    if ctx.out.json:
        whole = {"slice": label, "sha256": slicefile.sha256(data), "count": len(nodeids)}
        write_stdout(dumps_report({**whole, "shards": shards, "files": listed}))
    return Exit.GREEN
