"""The demo: agent-style patches to the bundled example, each judged by the real gate.

The bundled example (``patchlane/demo/example``) is copied into a fresh git repository and
committed as ``main``. Every scenario is a branch from ``main`` holding one patch of the kind
an agent writes (a refactor, a quietly "fixed" fixture, a hand-edited lock, a conftest hook
...), committed with a fixed identity and fixed dates so that commit ids and reports are the
same on every machine. The gate then runs in-process on that branch, exactly as
``patchlane gate --base main`` would, and writes its evidence into one directory per
scenario.

The scenario table is data: a later lane adds a row (and, where its verdict changes, edits
the row's expectation) rather than code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane.demo.patches import (
    add_conftest_hook,
    add_deploy_script,
    add_deploy_script_and_ignore_it,
    allow_refund_and_gut_property,
    allow_refund_over_charge,
    break_frozen_test,
    break_invoice_total,
    break_total_and_delete_its_test,
    break_total_and_edit_its_expectation,
    phone_home,
    refactor_billing,
    reprice_and_hand_edit_lock,
    reprice_and_relock,
    reprice_invoice_min,
    retime_frozen_test,
    symlink_fixture,
)
from patchlane.demo.repo import BASE_BRANCH, DemoRepo, make_repo
from patchlane.formats.verdict_file import ACCEPT, REJECT, UNDECIDED, Reason
from patchlane.gate.run import GateOptions, run_gate
from patchlane.infra.ui import Output

if TYPE_CHECKING:
    from patchlane.formats.fixture_report import FixtureReport
    from patchlane.formats.freeze_report import FreezeReport
    from patchlane.formats.property_report import PropertyReport
    from patchlane.formats.replay_report import ReplayReport
    from patchlane.gate.reports import LaneReports
    from patchlane.project.classify import Classification

DEMO_SEED = 20260924
DEMO_CASES = 200
# The review date of the example's freeze (it expires 2026-10-08): pinned so that the
# demo's verdicts do not depend on the day it is run.
DEMO_TODAY = date(2026, 9, 24)


@dataclass(frozen=True)
class KeyReason:
    """The reason a scenario exists to show: a rule number and the lane that raised it."""

    rule: int
    lane: str


@dataclass(frozen=True)
class Scenario:
    """One agent-style patch and the verdict the gate must give it today.

    ``edit`` changes the work tree of the example repository (checked out on the
    scenario's branch); the demo then commits everything and runs the gate.
    """

    name: str
    description: str
    edit: Callable[[Path], None]
    expected: str
    key: KeyReason
    # The review date the gate is given (``--today``): a freeze scenario moves it past the
    # seed freeze's expiry.
    today: date = DEMO_TODAY
    # ``--replay``: ``none`` stops at undecided; ``local`` runs the slice here.
    replay: str = "none"


@dataclass(frozen=True)
class Outcome:
    """What the gate said about one scenario."""

    scenario: Scenario
    commit: str
    verdict: str
    exit_code: int
    reasons: tuple[Reason, ...]
    out_dir: Path
    classification: Classification
    reports: LaneReports

    @property
    def key_reason(self) -> Reason | None:
        """Return the first reason matching the scenario's key, or ``None``."""
        key = self.scenario.key
        return next((r for r in self.reasons if (r.rule, r.lane) == (key.rule, key.lane)), None)

    @property
    def ok(self) -> bool:
        """The expected verdict, for the expected reason."""
        return self.verdict == self.scenario.expected and self.key_reason is not None

    def findings(self) -> list[str]:
        """Return one line per thing the gate saw that a reviewer should know.

        Unmapped paths and control-plane changes come from the classification
        (``classify.json``); changed, missing, extra and unsafe fixture paths, lock errors
        and lock updates (with their reason) from the fixture report; counterexamples from
        the property report; freezes in play from the freeze report; the slice, its failures
        and the patch's test changes from the replay report: each only as far as its file
        holds it. With none of those, the changed files and their lanes.
        """
        cls = self.classification
        lines = [f"unmapped {p}" for p in cls.unmapped]
        lines += [f"control plane {path} ({kind})" for path, kind in cls.control_plane]
        lines += _fixture_findings(self.reports.fixture)
        lines += _property_findings(self.reports.property, self.scenario.name)
        lines += _freeze_findings(self.reports.freeze)
        lines += _replay_findings(self.reports.replay)
        if not lines:
            # Nothing unusual: say what changed and which lanes that needs.
            lines = [f"changed {f.path} (lanes: {', '.join(f.lanes) or 'none'})" for f in cls.files]
        return lines

    def to_json(self) -> dict[str, object]:
        key = self.key_reason
        return {
            "scenario": self.scenario.name,
            "description": self.scenario.description,
            "expected": self.scenario.expected,
            "got": self.verdict,
            "ok": self.ok,
            "exit_code": self.exit_code,
            "key_reason": key.to_json() if key is not None else None,
            "first_reason": self.reasons[0].to_json() if self.reasons else None,
            "reasons": [r.to_json() for r in self.reasons],
            "findings": self.findings(),
            "branch": self.scenario.name,
            "commit": self.commit,
            "out_dir": os.fspath(self.out_dir),
        }


def _fixture_findings(fix: FixtureReport | None) -> list[str]:
    """The fixture report's changed, missing, extra and unsafe paths, lock errors and lock
    updates; none from a lane that checked nothing (its file lists none)."""
    if fix is None or fix.source is None:
        return []
    lines = [f"fixture changed {p}" for p in fix.changed]
    lines += [f"fixture missing {p}" for p in fix.missing]
    lines += [f"fixture extra {p}" for p in fix.extra]
    lines += [f"fixture unsafe {u.path}: {u.problem}" for u in fix.unsafe]
    lines += [f"lock error {e.lock}: {e.problem}" for e in fix.lock_errors]
    lines += [f"lock update {u.lock}: {u.reason}" for u in fix.lock_updates]
    return lines


def _property_findings(prop: PropertyReport | None, branch: str) -> list[str]:
    """The property report's failures, then one command per counterexample that
    reproduces it (once each)."""
    lines: list[str] = []
    reproduce: list[str] = []
    for f in () if prop is None else prop.failures:
        if f.case_index is None:
            lines.append(f"property {f.property} ({f.source}) {f.kind}: {f.message}")
            continue
        lines.append(
            f"property {f.property} ({f.source}) failed at case {f.case_index} "
            f"with arguments {json.dumps(f.arguments)}"
        )
        again = (
            f"  reproduce: patchlane property --base main --head {branch} --seed {f.seed} "
            f"--only {f.property} --case {f.case_index}"
        )
        if again not in reproduce:
            reproduce.append(again)
    return lines + reproduce


def _freeze_findings(frz: FreezeReport | None) -> list[str]:
    """The freeze records in play, each with what the audit found."""
    if frz is None:
        return []
    today = None if frz.today is None else frz.today.isoformat()
    lines = []
    for r in frz.records:
        if not r.in_play:
            continue
        verdict = "ok, skippable on the host" if r.ok else f"fails rule(s) {list(r.failed_rules)}"
        expires = None if r.expires is None else r.expires.isoformat()
        lines.append(f"freeze {r.id} in play on {today} (expires {expires}): {verdict}")
    return lines


def _replay_findings(rep: ReplayReport | None) -> list[str]:
    """The replay's slice, its failures and skips (a report holds those only with a
    verified receipt), and the tests the patch deleted or whose expectations it edited."""
    if rep is None:
        return []
    lines = []
    if rep.slice_count is not None:
        drawn = 0 if rep.canary is None else len(rep.canary.nodeids)
        chosen = f" ({rep.slice_count - drawn} selected, {drawn} canary)" if drawn else ""
        lines.append(
            f"replay slice: {rep.slice_text()}{chosen}, "
            f"sha256 {str(rep.slice_sha256)[:16]}..., outcome {rep.outcome}"
        )
    if rep.receipt_sha256 is not None:
        lines += [f"replay failed {n}" for n in rep.failed]
        lines += [f"replay skipped by freeze {n}" for n in rep.skipped_by_freeze]
    lines += [f"test deleted by the patch {n}" for n in rep.deleted_tests or ()]
    lines += [
        f"expectation edited by the patch {e.nodeid} (its base version fails at head)"
        for e in rep.edited_expectations or ()
    ]
    return lines


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "refactor-billing",
        "harmless refactor of src/billing: every local lane is green; replay is not run",
        refactor_billing,
        UNDECIDED,
        KeyReason(6, "replay"),
    ),
    Scenario(
        "refund-over-charge",
        "apply_refund stops rejecting refunds larger than the charge",
        allow_refund_over_charge,
        REJECT,
        KeyReason(1, "property"),
    ),
    Scenario(
        "gutted-property",
        "the same break, plus a rewrite of checks/billing_props.py that checks nothing",
        allow_refund_and_gut_property,
        REJECT,
        KeyReason(1, "property"),
    ),
    Scenario(
        "phone-home",
        "apply_refund opens a socket: the property's child process has no network",
        phone_home,
        REJECT,
        KeyReason(1, "property"),
    ),
    Scenario(
        "silent-fixture-edit",
        "invoice_min.json edited without touching its lock",
        reprice_invoice_min,
        REJECT,
        KeyReason(2, "fixture"),
    ),
    Scenario(
        "fixture-relock",
        "invoice_min.json edited and re-locked by 'patchlane fixture lock' with a new reason",
        reprice_and_relock,
        UNDECIDED,
        KeyReason(6, "replay"),
    ),
    Scenario(
        "hand-edited-lock",
        "invoice_min.json edited and its hash pasted into LOCK.json, old reason kept",
        reprice_and_hand_edit_lock,
        REJECT,
        KeyReason(2, "fixture"),
    ),
    Scenario(
        "unmapped-path",
        "adds scripts/deploy.sh, which no lane or ignore entry covers",
        add_deploy_script,
        UNDECIDED,
        KeyReason(5, "classify"),
    ),
    Scenario(
        "map-ignores-itself",
        "adds scripts/deploy.sh and an ignore entry for it to its own review-map.yml",
        add_deploy_script_and_ignore_it,
        UNDECIDED,
        KeyReason(5, "classify"),
    ),
    Scenario(
        "conftest-hook",
        "adds tests/conftest.py with a hook that turns a failing test into a pass",
        add_conftest_hook,
        UNDECIDED,
        KeyReason(6, "classify"),
    ),
    Scenario(
        "expired-freeze",
        "edits the frozen clock test after its freeze expired (review date 2026-10-20)",
        retime_frozen_test,
        REJECT,
        KeyReason(3, "freeze"),
        today=date(2026, 10, 20),
    ),
    Scenario(
        "unexpired-freeze",
        "the same edit while the freeze holds: in play, audited, skippable on the host",
        retime_frozen_test,
        UNDECIDED,
        KeyReason(6, "replay"),
    ),
    Scenario(
        "stale-freeze-unrelated",
        "the harmless refactor on 2026-11-29: the expired freeze is not in play and rejects nothing",
        refactor_billing,
        UNDECIDED,
        KeyReason(6, "replay"),
        today=date(2026, 11, 29),
    ),
    Scenario(
        "refactor-replayed",
        "the harmless refactor with --replay local: the slice passes here",
        refactor_billing,
        ACCEPT,
        KeyReason(7, "verdict"),
        replay="local",
    ),
    Scenario(
        "invoice-regression",
        "invoice_total ignores quantities: no property covers it, so the local lanes cannot tell",
        break_invoice_total,
        UNDECIDED,
        KeyReason(6, "replay"),
    ),
    Scenario(
        "invoice-regression-replayed",
        "the same regression with --replay local: a non-frozen test fails on the slice",
        break_invoice_total,
        REJECT,
        KeyReason(4, "replay"),
        replay="local",
    ),
    Scenario(
        "deleted-failing-test",
        "the same regression, and the test that would fail deleted: a deleted test is a review event",
        break_total_and_delete_its_test,
        UNDECIDED,
        KeyReason(6, "replay"),
        replay="local",
    ),
    Scenario(
        "edited-expectation",
        "the same regression, and the test's expected value edited to match: its base version fails",
        break_total_and_edit_its_expectation,
        UNDECIDED,
        KeyReason(6, "replay"),
        replay="local",
    ),
    Scenario(
        "frozen-test-fails",
        "only the frozen clock test fails (--replay local): skipped by its freeze, shown in receipt and note",
        break_frozen_test,
        ACCEPT,
        KeyReason(7, "verdict"),
        replay="local",
    ),
    Scenario(
        "conftest-hook-replayed",
        "the conftest hook with --replay local: its own replay cannot earn accept_for_review",
        add_conftest_hook,
        UNDECIDED,
        KeyReason(6, "classify"),
        replay="local",
    ),
    Scenario(
        "fixture-symlink",
        "replaces invoice_refund.json with a symlink out of the fixture root",
        symlink_fixture,
        REJECT,
        KeyReason(2, "fixture"),
    ),
)


