"""A failure at the head that does not repeat is ``undecided``, never a pass (DESIGN §1 rule 6).

Each test commits a small project on ``main`` and a patch on ``agent`` and runs
``patchlane gate --replay local``. A node that fails in the replay at the head and passes at
the base runs again, alone, at both (``lanes.replay.rerun``): a failure that repeats is
``reject``; one that does not is ``undecided`` ("flaky at the head: freeze it or fix it"). No
state survives from one sandboxed run to the next (each has its own empty temporary
directories and a fresh checkout), so a failure that happens "the first time" is one that
depends on what ran before it in the same process: here, code under test that goes wrong on
its fourth call in a process. In the replay the slice's tests call it more than three times;
alone, no test does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.lanes.replay.rerun import RERUN_CAP
from tests.gate.evidence import gate, load, reasons
from tests.gitrepo import GitRepo
from tests.sample import make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a real local replay

CALC = """\
def add(a, b):
    return a + b
"""

# Each test calls ``add`` at most twice, and the four of them six times in all.
TEST_CALC = """\
from billing.calc import add


def test_small():
    assert add(1, 1) == 2
    assert add(0, 0) == 0


def test_negative():
    assert add(-1, 1) == 0
    assert add(-2, -2) == -4


def test_large():
    assert add(10**6, 1) == 10**6 + 1


def test_zero():
    assert add(0, 7) == 7
"""

# Wrong on the fourth call in a process, and only then: whichever test makes that call
# fails in the slice, and passes when it runs alone.
FOURTH_CALL_WRONG = """\
_calls = []


def add(a, b):
    _calls.append(None)
    return a + b + (1 if len(_calls) == 4 else 0)
