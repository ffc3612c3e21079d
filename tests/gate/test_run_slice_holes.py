"""Holes a red team found in the replay slice, closed: the gate, end to end, in real git repos.

Each test commits a project on ``main`` whose full suite passes, then a patch on ``agent``
after which the full suite fails (or holds a test the slice cannot carry), and checks that
``patchlane gate --replay local`` never says ``accept_for_review`` for it, nor stops with the
bad-input exit 2 that the patch could force instead of a judgement.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patchlane.main import main
from tests.gitrepo import GitRepo
from tests.sample import CALC, make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a real local replay


BROKEN_MEAN = CALC.replace("sum(xs) / len(xs)", "sum(xs) // len(xs)")

TEST_CALC = """\
from billing.calc import add


def test_add():
    assert add(1, 2) == 3
"""

CLI = """\
import sys

from billing.calc import mean


def main(argv):
    print(mean([float(a) for a in argv]))


if __name__ == "__main__":
    main(sys.argv[1:])
"""

# Reaches billing.cli (and through it billing.calc) only in a subprocess; imports nothing of
# the project. ``{command}`` is how the subprocess is told what to run.
TEST_CLI = """\
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_cli_prints_the_mean():
    env = {{**os.environ, "PYTHONPATH": str(ROOT / "src")}}
    proc = subprocess.run(
        [sys.executable, {command}, "1", "2"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )
    assert proc.stdout.strip() == "1.5", proc.stderr
"""

USAGE_MD = """\
# Usage

>>> from billing.calc import mean
>>> mean([1, 2])
1.5
"""


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/billing/calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.commit("calc and its test")
    return repo


def gate(repo: GitRepo, out: Path) -> int:
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7"]
    return main([*argv, "--cases", "20", "--replay", "local", "--out-dir", str(out)])


def load(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text(encoding="utf-8"))


def reasons(out: Path) -> list[str]:
    return [r["message"] for r in load(out, "verdict.json")["reasons"]]


@pytest.mark.parametrize(
    "command",
    ['"-m", "billing.cli"', '"src/billing/cli.py"'],
    ids=["module-name", "script-path"],
)
def test_a_test_that_reaches_the_code_only_through_a_subprocess_is_selected(
    project: GitRepo, tmp_path: Path, command: str
) -> None:
    project.write("src/billing/cli.py", CLI)
    project.write("tests/test_cli.py", TEST_CLI.format(command=command))
    project.commit("a command line, tested through a subprocess")
    project.branch("agent")
    project.write("src/billing/calc.py", BROKEN_MEAN)
    project.commit("a faster mean")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    replay = load(out, "replay-report.json")
    assert replay["failed"] == ["tests/test_cli.py::test_cli_prints_the_mean"]


def test_a_doctest_in_a_text_file_is_selected(project: GitRepo, tmp_path: Path) -> None:
    project.write("pytest.ini", "[pytest]\npythonpath = src\naddopts = --doctest-glob=*.md\n")
    project.write("docs/usage.md", USAGE_MD)
    project.commit("usage, as a doctest")
    project.branch("agent")
    project.write("src/billing/calc.py", BROKEN_MEAN)
    project.commit("a faster mean")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    replay = load(out, "replay-report.json")
    assert replay["failed"] == ["docs/usage.md::usage.md"]


def test_a_text_doctest_is_evidence_that_the_change_is_reached(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("pytest.ini", "[pytest]\npythonpath = src\naddopts = --doctest-glob=*.md\n")
    project.write("docs/usage.md", USAGE_MD.replace("billing.calc", "billing.stats"))
    project.write("src/billing/stats.py", "def mean(xs):\n    return sum(xs) / len(xs)\n")
    project.commit("stats, shown only by the usage doctest")
    project.branch("agent")
    project.write(
        "src/billing/stats.py", "def mean(xs):\n    return sum(xs) / len(xs)  # checked\n"
    )
    project.commit("a comment")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)
    replay = load(out, "replay-report.json")
    assert replay["unreached"] == []
    assert "docs/usage.md::usage.md" in replay["passed"]


EVIL = "tests/test_\u202eevil.py"


def test_a_test_file_whose_name_a_slice_cannot_carry_is_undecided_not_a_bad_input(
    project: GitRepo, tmp_path: Path
) -> None:
    project.branch("agent")
    project.write("src/billing/calc.py", BROKEN_MEAN)
    project.write(
        EVIL,
        "from billing.calc import mean\n\n\ndef test_mean():\n    assert mean([1, 2]) == 1.5\n",
    )
    project.commit("a faster mean, and the only test of it")
    out = tmp_path / "ev"
    assert gate(project, out) == 3, reasons(out)
    assert load(out, "verdict.json")["verdict"] == "undecided"
    events = load(out, "replay-report.json")["review_events"]
    assert any("slice format cannot carry" in e and "not replayed" in e for e in events)
    assert all(e.isprintable() for e in events)
    assert "evil" not in (out / "replay-slice.txt").read_text(encoding="utf-8")


# --- test files the patch breaks without any rule reaching them (second red-team pass) ---


HARMLESS = CALC + "\n# tidy\n"
QUOTA_TEST = "def test_limit():\n    assert 10 == 10\n"


def gate_with(repo: GitRepo, out: Path, dep_map: bool) -> int:
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7"]
    argv += ["--cases", "20", "--replay", "local", "--out-dir", str(out)]
    if dep_map:
        argv += ["--dep-map", "auto", "--dep-cache", str(out.parent / "cache")]
    return main(argv)


def red_or_order_dependent(repo: GitRepo, out: Path, dep_map: bool) -> None:
    """Gate ``repo`` and assert the replay saw the patch's failure: ``reject``, or, when the
    failing node passes run again alone (it fails only after the tests before it, as the
    full suite runs it), ``undecided`` as a failure that does not repeat (DESIGN §1 rule 6:
    outcomes that change in another order), never ``accept_for_review``."""
    code = gate_with(repo, out, dep_map)
    assert code in (1, 3), reasons(out)
    if code == 3:
        assert load(out, "replay-report.json")["outcome"] == "flaky_at_head", reasons(out)


@pytest.mark.parametrize("dep_map", [False, True])
def test_a_new_test_file_whose_module_name_clashes_is_rejected(
    project: GitRepo, tmp_path: Path, dep_map: bool
) -> None:
    # pytest imports both by the bare name test_quota; the second does not collect, so the
    # full suite fails, though the existing file reaches nothing the patch changed.
    project.write("tests/test_quota.py", QUOTA_TEST)
    project.commit("a quota test")
    project.branch("agent")
    project.write("src/billing/calc.py", HARMLESS)
    project.write("tests/new/test_quota.py", TEST_CALC.replace("test_add", "test_add_more"))
    project.commit("more tests")
    out = tmp_path / "ev"
    red_or_order_dependent(project, out, dep_map)
    assert "tests/test_quota.py" in load(out, "replay-report.json")["failed"]


@pytest.mark.parametrize("dep_map", [False, True])
def test_a_test_package_init_that_now_raises_is_rejected(
    project: GitRepo, tmp_path: Path, dep_map: bool
) -> None:
    project.write("tests/sub/__init__.py", "")
    project.write("tests/sub/test_q.py", QUOTA_TEST)
    project.commit("a test package")
    project.branch("agent")
    project.write("src/billing/calc.py", HARMLESS)
    project.write("tests/sub/__init__.py", "raise RuntimeError('broken package init')\n")
    project.commit("tidy")
    out = tmp_path / "ev"
    assert gate_with(project, out, dep_map) == 1, reasons(out)


def test_a_class_that_does_not_collect_is_its_files_failure(
    project: GitRepo, tmp_path: Path
) -> None:
    # Not pytest failing as a whole (exit 2 would be the patch's to force): the file fails.
    project.branch("agent")
    project.write(
        "tests/test_calc.py",
        TEST_CALC + "\n\nimport pytest\n\n\nclass TestMore:\n"
        "    @pytest.mark.parametrize('x', 1)\n    def test_x(self, x):\n        pass\n",
    )
    project.commit("more cases")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    assert "tests/test_calc.py" in load(out, "replay-report.json")["failed"]


OPS = "def plus(a, b):\n    return a + b\n"
# Exercises code the patches below leave alone: only the data file reaches the failure.
DATA_TEST = """\
import json
import pathlib

import pytest

from billing.ops import plus

CASES = json.loads((pathlib.Path(__file__).parent / "data" / "{name}").read_text())


@pytest.mark.parametrize("a,b,want", CASES)
def test_add_case(a, b, want):
    assert plus(a, b) == want
"""


@pytest.mark.parametrize("dep_map", [False, True])
def test_a_wrong_case_added_to_a_data_file_under_the_tests_is_rejected(
    project: GitRepo, tmp_path: Path, dep_map: bool
) -> None:
    project.write("src/billing/ops.py", OPS)
    project.write("tests/data/cases.json", "[[1, 2, 3]]\n")
    project.write("tests/test_cases.py", DATA_TEST.format(name="cases.json"))
    project.commit("data-driven cases")
    project.branch("agent")
    project.write("src/billing/calc.py", HARMLESS)
    project.write("tests/data/cases.json", "[[1, 2, 3], [2, 2, 5]]\n")
    project.commit("a new case, and a comment")
    out = tmp_path / "ev"
    assert gate_with(project, out, dep_map) == 1, reasons(out)


def test_a_data_file_no_source_names_selects_every_test_under_its_root(
    project: GitRepo, tmp_path: Path
) -> None:
    glob_test = DATA_TEST.replace(
        'json.loads((pathlib.Path(__file__).parent / "data" / "{name}").read_text())',
        "[c for f in sorted((pathlib.Path(__file__).parent / 'data').glob('*.json'))"
        " for c in json.loads(f.read_text())]",
    )
    project.write("src/billing/ops.py", OPS)
    project.write("tests/data/a.json", "[[1, 2, 3]]\n")
    project.write("tests/test_cases.py", glob_test)
    project.commit("data-driven cases, found by a glob")
    project.branch("agent")
    project.write("tests/data/b.json", "[[2, 2, 5]]\n")
    project.commit("a new case file")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    assert load(out, "replay-report.json")["failed"] == [
        "tests/test_cases.py::test_add_case[2-2-5]"
    ]


def test_a_test_module_the_map_has_no_test_of_is_judged_by_the_static_rules(
    project: GitRepo, tmp_path: Path
) -> None:
    # At the base it skips itself at import (no node ids in the map); the patch adds the
    # module it waits for, broken.
    project.write(
        "tests/test_fast.py",
        "import pytest\n\nfast = pytest.importorskip('billing.fast')\n\n\n"
        "def test_fast_add():\n    assert fast.add(1, 1) == 2\n",
    )
    project.commit("a test of an optional accelerator")
    project.branch("agent")
    project.write("src/billing/fast.py", "def add(a, b):\n    return a - b\n")
    project.write("src/billing/calc.py", "from billing import fast as _fast  # noqa\n" + CALC)
    project.commit("the accelerator")
    out = tmp_path / "ev"
    assert gate_with(project, out, True) == 1, reasons(out)
    assert load(out, "replay-report.json")["failed"] == ["tests/test_fast.py::test_fast_add"]


# --- state and data a slice could not see (a second red-team pass) -----------------------


QUOTA = (
    "from decimal import Decimal\n\nLIMIT = 10\n\n\ndef share(total, parts):\n"
    "    return (Decimal(total) / Decimal(parts)).quantize(Decimal('0.01'))\n"
)
QUOTA_SHARE_TEST = (
    "from decimal import Decimal\n\nfrom billing.quota import share\n\n\n"
    "def test_share_rounds_half_even():\n    assert share(2, 3) == Decimal('0.67')\n"
)


@pytest.mark.parametrize("dep_map", [False, True])
def test_a_changed_module_that_sets_process_state_at_import_selects_every_test(
    project: GitRepo, tmp_path: Path, dep_map: bool
) -> None:
    # tests/test_quota.py never imports calc; in the full suite it runs after a test that
    # does, under the rounding calc set.
    project.write("src/billing/quota.py", QUOTA)
    project.write("tests/test_quota.py", QUOTA_SHARE_TEST)
    project.commit("shares")
    project.branch("agent")
    project.write(
        "src/billing/calc.py",
        "import decimal\n\ndecimal.getcontext().rounding = decimal.ROUND_DOWN\n\n" + CALC,
    )
    project.commit("money never rounds up")
    out = tmp_path / "ev"
    red_or_order_dependent(project, out, dep_map)
    replay = load(out, "replay-report.json")
    assert replay["failed"] == ["tests/test_quota.py::test_share_rounds_half_even"]
    assert "a changed file changes state every test shares" in replay["slice_rules"]


@pytest.mark.parametrize("dep_map", [False, True])
def test_a_new_test_that_leaves_another_modules_state_changed_is_a_harness_change(
    project: GitRepo, tmp_path: Path, dep_map: bool
) -> None:
    # What it leaves behind is a harness change (§2), and it fails the base's test where the
    # project's suite runs both in one process, as the replay's last run does (§4): the
    # full suite is red, so the patch is rejected.
    project.write("src/billing/quota.py", QUOTA)
    project.write(
        "tests/test_quota.py",
        "from billing import quota\n\n\ndef test_limit():\n    assert quota.LIMIT == 10\n",
    )
    project.commit("a limit")
    project.branch("agent")
    project.write(
        "tests/test_aa_limits.py",
        "from billing import quota\nfrom billing.calc import add\n\nquota.LIMIT = 3\n\n\n"
        "def test_add_to_limit():\n    assert add(quota.LIMIT, 0) == 3\n",
    )
    project.commit("a test at a lower limit")
    out = tmp_path / "ev"
    red_or_order_dependent(project, out, dep_map)
    assert "tests/test_quota.py::test_limit" in reasons(out)[0]
    assert any("tests/test_aa_limits.py (test harness: test code that" in r for r in reasons(out))
    (detail,) = load(out, "classify.json")["control_plane_details"]
    assert "(line 4: stores into quota.LIMIT)" in detail["why"]


def test_package_data_read_through_a_glob_selects_the_tests_of_the_code_beside_it(
    project: GitRepo, tmp_path: Path
) -> None:
    # calc names "eu.json" too: a literal naming the file is one reader, not the only one.
    project.write("src/billing/rates/eu.json", '{"vat": 0.2}\n')
    project.write(
        "src/billing/rates/__init__.py",
        "import json\nimport pathlib\n\n\ndef load_all():\n"
        "    here = pathlib.Path(__file__).parent\n"
        "    return {p.stem: json.loads(p.read_text()) for p in sorted(here.glob('*.json'))}\n",
    )
    project.write("src/billing/calc.py", 'DEFAULT_REGION_FILE = "eu.json"\n\n\n' + CALC)
    project.write(
        "tests/test_rates.py",
        "from billing.rates import load_all\n\n\ndef test_rates_are_fractions():\n"
        "    assert all(0 <= t['vat'] < 1 for t in load_all().values())\n",
    )
    project.commit("rate tables")
    project.branch("agent")
    project.write("src/billing/rates/eu.json", '{"vat": 20}\n')
    project.commit("rates in percent")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    assert load(out, "replay-report.json")["failed"] == [
        "tests/test_rates.py::test_rates_are_fractions"
    ]


def test_with_the_map_a_deleted_test_package_init_collects_every_test_file(
    project: GitRepo, tmp_path: Path
) -> None:
    # Without tests/a/__init__.py both modules are "test_dup": the second does not collect.
    project.write("tests/a/__init__.py", "")
    project.write("tests/a/test_dup.py", "def test_a():\n    assert 1\n")
    project.write("tests/b/test_dup.py", "def test_b():\n    assert 1\n")
    project.commit("two modules of one name")
    project.branch("agent")
    project.write("src/billing/calc.py", HARMLESS)
    project.git("rm", "-q", "tests/a/__init__.py")
    project.commit("tidy")
    out = tmp_path / "ev"
    red_or_order_dependent(project, out, True)
    assert "tests/b/test_dup.py" in load(out, "replay-report.json")["failed"]


def test_a_test_that_reads_the_sources_as_text_is_selected(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write(
        "tests/test_lint.py",
        "import pathlib\n\nSRC = pathlib.Path(__file__).resolve().parent.parent / 'src'\n\n\n"
        "def test_no_print_calls():\n    for path in SRC.rglob('*.py'):\n"
        "        assert 'print(' not in path.read_text(), path\n",
    )
    project.commit("a lint test")
    project.branch("agent")
    project.write(
        "src/billing/calc.py",
        CALC.replace("    return a + b\n", "    print(a)\n    return a + b\n"),
    )
    project.commit("debugging")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    assert load(out, "replay-report.json")["failed"] == ["tests/test_lint.py::test_no_print_calls"]
