"""Record the evidence of real gates, once, for the fast decision tests (issue 21).

Run ``python3 -m tests.recorded.regenerate`` from the repository's root: it builds the
sample billing project (``tests.sample``, fixed git dates, so commit ids are the same on
every machine), gates one patch branch per scenario with ``--replay local`` and writes
each gate's evidence, normalised (see ``normalise``), into ``tests/recorded/<scenario>/``.
``--out DIR`` writes elsewhere (the slow test regenerates into a temporary directory and
compares byte for byte).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from patchlane.gate.reports import FILE_NAMES
from patchlane.main import main
from tests.gitrepo import GitRepo
from tests.recorded.normalise import normalise_evidence
from tests.sample import make_billing_repo

HERE = Path(__file__).resolve().parent
# The gate's options for every scenario: a fixed seed and case count, a fixed day (the
# freeze audit reads it), no oracle mutants (each is one more child and no part of a rule
# these scenarios show).
GATE = ("gate", "--base", "main", "--seed", "7", "--cases", "20", "--mutants", "0")
TODAY = "2026-10-20"
# What tests/conftest.py sets for the suite, set here too so that a run outside pytest
# records the same: no dependency-map recording (the slice comes from the import graph),
# no canary, colourless output.
ENV = {"PATCHLANE_DEP_MAP": "off", "PATCHLANE_CANARY": "off"}
# The evidence files a scenario keeps (``replay-slice.txt`` is the receipt's input, and
# the receipt names its hash).
KEPT = tuple(
    FILE_NAMES[k]
    for k in (
        "classify", "property", "fixture", "freeze", "replay", "receipt", "verdict", "review",
    )
)  # fmt: skip

CODE = "def apply_refund(charge_cents, refund_cents):\n    return charge_cents - refund_cents\n"
PROPS = """\
from billing import apply_refund


def prop_refund_never_exceeds_charge(seed, n=200):
    for i in range(n):
        charge = 100 + i
        net = apply_refund(charge, 30)
        assert 0 <= net <= charge, f"net {net} for charge {charge}"
"""
TESTS = """\
from billing import apply_refund


def test_partial_refund():
    assert apply_refund(100, 30) == 70


def test_zero_refund():
    assert apply_refund(100, 0) == 100
"""
CLOCK = "def test_invoice_timestamp_order():\n    assert True\n"
# One freeze, expired on ``TODAY``: a patch that touches its test is rejected (rule 3).
FREEZE = """\
freezes:
  - id: billing-clock-skew
    nodeid: "tests/test_clock.py::test_invoice_timestamp_order"
    owner: "qa-rotation"
    reason: "wall-clock assertion races the sandbox clock"
    expires: "2026-10-08"
    required_properties:
      - prop_refund_never_exceeds_charge
    fixture_lock: "tests/fixtures/billing/LOCK.json"
