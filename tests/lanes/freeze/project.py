"""Small freeze-lane projects in real git repositories, and a way to audit them."""

from __future__ import annotations

import hashlib
from datetime import date
from typing import Any

from patchlane.formats.fixture_report import FixtureReport
from patchlane.formats.freeze_report import FreezeReport
from patchlane.formats.property_report import PropertyReport
from patchlane.infra import git
from patchlane.lanes.freeze.lane import audit
from patchlane.project.config import ReviewMap, parse_review_map
from patchlane.project.patch import Patch
from tests.gitrepo import GitRepo

REGISTRY = "tests/flaky-freeze.yml"
LOCK = "tests/fixtures/billing/LOCK.json"
TEST_FILE = "tests/test_billing.py"
NODE = f"{TEST_FILE}::test_invoice_timestamp_order"
PROP = "prop_refund_never_exceeds_charge"
MODULE = "checks.billing_props"
TODAY = date(2026, 9, 24)  # the seed's review date; its example freeze expires 2026-10-08

MAP = f"""\
lanes:
  property:
    paths: ["src/billing/"]
    module: "{MODULE}"
  fixture:
    paths: ["tests/fixtures/billing/"]
    lock: "{LOCK}"
  freeze:
    registry: "{REGISTRY}"
    max_age_days: 14
    max_extensions: 1
"""

FILES = {
    "src/billing/__init__.py": "def net(charge, refund):\n    return charge - refund\n",
    "checks/__init__.py": "",
    "checks/billing_props.py": f"def {PROP}(seed, n=200):\n    pass\n",
    TEST_FILE: "def test_invoice_timestamp_order():\n    assert True\n",
    "tests/test_quota.py": "def test_limit():\n    assert True\n",
    "tests/fixtures/billing/invoice_min.json": '{"charge_cents": 1200}\n',
    LOCK: '{"files": []}\n',
}


def log_hash(name: str) -> str:
    """A stand-in failure log hash, distinct per ``name``."""
    return hashlib.sha256(name.encode()).hexdigest()


def record(
    record_id: str = "billing-clock-skew",
    *,
    nodeid: str = NODE,
    expires: str | None = '"2026-10-08"',
    props: tuple[str, ...] = (PROP,),
    lock: str | None = LOCK,
    log: str | None = None,
) -> str:
    """Return one registry record in the seed's layout (``expires`` is written verbatim,
    so that quoted and unquoted dates can both be tried; ``None`` leaves it out)."""
    lines = [
        f"  - id: {record_id}",
        f'    nodeid: "{nodeid}"',
        '    owner: "qa-rotation"',
        '    reason: "wall-clock assertion races the sandbox clock"',
    ]
    if expires is not None:
        lines.append(f"    expires: {expires}")
    if props:
        lines.append("    required_properties:")
        lines.extend(f"      - {p}" for p in props)
    else:
        lines.append("    required_properties: []")
    if lock is not None:
        lines.append(f'    fixture_lock: "{lock}"')
    if log is not None:
        lines.extend(
            ["    failure_log:", f'      ref: "ci/run/{log}"', f"      sha256: {log_hash(log)}"]
        )
    return "\n".join(lines) + "\n"


def registry(*records: str) -> str:
    """Return a registry holding ``records`` (or none)."""
    return "freezes:\n" + "".join(records) if records else "freezes: []\n"


def make(repo: GitRepo, registry_text: str | None = None, review_map: str = MAP) -> str:
    """Commit the project on ``main`` with ``registry_text`` (``None``: no registry) and
    return the commit id."""
    repo.write("review-map.yml", review_map)
    for rel, content in FILES.items():
        repo.write(rel, content)
    if registry_text is not None:
        repo.write(REGISTRY, registry_text)
    return repo.commit("base")


def patch(repo: GitRepo, files: dict[str, str], name: str = "patch") -> str:
    """Branch ``name`` off the current commit, write ``files`` and commit them."""
    repo.branch(name)
    for rel, content in files.items():
        repo.write(rel, content)
    return repo.commit("agent patch")


def touch_test() -> dict[str, str]:
    """A patch that changes the frozen test's file (brings the record into play)."""
    return {TEST_FILE: FILES[TEST_FILE] + "\n\ndef test_more():\n    assert True\n"}


def property_report(outcome: str = "pass", *, status: str = "pass") -> dict[str, Any]:
    """A property report in the property lane's shape: the property ran from base and head."""
    runs = [
        {"module": MODULE, "property": PROP, "source": s, "style": "seed", "outcome": o}
        for s, o in (("base", "pass"), ("head", outcome))
    ]
    return {
        "lane": "property",
        "status": status,
        "reason": "test report",
        "properties": runs,
        "failures": [],
        "oracle_findings": [],
    }


def fixture_report(ok: bool = True, lock: str = LOCK) -> dict[str, Any]:
    """A fixture report in the fixture lane's shape with one root and its ``ok``."""
    return {
        "lane": "fixture",
        "status": "pass" if ok else "fail",
        "reason": "test report",
        "roots": [{"paths": ["tests/fixtures/billing/"], "lock": lock, "ok": ok}],
        "missing": [],
        "extra": [],
        "changed": [] if ok else ["tests/fixtures/billing/invoice_min.json"],
        "lock_errors": [],
    }


def run(
    repo: GitRepo,
    *,
    today: date = TODAY,
    props: dict[str, Any] | None = None,
    fixture: dict[str, Any] | None = None,
    failure_log: frozenset[str] = frozenset(),
    base: str = "main",
    head: str = "HEAD",
    review_map: ReviewMap | None = None,
) -> FreezeReport:
    """Audit the patch ``merge-base(base, head)..head`` as the gate would, the reports
    read by their strict readers (``{}`` stands for a missing report)."""
    base_commit = git.resolve_commit(repo.path, base)
    head_commit = git.resolve_commit(repo.path, head)
    merge_base = git.merge_base(repo.path, base_commit, head_commit)
    changed = frozenset(
        p
        for c in git.diff_changes(repo.path, merge_base, head_commit)
        for p in (c.path, c.old_path)
        if p
    )
    patch = Patch(
        base=base_commit,
        head=head_commit,
        merge_base=merge_base,
        changed_paths=changed,
        review_map=review_map or parse_review_map(MAP, "review-map.yml"),
    )
    props = property_report() if props is None else props
    fixture = fixture_report() if fixture is None else fixture
    return audit(
        repo.path,
        patch,
        today=today,
        property_report=PropertyReport.from_json(props, "property-report.json") if props else None,
        fixture_report=FixtureReport.from_json(fixture, "fixture-report.json") if fixture else None,
        failure_log=failure_log,
    )


def only(report: FreezeReport) -> dict[str, Any]:
    """Return the single record of ``report`` as JSON data."""
    (result,) = report.records
    data: dict[str, Any] = result.to_json()
    return data
