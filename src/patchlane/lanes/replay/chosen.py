"""Collect and run in one pytest child: the run chooses its slice from its own collection.

``gate --replay local`` used to start pytest twice on the head: a collection child, whose
node ids selection chose from, then the run child, which imported and collected the same
test files again. Here the run child collects the candidate test files exactly as
``collect`` would (the project's ``testpaths`` or rootdir, the extra paths, the changed
modules' doctests, only the candidate files), sends their node ids and asks. The caller
drives the two phases in a straight line: ``start`` yields the child's ``Session``,
``Session.collected`` waits for the collection, the caller selects the slice from it (the
selection's rules, the slice written and hashed before any test runs), and
``Session.run`` answers with the node ids to run, which the child then runs as
``run_tests`` would (docs/architecture.md §4, "Replay slice": one child for collection and
run). A session left before ``run`` kills its child: nothing waits on an answer.

What the child collected is the patch's code talking, as with ``collect``; what counts is
only what this process chose: a chosen node id that no report names failed (``fold``).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from patchlane.child.messages import ReplayJob
from patchlane.infra import process
from patchlane.infra.sandbox import Presentation
from patchlane.infra.ui import one_line
from patchlane.lanes.replay.collect import Collected, CollectionError, ImportSeen, tail_lines
from patchlane.lanes.replay.fold import fold
from patchlane.lanes.replay.results import CollectError, Runner, TestRun, file_part
from patchlane.lanes.replay.run import (
    RESULT_LIMIT,
    checked_origins,
    child_argv,
    freeze_setup,
    plain_env,
    presented,
    pytest_args,
    run_confinement,
    run_tests,
    with_rewritten,
)
from patchlane.lanes.replay.runprogress import Counter, counter
from patchlane.lanes.replay.testbound import Clock, current, listener


@dataclass(frozen=True)
class Scope:
    """What the child collects (``collect_child.CollectScope``): the project's own choice
    plus ``extra_paths``; the doctests of ``doctest_only``; with ``only_files``, nothing but
    those files; never ``exclude_files``."""

    extra_paths: tuple[str, ...]
    doctest_only: tuple[str, ...]
    only_files: tuple[str, ...] | None
    # Files this child never collects (``split``: the patch's own test modules).
    exclude_files: tuple[str, ...] = ()
    # Modules of the tree (by file) that the suite's whole run imports, imported before the
    # tests run when the collection is narrowed (``child.leftover.preload``), so that code
    # which changes another module only when it is loaded does so here too.
    preload: tuple[str, ...] = ()
    # Dotted names of changed modules whose import the child watches for what it changes
    # outside them (``child.importstate``): read back as ``Collected.imports``.
    watch_imports: tuple[str, ...] = ()
    # The repository paths of those modules' files (any order): an execution of one of them
    # that the watch did not wrap is reported as such.
    watch_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChosenRun:
    """The run (``None`` when nothing was asked to run), and the seconds from the child's
    start to its question (its start-up and collection) and from the question to the
    answer (choosing)."""

    run: TestRun | None
    collect_s: float
    choose_s: float


class Session(Protocol):
    """Collection, then the run of what was chosen from it: ``collected`` once, then
    ``run`` at most once; a session left without ``run`` ends its children unanswered."""

    def collected(self) -> Collected:
        """Wait for the collection and return it. Raises ``CollectionError`` when none
        came (pytest could not collect: a broken conftest, a usage error, a timeout) or it
        reports an error that is not one file's."""
        ...

    def run(self, nodeids: Sequence[str] | None) -> ChosenRun:
        """Run ``nodeids`` (``None``: nothing) and return the ``ChosenRun``. Raises
        ``ReportError`` for a malformed freeze report, ``ConfinementRefused`` as
        ``process.Child.finish`` does."""
        ...


@contextlib.contextmanager
def start(
    tree: Path, scope: Scope, runner: Runner, record: Path | None = None
) -> Iterator[Session]:
    """Start pytest in ``tree``, collecting ``scope``, and yield its ``Session``: the
    child runs what ``Session.run`` names, as ``runner`` says (its hash seed, wall clock
    and freeze report). When the block ends the child is gone: killed if it still runs
    (a block left before ``run``, by an error or not, never leaves it waiting).

    With ``record`` (a path in a directory the caller made), the child also records what
    each test depended on and writes it there, as ``run_tests`` does (``replay map``).

    Raises ``OSError`` when the child cannot start; ``ConfinementRefused`` as
    ``process.Child.finish`` does.
    """
    if not scope.extra_paths:
        yield _NothingToCollect(tree, runner)
        return
    # Each test's own wall clock (``testbound``); inside ``runprogress.shown``: collection's
    # time, then tests done of the choice and the one running, every few s.
    per_test = Clock(current())
    progress = counter(None, running=per_test.running)
    env = plain_env(runner.hash_seed)
    shown = presented(tree, env)
    with tempfile.TemporaryDirectory(prefix="patchlane-replay-") as tmp:
        allowed, freeze = freeze_setup(runner.freeze_report, Path(tmp))
        job: ReplayJob = {
            "args": pytest_args(shown.child_path(tree), freeze),
            "project": list(shown.names),
            "extra_paths": list(scope.extra_paths),
            "doctest_only": list(scope.doctest_only),
            "only_files": None if scope.only_files is None else list(scope.only_files),
            "exclude_files": list(scope.exclude_files),
            "seed": runner.hash_seed,
        }
        if record is not None:
            job["record"] = os.fspath(record)
        if scope.preload:
            job["preload"] = list(scope.preload)
        if scope.watch_imports:
            job["watch_imports"] = list(scope.watch_imports)
            job["watch_files"] = list(scope.watch_files)
        with_rewritten(job, tree, shown)
        launch = process.Launch(
            child_argv(),
            job,
            token=secrets.token_hex(16),
            timeout_s=runner.timeout_s,
            cwd=tree,
            env=env,
            # The test run may write its own tree, as the project's tests do in a checkout;
            # the tree is this run's alone and is removed after it.
            confinement=run_confinement(Path(tmp), tree, freeze=freeze, shown=shown, job=job),
            result_limit=RESULT_LIMIT,
            job_socket=True,
        )
        begun = time.monotonic()
        with process.start_child(
            launch, asks=True, listen=listener(per_test, progress), stop=per_test.stop
        ) as child:
            yield _Asking(
                child, scope, (begun, runner.timeout_s), (allowed, shown, per_test, progress)
            )


