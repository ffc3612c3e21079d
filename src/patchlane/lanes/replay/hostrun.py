"""A host's run of a slice: ``patchlane replay run`` on the user's runner or a hosted one.

The slice's node ids run with pytest in the host's checkout (``run.run_tests``), the patch's
own test files apart when a merge base is given (``split.run_apart``), and the run becomes the
(unsigned) receipt (``receipt_for``), which a local replay builds the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import patchlane
from patchlane.formats.receipt import Receipt, utc_stamp
from patchlane.infra import git
from patchlane.infra.sandbox import isolation
from patchlane.lanes.replay.results import (
    FAILED,
    FROZEN,
    PASSED,
    SKIPPED,
    Runner,
    RunResult,
    TestRun,
)
from patchlane.lanes.replay.run import draw_hash_seed, run_tests
from patchlane.lanes.replay.split import run_apart


@dataclass(frozen=True)
class HostRun:
    """How a host runs a slice and what its receipt names besides the results.

    ``seed`` is the public seed the receipt answers to; ``head`` the commit it names (or
    ``None``); ``host_role`` the host's one-line name; ``freeze_report`` the freeze report
    whose grants may be skipped (or ``None``); ``timeout_s`` the run's wall clock. The run's
    own ``PYTHONHASHSEED`` and Hypothesis seed is ``hash_seed``, drawn afresh
    (``draw_hash_seed``) unless given (to reproduce a receipt's run), and recorded in the
    receipt. With ``split`` (a merge base and the paths the patch adds or changes since
    it), the patch's own test files run in a pytest process apart from the others
    (``split.run_apart``) and the receipt names that base (``split_base``). ``canary``: the
    slice's canary node ids, named in the receipt.
    """

    seed: int
    head: str | None
    host_role: str
    freeze_report: Path | None
    timeout_s: float
    split: tuple[str, frozenset[str]] | None = None
    hash_seed: int | None = None
    canary: tuple[str, ...] | None = None


def run_slice(repo: Path, nodeids: Sequence[str], slice_sha256: str, host: HostRun) -> RunResult:
    """Run ``nodeids`` with pytest in ``repo`` as ``host`` says (its seeds, head, role,
    freeze report, wall clock, split and canary: ``HostRun``) and return the (unsigned)
    receipt.

    ``nodeids`` must be a parsed, non-empty slice (an empty one is never evidence). Never
    raises for anything pytest or the tests do; raises ``ValueError`` for an empty slice,
    ``ReportError`` for a malformed ``freeze_report``, ``OSError`` only when the child cannot
    be started.
    """
    if not nodeids:
        raise ValueError("an empty slice: nothing to run")
    started = utc_stamp()
    split, timeout_s, freeze_report = host.split, host.timeout_s, host.freeze_report
    drawn = draw_hash_seed() if host.hash_seed is None else host.hash_seed
    if split is not None:
        run = run_apart(repo, nodeids, split[1], Runner(drawn, timeout_s, freeze_report))
    else:
        run = run_tests(
            repo,
            nodeids=nodeids,
            hash_seed=drawn,
            timeout_s=timeout_s,
            freeze_report=freeze_report,
        )
    receipt = receipt_for(run, host, slice_sha256=slice_sha256, hash_seed=drawn, started=started)
    if split is not None:
        receipt = dataclasses.replace(receipt, split_base=split[0])
    return RunResult(receipt, run)


def receipt_for(
    run: TestRun, host: HostRun, *, slice_sha256: str, hash_seed: int, started: str
) -> Receipt:
    """Return the (unsigned) receipt of ``run``, a run of the slice ``slice_sha256`` under
    ``hash_seed`` that began at ``started`` and ends now, on ``host`` (its public seed, the
    head it names, its role and the slice's canary node ids: ``None``, not told)."""
    canary = host.canary
    return Receipt(
        seed=host.seed,
        slice_sha256=slice_sha256,
        failed_nodeids=run.ids(FAILED),
        skipped_by_freeze=run.ids(FROZEN),
        host_role=host.host_role,
        passed_nodeids=run.ids(PASSED),
        skipped_nodeids=run.ids(SKIPPED),
        head=host.head,
        started=started,
        finished=utc_stamp(),
        patchlane_version=patchlane.__version__,
        isolation=isolation().kind,
        hash_seed=hash_seed,
        canary_nodeids=None if canary is None else tuple(sorted(canary)),
    )


def split_since(repo: Path, base: str | None, head: str) -> tuple[str, frozenset[str]] | None:
    """``--base REF``: the merge base of ``REF`` and ``head`` and the paths the patch adds
    or changes since it (their tests run apart: docs/architecture.md §4); else ``None``.
    Raises ``GitError`` (exit 2) for a ref git cannot resolve or a missing merge base."""
    if base is None:
        return None
    merge_base = git.merge_base(repo, git.resolve_commit(repo, base), head)
    changed = frozenset(
        c.path for c in git.diff_changes(repo, merge_base, head) if c.status[:1] != "D"
    )
    return merge_base, changed
