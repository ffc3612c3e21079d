"""Run exactly a slice's node ids with pytest and build the receipt from what streamed back.

pytest runs in a child in its own session from the tree's root: ``python -m pytest`` as the
project runs it (``CHILD_ARGV``, ``plain_env``), whose job reaches patchlane's entry-point
plugin on a socket as stdin (``child.replay_run`` then runs it; decision 0031). Node ids reach
it through that plugin, not argv; every report streams back as it happens over a pipe this
process opened, each line carrying a per-run token; this process folds them into one outcome
per node by the rules of ``fold`` (docs/architecture.md, "Replay outcomes").
"""

from __future__ import annotations

import functools
import os
import secrets
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

from patchlane.child.messages import ReplayJob
from patchlane.errors import ForeignCode
from patchlane.formats.freeze_report import FreezeReport
from patchlane.infra import process
from patchlane.infra.bytecode import process_pycache
from patchlane.infra.origins import ProbeError, describe, presentation
from patchlane.infra.sandbox import Confinement, Presentation, isolation
from patchlane.lanes.replay.fold import fold
from patchlane.lanes.replay.results import (
    TestRun,
)
from patchlane.lanes.replay.rewritten import store_for
from patchlane.lanes.replay.runprogress import counter
from patchlane.lanes.replay.testbound import Clock, current, listener

# The test process is what the project runs: ``python -m pytest``, no flag and no argument of
# patchlane's (the job reaches its plugin on stdin: ``patchlane.pytest_plugin``).
CHILD_ARGV = (sys.executable, "-m", "pytest")
PLUGIN_MODULE = "patchlane.pytest_plugin"
# About 150 bytes a test (its call report and its end of protocol; setup and teardown only
# when they did not pass): room for a few hundred thousand tests.
RESULT_LIMIT = 64 * 1024 * 1024
_DROPPED_ENV = frozenset({"PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"})
# Set by a pytest that runs patchlane (a CI step inside a test, an xdist worker): passed on,
# they make the child's plugins believe they run inside that session (pytest-xdist's worker
# variables switch plugins such as pytest-benchmark into another mode).
_DROPPED_PREFIXES = ("PYTEST_XDIST_", "PYTEST_CURRENT_TEST")


def draw_hash_seed() -> int:
    """Return a hash seed for one replay run, drawn from ``os.urandom`` (0..4294967295, what
    ``PYTHONHASHSEED`` accepts). Never derived from the public seed: a patch tuned to pass
    under one known ``PYTHONHASHSEED`` or Hypothesis seed cannot know this one
    (docs/architecture.md §4, "Receipt")."""
    return int.from_bytes(os.urandom(4), "big")


def child_argv() -> tuple[str, ...]:
    """The test process's command line: ``python -m pytest``, with ``-p`` naming patchlane's
    plugin only when this interpreter does not load it by itself (patchlane run from a source
    tree without being installed: a declared difference, ``fingerprint.DECLARED``)."""
    return CHILD_ARGV if _plugin_installed() else (*CHILD_ARGV, "-p", PLUGIN_MODULE)


@functools.cache
def _plugin_installed() -> bool:
    return any(ep.value == PLUGIN_MODULE for ep in entry_points(group="pytest11"))


