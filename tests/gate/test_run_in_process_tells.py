"""What patchlane could add inside the replay's test process, and the checkout's own git
directory, are a plain run's (issue 29): the gate, end to end.

A patch that behaves correctly only when it sees patchlane's plugin holding a job (h46), an
import hook more than a plain run has (h47), a process with one thread where an installed
plugin starts one (h57), a checkout whose reflog has one entry (h45) or no hooks directory
(h56) is judged by what it does where those facts are a plain run's: its own plain
``python -m pytest`` fails, and so does the replay.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.gate.test_run_process_tree import gated_red_scenario
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.slow  # the gate end to end, with a real local replay

# h57's thread is pytest-rerunfailures' status server, which it starts where xdist is loaded.
THREADS = all(importlib.util.find_spec(m) for m in ("pytest_rerunfailures", "xdist"))


@pytest.mark.parametrize(
    "name",
    [
        "h45_tell_git_reflog",
        "h46_tell_plugin_state",
        "h47_tell_path_hooks",
        "h56_tell_git_hooks",
        pytest.param(
            "h57_tell_threads",
            marks=pytest.mark.skipif(not THREADS, reason="needs pytest-rerunfailures and xdist"),
        ),
    ],
)
def test_a_patch_that_tells_the_replay_from_inside_is_rejected(
    repo: GitRepo, tmp_path: Path, name: str
) -> None:
    gated_red_scenario(repo, tmp_path, name)