class _Asking:
    """The session of one pytest child that collects, asks, and runs the answer."""

    def __init__(
        self,
        child: process.Child,
        scope: Scope,
        clock: tuple[float, float],
        folding: tuple[Mapping[str, tuple[str, str]], Presentation, Clock, Counter | None],
    ) -> None:
        self.child = child
        self.scope = scope
        # The child's start (before it is asked: its start-up and collection), its clock.
        self.begun, self.timeout_s = clock
        self.asked = self.begun
        self.allowed, self.shown, self.clock, self.progress = folding

    def collected(self) -> Collected:
        """``Session.collected``: the records up to the child's question."""
        records = self.child.question()
        self.asked = time.monotonic()
        if records is None:
            run = self.child.finish()
            why = (
                f"timed out after {self.timeout_s:g} s"
                if run.timed_out
                else (run.problems[0] if run.problems else "pytest ended before it collected")
            )
            raise CollectionError(f"test collection failed ({why})", tail_lines(run))
        return _collected(records, self.scope, self.asked - self.begun)

    def run(self, nodeids: Sequence[str] | None) -> ChosenRun:
        """``Session.run``: the answer sent, the child watched to its end, its stream
        folded (only what was named counts: a named node id no report names failed)."""
        if self.progress is not None and nodeids is not None:
            self.progress.expect(len(nodeids))
        self.child.answer(
            json.dumps({"run": None if nodeids is None else list(nodeids)}).encode("utf-8")
        )
        collect_s, choose_s = self.asked - self.begun, time.monotonic() - self.asked
        run = self.child.finish()
        if nodeids is None:
            return ChosenRun(None, collect_s, choose_s)
        folded = fold(
            run.records, nodeids, (), self.allowed, run, shown=self.shown, clock=self.clock,
        )  # fmt: skip
        return ChosenRun(checked_origins(folded), collect_s, choose_s)


class _NothingToCollect:
    """No test path in the head: nothing to collect (as ``collect``); the choice may still
    name node ids (a failure log's), which then run and fail as not collected."""

    def __init__(self, tree: Path, runner: Runner) -> None:
        self.tree = tree
        self.runner = runner
        self.asked = time.monotonic()

    def collected(self) -> Collected:
        """``Session.collected``: nothing, at once."""
        self.asked = time.monotonic()
        return Collected((), "none", 0.0)

    def run(self, nodeids: Sequence[str] | None) -> ChosenRun:
        """``Session.run``: ``nodeids`` in a ``run_tests`` child of their own, if any."""
        choose_s = time.monotonic() - self.asked
        if not nodeids:
            return ChosenRun(None, 0.0, choose_s)
        runner = self.runner
        direct = run_tests(
            self.tree, nodeids=nodeids, hash_seed=runner.hash_seed, timeout_s=runner.timeout_s,
            freeze_report=runner.freeze_report,
        )  # fmt: skip
        return ChosenRun(direct, 0.0, choose_s)


def _collected(records: Sequence[Mapping[str, Any]], scope: Scope, seconds: float) -> Collected:
    """Read the child's collection (the records up to its question) as ``collect`` reads
    its child's. Raises ``CollectionError`` for an error that is not one file's."""
    nodeids: list[str] = []
    errors: list[CollectError] = []
    plugins: set[str] = set()
    imports: dict[str, list[ImportSeen]] = {}
    doctest_only = frozenset(scope.doctest_only)
    for record in records:
        candidates = record.get("candidates")
        seen = ImportSeen.of(record, scope.watch_imports)
        if seen is not None:
            imports.setdefault(seen.name, []).append(seen)
        elif isinstance(candidates, list):
            # The last before the question: the plugin sends it just before asking, so a
            # record written earlier by the project's code at import does not stand for it.
            nodeids = [n for n in candidates if isinstance(n, str)]
        elif isinstance(record.get("plugins"), list):
            plugins.update(p for p in record["plugins"] if isinstance(p, str))
        elif isinstance(record.get("collect_error"), str):
            nodeid = record["collect_error"]
            if nodeid.split("::", 1)[0] in doctest_only:
                continue  # the module is collected for its doctests only
            message = record.get("message")
            text = one_line(message if isinstance(message, str) else "") or "collection error"
            if not nodeid:
                # Not one file's error: no test of the project can be told from another.
                raise CollectionError("pytest could not collect the tests", [text])
            missing = record.get("missing")
            missing = missing if isinstance(missing, str) else None
            # A class that does not collect is its file's failure, as ``collect`` has it.
            errors.append(CollectError(file_part(nodeid), text, missing))
    return Collected(
        tuple(nodeids),
        "none",
        seconds,
        tuple(errors),
        tuple(sorted(plugins)),
        {name: tuple(seen) for name, seen in imports.items()},
    )
