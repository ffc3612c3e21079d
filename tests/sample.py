"""A seed-shaped project in a real git repo, for tests of whole commands."""

from __future__ import annotations

import hashlib
import json

from tests.gitrepo import CLASSIFY_MAP, GitRepo

# The seed-shaped map with an ignore for docs/ (shared with the classify tests).
SEED_MAP = CLASSIFY_MAP
# The same map without its property lane. A patch that changes fixture bytes runs the
# properties on the new bytes (two or three child processes); a gate test of a fixture rule
# whose patch touches nothing else uses this map (``@pytest.mark.review_map(FIXTURE_MAP)``
# on a test of the ``billing`` fixture) and starts no property child.
FIXTURE_MAP = """\
version: 1
lanes:
  fixture:
    paths: ["tests/fixtures/billing/"]
    lock: "tests/fixtures/billing/LOCK.json"
  freeze:
    registry: "tests/flaky-freeze.yml"
    max_age_days: 14
ignore:
  - path: "docs/"
    reason: "prose only"
"""

# The sample's `src/billing/calc.py` in the gate tests that patch plain functions.
CALC = """\
def add(a, b):
    return a + b


def mean(xs):
    return sum(xs) / len(xs)
"""

FIXTURES = {
    "tests/fixtures/billing/invoice_min.json": '{"charge_cents": 1200, "refund_cents": 200}\n',
    "tests/fixtures/billing/invoice_max.json": '{"charge_cents": 10000, "refund_cents": 10000}\n',
}
LOCK = "tests/fixtures/billing/LOCK.json"
# The files `gate` writes into its evidence directory.
EVIDENCE = (
    "classify.json",
    "property-report.json",
    "fixture-report.json",
    "freeze-report.json",
    "replay-report.json",
    "verdict.json",
    "review.md",
)


def lock_text(files: dict[str, str], reason: str = "initial fixtures reviewed") -> str:
    entries = [
        {"path": path, "sha256": hashlib.sha256(content.encode()).hexdigest()}
        for path, content in sorted(files.items())
    ]
    return json.dumps({"files": entries, "reason": reason}, indent=2) + "\n"


def make_billing_repo(repo: GitRepo, review_map: str = SEED_MAP) -> str:
    """Write and commit the sample project on ``main``; return the commit id."""
    repo.write("review-map.yml", review_map)
    repo.write(
        "src/billing/__init__.py",
        "def apply_refund(charge_cents, refund_cents):\n    return charge_cents - refund_cents\n",
    )
    repo.write("src/quota/__init__.py", "LIMIT = 10\n")
    repo.write("checks/__init__.py", "")
    repo.write(
        "checks/billing_props.py", "def prop_refund_never_exceeds_charge(seed, n=200):\n    pass\n"
    )
    repo.write("tests/test_billing.py", "def test_invoice_timestamp_order():\n    assert True\n")
    repo.write("tests/flaky-freeze.yml", "freezes: []\n")
    repo.write("docs/billing.md", "# Billing\n")
    for path, content in FIXTURES.items():
        repo.write(path, content)
    repo.write(LOCK, lock_text(FIXTURES))
    return repo.commit("base")
