"""``--replay CMD``: the replay's pipeline when a command runs the slice, one step after another.

1. the base's dependency map (``Stage.the_map``) and the slice selected from the head's
   collection (``select.select_slice``), written before anything runs;
2. an empty slice, or one that needs a private file, stops there (no evidence);
3. a test file that cannot import a package at the base and the head alike is the
   environment's fault (``checks.refuse_environment_faults``, exit 2);
4. the command runs from a copy of the base (``replay_command.run_command``) and leaves a
   receipt; none is an unreachable host (``undecided``), never a pass;
5. the host's receipt file verified, then the checks at the base
   (``checks.verified_and_checked``); the head's code never runs here;
6. a review event when the host ran the patch's own tests in one process with the base's
   (``unsplit_host_run``).
"""

from __future__ import annotations

from patchlane.formats.receipt import ReceiptError, parse_receipt
from patchlane.formats.replay_report import ReplayOutcome, ReplayReport
from patchlane.formats.status import Status
from patchlane.inputs.jsonio import atomic_write_bytes
from patchlane.lanes.replay.checks import (
    Ran,
    collection_failed,
    refuse_environment_faults,
    verified_and_checked,
)
from patchlane.lanes.replay.collect import CollectionError
from patchlane.lanes.replay.reports import empty, no_evidence, with_events, with_slice
from patchlane.lanes.replay.select import select_slice
from patchlane.lanes.replay.selection import Selection
from patchlane.lanes.replay.stage import Stage, added_or_changed, quote
from patchlane.project.replay_command import run_command


def replay_hosted(stage: Stage) -> ReplayReport:
    """The hosted pipeline (the module docstring). Raises what ``lane.replay`` raises."""
    cls, opts, out, clock = stage.cls, stage.opts, stage.out, stage.clock
    try:
        dep_map, note = stage.the_map()
        with clock.step("replay: selection"):
            selection = select_slice(
                stage.repo,
                cls.patch.review_map,
                stage.slice_request((dep_map, note)),
                base=cls.patch.base,
                out=out,
                seed=stage.hash_seed,
            )
    except CollectionError as e:
        return collection_failed(stage, e)
    atomic_write_bytes(opts.slice_path, selection.slice_bytes)
    if not selection.nodeids:
        return with_slice(empty(opts.mode), selection)
    if selection.private:
        path, why = selection.private[0]
        return with_slice(
            no_evidence(
                opts.mode,
                ReplayOutcome.PRIVATE,
                f"the slice needs a private file ({path}: {why}): run it locally (--replay local) or on your own runner",
            ),
            selection,
        )
    refuse_environment_faults(stage, selection)
    assert opts.command is not None  # noqa: S101 - the options of a command carry it
    with clock.step("replay: run"):
        # A receipt that came back is evidence whatever the command exited with (a runner
        # that ran the slice and saw a failure may well exit 1); verified below.
        problem = run_command(
            stage.repo,
            opts.command,
            base=cls.base,
            head=cls.head,
            slice_path=opts.slice_path,
            receipt_path=opts.receipt_path,
            out=out,
        )
    if not opts.receipt_path.is_file():
        unreachable = no_evidence(
            opts.mode, ReplayOutcome.UNREACHABLE, problem or "no receipt came back"
        )
        return with_slice(unreachable, selection)
    report = verified_and_checked(stage, Ran(selection, None, dep_map))
    return unsplit_host_run(stage, selection, report)


def unsplit_host_run(stage: Stage, selection: Selection, report: ReplayReport) -> ReplayReport:
    """Return ``report`` with a review event (rule 6) when the slice holds tests of files
    the patch adds or changes and the host's receipt does not say that they ran apart from
    the base's tests, from this patch's merge base (``replay run --base``): in one process
    the patch's test code can change what the base's tests see (docs/architecture.md §4)."""
    cls, receipt_path = stage.cls, stage.opts.receipt_path
    if report.status == Status.FAIL:
        return report
    own = set(added_or_changed(cls))
    ids = [n for n in selection.nodeids if n.split("::", 1)[0] in own]
    if not ids:
        return report
    try:
        receipt = parse_receipt(receipt_path.read_bytes(), str(receipt_path))
    except (OSError, ReceiptError):
        return report  # refused already, by the verification
    if receipt.split_base == cls.merge_base:
        return report
    return with_events(
        report,
        f"the host ran the patch's own tests ({quote(ids)}) in one pytest process with the "
        "base's tests (its receipt has no split_base of this merge base: run "
        "'patchlane replay run --base REF'); their code could change what the base's "
        "tests see",
    )