def plain_env(hash_seed: int) -> dict[str, str]:
    """Return the test process's environment: the host's as a plain ``pytest`` run has it,
    less the variables that would change which tests run or how or keep patchlane's plugin
    from loading, with ``hash_seed`` as ``PYTHONHASHSEED`` (removed from ``os.environ`` at
    the plugin's import, before any code of the tree: ``child.channel.hide_drawn_seed``). No
    variable of patchlane's: the Hypothesis seed travels in the job."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _DROPPED_ENV and not k.startswith(_DROPPED_PREFIXES)
    }
    # Last, after ``PWD`` (which bwrap sets in place when it changes directory): the test
    # process blanks the last entry of its start-up block (``channel.erase_startup_entry``),
    # so ``/proc/self/environ`` does not name the drawn seed either.
    env.setdefault("PWD", os.fspath(Path.cwd()))
    env.pop("PYTHONHASHSEED", None)
    env["PYTHONHASHSEED"] = str(hash_seed)
    return env


def child_env(hash_seed: int, *, pycache: bool = False) -> dict[str, str]:
    """Return a collection child's environment: the host's, with ``hash_seed`` as its
    ``PYTHONHASHSEED``, and without the variables that would change which tests run or how,
    or keep patchlane's own plugin from loading.

    With ``pycache``, ``PYTHONPYCACHEPREFIX`` names the process's bytecode prefix
    (``patchlane.infra.bytecode.process_pycache``), so that no bytecode committed to the tree is
    ever read; the host's own prefix, and ``PYTHONDONTWRITEBYTECODE`` (nothing is written
    into the tree either way), are never passed on. Without it the caller must set the
    prefix itself (``collect`` does). Raises ``OSError`` when the prefix cannot be made.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _DROPPED_ENV and not k.startswith(_DROPPED_PREFIXES)
    }
    env.pop("PYTHONPYCACHEPREFIX", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONHASHSEED"] = str(hash_seed)
    if pycache:
        env["PYTHONPYCACHEPREFIX"] = process_pycache()
    return env


def run_confinement(
    tmp: Path,
    tree: Path,
    freeze: tuple[Path, Path] | None = None,
    shown: Presentation | None = None,
    job: ReplayJob | None = None,
) -> Confinement:
    """The sandbox of a test run in ``tree``: ``tmp`` its scratch (where its plugin writes
    the freeze skips it made), the tree writable, and the directory of the record the
    ``job`` names (``record``: what each test depended on), nothing else; the ``freeze``
    report its plugin reads, and the store of rewritten test modules the ``job`` names,
    read-only; the tree shown as ``shown`` says (``presented``). Home and temporary
    directory as a plain run has them (``Confinement.plain``)."""
    record = job.get("record") if job is not None else None
    places = (tree,) if record is None else (tree, Path(record).parent)
    readable = () if freeze is None else (freeze[0],)
    if job is not None and "rewritten" in job:
        readable = (*readable, Path(job["rewritten"]))
    return Confinement(tmp, writable=places, readable=readable, plain=True, presented=shown)


def with_rewritten(job: ReplayJob, tree: Path, shown: Presentation) -> ReplayJob:
    """``job`` with the store of ``tree``'s rewritten test modules as the run sees them
    (``lanes.replay.rewritten``), when there is one."""
    store = store_for(tree, shown.at)
    if store is not None:
        job["rewritten"] = os.fspath(store)
    return job


def presented(tree: Path, env: Mapping[str, str]) -> Presentation:
    """How a test run in ``tree`` with ``env`` sees the tree (``infra.origins.presentation``:
    at the user's repository path, the project's copies over where the environment would
    import them from). Raises ``ForeignCode`` when the environment cannot be asked (no run
    of the project could be believed)."""
    try:
        return presentation(tree, env, sandboxed=isolation().sandboxed)
    except ProbeError as e:
        raise ForeignCode(str(e)) from e


def checked_origins(run: TestRun) -> TestRun:
    """Return ``run``; raises ``ForeignCode`` naming the project modules it imported from
    outside the tree under judgement (docs/architecture.md §2)."""
    if run.foreign:
        raise ForeignCode(describe(list(run.foreign)))
    return run


def pytest_args(repo: Path, freeze: tuple[Path, Path] | None) -> list[str]:
    """Return the options the plugin adds to pytest's, never to ``sys.argv`` (the child adds
    the tree root as the one path to collect). Nothing that changes what a test sees: pytest's
    cache, verbosity and the rootdir (the tree, the working directory) stay the project's."""
    del repo  # the working directory: pytest finds the same rootdir there
    args = ["--continue-on-collection-errors"]
    if freeze is not None:
        args += [f"--patchlane-freeze-report={freeze[0]}", f"--patchlane-skip-record={freeze[1]}"]
    return args


def run_tests(
    tree: Path,
    *,
    nodeids: Sequence[str] = (),
    files: Sequence[str] = (),
    hash_seed: int,
    timeout_s: float,
    freeze_report: Path | None = None,
    record: Path | None = None,
    also: Also | None = None,
) -> TestRun:
    """Run ``nodeids`` (and every test of ``files``) with pytest in ``tree``; fold the stream.

    ``hash_seed`` is the run's ``PYTHONHASHSEED`` and Hypothesis seed (``child_env``).
    ``freeze_report`` (a file) is handed to the child's pytest plugin, which skips what it
    grants. With ``record`` (a path in a directory the caller made), the child also records
    what each test depended on and writes it there (``child.recorder``). ``also``: the
    tests run after ``nodeids`` and the functions whose calls the run records (``Also``).
    Never raises
    for anything pytest or the tests do; raises ``ReportError`` for a malformed freeze
    report, ``OSError`` only when the child cannot be started.
    """
    # Each test's own wall clock, kept here (``testbound``); inside ``runprogress.shown``:
    # tests done and failed so far and the one running, every few seconds.
    clock = Clock(current())
    progress = counter(len(nodeids), from_collection=bool(files), running=clock.running)
    also = also or Also()
    then_files, watch = also.then_files, also.watch
    env = plain_env(hash_seed)
    shown = presented(tree, env)
    with tempfile.TemporaryDirectory(prefix="patchlane-replay-") as tmp:
        allowed, freeze = freeze_setup(freeze_report, Path(tmp))
        job: ReplayJob = {
            "args": pytest_args(shown.child_path(tree), freeze),
            "nodeids": list(nodeids),
            "files": list(files),
            "record": os.fspath(record) if record is not None else None,
            # One drawn value seeds both: the receipt records it, and a run given it again
            # (``replay run --hash-seed``) draws the same examples.
            "seed": hash_seed,
            "project": list(shown.names),
        }
        if then_files:
            job["then_files"] = list(then_files)
        if watch:
            job["calls"] = watched_files(tree, shown, watch)
        with_rewritten(job, tree, shown)
        launch = process.Launch(
            child_argv(),
            job,
            token=secrets.token_hex(16),
            timeout_s=timeout_s,
            cwd=tree,
            env=env,
            # The test run may write its own tree, as the project's tests do in a checkout;
            # the tree is this run's alone and is removed after it.
            confinement=run_confinement(Path(tmp), tree, freeze, shown, job),
            result_limit=RESULT_LIMIT,
            job_socket=True,
        )
        run = process.run_child(launch, listen=listener(clock, progress), stop=clock.stop)
    folded = fold(
        run.records, nodeids, [*files, *then_files], allowed, run, shown=shown, clock=clock,
    )  # fmt: skip
    return checked_origins(folded)


@dataclass(frozen=True)
class Also:
    """What a test run does besides its node ids: with ``then_files``, every other test of
    those files runs after ``nodeids`` in the same process, and counts as wanted
    (``lanes.replay.widen``); with ``watch`` (repository path -> qualified names of
    functions in it), the run records their calls for the witness (``TestRun.calls``;
    ``vacuity.witness``)."""

    then_files: Sequence[str] = ()
    watch: Mapping[str, Sequence[str]] | None = None


def watched_files(
    tree: Path, shown: Presentation, watch: Mapping[str, Sequence[str]]
) -> dict[str, list[str]]:
    """Return ``watch`` (repository path -> qualified names) keyed by every file name the
    child can see each path under: below the tree as presented, and below a place the
    tree's copy is bound over (a regular install)."""
    found: dict[str, list[str]] = {}
    for path, names in watch.items():
        host = tree / path
        seen = {os.fspath(shown.child_path(host))}
        for copy, dest in shown.over:
            try:
                seen.add(os.fspath(dest / host.resolve().relative_to(copy.resolve())))
            except ValueError:
                continue
        for name in seen:
            found[name] = sorted(set(names))
    return found


def freeze_setup(
    freeze_report: Path | None, tmp: Path
) -> tuple[Mapping[str, tuple[str, str]], tuple[Path, Path] | None]:
    """Return what the freeze report grants (node id -> (freeze, owner)) and the pair of
    files the child's plugin reads and writes, or ``({}, None)`` without a report. Raises
    ``ReportError`` for a malformed report."""
    if freeze_report is None:
        return {}, None
    # The same reader and the same grant as the plugin in the child.
    allowed = FreezeReport.read(freeze_report).granted()
    return allowed, (freeze_report.absolute(), tmp / "skip-record.json")