"""


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/billing/calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.commit("calc and its tests")
    repo.branch("agent")
    return repo


def test_a_failure_that_does_not_repeat_alone_is_undecided_flaky_at_the_head(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", FOURTH_CALL_WRONG)
    project.commit("count the calls")
    out = tmp_path / "ev"
    assert gate(project, out) == 3, reasons(out)
    replay = load(out, "replay-report.json")
    assert replay["status"] == "error"
    assert replay["outcome"] == "flaky_at_head"
    (failed,) = replay["failed"]
    assert replay["reran_alone"] == [failed]
    assert replay["flaky_at_head"] == [failed]
    assert load(out, "verdict.json")["verdict"] == "undecided"
    flaky = [m for m in reasons(out) if "flaky at the head: freeze it or fix it" in m]
    assert flaky and failed in flaky[0], reasons(out)


def test_a_deterministic_red_still_rejects_after_its_rerun(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC.replace("a + b", "a + b + (a < 0)"))
    project.commit("negative numbers are special")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    replay = load(out, "replay-report.json")
    assert replay["outcome"] == "fail"
    assert replay["failed"] == ["tests/test_calc.py::test_negative"]
    assert replay["reran_alone"] == ["tests/test_calc.py::test_negative"]
    assert replay["flaky_at_head"] == []
    assert "run again alone, 1 fail(s) at the head again and not at the base" in replay["reason"]
    assert load(out, "verdict.json")["reasons"][0]["rule"] == 4


def test_more_failures_than_the_cap_stand_without_a_rerun(project: GitRepo, tmp_path: Path) -> None:
    many = "".join(
        f"\n\ndef test_more_{i}():\n    assert add({i}, 1) == {i + 1}\n" for i in range(RERUN_CAP)
    )
    project.git("checkout", "-q", "main")
    project.write("tests/test_many.py", "from billing.calc import add\n" + many)
    project.commit("more tests")
    project.git("checkout", "-q", "agent")
    project.git("merge", "-q", "--ff-only", "main")
    project.write("src/billing/calc.py", CALC.replace("a + b", "a - b"))
    project.commit("subtract")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    replay = load(out, "replay-report.json")
    assert len(replay["failed"]) > RERUN_CAP
    assert replay["reran_alone"] == []
    assert "flaky_at_head" not in replay


def test_a_failure_at_the_base_and_the_head_alike_is_not_run_again(
    project: GitRepo, tmp_path: Path
) -> None:
    project.git("checkout", "-q", "main")
    project.write(
        "tests/test_needs_env.py",
        "import os\n\nfrom billing.calc import add\n\n\ndef test_with_a_database():\n"
        "    assert os.environ['BILLING_DATABASE_URL']\n    assert add(1, 1) == 2\n",
    )
    project.commit("a test that needs a variable")
    project.git("checkout", "-q", "agent")
    project.git("merge", "-q", "--ff-only", "main")
    project.write("src/billing/calc.py", CALC + "\n# a comment\n")
    project.commit("harmless")
    out = tmp_path / "ev"
    assert gate(project, out) == 3, reasons(out)
    replay = load(out, "replay-report.json")
    assert replay["outcome"] == "fails_at_base"
    assert replay["fail_at_base_too"] == ["tests/test_needs_env.py::test_with_a_database"]
    assert "reran_alone" not in replay


def test_a_red_patch_that_passes_when_its_test_runs_alone_reaches_undecided_never_accept(
    project: GitRepo, tmp_path: Path
) -> None:
    # Hostile: the patch breaks ``add`` for real but hides it from a lone test (right on
    # the first three calls of a process), and adds a test of its own that fails first and
    # passes on a rerun the same way. The rerun can make this no evidence, never a pass.
    project.write(
        "src/billing/calc.py",
        "_calls = []\n\n\ndef add(a, b):\n    _calls.append(None)\n"
        "    return a + b if len(_calls) < 4 else a - b\n",
    )
    project.write(
        "tests/test_agent.py",
        "from billing.calc import add\n\n\ndef test_first_fails():\n"
        "    assert add(2, 2) == 4\n    assert add(3, 3) == 6\n",
    )
    project.commit("faster add")
    out = tmp_path / "ev"
    code = gate(project, out)
    assert code == 3, reasons(out)
    verdict = load(out, "verdict.json")["verdict"]
    assert verdict == "undecided"
    replay = load(out, "replay-report.json")
    assert replay["outcome"] == "flaky_at_head"
    assert set(replay["flaky_at_head"]) == set(replay["failed"])


def test_a_test_that_fails_alone_at_the_base_as_at_the_head_is_no_evidence(
    project: GitRepo, tmp_path: Path
) -> None:
    # At the base the test passes only after another file's test has set a variable: the
    # dependency map (the base's whole suite) saw it pass, so the base check takes that
    # pass from the map. The slice holds it without that other test: it fails at the
    # head, and run alone it fails at the base too, so it says nothing about the patch.
    project.git("checkout", "-q", "main")
    project.write(
        "review-map.yml",
        (project.path / "review-map.yml")
        .read_text(encoding="utf-8")
        .replace("ignore:", '  replay:\n    tests: ["tests/"]\n    canary: off\nignore:'),
    )
    project.write(
        "tests/test_a_setup.py",
        "import os\n\n\ndef test_mode_on():\n    os.environ['BILLING_MODE'] = 'on'\n",
    )
    project.write(
        "tests/test_mode.py",
        "import os\n\nfrom billing.calc import add\n\n\ndef test_in_mode():\n"
        "    assert os.environ.get('BILLING_MODE') == 'on'\n    assert add(1, 1) == 2\n",
    )
    project.commit("a test that needs another to run first")
    project.git("checkout", "-q", "agent")
    project.git("merge", "-q", "--ff-only", "main")
    project.write("src/billing/calc.py", CALC + "\n# a comment\n")
    project.commit("harmless")
    out = tmp_path / "ev"
    code = gate(project, out, "--dep-map", "auto", "--dep-cache", str(tmp_path / "cache"))
    assert code == 3, reasons(out)
    replay = load(out, "replay-report.json")
    assert replay["failed"] == ["tests/test_mode.py::test_in_mode"]
    assert replay["base_from_map"] == ["tests/test_mode.py::test_in_mode"]
    assert replay["reran_alone"] == ["tests/test_mode.py::test_in_mode"]
    assert replay["outcome"] == "fails_at_base"
    assert replay["fail_at_base_too"] == ["tests/test_mode.py::test_in_mode"]
    assert "when run alone" in replay["reason"]
