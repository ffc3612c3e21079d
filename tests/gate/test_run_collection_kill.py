"""Code under test that ends pytest's collection is the patch's failure (issue 29).

A patch whose code ends the process at import when it sees pytest (``os._exit(0)``,
``sys.exit``, an exception that escapes collection as a whole) leaves the replay no tests
to judge. The base collects the same files, so the full suite at the head fails: the gate
says ``reject``, never exit 2 ("test collection failed"), which would call it the user's
fault. When the base does not collect either, it stays the environment's (exit 2).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gate.evidence import calc_project, gate, reasons, verdict
from tests.gate.test_run_as_the_project import TEST_CALC, patch
from tests.gitrepo import GitRepo
from tests.sample import CALC

pytestmark = pytest.mark.slow  # the gate end to end, with a real local replay


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    return calc_project(repo, CALC, TEST_CALC)


def plain_run(repo: GitRepo) -> str:
    """The project's own ``python -m pytest`` at the head: what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PATCHLANE_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
        cwd=repo.path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return proc.stdout + proc.stderr


ENDS_AT_IMPORT = {
    "exit": "import os, sys\nif 'pytest' in sys.modules:\n    os._exit(0)\n",
    "sys.exit": "import sys\nif 'pytest' in sys.modules:\n    sys.exit(0)\n",
    "keyboard": "import sys\nif 'pytest' in sys.modules:\n    raise KeyboardInterrupt\n",
}


@pytest.mark.parametrize("how", sorted(ENDS_AT_IMPORT))
def test_code_that_ends_collection_is_rejected(project: GitRepo, tmp_path: Path, how: str) -> None:
    patch(project, {"src/billing/calc.py": ENDS_AT_IMPORT[how] + CALC})
    # The project's own run judges nothing: it ends before a test runs (``os._exit(0)``
    # even exits 0, a green CI job that ran no test).
    assert "passed" not in plain_run(project)
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    assert verdict(out) == "reject"
    assert any("collect" in r and "the base collects" in r for r in reasons(out)), reasons(out)


def test_a_base_that_does_not_collect_either_is_the_environments(
    project: GitRepo, tmp_path: Path
) -> None:
    # The base's own conftest ends collection: nothing the patch did (exit 2, as before).
    project.write("tests/conftest.py", "import os\nos._exit(0)\n")
    project.commit("a conftest that ends every run")
    patch(project, {"src/billing/calc.py": CALC.replace("a + b", "b + a")})
    out = tmp_path / "ev"
    assert gate(project, out) == 2
