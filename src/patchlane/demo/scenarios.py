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

import hashlib
import json
import os
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane.errors import GitError, UsageError
from patchlane.formats.verdict_file import ACCEPT, REJECT, UNDECIDED, Reason

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
BASE_BRANCH = "main"
_EPOCH = datetime(2026, 9, 24, 12, 0, tzinfo=UTC)

_IDENTITY = {
    "GIT_AUTHOR_NAME": "patchlane demo",
    "GIT_AUTHOR_EMAIL": "demo@patchlane.invalid",
    "GIT_COMMITTER_NAME": "patchlane demo",
    "GIT_COMMITTER_EMAIL": "demo@patchlane.invalid",
    # The user's git configuration (signing, hooks, templates, default branch) must not
    # change what the demo commits.
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
# Copying skips what running the example's tests or importing its modules leaves behind.
_SKIP_NAMES = frozenset({"__pycache__", ".pytest_cache", ".patchlane"})

FIXTURE_DIR = "tests/fixtures/billing"
LOCK = f"{FIXTURE_DIR}/LOCK.json"
INVOICE_MIN = f"{FIXTURE_DIR}/invoice_min.json"
INVOICE_REFUND = f"{FIXTURE_DIR}/invoice_refund.json"
RELOCK_REASON = "invoice_min: plan-basic repriced from 12.00 to 11.00 EUR (pricing change PR-142)"


class DemoError(RuntimeError):
    """A scenario could not be set up: the bundled example and the demo disagree (a bug)."""


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


# --- edits -------------------------------------------------------------------------------


def _replace(repo: Path, rel: str, old: str, new: str) -> None:
    path = repo / rel
    text = path.read_text(encoding="utf-8")
    if text.count(old) != 1:
        raise DemoError(f"{rel}: the demo's edit no longer matches the bundled example")
    path.write_text(text.replace(old, new), encoding="utf-8")


def refactor_billing(repo: Path) -> None:
    """Extract the amount check of ``apply_refund`` into a helper; behaviour is unchanged."""
    _replace(
        repo,
        "src/billing/__init__.py",
        "    if charge_cents < 0 or refund_cents < 0:\n"
        '        raise ValueError(f"amounts must be non-negative: {charge_cents}, {refund_cents}")\n',
        "    _require_non_negative(charge_cents, refund_cents)\n",
    )
    _replace(
        repo,
        "src/billing/__init__.py",
        "def apply_refund(",
        "def _require_non_negative(*amounts: int) -> None:\n"
        "    if any(a < 0 for a in amounts):\n"
        '        shown = ", ".join(str(a) for a in amounts)\n'
        '        raise ValueError(f"amounts must be non-negative: {shown}")\n'
        "\n\n"
        "def apply_refund(",
    )


def reprice_invoice_min(repo: Path) -> None:
    """Change the price in ``invoice_min.json`` (and its total, so the tests stay green)."""
    _replace(repo, INVOICE_MIN, '"unit_cents": 1200}', '"unit_cents": 1100}')
    _replace(repo, INVOICE_MIN, '"total_cents": 1200', '"total_cents": 1100')


def reprice_and_relock(repo: Path) -> None:
    """Reprice the fixture, then re-lock through patchlane with a new one-line reason."""
    from patchlane.main import main

    reprice_invoice_min(repo)
    code = main(["--repo", os.fspath(repo), "-q", "fixture", "lock", "--reason", RELOCK_REASON])
    if code != 0:
        raise DemoError(f"patchlane fixture lock exited {code} in {repo}")


def reprice_and_hand_edit_lock(repo: Path) -> None:
    """Reprice the fixture and paste its new hash into LOCK.json, keeping the old reason."""
    reprice_invoice_min(repo)
    lock_path = repo / LOCK
    lock = json.loads(lock_path.read_text(encoding="utf-8"))
    digest = hashlib.sha256((repo / INVOICE_MIN).read_bytes()).hexdigest()
    for row in lock["files"]:
        if row["path"] == INVOICE_MIN:
            row["sha256"] = digest
    lock_path.write_text(json.dumps(lock, indent=2) + "\n", encoding="utf-8")


DEPLOY_SCRIPT = """\
#!/bin/sh
# Push the example to the evaluation host.
set -eu
rsync -a --delete src/ "${EVAL_HOST:?}:/srv/example/src/"
"""


def add_deploy_script(repo: Path) -> None:
    """Add ``scripts/deploy.sh``, a path no lane of the map covers."""
    path = repo / "scripts" / "deploy.sh"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEPLOY_SCRIPT, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def add_deploy_script_and_ignore_it(repo: Path) -> None:
    """Add the deploy script and an ``ignore`` entry for it in the patch's own map."""
    add_deploy_script(repo)
    path = repo / "review-map.yml"
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n") or "ignore:\n" not in text:
        raise DemoError("review-map.yml: the demo's edit no longer matches the bundled example")
    text += '  - path: "scripts/"\n    reason: "deploy helpers, not product code"\n'
    path.write_text(text, encoding="utf-8")


CONFTEST_HOOK = '''\
"""Stabilise the clock test on slow sandboxes."""

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if item.name == "test_invoice_timestamp_order" and report.failed:
        report.outcome = "passed"
'''


def add_conftest_hook(repo: Path) -> None:
    """Add ``tests/conftest.py`` with a hook that rewrites a failing test's outcome."""
    (repo / "tests" / "conftest.py").write_text(CONFTEST_HOOK, encoding="utf-8")


def retime_frozen_test(repo: Path) -> None:
    """Rewrite the frozen clock test's tolerance: its test file changes, so its freeze is in play."""
    _replace(
        repo,
        "tests/test_billing.py",
        "    assert before <= invoice.issued_at <= after < invoice.due_at\n",
        "    assert before - 1 <= invoice.issued_at <= after + 1 < invoice.due_at\n",
    )


def break_invoice_total(repo: Path) -> None:
    """Make ``invoice_total`` ignore quantities: no property covers it, the tests do."""
    _replace(
        repo,
        "src/billing/__init__.py",
        'return sum(line["quantity"] * line["unit_cents"] for line in lines)',
        'return sum(line["unit_cents"] for line in lines)',
    )


def break_total_and_delete_its_test(repo: Path) -> None:
    """The invoice-total regression, and the one test that would catch it deleted."""
    break_invoice_total(repo)
    path = repo / "tests" / "test_billing.py"
    text = path.read_text(encoding="utf-8")
    start = text.index("def test_invoice_refund_cases()")
    end = text.index("def test_invoice_is_due_after_the_payment_terms()")
    path.write_text(text[:start] + text[end:], encoding="utf-8")


def break_total_and_edit_its_expectation(repo: Path) -> None:
    """The invoice-total regression, and its test's expected value edited to match the bug."""
    break_invoice_total(repo)
    _replace(
        repo,
        "tests/test_billing.py",
        '    assert invoice_total(invoice["lines"]) == invoice["total_cents"]\n    for case',
        '    assert invoice_total(invoice["lines"]) == sum(x["unit_cents"] for x in invoice["lines"])\n'
        "    for case",
    )


def break_frozen_test(repo: Path) -> None:
    """Rewrite the frozen clock test so that it fails: only a frozen node is red."""
    _replace(
        repo,
        "tests/test_billing.py",
        "    assert before <= invoice.issued_at <= after < invoice.due_at\n",
        "    assert invoice.issued_at < before, 'the sandbox clock stepped backwards'\n",
    )


def symlink_fixture(repo: Path) -> None:
    """Replace ``invoice_refund.json`` with a symlink to a file outside the fixture root."""
    path = repo / INVOICE_REFUND
    path.unlink()
    # The target exists and is tracked, so every test still finds "a fixture"; its bytes
    # are simply not the ones the lock pinned, and a symlink is never followed out of a root.
    path.symlink_to("../../../docs/billing.md")


REFUND_GUARD = "    if refund_cents > charge_cents:\n        return RefundResult(net_cents=charge_cents, rejected=True)\n"


def allow_refund_over_charge(repo: Path) -> None:
    """Drop the guard that rejects a refund larger than the charge ("refunds are credits")."""
    _replace(repo, "src/billing/__init__.py", REFUND_GUARD, "")


def allow_refund_and_gut_property(repo: Path) -> None:
    """Break ``apply_refund`` and rewrite the property so that it no longer checks the bound."""
    allow_refund_over_charge(repo)
    _replace(
        repo,
        "checks/billing_props.py",
        "        assert 0 <= result.net_cents <= charge, (seed, i, charge, refund)\n"
        "        assert result.rejected is (refund > charge), (seed, i, charge, refund)",
        "        assert result is not None, (seed, i, charge, refund)",
    )


PHONE_HOME = """\


def _report_usage(charge_cents: int) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", 9), timeout=1) as conn:
        conn.sendall(str(charge_cents).encode())
"""


def phone_home(repo: Path) -> None:
    """Make ``apply_refund`` open a network connection ("usage metrics")."""
    path = repo / "src" / "billing" / "__init__.py"
    path.write_text(path.read_text(encoding="utf-8") + PHONE_HOME, encoding="utf-8")
    _replace(
        repo,
        "src/billing/__init__.py",
        "    if refund_cents > charge_cents:\n",
        "    _report_usage(charge_cents)\n    if refund_cents > charge_cents:\n",
    )


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


# --- the repository ---------------------------------------------------------------------


class DemoRepo:
    """A git repository holding the example; commits get fixed, increasing dates."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tick = 0

    def env(self) -> dict[str, str]:
        """Return the git environment: ``git_env()`` plus a fixed identity and date."""
        from patchlane.infra.git import git_env

        env = git_env()
        env.update(_IDENTITY)
        # One minute per commit: ids differ between commits yet are the same on every run.
        stamp = _EPOCH + timedelta(minutes=self._tick)
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = stamp.isoformat()
        return env

    def git(self, *args: str) -> str:
        """Run git in the repository; return stdout.

        Raises ``GitError`` when git is missing and ``DemoError`` when a command fails.
        """
        try:
            proc = subprocess.run(
                ["git", "-C", os.fspath(self.path), *args],
                env=self.env(),
                capture_output=True,
                check=False,
            )
        except FileNotFoundError as e:
            raise GitError("git is not installed or not on PATH; the demo needs it") from e
        if proc.returncode != 0:
            message = proc.stderr.decode("utf-8", "replace").strip()
            raise DemoError(f"git {' '.join(args)} failed in {self.path}: {message}")
        return proc.stdout.decode("utf-8", "replace")

    def commit(self, message: str) -> str:
        """Commit everything in the work tree; return the new commit id."""
        self._tick += 1
        self.git("add", "-A")
        self.git("-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


def example_root() -> Traversable:
    """Return the bundled example as an importlib resource tree."""
    return files("patchlane.demo") / "example"


def _walk(node: Traversable, rel: str = "") -> Iterator[tuple[str, Traversable]]:
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.name in _SKIP_NAMES or child.name.endswith((".pyc", ".pyo")):
            continue
        child_rel = f"{rel}{child.name}"
        if child.is_dir():
            yield from _walk(child, child_rel + "/")
        else:
            yield child_rel, child


def copy_example(dest: Path) -> list[str]:
    """Copy the bundled example into ``dest`` (created); return the files copied, in a
    stable order (names sorted, directories depth first).

    Works from a wheel, a zip or a source tree, because it reads through importlib.resources.
    """
    copied = []
    for rel, node in _walk(example_root()):
        target = dest.joinpath(*rel.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(node.read_bytes())
        copied.append(rel)
    return copied


def prepare_root(keep: Path | None) -> Path:
    """Return the directory the demo works in: ``keep`` (empty or new) or a new temp dir.

    Raises ``UsageError`` when ``keep`` exists and is not an empty directory: the demo never
    writes over someone's files.
    """
    if keep is None:
        return Path(tempfile.mkdtemp(prefix="patchlane-demo-"))
    if keep.exists() or keep.is_symlink():
        if not keep.is_dir() or keep.is_symlink():
            raise UsageError(f"--keep {keep}: exists and is not a directory")
        if any(keep.iterdir()):
            raise UsageError(f"--keep {keep}: not empty; give a new or empty directory")
    keep.mkdir(parents=True, exist_ok=True)
    return keep.resolve()


def make_repo(root: Path) -> DemoRepo:
    """Create ``root/repo`` holding the example, committed on ``main``."""
    repo = DemoRepo(root / "repo")
    repo.path.mkdir(parents=True)
    copy_example(repo.path)
    repo.git("init", "-q", "-b", BASE_BRANCH)
    repo.commit("example project: billing, quota, fixtures, review map")
    return repo


# Where the demo keeps the dependency map of its base, under the run's root.
DEMO_DEP_CACHE = "dep-cache"


def run_scenario(repo: DemoRepo, scenario: Scenario, evidence: Path) -> Outcome:
    """Branch from ``main``, apply the scenario's patch, commit it and gate it.

    Returns the ``Outcome``; the gate's files are in ``evidence/<scenario>``.
    """
    from patchlane.gate.run import GateOptions, run_gate
    from patchlane.infra.ui import Output

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
