"""A materialised tree for the replay's children: files on disk with a ``pytest.ini`` that
puts ``src`` on the path (shared by the tests of the run and collection children)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from patchlane.lanes.replay import chosen, split
from patchlane.lanes.replay.chosen import ChosenRun, Scope
from patchlane.lanes.replay.collect import Collected
from patchlane.lanes.replay.results import Runner

PYTEST_INI = "[pytest]\npythonpath = src\n"


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (repository path -> text; ``pytest.ini`` unless given) under
    ``root`` and return ``root``."""
    for path, text in {"pytest.ini": PYTEST_INI, **files}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


def wheel_site(root: Path) -> Path:
    """Write, under ``root``, patchlane's metadata as a wheel install records it (its files
    and its ``pytest11`` entry point) and return that site directory. Put first on
    ``PYTHONPATH``, it makes pytest mark the ``patchlane`` package for assertion rewriting
    in every run, as it does where patchlane is installed from a wheel (an editable install
    records no package files); the code itself still comes from this checkout."""
    info = root / "patchlane-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: patchlane\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\npatchlane = patchlane.pytest_plugin\n")
    record = ["patchlane/__init__.py", "patchlane/pytest_plugin.py", f"{info.name}/RECORD"]
    (info / "RECORD").write_text("".join(f"{path},,\n" for path in record))
    return root


# Given what was collected, the node ids to run, or ``None`` to run nothing: what a test
# decides in place of the replay's selection.
Choose = Callable[[Collected], "Sequence[str] | None"]


def collect_and_run(
    tree: Path, scope: Scope, choose: Choose, runner: Runner, record: Path | None = None
) -> ChosenRun:
    """Drive a ``chosen.start`` session as the replay's pipeline does: collect, ``choose``
    from the collection, run that. Raises what the session raises and what ``choose``
    raises (the child killed as the session ends)."""
    with chosen.start(tree, scope, runner, record) as session:
        return session.run(choose(session.collected()))


def split_and_run(
    tree: Path, scope: Scope, choose: Choose, own: Sequence[str], runner: Runner
) -> ChosenRun:
    """``collect_and_run`` through a ``split.start`` session (the patch's own test files
    ``own`` apart)."""
    with split.start(tree, scope, own, runner) as session:
        return session.run(choose(session.collected()))


def live_children() -> set[int]:
    """The live processes (``/proc``) whose parent is this process: a child of a session
    still running shows here."""
    pids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(ppid) == os.getpid() and state not in ("Z", "X"):
            pids.add(int(stat.parent.name))
    return pids


def open_fds() -> set[str]:
    """This process's open descriptors (``/proc``)."""
    return {p.name for p in Path("/proc/self/fd").iterdir()}
