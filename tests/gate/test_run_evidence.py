"""Replay evidence on suites shaped like real ones: the gate, end to end, in real git repos.

Each test commits a small project on ``main`` (unittest ``subTest`` cases, skips the suite makes
on its own, a test module per behaviour), then a patch on ``agent``, and runs
``patchlane gate --replay local`` on it. The project's full suite at the head is the truth the
verdict must agree with: a regression is ``reject``, a deleted or expectation-edited test is
``undecided`` with its node ids, a harmless patch is ``accept_for_review``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from patchlane.main import main
from tests.gitrepo import GitRepo
from tests.sample import make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a real local replay

CALC = """\
def add(a, b):
    return a + b


def clamp(x, lo, hi):
    return max(lo, min(x, hi))
"""

TEST_CALC = """\
import unittest

from billing.calc import add, clamp


class AddCases(unittest.TestCase):
    def test_add(self):
        for a, b, want in [(1, 2, 3), (0, 0, 0), (-1, 1, 0)]:
            with self.subTest(a=a, b=b):
                self.assertEqual(add(a, b), want)


def test_clamp():
    assert clamp(5, 0, 3) == 3
    assert clamp(-1, 0, 3) == 0
"""

TEST_ENV = """\
import sys

import pytest


@pytest.mark.skipif(sys.platform != "win32-never", reason="environment-conditional")
def test_only_elsewhere():
    pass


def test_here():
    pass