"""


EXIT = {"accept_for_review": 0, "reject": 1, "undecided": 3}


@dataclass(frozen=True)
class Scenario:
    """One patch on the base: the files it writes, the verdict it gets and the rule that
    decides it (the first reason's), and what it shows."""

    name: str
    files: dict[str, str]
    verdict: str
    rule: int
    shows: str


SCENARIOS = (
    Scenario(
        "property-reject",
        {"src/billing/__init__.py": CODE.replace("- refund_cents", "+ refund_cents")},
        "reject",
        1,
        "rule 1: the property fails on the patched code",
    ),
    Scenario(
        "fixture-reject",
        {
            "tests/fixtures/billing/invoice_min.json": '{"charge_cents": 1200, "refund_cents": 1300}\n'
        },
        "reject",
        2,
        "rule 2: a fixture changes and the lock does not",
    ),
    Scenario(
        "freeze-reject",
        {"tests/test_clock.py": "def test_invoice_timestamp_order():\n    assert 1\n"},
        "reject",
        3,
        "rule 3: the patch touches a test whose freeze expired",
    ),
    Scenario(
        "replay-reject",
        {
            "src/billing/__init__.py": CODE.replace(
                "charge_cents - refund_cents",
                "charge_cents - refund_cents - (1 if refund_cents else 0)",
            )
        },
        "reject",
        4,
        "rule 4: the property holds, a replayed test fails",
    ),
    Scenario(
        "unmapped-undecided",
        {"scripts/deploy.sh": "echo deploy\n"},
        "undecided",
        5,
        "rule 5: a path no lane covers (extend the map)",
    ),
    Scenario(
        "harness-undecided",
        {"tests/conftest.py": "def pytest_runtest_makereport(item, call):\n    pass\n"},
        "undecided",
        6,
        "rule 6: the patch changes the test harness",
    ),
    Scenario(
        "accept",
        {"src/billing/__init__.py": '"""Billing."""\n\n' + CODE},
        "accept_for_review",
        7,
        "rule 7: every lane green, the replay passes",
    ),
)


def build_base(repo: GitRepo) -> None:
    """The sample project on ``main`` with a real property, real tests and one freeze."""
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("checks/billing_props.py", PROPS)
    repo.write("tests/test_billing.py", TESTS)
    repo.write("tests/test_clock.py", CLOCK)
    repo.write("tests/flaky-freeze.yml", FREEZE)
    repo.commit("a real property, real tests, one freeze")


@contextmanager
def _environment(cache: Path) -> Iterator[None]:
    """``ENV`` and a fresh cache and key directory for one gate, the caller's restored after."""
    saved = dict(os.environ)
    os.environ.update(ENV)
    os.environ["PATCHLANE_CACHE_DIR"] = str(cache / "cache")
    os.environ["PATCHLANE_KEY_DIR"] = str(cache / "key")
    os.environ.pop("FORCE_COLOR", None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def record(scenario: Scenario, repo: GitRepo, work: Path, out: Path) -> int:
    """Gate ``scenario``'s branch of ``repo``; write its normalised evidence into
    ``out / scenario.name``. Returns the gate's exit code."""
    repo.branch(scenario.name, "main")
    for path, text in scenario.files.items():
        repo.write(path, text)
    repo.commit(scenario.name)
    evidence = work / "evidence" / scenario.name
    with _environment(work / "state" / scenario.name):
        argv = ["--repo", str(repo.path), "-q", *GATE, "--today", TODAY]
        code = main([*argv, "--replay", "local", "--out-dir", str(evidence)])
    reasons = json.loads((evidence / FILE_NAMES["verdict"]).read_bytes())["reasons"]
    if code != EXIT[scenario.verdict] or reasons[0]["rule"] != scenario.rule:
        # A recording that no longer shows its rule would test nothing: refuse to write it.
        raise SystemExit(
            f"{scenario.name}: exit {code}, first rule {reasons[0]['rule']}; "
            f"expected {scenario.verdict} by {scenario.shows}"
        )
    files = {n: (evidence / n).read_bytes() for n in KEPT if (evidence / n).is_file()}
    target = out / scenario.name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name, data in normalise_evidence(files).items():
        (target / name).write_bytes(data)
    return code


def regenerate(out: Path) -> dict[str, int]:
    """Record every scenario into ``out``; return each one's exit code by name."""
    with tempfile.TemporaryDirectory(prefix="patchlane-recorded-") as tmp:
        work = Path(tmp)
        repo = GitRepo(work / "repo")
        build_base(repo)
        return {s.name: record(s, repo, work, out) for s in SCENARIOS}


def main_cli(argv: list[str] | None = None) -> int:
    """Regenerate; print each scenario's exit code. Returns 0."""
    parser = argparse.ArgumentParser(prog="python3 -m tests.recorded.regenerate")
    parser.add_argument("--out", type=Path, default=HERE, help="default: tests/recorded/")
    args = parser.parse_args(argv)
    for name, code in regenerate(args.out).items():
        print(f"{name}: exit {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main_cli())