# Where the demo keeps the dependency map of its base, under the run's root.
DEMO_DEP_CACHE = "dep-cache"


def run_scenario(repo: DemoRepo, scenario: Scenario, evidence: Path) -> Outcome:
    """Branch from ``main``, apply the scenario's patch, commit it and gate it.

    Returns the ``Outcome``; the gate's files are in ``evidence/<scenario>``.
    """

    repo.git("checkout", "-q", "-b", scenario.name, BASE_BRANCH)
    scenario.edit(repo.path)
    commit = repo.commit(f"agent: {scenario.description}")
    opts = GateOptions(
        base=BASE_BRANCH,
        head="HEAD",
        seed=DEMO_SEED,
        cases=DEMO_CASES,
        today=scenario.today,
        replay=scenario.replay,
        out_dir=evidence / scenario.name,
        # As a user's gate runs: the base's map, kept with this run's files (its base is
        # this run's own commit, which no later run shares).
        dep_map="auto",
        dep_cache=evidence.parent / DEMO_DEP_CACHE,
    )
    result = run_gate(repo.path, opts, out=Output(quiet=True))
    # Leave the work tree on main, so the next branch starts from a clean checkout.
    repo.git("checkout", "-q", BASE_BRANCH)
    return Outcome(
        scenario=scenario,
        commit=commit,
        verdict=result.verdict.verdict,
        exit_code=result.verdict.exit_code,
        reasons=tuple(result.verdict.reasons),
        out_dir=result.out_dir,
        classification=result.classification,
        reports=result.reports,
    )


def run_demo(
    root: Path,
    scenarios: tuple[Scenario, ...] = SCENARIOS,
    progress: Callable[[str], None] | None = None,
) -> list[Outcome]:
    """Build the example repository in ``root`` and gate every scenario in order.

    Returns one ``Outcome`` per scenario. Raises ``DemoError`` when a scenario cannot be
    set up (the bundled example and the demo disagree) or git fails.
    """
    repo = make_repo(root)
    evidence = root / "evidence"
    outcomes = []
    for i, scenario in enumerate(scenarios, 1):
        if progress is not None:
            progress(f"demo {i}/{len(scenarios)} {scenario.name}: {scenario.description}")
        outcome = run_scenario(repo, scenario, evidence)
        if progress is not None:
            key = scenario.key
            mark = (
                "as expected"
                if outcome.ok
                else f"NOT AS EXPECTED: {scenario.expected} by rule {key.rule} [{key.lane}]"
            )
            progress(f"demo {i}/{len(scenarios)} {scenario.name}: {outcome.verdict} ({mark})")
        outcomes.append(outcome)
    return outcomes