"""


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/billing/calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.write("tests/test_env.py", TEST_ENV)
    repo.commit("calc and its tests")
    repo.branch("agent")
    return repo


@contextmanager
def on_base(project: GitRepo, message: str) -> Iterator[None]:
    """Write files on ``main`` inside the block, commit them there, and bring ``agent``
    up to that commit (the patch then starts from it)."""
    project.git("checkout", "-q", "main")
    yield
    project.commit(message)
    project.git("checkout", "-q", "agent")
    project.git("merge", "-q", "--ff-only", "main")


def gate(repo: GitRepo, out: Path) -> int:
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7"]
    return main([*argv, "--cases", "20", "--replay", "local", "--out-dir", str(out)])


def load(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text(encoding="utf-8"))


def reasons(out: Path) -> list[str]:
    return [r["message"] for r in load(out, "verdict.json")["reasons"]]


def test_a_regression_reported_only_by_a_subtest_is_rejected(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write(
        "src/billing/calc.py", CALC.replace("return a + b", "return a + b if a >= 0 else b")
    )
    project.commit("optimise add")
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    replay = load(out, "replay-report.json")
    assert replay["failed"] == ["tests/test_calc.py::AddCases::test_add"]
    assert "subtest failed" in replay["failed_why"]["tests/test_calc.py::AddCases::test_add"]
    assert load(out, "verdict.json")["reasons"][0]["rule"] == 4


def test_a_harmless_patch_is_accepted_and_the_suites_own_skips_are_not_failures(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC + "\n\n# a comment\n")
    project.write("tests/test_env.py", TEST_ENV + "\n\ndef test_more():\n    pass\n")
    project.commit("a comment and one more test")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)
    receipt = load(out, "receipt.json")
    assert receipt["skipped_nodeids"] == ["tests/test_env.py::test_only_elsewhere"]
    assert load(out, "replay-report.json")["deleted_tests"] == []


def test_deleting_the_test_that_would_fail_is_undecided_with_its_id(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC.replace("min(x, hi)", "x"))
    project.write("tests/test_calc.py", TEST_CALC.split("def test_clamp")[0])
    project.commit("clamp is simpler now")
    out = tmp_path / "ev"
    assert gate(project, out) == 3
    replay = load(out, "replay-report.json")
    assert replay["deleted_tests"] == ["tests/test_calc.py::test_clamp"]
    assert any("deletes 1 test" in m and "test_clamp" in m for m in reasons(out))
    assert "test_clamp" in (out / "review.md").read_text()


def test_editing_an_expected_value_to_match_the_bug_is_undecided_with_its_id(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC.replace("min(x, hi)", "x"))
    project.write(
        "tests/test_calc.py", TEST_CALC.replace("clamp(5, 0, 3) == 3", "clamp(5, 0, 3) == 5")
    )
    project.commit("fix the clamp test")
    out = tmp_path / "ev"
    assert gate(project, out) == 3
    replay = load(out, "replay-report.json")
    assert replay["status"] == "pass"  # the edited test passes at the head...
    edited = [e["nodeid"] for e in replay["edited_expectations"]]
    assert edited == ["tests/test_calc.py::test_clamp"]  # ...its base version does not
    assert any("changes the expectations" in m for m in reasons(out))


def test_a_renamed_test_file_keeps_its_tests(project: GitRepo, tmp_path: Path) -> None:
    project.git("mv", "tests/test_calc.py", "tests/test_arith.py")
    project.commit("rename")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)
    assert load(out, "replay-report.json")["deleted_tests"] == []


def test_a_test_file_that_no_longer_imports_is_rejected(project: GitRepo, tmp_path: Path) -> None:
    project.write("src/billing/calc.py", CALC.replace("def clamp", "def clamp_to"))
    project.commit("rename clamp")
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    replay = load(out, "replay-report.json")
    assert "tests/test_calc.py" in replay["failed"]


def test_a_skip_the_patch_causes_in_an_unchanged_test_is_a_failure(
    project: GitRepo, tmp_path: Path
) -> None:
    with on_base(project, "a fast path and its test"):
        project.write(
            "tests/test_fast.py",
            "import pytest\n\nfrom billing import calc\n\n\ndef test_fast_path():\n"
            "    fast = pytest.importorskip('billing.fast')\n    assert fast.add(1, 1) == 2\n",
        )
        project.write("src/billing/fast.py", "def add(a, b):\n    return a + b\n")
    project.remove("src/billing/fast.py")
    project.write("src/billing/calc.py", CALC + "\n# no fast path\n")
    project.commit("drop the fast path")
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    replay = load(out, "replay-report.json")
    assert replay["skipped_but_pass_at_base"] == ["tests/test_fast.py::test_fast_path"]


def test_a_package_missing_at_base_and_head_is_the_environments_fault(
    project: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with on_base(project, "a test that needs a package"):
        project.write(
            "tests/test_np.py", "import numpy_not_installed_here\n\n\ndef test_x():\n    pass\n"
        )
        project.write("src/billing/np_user.py", "X = 1\n")
        project.write(
            "tests/test_np_user.py",
            "from billing import np_user\nimport numpy_not_installed_here\n",
        )
    project.write("src/billing/np_user.py", "X = 2\n")
    project.commit("touch the module the test imports")
    out = tmp_path / "ev"
    assert gate(project, out) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "numpy_not_installed_here" in line and "pip install" in line


def test_a_package_the_patch_starts_to_need_is_the_patchs_failure(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", "import numpy_not_installed_here\n" + CALC)
    project.commit("use a package nobody has")
    out = tmp_path / "ev"
    assert gate(project, out) == 1


FREEZE = """\
freezes:
  - id: clock
    nodeid: "tests/test_billing.py::test_invoice_timestamp_order"
    owner: "qa-rotation"
    reason: "wall-clock assertion races the sandbox clock"
    expires: "2026-10-01"
    required_properties: [prop_refund_never_exceeds_charge]
    fixture_lock: "tests/fixtures/billing/LOCK.json"
