"""Test files that start processes (issue 11): what their processes run is neither imported
nor traced, so every change to a project module selects them, without counting them as
evidence that the module is reached."""

from __future__ import annotations

import ast

import pytest

from patchlane.lanes.replay.staticrules import PROCESSES
from patchlane.project.sourcescan import scan
from tests.gitrepo import GitRepo
from tests.lanes.replay.test_select import PROJECT, patch, project, select

STARTS = {
    "import subprocess": "import subprocess\n",
    "from subprocess import run": "from subprocess import run\n",
    "multiprocessing": "import multiprocessing as mp\n",
    "os.system": "import os\n\n\ndef test_it():\n    os.system('greet')\n",
    "from os import popen": "from os import popen\n",
    "sys.executable": "import sys\n\nPY = sys.executable\n",
    "a process pool": "from concurrent.futures import ProcessPoolExecutor\n",
    "asyncio": "import asyncio\n\n\nasync def f():\n    await asyncio.create_subprocess_exec('x')\n",
    "the script_runner fixture": "def test_cli(script_runner):\n    script_runner.run(['x'])\n",
    "pexpect": "import pexpect\n",
}
STARTS_NONE = {
    "platform.system()": "import platform\n\n\ndef test_it():\n    assert platform.system()\n",
    "a thread pool": "from concurrent.futures import ThreadPoolExecutor\n",
    "os.path": "import os\n\n\ndef test_it():\n    assert os.path.sep\n",
    "a method named system": "def test_it(machine):\n    machine.system()\n",
}


@pytest.mark.parametrize("what", sorted(STARTS))
def test_a_file_that_can_start_a_process_is_seen(what: str) -> None:
    assert scan(ast.parse(STARTS[what])).starts_processes, what


@pytest.mark.parametrize("what", sorted(STARTS_NONE))
def test_a_file_that_cannot_start_one_is_not(what: str) -> None:
    assert not scan(ast.parse(STARTS_NONE[what])).starts_processes, what


CLI_RUN = """\
import os
import subprocess
import sys


def test_cli_prints():
    env = {**os.environ, "PYTHON": sys.executable}
    out = subprocess.run(["sh", "bin/greet"], capture_output=True, text=True, env=env)
    assert out.stdout == "1\\n"
"""


@pytest.mark.slow
def test_a_test_that_starts_a_shell_script_is_selected_for_any_module_change(
    repo: GitRepo,
) -> None:
    # bin/greet runs ``python -m pkg.c``: no string of the test names a module, and the
    # static graph never reads the shell script.
    files = {**PROJECT, "tests/test_cli_run.py": CLI_RUN}
    files["bin/greet"] = '#!/bin/sh\nexec "${PYTHON:-python3}" -m pkg.c "$@"\n'
    project(repo, files)
    patch(repo, {"pkg/c.py": "C = 2\n"})
    sel = select(repo)
    nodeid = "tests/test_cli_run.py::test_cli_prints"
    assert nodeid in sel.nodeids
    assert sel.reasons[nodeid] == [
        "starts processes (tests/test_cli_run.py), which may run changed module pkg/c.py"
    ]
    assert sel.rule_counts[PROCESSES] == 1
    # Selected, yet no evidence that pkg/c.py is reached: only the importers count.
    assert "tests/test_cli_run.py" not in sel.reached_by["pkg/c.py"]
    assert any("starts processes: tests/test_cli_run.py" in note for note in sel.notes)


@pytest.mark.slow
def test_a_change_to_a_test_file_alone_does_not_select_the_process_starters(
    repo: GitRepo,
) -> None:
    project(repo, {**PROJECT, "tests/test_cli_run.py": CLI_RUN})
    patch(repo, {"tests/test_other.py": PROJECT["tests/test_other.py"] + "\n# more\n"})
    assert not any("test_cli_run" in n for n in select(repo).nodeids)
