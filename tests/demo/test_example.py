"""The bundled example project (``patchlane/demo/example``) is a working project in the seed's shape.

Its own test suite passes, the seed's property holds on its code (and fails on broken code),
its lock pins the real bytes of its fixtures, and its map and freeze record are the seed's.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchlane.demo.repo import copy_example
from patchlane.inputs.yamlio import load_yaml
from patchlane.lanes.fixture.lockfile import parse_lock
from patchlane.project.config import parse_review_map

FIXTURE_ROOT = "tests/fixtures/billing"
SEED_NODEID = "tests/test_billing.py::test_invoice_timestamp_order"

PROPERTY_RUN = """\
import sys
sys.path[:0] = ["src", "."]
from checks.billing_props import prop_refund_never_exceeds_charge
for seed in (20260924, 0, 1, 7):
    prop_refund_never_exceeds_charge(seed, n=500)
prop_refund_never_exceeds_charge(20260924)
print("holds")
"""


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A fresh copy of the bundled example, made the way ``patchlane demo`` makes it."""
    dest = tmp_path / "example"
    copy_example(dest)
    return dest


def _python(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # A clean environment: no PYTHONPATH from the caller, no pytest options, and no
    # bytecode written into the copy.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def test_copy_has_the_seed_shape(example: Path) -> None:
    files = sorted(p.relative_to(example).as_posix() for p in example.rglob("*") if p.is_file())
    for rel in (
        "review-map.yml",
        "pytest.ini",
        "src/billing/__init__.py",
        "src/quota/__init__.py",
        "checks/__init__.py",
        "checks/billing_props.py",
        "tests/test_billing.py",
        "tests/test_quota.py",
        f"{FIXTURE_ROOT}/invoice_min.json",
        f"{FIXTURE_ROOT}/LOCK.json",
        "tests/flaky-freeze.yml",
        "docs/billing.md",
    ):
        assert rel in files
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]


@pytest.mark.slow
def test_example_suite_passes_with_plain_pytest(example: Path) -> None:
    proc = _python(example, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "14 passed" in proc.stdout
    assert not list(example.rglob("__pycache__"))


@pytest.mark.slow
def test_the_frozen_node_id_exists(example: Path) -> None:
    proc = _python(example, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert SEED_NODEID in proc.stdout.splitlines()


def test_seed_property_holds_on_the_example_code(example: Path) -> None:
    proc = _python(example, "-c", PROPERTY_RUN)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "holds"


def test_seed_property_catches_a_refund_above_the_charge(example: Path) -> None:
    # The oracle has teeth: the classic agent "fix" (always subtract) breaks it.
    billing = example / "src" / "billing" / "__init__.py"
    text = billing.read_text(encoding="utf-8")
    broken = text.replace(
        "return RefundResult(net_cents=charge_cents, rejected=True)",
        "return RefundResult(net_cents=charge_cents - refund_cents, rejected=True)",
    )
    assert broken != text
    billing.write_text(broken, encoding="utf-8")
    proc = _python(example, "-c", PROPERTY_RUN)
    assert proc.returncode == 1
    assert "AssertionError: (20260924," in proc.stderr


def test_lock_pins_the_real_bytes_of_every_fixture(example: Path) -> None:
    lock_path = example / FIXTURE_ROOT / "LOCK.json"
    lock = parse_lock(lock_path.read_text(encoding="utf-8"), "LOCK.json")
    on_disk = {
        p.relative_to(example).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((example / FIXTURE_ROOT).rglob("*"))
        if p.is_file() and p.name != "LOCK.json"
    }
    assert len(on_disk) >= 2
    assert lock.expected == on_disk
    assert lock.reason is not None and "\n" not in lock.reason


def test_review_map_is_the_seeds_plus_an_ignore_entry(example: Path) -> None:
    review_map = parse_review_map((example / "review-map.yml").read_text("utf-8"), "review-map.yml")
    assert review_map.property is not None
    assert review_map.property.paths == ("src/billing/", "src/quota/")
    assert review_map.property.modules == ("checks.billing_props",)
    assert review_map.fixture is not None
    assert review_map.fixture.paths == ("tests/fixtures/billing/",)
    assert review_map.fixture.locks == ("tests/fixtures/billing/LOCK.json",)
    assert review_map.freeze is not None
    assert (review_map.freeze.registry, review_map.freeze.max_age_days) == (
        "tests/flaky-freeze.yml",
        14,
    )
    assert [(e.path, bool(e.reason)) for e in review_map.ignore] == [("docs/", True)]


def test_freeze_registry_is_the_seeds_record(example: Path) -> None:
    doc = load_yaml((example / "tests" / "flaky-freeze.yml").read_text("utf-8"), "flaky-freeze.yml")
    assert doc == {
        "freezes": [
            {
                "id": "billing-clock-skew",
                "nodeid": SEED_NODEID,
                "owner": "qa-rotation",
                "reason": "wall-clock assertion races the sandbox clock",
                "expires": "2026-10-08",
                "required_properties": ["prop_refund_never_exceeds_charge"],
                "fixture_lock": "tests/fixtures/billing/LOCK.json",
            }
        ]
    }
