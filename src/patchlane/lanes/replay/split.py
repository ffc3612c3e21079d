"""The tests that judge run without the patch's test code (docs/architecture.md §4).

In one pytest process a test module the patch adds or changes can put an old value back at
import (``pkg.mod.VALUE = old``) or wrap pytest's own ``Function.runtest``, and the base's
tests then pass beside it. So ``gate --replay local`` runs the slice in two processes:

1. the chosen child (``chosen``) collects and runs the test files the patch left alone; the
   patch's own test files (``own_test_files``) are never collected there;
2. the patch's own test files are collected in a collection child of their own (together
   with the files that share a module name with one of them, so that a clash the full
   suite would hit shows here), beside the first child's collection, which waits for it
   before it chooses; their chosen node ids run afterwards in a
   ``run_tests`` child of their own, with every file line whose file did not collect
   beside them.

3. the whole chosen slice runs once more in one process, as the project's own suite runs
   it: what the patch's tests leave behind (a variable, the working directory, a module's
   state) reaches the base's tests there, as it does in the full suite. A node fails if it
   fails in either (``worst``): apart, the patch's test code cannot repair the base's
   tests; together, it cannot hide that it breaks them.

The runs of 2 and 3 each have a copy of the tree made before any child ran (``_copies``),
shown at the same path: no run sees what another wrote, as no run of the project's own
suite does.

Selection chooses from both collections at once, so the slice (its lines, its hash) is the
one slice of today; the runs fold into one ``TestRun`` and one receipt.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from patchlane.infra.sandbox import judged, repository_of
from patchlane.inputs.paths import to_fs, under_any
from patchlane.lanes.replay import chosen
from patchlane.lanes.replay.chosen import ChosenRun, Scope
from patchlane.lanes.replay.collect import Collected, collect
from patchlane.lanes.replay.results import FAILED, NodeResult, Runner, TestRun, file_part
from patchlane.lanes.replay.run import child_env, run_tests
from patchlane.lanes.replay.testbound import carry, unjudged
from patchlane.project.testmodules import CONFTEST, ModulePatterns

# The patch's test code judged in the second process, in the problems it reports.
_SECOND = "the run of the patch's own test files"
_TOGETHER = "fails run with the patch's own test files in one process, as the project's suite runs"


def own_test_files(
    tree: Path, changed: Iterable[str], scope: Scope, patterns: ModulePatterns
) -> tuple[str, ...]:
    """Return the files of ``tree`` the patch adds or changes that hold tests pytest may
    collect: test modules by the base's ``python_files`` (``patterns``), changed modules
    whose doctests the scope collects (when they hold one), and other changed files under
    the scope's test paths (doctest text files). A ``conftest.py`` or ``__init__.py`` is
    never one (it is harness, judged by classify, and shapes how every module imports).
    Sorted."""
    doctests = frozenset(scope.doctest_only)
    out = []
    for path in changed:
        name = path.rsplit("/", 1)[-1]
        target = to_fs(tree, path)
        if name in (CONFTEST, "__init__.py") or target.is_symlink() or not target.is_file():
            continue
        if (
            patterns.is_test_module(path)
            or (path in doctests and b">>>" in target.read_bytes())
            or (not path.endswith(".py") and under_any(path, scope.extra_paths))
        ):
            out.append(path)
    return tuple(sorted(out))


@contextlib.contextmanager
def start(tree: Path, scope: Scope, own: Sequence[str], runner: Runner) -> Iterator[chosen.Session]:
    """Start collecting as ``chosen.start`` does, with the patch's own test files ``own``
    (``own_test_files``) collected and run in processes of their own (see the module
    docstring), and yield the ``Session``: ``collected`` sees both collections as one,
    ``run`` folds every run into one ``TestRun``. When the block ends every child is gone
    and the tree's copies removed. Raises what ``chosen.start`` raises, ``OSError`` when a
    copy cannot be made."""
    own = tuple(own)
    if not own or not scope.extra_paths:
        with chosen.start(tree, scope, runner) as session:
            yield session
        return
    own_set = frozenset(own)
    names = {p.rsplit("/", 1)[-1] for p in own if p.endswith(".py")}
    clashing = tuple(
        p.relative_to(tree).as_posix()
        for p in sorted(tree.rglob("*.py"))
        if p.name in names and not p.is_symlink() and p.relative_to(tree).as_posix() not in own_set
    )
    first_scope = replace(
        scope,
        doctest_only=tuple(p for p in scope.doctest_only if p not in own_set),
        only_files=None
        if scope.only_files is None
        else tuple(p for p in scope.only_files if p not in own_set),
        exclude_files=tuple(sorted({*scope.exclude_files, *own})),
    )
    with (
        _copies(tree, 2) as copies,
        # Collected beside the first child's collection, not before it (``collected``
        # waits for it): this collection keeps the tree read-only (``collect``), so what
        # the patch's test modules do at import reaches the first child no more than
        # before; what the first child's imports could write meanwhile is only what its
        # run could write before the second run anyway, and these node ids only add to
        # the slice.
        ThreadPoolExecutor(max_workers=1, initializer=carry()) as pool,
    ):
        pending = pool.submit(_collect_theirs, tree, scope, (own, clashing), runner)
        with chosen.start(tree, first_scope, runner) as first:
            yield _Split(first, pending, (own, copies), runner)


def _collect_theirs(
    tree: Path, scope: Scope, files: tuple[tuple[str, ...], tuple[str, ...]], runner: Runner
) -> Collected:
    """The collection of the patch's own test files and those that clash with them by
    module name (``files``), in a collection child of their own. Raises what ``collect``
    raises."""
    own, clashing = files
    own_set = frozenset(own)
    theirs = collect(
        tree,
        scope.extra_paths,
        timeout_s=runner.timeout_s,
        env=child_env(runner.hash_seed),
        doctest_only=[p for p in scope.doctest_only if p in own_set],
        only_files=[*own, *clashing],
    )
    # A file that does not collect beside the patch's test files (a module-name clash)
    # is judged where they are: in the base's process alone it would collect. That
    # child is the patch's code talking: only errors of the files it was asked to
    # collect count, and a file line only adds to the slice (its file's node ids stay
    # in the first run).
    asked = own_set | frozenset(clashing)
    return replace(theirs, errors=tuple(e for e in theirs.errors if e.nodeid in asked))


class _Split:
    """The session of a split run: the first child's (``first``) and the patch's own
    collection (``pending``) as one, then the runs after the choice."""

    def __init__(
        self,
        first: chosen.Session,
        pending: Future[Collected],
        own: tuple[tuple[str, ...], tuple[Path, ...]],
        runner: Runner,
    ) -> None:
        self.first = first
        self.pending = pending
        # The patch's own test files, and the tree's copies for their run and the run
        # together.
        self.own, self.copies = frozenset(own[0]), own[1]
        self.runner = runner

    def collected(self) -> Collected:
        """``Session.collected``: both collections merged (``_merged``)."""
        try:
            collected = self.first.collected()
            theirs = self.pending.result()
        except BaseException:
            # The patch's collection failing is the error to tell, as when it ran first.
            theirs_error = self.pending.exception()
            if theirs_error is not None:
                raise theirs_error from None
            raise
        return _merged(collected, theirs, self.own)

    def run(self, nodeids: Sequence[str] | None) -> ChosenRun:
        """``Session.run``: the node ids outside the patch's own files in the first
        child; the rest, and the whole slice together, after it (module docstring)."""
        theirs = self.pending.result()
        if nodeids is None:
            ran = self.first.run(None)
            return ChosenRun(None, ran.collect_s + theirs.seconds, ran.choose_s)
        broken = frozenset(e.nodeid for e in theirs.errors)
        second = [n for n in nodeids if file_part(n) in self.own or ("::" not in n and n in broken)]
        moved = frozenset(second)
        ran = self.first.run(tuple(n for n in nodeids if n not in moved))
        collect_s = ran.collect_s + theirs.seconds
        if ran.run is None:
            return ChosenRun(None, collect_s, ran.choose_s)
        if not second:
            return ChosenRun(ran.run, collect_s, ran.choose_s)
        if ran.run.overran is not None:
            # A test ran past its bound: a red verdict needs no more evidence, and the
            # patch's own tests, not run, are not judged (``testbound``).
            return ChosenRun(unjudged(ran.run, second), collect_s, ran.choose_s)
        # After the first child's run, one after the other, each in a copy of its own
        # (module docstring). Started beside it instead, the patch's own run was once
        # killed (-9) in the demo on a loaded machine, for a cause not yet found: not
        # beside it until it is.
        runner = self.runner
        own_run, together = (
            run_tests(
                where,
                nodeids=ids,
                hash_seed=runner.hash_seed,
                timeout_s=runner.timeout_s,
                freeze_report=runner.freeze_report,
            )
            for where, ids in ((self.copies[0], tuple(second)), (self.copies[1], tuple(nodeids)))
        )
        # A node fails if it fails either way (``worst``).
        return ChosenRun(worst(union(ran.run, own_run), together), collect_s, ran.choose_s)


@contextlib.contextmanager
def _copies(tree: Path, count: int) -> Iterator[tuple[Path, ...]]:
    """Yield ``count`` copies of ``tree`` (links kept as links), made now, before any child
    writes into it, each shown to a test child where ``tree`` is (``sandbox.judged``);
    removed when the block ends. Raises ``OSError`` when a copy cannot be made."""
    shown_at = repository_of(tree)
    with tempfile.TemporaryDirectory(prefix="patchlane-replay-copies-") as scratch:
        made = []
        for n in range(count):
            copy = Path(scratch, str(n), tree.name)
            shutil.copytree(tree, copy, symlinks=True)
            if shown_at is not None:
                judged(copy, shown_at)
            made.append(copy)
        yield tuple(made)


def worst(apart: TestRun, together: TestRun) -> TestRun:
    """``apart`` (the split's runs, as one) with every node that failed in ``together`` (the
    same node ids in one process) failed, with why; the problems of both."""
    results = dict(apart.results)
    for nodeid, result in together.results.items():
        if nodeid in together.not_judged:
            continue  # that run stopped before it: no word on it (``testbound``)
        if result.outcome == FAILED and results.get(nodeid, result).outcome != FAILED:
            why = f"{_TOGETHER}: {result.why}" if result.why else _TOGETHER
            results[nodeid] = NodeResult(FAILED, why)
    codes = [apart.exit_code, together.exit_code]
    code = None if None in codes else next((c for c in codes if c != 0), 0)
    return replace(
        apart,
        results=results,
        exit_code=code,
        problems=(*apart.problems, *(f"{_TOGETHER}: {p}" for p in together.problems)),
        timed_out=apart.timed_out or together.timed_out,
        left={**together.left, **apart.left},
        **_stops(apart, together),
    )


def run_apart(tree: Path, nodeids: Sequence[str], own: frozenset[str], runner: Runner) -> TestRun:
    """Run a slice that was chosen elsewhere (``replay run --base``) in two processes: the
    node ids of files outside ``own`` (the paths the patch adds or changes), then those of
    ``own`` and every file line (a file that did not collect at the head: it is judged
    beside the patch's test files, as the full suite has it), then, when both ran, the
    whole slice once more in one process, as a ``start`` session does, each as ``runner``
    says. Returns the runs
    folded into one (``worst``). Raises what ``run_tests`` raises."""
    second = [n for n in nodeids if file_part(n) in own or "::" not in n]
    moved = frozenset(second)
    first = [n for n in nodeids if n not in moved]
    runs = [
        run_tests(
            tree,
            nodeids=ids,
            hash_seed=runner.hash_seed,
            timeout_s=runner.timeout_s,
            freeze_report=runner.freeze_report,
        )
        for ids in (first, second, nodeids)
        if ids and (ids is not nodeids or (first and second))
    ]
    if len(runs) == 1:
        return runs[0]
    return worst(union(runs[0], runs[1]), runs[2])


def _merged(first: Collected, theirs: Collected, own: frozenset[str]) -> Collected:
    """One collection from the base's process (``first``) and the patch's (``theirs``):
    the node ids of the patch's own files from ``theirs``, every error of both."""
    nodeids = (*first.nodeids, *(n for n in theirs.nodeids if file_part(n) in own))
    seen = {e.nodeid for e in first.errors}
    errors = (*first.errors, *(e for e in theirs.errors if e.nodeid not in seen))
    plugins = tuple(sorted({*first.plugin_files, *theirs.plugin_files}))
    # What importing a changed module changed is read in the first child only: the second
    # never runs the base's tests, and one look per module is what is trusted.
    return Collected(
        nodeids, first.network, first.seconds + theirs.seconds, errors, plugins, first.imports
    )


def union(first: TestRun, second: TestRun) -> TestRun:
    """One ``TestRun`` of two runs of disjoint node ids: every outcome of both, and every
    problem (the second's named as the patch's own test files' run). Its exit code is the
    first nonzero one of the runs that ran something."""
    # A run that was asked to run nothing (every chosen id was the patch's) says nothing.
    runs = [r for r in (first, second) if r.results] or [first, second]
    codes = [r.exit_code for r in runs]
    code = None if None in codes else next((c for c in codes if c != 0), 0)
    return TestRun(
        results={**second.results, **first.results},
        collected=(*first.collected, *second.collected),
        collect_errors=(*first.collect_errors, *second.collect_errors),
        exit_code=code,
        problems=(*first.problems, *(f"{_SECOND}: {p}" for p in second.problems)),
        timed_out=first.timed_out or second.timed_out,
        output_tail=first.output_tail + second.output_tail,
        plugin_files=tuple(sorted({*first.plugin_files, *second.plugin_files})),
        left={**second.left, **first.left},
        **_stops(first, second),
    )


def _stops(first: TestRun, second: TestRun) -> dict[str, Any]:
    """The ``testbound`` fields of two runs as one: the first node that ran past its bound
    (and that bound), every node either left unjudged but that one, every duration."""
    overran, bound = next(
        ((r.overran, r.bound_s) for r in (first, second) if r.overran is not None), (None, None)
    )
    not_judged = sorted({*first.not_judged, *second.not_judged} - {overran})
    return {
        "overran": overran,
        "bound_s": bound if bound is not None else first.bound_s or second.bound_s,
        "not_judged": tuple(not_judged),
        "durations": {**second.durations, **first.durations},
    }
