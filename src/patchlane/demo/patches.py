"""The demo's patches: each an edit of the kind an agent writes, made to the example's
work tree on its scenario's branch (``scenarios.SCENARIOS`` names which edit each scenario
makes and the verdict it must get).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from patchlane.demo.repo import DemoError
from patchlane.main import main

FIXTURE_DIR = "tests/fixtures/billing"
LOCK = f"{FIXTURE_DIR}/LOCK.json"
INVOICE_MIN = f"{FIXTURE_DIR}/invoice_min.json"
INVOICE_REFUND = f"{FIXTURE_DIR}/invoice_refund.json"
RELOCK_REASON = "invoice_min: plan-basic repriced from 12.00 to 11.00 EUR (pricing change PR-142)"


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