"""


def test_a_slice_whose_only_node_is_skipped_by_a_freeze_is_undecided(
    repo: GitRepo, tmp_path: Path
) -> None:
    make_billing_repo(repo)
    repo.write("tests/flaky-freeze.yml", FREEZE)
    repo.commit("freeze the clock test")
    repo.branch("agent")
    repo.write("tests/test_billing.py", "def test_invoice_timestamp_order():\n    assert False\n")
    repo.commit("the clock test fails now")
    out = tmp_path / "ev"
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7"]
    argv += ["--cases", "20", "--today", "2026-09-24", "--replay", "local", "--out-dir", str(out)]
    assert main(argv) == 3
    replay = load(out, "replay-report.json")
    assert replay["skipped_by_freeze"] == ["tests/test_billing.py::test_invoice_timestamp_order"]
    assert replay["outcome"] == "no_evidence"
    assert any("no node passed" in m for m in reasons(out))


def test_a_new_helper_and_a_new_test_that_uses_it_are_accepted(
    project: GitRepo, tmp_path: Path
) -> None:
    with on_base(project, "a test helper"):
        project.write("tests/helpers.py", "ZERO = 0\n")
    project.write("tests/helpers.py", "ZERO = 0\nONE = 1\n")
    project.write(
        "tests/test_more.py",
        "from billing.calc import add\nfrom tests.helpers import ONE\n\n\n"
        "def test_one():\n    assert add(ONE, 0) == 1\n",
    )
    project.write("tests/__init__.py", "")
    project.write("src/billing/calc.py", CALC + "\n# see test_more\n")
    project.commit("one more test, with a helper")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)
    assert load(out, "replay-report.json")["edited_expectations"] == []


def test_an_expected_value_moved_into_a_changed_helper_is_an_edited_expectation(
    project: GitRepo, tmp_path: Path
) -> None:
    with on_base(project, "expected values in a helper"):
        project.write("tests/__init__.py", "")
        project.write("tests/expected.py", "CLAMPED = 3\n")
        project.write(
            "tests/test_clamp_table.py",
            "from billing.calc import clamp\nfrom tests.expected import CLAMPED\n\n\n"
            "def test_table():\n    assert clamp(5, 0, 3) == CLAMPED\n",
        )
    project.write("src/billing/calc.py", CALC.replace("min(x, hi)", "x"))
    project.write("tests/expected.py", "CLAMPED = 5\n")
    project.write("tests/test_calc.py", TEST_CALC.split("def test_clamp")[0])
    project.commit("clamp rewritten")
    out = tmp_path / "ev"
    assert gate(project, out) == 3
    edited = [e["nodeid"] for e in load(out, "replay-report.json")["edited_expectations"]]
    assert "tests/test_clamp_table.py::test_table" in edited


def test_a_changed_file_no_test_reaches_keeps_the_verdict_undecided(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/cli.py", "def main():\n    return 0\n")
    project.write("src/billing/calc.py", CALC + "\n# and a command line\n")
    project.commit("a command line nobody tests")
    out = tmp_path / "ev"
    assert gate(project, out) == 3
    replay = load(out, "replay-report.json")
    assert replay["status"] == "pass" and replay["unreached"] == ["src/billing/cli.py"]
    assert any("reaches 1 changed file" in m and "cli.py" in m for m in reasons(out))


def test_a_test_that_reaches_code_only_through_importlib_is_selected(
    project: GitRepo, tmp_path: Path
) -> None:
    with on_base(project, "clamp is tested dynamically"):
        project.write(
            "tests/test_dynamic.py",
            "import importlib\n\n\ndef test_clamp_dynamic():\n"
            "    assert importlib.import_module('billing.calc').clamp(9, 0, 3) == 3\n",
        )
        project.write("tests/test_calc.py", TEST_CALC.split("def test_clamp")[0])
    project.write("src/billing/calc.py", CALC.replace("min(x, hi)", "x"))
    project.commit("break clamp")
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    assert load(out, "replay-report.json")["failed"] == [
        "tests/test_dynamic.py::test_clamp_dynamic"
    ]


def test_a_doctest_of_a_changed_module_is_in_the_slice(project: GitRepo, tmp_path: Path) -> None:
    with on_base(project, "a doctest"):
        project.write("pytest.ini", "[pytest]\npythonpath = src\naddopts = --doctest-modules\n")
        project.write(
            "src/billing/calc.py",
            CALC.replace(
                "    return max(lo",
                '    """\n    >>> clamp(9, 0, 3)\n    3\n    """\n    return max(lo',
            ),
        )
    project.write(
        "src/billing/calc.py",
        CALC.replace("min(x, hi)", "x").replace(
            "    return max(lo",
            '    """\n    >>> clamp(9, 0, 3)\n    3\n    """\n    return max(lo',
        ),
    )
    project.write("tests/test_calc.py", TEST_CALC.split("def test_clamp")[0] + "\n")
    project.commit("break clamp, drop its test")
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    assert load(out, "replay-report.json")["failed"] == ["src/billing/calc.py::billing.calc.clamp"]


def test_a_data_file_the_code_reads_selects_the_tests_of_that_code(
    project: GitRepo, tmp_path: Path
) -> None:
    with on_base(project, "pricing"):
        project.write("src/billing/rates.json", '{"vat": 20}\n')
        project.write(
            "src/billing/pricing.py",
            "import json\nfrom pathlib import Path\n\n\ndef vat():\n"
            "    return json.loads((Path(__file__).parent / 'rates.json').read_text())['vat']\n",
        )
        project.write(
            "tests/test_pricing.py",
            "from billing.pricing import vat\n\n\ndef test_vat():\n    assert vat() == 20\n",
        )
    project.write("src/billing/rates.json", '{"vat": 0}\n')
    project.commit("no more VAT")
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    assert load(out, "replay-report.json")["failed"] == ["tests/test_pricing.py::test_vat"]


def test_what_the_environment_gives_the_run_it_gives_collection_too(
    project: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BILLING_DB_URL", "sqlite://")
    with on_base(project, "ids from the environment, a port bound at import"):
        project.write(
            "tests/test_env_ids.py",
            "import os\nimport tempfile\nimport socket\n\nimport pytest\n\nfrom billing.calc import add\n\n"
            "DB = os.environ['BILLING_DB_URL']\n"
            "_s = socket.socket()\n_s.bind(('127.0.0.1', 0))\n_s.close()\n\n\n"
            "@pytest.mark.parametrize('d', [tempfile.gettempdir(), DB])\n"
            "def test_ids(d):\n    assert d and add(1, 1) == 2\n",
        )
    project.write("src/billing/calc.py", CALC + "\n# a comment\n")
    project.commit("harmless")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)


def test_a_test_that_fails_at_the_base_too_is_no_evidence_against_the_patch(
    project: GitRepo, tmp_path: Path
) -> None:
    # A variable this machine lacks (a test that needs a git checkout now has one: it runs
    # in a checkout of the head, and of the base).
    with on_base(project, "a test that needs a variable"):
        project.write(
            "tests/test_needs_env.py",
            "import os\n\nfrom billing.calc import add\n\n\ndef test_with_a_database():\n"
            "    assert os.environ['BILLING_DATABASE_URL']\n    assert add(1, 1) == 2\n",
        )
    project.write("src/billing/calc.py", CALC + "\n# a comment\n")
    project.commit("harmless")
    out = tmp_path / "ev"
    assert gate(project, out) == 3
    replay = load(out, "replay-report.json")
    assert replay["outcome"] == "fails_at_base"
    assert replay["fail_at_base_too"] == ["tests/test_needs_env.py::test_with_a_database"]


def test_a_test_the_patch_adds_is_no_evidence_that_its_change_is_reached(
    project: GitRepo, tmp_path: Path
) -> None:
    with on_base(project, "a command line, tested only through a subprocess"):
        project.write("src/billing/cli.py", "def main():\n    return 0\n")
        project.write(
            "tests/test_cli_process.py",
            "import subprocess\nimport sys\n\n\ndef test_cli():\n"
            "    subprocess.run([sys.executable, '-c', 'import sys; sys.exit(0)'], check=True)\n",
        )
    project.write("src/billing/cli.py", "def main():\n    return 1\n")
    project.write("tests/test_smoke.py", "import billing.cli\n\n\ndef test_imports():\n    pass\n")
    project.commit("break the command line, add a smoke test that imports it")
    out = tmp_path / "ev"
    assert gate(project, out) == 3
    assert load(out, "replay-report.json")["unreached"] == ["src/billing/cli.py"]


def test_a_reaching_test_that_only_skips_is_no_evidence(project: GitRepo, tmp_path: Path) -> None:
    # A skip on a variable this machine lacks (one on `.git` now runs: the replay is a
    # checkout).
    with on_base(project, "a test that skips unless end to end"):
        project.write("src/billing/cli.py", "def main():\n    return 0\n")
        project.write(
            "tests/test_cli.py",
            "import os\n\nimport pytest\n\nfrom billing import cli\n\n\n"
            "@pytest.mark.skipif(not os.environ.get('BILLING_E2E'), reason='end to end only')\n"
            "def test_main():\n    assert cli.main() == 0\n",
        )
    project.write("src/billing/cli.py", "def main():\n    return 1\n")
    project.write("src/billing/calc.py", CALC + "\n# and a comment\n")
    project.commit("break the command line")
    out = tmp_path / "ev"
    assert gate(project, out) == 3
    assert load(out, "replay-report.json")["unreached"] == ["src/billing/cli.py"]


RANDOM_ID_TEST = (
    "import random\n\nimport pytest\n\nfrom billing.calc import add\n\n\n"
    "@pytest.mark.parametrize('n', [random.randint(0, 10**9)])\n"
    "def test_n(n):\n    assert add(n, 0) == n\n"
)


def test_a_local_replay_runs_a_node_under_the_id_it_collected(
    project: GitRepo, tmp_path: Path
) -> None:
    # One child collects and runs (--replay local): the id the slice names is the one that
    # ran, so the test's own outcome counts, here a pass and there a failure.
    with on_base(project, "a test whose id is a random number"):
        project.write("tests/test_random_id.py", RANDOM_ID_TEST)
    project.write("src/billing/calc.py", CALC + "\n# a comment\n")
    project.commit("harmless")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)
    ran = [n for n in load(out, "receipt.json")["passed_nodeids"] if "test_random_id" in n]
    assert len(ran) == 1
    assert ran[0] in (out / "replay-slice.txt").read_text(encoding="utf-8").splitlines()
    project.write("src/billing/calc.py", CALC.replace("return a + b", "return a + b + 1"))
    project.commit("break add")
    assert gate(project, tmp_path / "ev2") == 1


def test_a_test_moved_into_a_class_is_not_deleted(project: GitRepo, tmp_path: Path) -> None:
    moved = TEST_CALC.replace(
        "def test_clamp():\n    assert",
        "class TestClamp:\n    def test_clamp(self):\n        assert",
    ).replace("\n    assert clamp(-1", "\n        assert clamp(-1")
    project.write("tests/test_calc.py", moved)
    project.write("src/billing/calc.py", CALC + "\n# a comment\n")
    project.commit("group the clamp test")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)
    assert load(out, "replay-report.json")["deleted_tests"] == []


def test_a_lazy_package_getattr_reaches_every_module(project: GitRepo, tmp_path: Path) -> None:
    with on_base(project, "lazy submodules"):
        project.write(
            "src/billing/__init__.py",
            "import importlib\n\n\ndef __getattr__(name):\n"
            "    return importlib.import_module('.' + name, __name__)\n",
        )
        project.write(
            "tests/test_lazy.py",
            "import billing\n\n\ndef test_clamp_lazily():\n    assert billing.calc.clamp(9, 0, 3) == 3\n",
        )
        project.write("tests/test_calc.py", TEST_CALC.split("def test_clamp")[0])
    project.write("src/billing/calc.py", CALC.replace("min(x, hi)", "x"))
    project.commit("break clamp")
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    assert "tests/test_lazy.py::test_clamp_lazily" in load(out, "replay-report.json")["failed"]


def test_tests_the_projects_own_configuration_collects_are_selected_too(
    project: GitRepo, tmp_path: Path
) -> None:
    with on_base(project, "integration tests, and tests inside the package"):
        project.write(
            "pytest.ini", "[pytest]\npythonpath = src\ntestpaths = tests integration src\n"
        )
        project.write(
            "integration/test_flow.py",
            "from billing.calc import clamp\n\n\ndef test_flow():\n    assert clamp(9, 0, 3) == 3\n",
        )
        project.write(
            "src/billing/test_inline.py",
            "from billing.calc import clamp\n\n\ndef test_inline():\n    assert clamp(-9, 0, 3) == 0\n",
        )
        project.write("tests/test_calc.py", TEST_CALC.split("def test_clamp")[0])
    project.write("src/billing/calc.py", CALC.replace("max(lo, min(x, hi))", "x"))
    project.commit("break clamp")
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    failed = load(out, "replay-report.json")["failed"]
    assert "integration/test_flow.py::test_flow" in failed
    assert "src/billing/test_inline.py::test_inline" in failed


def test_a_project_that_turns_warnings_into_errors_is_gated(
    project: GitRepo, tmp_path: Path
) -> None:
    with on_base(project, "warnings are errors"):
        project.write("pytest.ini", "[pytest]\npythonpath = src\nfilterwarnings =\n    error\n")
    project.write("src/billing/calc.py", CALC + "\n# a comment\n")
    project.commit("harmless")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)


def test_a_type_stub_needs_no_test_to_reach_it(project: GitRepo, tmp_path: Path) -> None:
    project.write("src/billing/calc.pyi", "def add(a: int, b: int) -> int: ...\n")
    project.write("src/billing/py.typed", "")
    project.write("src/billing/calc.py", CALC + "\n# typed now\n")
    project.commit("type stubs")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)
    assert load(out, "replay-report.json")["unreached"] == []


def test_a_local_replay_imports_the_heads_tests_once(project: GitRepo, tmp_path: Path) -> None:
    # One pytest child collects the candidates and runs the slice chosen from them: the
    # head's test modules are imported once, not once to collect and again to run. The log
    # is in the run's own tree, the one place a sandboxed test may write; a child that
    # imported the module elsewhere (a read-only collection) would fail on the write.
    with on_base(project, "a test that logs its import"):
        project.write(
            "tests/test_logged.py",
            "from pathlib import Path\n\nLOG = Path(__file__).with_name('imports.txt')\n"
            "with LOG.open('a') as f:\n    f.write('imported\\n')\n\n"
            "from billing.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
            "    assert LOG.read_text().splitlines() == ['imported']\n",
        )
    project.write("src/billing/calc.py", CALC + "\n# a comment\n")
    project.commit("harmless")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)
    assert "tests/test_logged.py::test_add" in load(out, "receipt.json")["passed_nodeids"]
    timings = load(out, "verdict.json")["timings"]
    assert timings["replay: selection"] > 0 and timings["replay: run"] > 0


FLIP_REPORTS = """

def _telemetry():
    import sys

    rep = sys.modules.get("_pytest.reports")
    if rep is None:
        return
    orig = rep.TestReport.from_item_and_call.__func__

    def from_item_and_call(cls, item, call):
        r = orig(cls, item, call)
        if r.outcome == "failed":
            r.outcome = "passed"
            r.longrepr = None
        return r

    rep.TestReport.from_item_and_call = classmethod(from_item_and_call)


_telemetry()
"""


def test_code_under_test_that_makes_pytest_report_failures_as_passes_is_not_accepted(
    project: GitRepo, tmp_path: Path
) -> None:
    # The code under test breaks clamp and, at import, rewrites pytest's TestReport so
    # that the failing test reports as passed (docs/architecture.md §2, replay outcomes).
    project.write("src/billing/calc.py", CALC.replace("min(x, hi)", "x") + FLIP_REPORTS)
    project.commit("clamp is simpler now")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    replay = load(out, "replay-report.json")
    assert "tests/test_calc.py::test_clamp" in replay["failed"]
    why = replay["failed_why"]["tests/test_calc.py::test_clamp"]
    assert "pytest's TestReport.from_item_and_call was replaced" in why
    assert "outcomes cannot be believed" in why
