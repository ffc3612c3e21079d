"""The demo's triage run: some of its patches as diff files and predictions, triaged at once.

After the per-scenario gates, the demo writes a few of its patches the way agents hand them
over (``git diff --binary main..BRANCH`` files in a directory, and a predictions JSONL with
two attempts at one task), adds a diff whose context no longer matches ``main``, and runs
``patchlane triage`` in-process on all of them against ``main`` with ``-j 2`` and
``--replay local``: the base's work is done once, each candidate gets its evidence folder,
and ``triage.md``/``triage.jsonl`` sum up. Each candidate must get its expected verdict.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane.demo.patches import (
    add_deploy_script,
    allow_refund_over_charge,
    break_invoice_total,
    refactor_billing,
    reprice_invoice_min,
)
from patchlane.demo.repo import BASE_BRANCH, DemoError, DemoRepo
from patchlane.demo.scenarios import DEMO_CASES, DEMO_DEP_CACHE, DEMO_SEED, DEMO_TODAY
from patchlane.formats.verdict_file import ACCEPT, REJECT, UNDECIDED
from patchlane.gate.run import GateOptions, prepare_out_dir
from patchlane.infra.ui import Output
from patchlane.triage.batch import TriageOptions, triage
from patchlane.triage.candidates import collect
from patchlane.triage.summary import DOES_NOT_APPLY, write

if TYPE_CHECKING:
    from patchlane.triage.summary import Row

TRIAGE_JOBS = 2
TRIAGE_REPLAY = "local"
PATCH_DIR = "candidates/patches"
PREDICTIONS = "candidates/predictions.jsonl"
TRIAGE_OUT = "triage"
TASK = "billing-42"

# A hunk written against an older apply_refund: its context is not in main's file.
STALE_DIFF = """\
diff --git a/src/billing/__init__.py b/src/billing/__init__.py
--- a/src/billing/__init__.py
+++ b/src/billing/__init__.py
@@ -33,4 +33,4 @@ def apply_refund(charge_cents: int, refund_cents: int) -> RefundResult:
     if charge_cents < 0 or refund_cents < 0:
         raise ValueError("negative amount")
-    if refund_cents > charge_cents:
+    if refund_cents >= charge_cents:
         return RefundResult(net_cents=charge_cents, rejected=True)
"""


@dataclass(frozen=True)
class TriageCase:
    """One triage candidate: the diff of the demo's branch ``branch`` (made with ``edit``
    when the demo did not gate that scenario; ``None``: the stale diff), written as
    ``NAME.diff`` in the patch directory or, with ``model``, as that model's prediction;
    and the verdict triage must give it."""

    name: str
    branch: str | None
    edit: Callable[[Path], None] | None
    expected: str
    model: str | None = None


TRIAGE_CASES: tuple[TriageCase, ...] = (
    TriageCase(f"agent-a__{TASK}", "refactor-billing", refactor_billing, ACCEPT, "agent-a"),
    TriageCase(
        f"agent-b__{TASK}", "refund-over-charge", allow_refund_over_charge, REJECT, "agent-b"
    ),
    TriageCase("invoice-regression", "invoice-regression", break_invoice_total, REJECT),
    TriageCase("silent-fixture-edit", "silent-fixture-edit", reprice_invoice_min, REJECT),
    TriageCase("unmapped-path", "unmapped-path", add_deploy_script, UNDECIDED),
    TriageCase("stale-context", None, None, DOES_NOT_APPLY),
)


@dataclass(frozen=True)
class TriageOutcome:
    """What triage said about one candidate."""

    case: TriageCase
    row: Row

    @property
    def ok(self) -> bool:
        """The expected verdict."""
        return self.row.verdict == self.case.expected


def _diff_of(repo: DemoRepo, case: TriageCase) -> str:
    """Return ``git diff --binary main..BRANCH`` for the case (its stale diff when it has no
    branch), committing the branch first when the demo did not gate that scenario."""
    if case.branch is None or case.edit is None:
        return STALE_DIFF
    if not repo.git("branch", "--list", case.branch).strip():
        repo.git("checkout", "-q", "-b", case.branch, BASE_BRANCH)
        case.edit(repo.path)
        repo.commit(f"agent: {case.branch}")
        repo.git("checkout", "-q", BASE_BRANCH)
    return repo.git("diff", "--binary", f"{BASE_BRANCH}..{case.branch}")


def write_candidates(repo: DemoRepo, root: Path, cases: tuple[TriageCase, ...]) -> list[Path]:
    """Write the cases' diffs into ``root/candidates/`` (diff files, then one predictions
    JSONL); return the arguments to give triage: the patch directory and the JSONL (each
    only when it holds a candidate)."""
    patch_dir = root / PATCH_DIR
    patch_dir.mkdir(parents=True)
    predictions = []
    for case in cases:
        diff = _diff_of(repo, case)
        if case.model is None:
            (patch_dir / f"{case.name}.diff").write_text(diff, encoding="utf-8")
            continue
        line = {"instance_id": TASK, "model_name_or_path": case.model, "model_patch": diff}
        predictions.append(json.dumps(line, ensure_ascii=False) + "\n")
    arguments = [patch_dir] if any(c.model is None for c in cases) else []
    if predictions:
        path = root / PREDICTIONS
        path.write_text("".join(predictions), encoding="utf-8")
        arguments.append(path)
    return arguments


def run_triage(
    repo: DemoRepo,
    root: Path,
    cases: tuple[TriageCase, ...] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[TriageOutcome]:
    """Write the candidates (``cases``, default ``TRIAGE_CASES``), triage them against
    ``main`` and write ``root/triage/``'s ``triage.md`` and ``triage.jsonl``; return one
    outcome per case, in the cases' order.

    Raises ``DemoError`` when a case's candidate is not found in the run (a bug)."""

    cases = TRIAGE_CASES if cases is None else cases  # read now: tests replace it
    arguments = write_candidates(repo, root, cases)
    candidates = collect([os.fspath(a) for a in arguments])
    out_dir = prepare_out_dir(repo.path, root / TRIAGE_OUT)
    template = GateOptions(
        base=BASE_BRANCH,
        seed=DEMO_SEED,
        cases=DEMO_CASES,
        today=DEMO_TODAY,
        replay=TRIAGE_REPLAY,
        out_dir=out_dir,
        dep_map="auto",
        dep_cache=root / DEMO_DEP_CACHE,
    )
    opts = TriageOptions(gate=template, out_dir=out_dir, jobs=TRIAGE_JOBS)

    expected = {c.name: c.expected for c in cases}
    if progress is not None:
        progress(f"triage: {len(candidates)} candidates against {BASE_BRANCH}, -j {TRIAGE_JOBS}")

    def report(row: Row, done: int, total: int) -> None:
        if progress is not None:
            wanted = expected.get(row.name)
            mark = "as expected" if row.verdict == wanted else f"NOT AS EXPECTED: {wanted}"
            progress(f"triage {done}/{total} {row.name}: {row.verdict} ({mark})")

    rows = triage(repo.path, candidates, opts, Output(quiet=True), report)
    write(out_dir, rows)
    by_name = {r.name: r for r in rows}
    missing = [c.name for c in cases if c.name not in by_name]
    if missing:
        raise DemoError(f"triage: no row for {', '.join(missing)}")
    return [TriageOutcome(c, by_name[c.name]) for c in cases]
