"""Run exactly a slice's node ids with pytest and build the receipt from what streamed back.

pytest runs in a child in its own session from the tree's root: ``python -m pytest`` as the
project runs it (``CHILD_ARGV``, ``plain_env``), whose job reaches patchlane's entry-point
plugin on a socket as stdin (``child.replay_run`` then runs it; decision 0031). Node ids reach
it through that plugin, not argv; every report streams back as it happens over a pipe this
process opened, each line carrying a per-run token; this process folds them into one outcome
per node and writes the receipt (docs/architecture.md, "Replay outcomes"):

- every report counts: a failed or errored setup, call, teardown or subtest fails the node,
  and no later report (a passing parent, a rerun) turns it back;
- a skip or xfail the suite makes on its own is ``skipped`` (neither evidence nor failure;
  the gate then runs those nodes at the base, where one that passes was hidden by the patch:
  ``basecheck``); a skip by a granted freeze is ``skipped_by_freeze``; a strict xpass is a
  failure, as pytest says;
- a node with no streamed outcome (not collected, deselected, never finished) is failed;
- pytest's exit status must agree with the outcomes: a run that was interrupted, hit an
  internal or usage error, exited 1 with no failed node, or never said how it ended cannot
  pass, so every node it reported as passed is failed, with the reason;
- a test that runs past its bound (``testbound``: the parent's clock, from the streamed start
  of each test) stops the run: that node fails, "timed out after N s", and every other node
  that had not failed by its own report is failed as not judged (``TestRun.not_judged``);
- a run whose own machinery changed while it ran (the child's ``tripwire``: pytest's reports,
  runner or hooks, pluggy, patchlane's plugin) cannot pass either, and believes no outcome:
  from its tamper record on no report is taken, and every node that had not failed before
  it fails with what changed.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import secrets
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import patchlane
from patchlane.child.messages import ReplayJob
from patchlane.errors import ForeignCode
from patchlane.formats.receipt import Receipt, utc_stamp
from patchlane.infra.bytecode import process_pycache
from patchlane.infra.sandbox import Confinement, Presentation, isolation
from patchlane.infra.ui import one_line

if TYPE_CHECKING:
    from patchlane.infra.process import ChildRun
    from patchlane.lanes.replay.testbound import Clock

PASSED, FAILED, SKIPPED, FROZEN = "passed", "failed", "skipped", "frozen"
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
# pytest's exit codes: 0 all passed, 1 tests failed, 5 nothing collected.
_EXIT_WORDS = {
    2: "was interrupted",
    3: "hit an internal error",
    4: "refused its command line (usage error)",
    5: "ran no tests",
    -1: "raised out of pytest.main",
}


@dataclass(frozen=True)
class NodeResult:
    """One node's folded outcome (``passed``, ``failed``, ``skipped`` or ``frozen``) and why,
    one line (empty for a plain pass)."""

    outcome: str
    why: str = ""


@dataclass(frozen=True)
class CollectError:
    """A file pytest could not collect: its node id, pytest's last line, and the module
    ``No module named`` names, if that was the error."""

    nodeid: str
    message: str
    missing: str | None


@dataclass(frozen=True)
class TestRun:
    """What one pytest child did, folded.

    ``results`` has one entry per wanted node id (with ``files``: per collected item of those
    files). ``collected`` are the wanted items pytest collected; ``problems`` say why the run
    as a whole cannot pass (empty for a run whose exit status agrees with its outcomes).
    """

    results: Mapping[str, NodeResult]
    collected: tuple[str, ...]
    collect_errors: tuple[CollectError, ...]
    exit_code: int | None
    problems: tuple[str, ...]
    timed_out: bool
    output_tail: bytes
    # Files of the tree pytest held as plugins (conftests, ``pytest_plugins`` modules,
    # plugins registered at run time): what the run loaded, against what classify found.
    plugin_files: tuple[str, ...] = ()
    # What the tests left behind for later tests to see (``child.leftover``): each item
    # (``env NAME``, ``quota.LIMIT`` ...) and the node after which it was first seen.
    left: Mapping[str, str] = field(default_factory=dict)
    # Project modules the run imported from outside the tree under judgement, one line
    # each (``infra.origins.foreign``): non-empty, the run is no evidence.
    foreign: tuple[str, ...] = ()
    # The changed functions' calls the run recorded for the witness (``child.calls``):
    # (module, qualified name, pickled arguments, pickled result; base64), and the run's
    # ``sys.path`` as the child had it. Empty unless the run was asked to record.
    calls: tuple[tuple[str, str, str, str], ...] = ()
    sys_path: tuple[str, ...] = ()
    # The tree's root as that child saw it (``sys_path``'s places below it move with it).
    root: str = ""
    # The node that ran past its bound (``testbound``), which stopped the run, and the bound
    # (seconds); the nodes that run left without a judgement of their own (every node but
    # that one and those that failed by their own reports before it).
    overran: str | None = None
    bound_s: float | None = None
    not_judged: tuple[str, ...] = ()
    # Node -> the seconds from its start to its end, as the parent saw them.
    durations: Mapping[str, float] = field(default_factory=dict)

    def ids(self, outcome: str) -> tuple[str, ...]:
        """The node ids with ``outcome``, sorted."""
        return tuple(sorted(n for n, r in self.results.items() if r.outcome == outcome))


@dataclass(frozen=True)
class RunResult:
    """One slice run: the receipt (unsigned) and the run it was built from."""

    receipt: Receipt
    run: TestRun

    @property
    def output_tail(self) -> bytes:
        """The last bytes pytest wrote (stdout, then stderr), for ``-v``."""
        return self.run.output_tail


def file_part(nodeid: str) -> str:
    """The file (or directory) part of a node id: all before its first ``::``.

    Wrong for a path that holds ``::`` itself, but such a head file is a review event
    before any node id of it is read (``unmaterialised``, docs/architecture.md §4), so
    the verdict never rests on the split."""
    return nodeid.split("::", 1)[0]


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
    from importlib.metadata import entry_points

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
    record: Path | None = None,
    freeze: tuple[Path, Path] | None = None,
    shown: Presentation | None = None,
    job: ReplayJob | None = None,
) -> Confinement:
    """The sandbox of a test run in ``tree``: ``tmp`` its scratch (where its plugin writes
    the freeze skips it made), the tree writable, and the directory of the ``record`` it
    writes, nothing else; the ``freeze`` report its plugin reads, and the store of rewritten
    test modules the ``job`` names, read-only; the tree shown as ``shown`` says
    (``presented``). Home and temporary directory as a plain run has them
    (``Confinement.plain``)."""
    places = (tree,) if record is None else (tree, record.parent)
    readable = () if freeze is None else (freeze[0],)
    if job is not None and "rewritten" in job:
        readable = (*readable, Path(job["rewritten"]))
    return Confinement(tmp, writable=places, readable=readable, plain=True, presented=shown)


def with_rewritten(job: ReplayJob, tree: Path, shown: Presentation) -> ReplayJob:
    """``job`` with the store of ``tree``'s rewritten test modules as the run sees them
    (``lanes.replay.rewritten``), when there is one."""
    from patchlane.lanes.replay.rewritten import store_for

    store = store_for(tree, shown.at)
    if store is not None:
        job["rewritten"] = os.fspath(store)
    return job


def presented(tree: Path, env: Mapping[str, str]) -> Presentation:
    """How a test run in ``tree`` with ``env`` sees the tree (``infra.origins.presentation``:
    at the user's repository path, the project's copies over where the environment would
    import them from). Raises ``ForeignCode`` when the environment cannot be asked (no run
    of the project could be believed)."""
    from patchlane.infra.origins import ProbeError, presentation

    try:
        return presentation(tree, env, sandboxed=isolation().sandboxed)
    except ProbeError as e:
        raise ForeignCode(str(e)) from e


def checked_origins(run: TestRun) -> TestRun:
    """Return ``run``; raises ``ForeignCode`` naming the project modules it imported from
    outside the tree under judgement (docs/architecture.md §2)."""
    if run.foreign:
        from patchlane.infra.origins import describe

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
    from patchlane.infra import process
    from patchlane.lanes.replay.runprogress import counter
    from patchlane.lanes.replay.testbound import Clock, current, listener

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
            confinement=run_confinement(Path(tmp), tree, record, freeze, shown, job),
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
    from patchlane.formats.freeze_report import FreezeReport

    # The same reader and the same grant as the plugin in the child.
    allowed = FreezeReport.read(freeze_report).granted()
    return allowed, (freeze_report.absolute(), tmp / "skip-record.json")


def fold(
    records: Iterable[Mapping[str, Any]],
    nodeids: Sequence[str],
    files: Sequence[str],
    allowed: Mapping[str, tuple[str, str]],
    child: ChildRun | None = None,
    *,
    shown: Presentation | None = None,
    clock: Clock | None = None,
) -> TestRun:
    """Fold the child's records into one ``NodeResult`` per node (see the module docstring).

    ``child`` is what the process did besides its records (``infra.process.ChildRun``: the
    channel's problems, whether it timed out, its last output, its exit status); without
    it, a clean end. ``returncode`` is the process's exit status: pytest's own when it ended before its
    session (a conftest that fails to import: exit 4) and so never sent one. Only a status
    that fails the run is taken from it; one that would pass never is. With ``shown`` (how
    the child saw the tree), the run's ``foreign`` lists the project modules its record says
    came from outside the tree (``infra.origins.foreign``), and a run that reported its exit
    status but no record of them is listed too. With ``clock`` (the parent's clock of each
    test, ``testbound.Clock``), a run it stopped is folded as the module docstring says."""
    from patchlane.pytest_plugin import skip_reason

    state = _Fold()
    for record in records:
        if isinstance(record.get("calls"), list):
            state.take_calls(record)
        else:
            state.take(record)
    wanted = list(dict.fromkeys(nodeids))
    file_set = frozenset(files)
    wanted += [n for n in state.collected if n.split("::", 1)[0] in file_set and n not in wanted]
    errors: dict[str, CollectError] = {}
    for error in state.errors:
        errors.setdefault(error.nodeid, error)
    results: dict[str, NodeResult] = {}
    for nodeid in wanted:
        grant = allowed.get(nodeid)
        freeze_text = f"Skipped: {skip_reason(*grant)}" if grant else None
        results[nodeid] = state.node(nodeid, errors, freeze_text)
    channel_problems = child.problems if child is not None else ()
    timed_out = child.timed_out if child is not None else False
    output_tail = child.stdout_tail + child.stderr_tail if child is not None else b""
    returncode = child.returncode if child is not None else None
    problems = list(channel_problems)
    if state.tamper is not None:
        # A failure reported before the machinery changed stays what it was.
        why = state.tamper
        problems.insert(0, why)
        results = {
            n: r if r.outcome == FAILED and state.failed_before(n) else NodeResult(FAILED, why)
            for n, r in results.items()
        }
    stop = _stop_problem(clock)
    problems += (
        [stop] if stop else ["the run timed out; nodes without an outcome failed"] * timed_out
    )
    code = state.exit_code
    if code is None and returncode not in (None, 0, 1, 5) and not timed_out:
        code = returncode
    failed = any(r.outcome == FAILED for r in results.values())
    if code is None and not timed_out:
        problems.append("pytest ended without reporting its exit status")
    elif code is not None and code not in (0, 1):
        if not (code == 5 and not wanted):
            problems.append(f"pytest {_EXIT_WORDS.get(code, f'exited {code}')} (exit {code})")
    elif code == 1 and not failed and not state.errors:
        problems.append("pytest exited 1 although no node failed")
    if state.raised:
        problems.append(f"pytest raised: {state.raised}")
    if problems:
        # The run's own account contradicts itself or is incomplete: no pass in it is evidence.
        why = f"the run cannot be believed: {problems[0]}"
        results = {
            n: NodeResult(FAILED, why) if r.outcome == PASSED else r for n, r in results.items()
        }
    if code == 0 and failed:
        problems.append("pytest exited 0 although a node failed")
    results, not_judged = _stopped_at(results, state, clock if stop else None)
    return TestRun(
        results=results,
        collected=tuple(n for n in state.collected if n in results),
        collect_errors=tuple(state.errors),
        exit_code=code,
        problems=tuple(problems),
        timed_out=timed_out,
        output_tail=output_tail,
        plugin_files=tuple(sorted(state.plugins)),
        left=dict(state.left),
        foreign=_foreign(state, shown),
        calls=tuple(state.calls),
        sys_path=tuple(state.sys_path),
        root=state.root,
        overran=clock.overran if stop and clock is not None else None,
        bound_s=clock.bound_s if clock is not None else None,
        not_judged=tuple(not_judged),
        durations=dict(clock.durations) if clock is not None else {},
    )


def _stop_problem(clock: Clock | None) -> str | None:
    """Why the run cannot pass when ``clock`` stopped it (a test past its bound, or no test
    named when it stopped), else ``None``."""
    if clock is None or clock.bound_s is None or not clock.stop.is_set():
        return None
    from patchlane.lanes.replay.testbound import stalled_problem

    if clock.overran is None:
        return stalled_problem(clock.bound_s)
    return (
        f"{one_line(clock.overran)[:200]} ran past its bound of {clock.bound_s:g} s; the run "
        "was stopped there"
    )


def _stopped_at(
    results: Mapping[str, NodeResult], state: _Fold, clock: Clock | None
) -> tuple[dict[str, NodeResult], list[str]]:
    """``results`` of a run ``clock`` stopped when a node ran past its bound: that node
    failed, timed out; every other node that did not fail by its own report (a skip stays
    one) failed as not judged. Returns them and the not-judged node ids (``results`` as
    they are, and none, when no node ran past its bound, or when the run's machinery
    changed: then no report is believed and that node fails with the rest)."""
    from patchlane.lanes.replay.testbound import not_judged_why, timed_out_why

    out: dict[str, NodeResult] = {}
    not_judged: list[str] = []
    overran = clock.overran if clock is not None else None
    bound_s = clock.bound_s if clock is not None else None
    if overran is None or bound_s is None or state.tamper is not None:
        return dict(results), not_judged
    for nodeid, result in results.items():
        if nodeid == overran:
            out[nodeid] = NodeResult(FAILED, timed_out_why(bound_s))
        elif result.outcome in (SKIPPED, FROZEN) or state.failed_before(nodeid):
            out[nodeid] = result
        else:
            out[nodeid] = NodeResult(FAILED, not_judged_why(one_line(overran)[:200], bound_s))
            not_judged.append(nodeid)
    return out, not_judged


def _foreign(state: _Fold, shown: Presentation | None) -> tuple[str, ...]:
    """The project modules the run imported from outside the tree (see ``fold``)."""
    if shown is None or not shown.names:
        return ()
    from patchlane.infra.origins import foreign

    if state.origins is None:
        if state.exit_code not in (0, 1) or state.tamper is not None:
            return ()  # pytest never ran the tests as asked: the run cannot pass already
        return ("(the run did not report where the project's modules came from)",)
    return tuple(foreign(state.origins, shown))


@dataclass
class _Fold:
    """The records of one run, grouped by node id as they arrived."""

    reports: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)
    collected: list[str] = field(default_factory=list)
    errors: list[CollectError] = field(default_factory=list)
    exit_code: int | None = None
    raised: str | None = None
    plugins: set[str] = field(default_factory=set)
    # Why no outcome of the run can be believed (its first tamper record), or None.
    tamper: str | None = None
    left: dict[str, str] = field(default_factory=dict)
    # Where the project's modules came from (``child.origins``, every record merged), or
    # None when the run sent no such record.
    origins: dict[str, list[str]] | None = None
    calls: list[tuple[str, str, str, str]] = field(default_factory=list)
    sys_path: list[str] = field(default_factory=list)
    root: str = ""

    def take(self, record: Mapping[str, Any]) -> None:
        if isinstance(record.get("tamper"), list) and self.tamper is None:
            from patchlane.child.tripwire import describe

            found = [one_line(str(c)) for c in record["tamper"][:20]] or ["its machinery"]
            self.tamper = describe(found)
        elif self.tamper is not None and ("n" in record or "fin" in record):
            return  # after the machinery changed, a report says nothing
        elif isinstance(record.get("left"), list) and isinstance(record.get("by"), str):
            for what in record["left"][:50]:
                self.left.setdefault(one_line(str(what))[:200], record["by"])
        elif isinstance(record.get("plugins"), list):
            self.plugins.update(p for p in record["plugins"] if isinstance(p, str))
        elif isinstance(record.get("origins"), dict):
            merged = self.origins if self.origins is not None else {}
            for module, where in record["origins"].items():
                paths = [where] if isinstance(where, str) else where
                if isinstance(module, str) and isinstance(paths, list):
                    known = merged.setdefault(module, [])
                    known += [p for p in paths if isinstance(p, str) and p not in known]
            self.origins = merged
        elif isinstance(record.get("n"), str):
            self.reports.setdefault(record["n"], []).append(record)
        elif isinstance(record.get("fin"), str):
            self.finished.add(record["fin"])
        elif isinstance(record.get("collected"), list):
            self.collected.extend(n for n in record["collected"] if isinstance(n, str))
        elif isinstance(record.get("collect_error"), str):
            missing = record.get("missing")
            self.errors.append(
                CollectError(
                    # By file: a class that does not collect fails its file's own id.
                    file_part(record["collect_error"]),
                    str(record.get("message") or "collection error"),
                    missing if isinstance(missing, str) else None,
                )
            )
        elif "exit" in record and isinstance(record["exit"], int) and self.exit_code is None:
            self.exit_code = record["exit"]
        elif isinstance(record.get("raised"), str):
            self.raised = record["raised"]

    def take_calls(self, record: Mapping[str, Any]) -> None:
        """Keep a ``calls`` record (``child.calls``): the well-formed calls, and the
        run's ``sys.path``."""
        self.calls = [
            (c[0], c[1], c[2], c[3])
            for c in record["calls"]
            if isinstance(c, list) and len(c) == 4 and all(isinstance(x, str) for x in c)
        ]
        where = record.get("sys_path")
        if isinstance(where, list):
            self.sys_path = [p for p in where if isinstance(p, str)]
        root = record.get("root")
        self.root = root if isinstance(root, str) else ""

    def failed_before(self, nodeid: str) -> bool:
        """Whether a report taken (before any tamper record) failed ``nodeid``."""
        return any(r.get("o") not in (PASSED, SKIPPED) for r in self.reports.get(nodeid, []))

    def node(
        self,
        nodeid: str,
        errors: Mapping[str, CollectError],
        freeze_text: str | None,
    ) -> NodeResult:
        if "::" not in nodeid:
            return self._file(nodeid, errors)
        reports = self.reports.get(nodeid, [])
        for report in reports:
            if report.get("o") not in (PASSED, SKIPPED):
                # failed, or a rerun plugin's "rerun": a failed attempt is a failure.
                return NodeResult(FAILED, _failure(report))
        skips = [r for r in reports if r.get("o") == SKIPPED]
        xpass = [r for r in reports if r.get("o") == PASSED and r.get("x")]
        if skips or xpass:
            first = (skips or xpass)[0]
            message = str(first.get("msg") or "skipped")
            granted = freeze_text is not None and message == freeze_text
            if granted and skips and first.get("w") == "setup":
                return NodeResult(FROZEN, message)
            where = first.get("loc")
            at = f" (raised at {where})" if isinstance(where, str) else ""
            if xpass and not skips:
                return NodeResult(SKIPPED, "xpassed (not strict): neither evidence nor failure")
            kind = "xfailed" if first.get("x") else "skipped"
            return NodeResult(SKIPPED, f"{kind} by the suite{at}: {message}")
        if nodeid not in self.collected:
            error = errors.get(nodeid.split("::", 1)[0])
            if error is not None:
                return NodeResult(FAILED, f"its file does not collect: {error.message}")
            return NodeResult(FAILED, "not collected")
        if not any(r.get("w") == "call" for r in reports) or nodeid not in self.finished:
            return NodeResult(FAILED, "no outcome streamed (deselected, or the run stopped)")
        return NodeResult(PASSED)

    def _file(self, path: str, errors: Mapping[str, CollectError]) -> NodeResult:
        """A slice line that names a whole file (it did not collect when the slice was made):
        failed when it does not collect or any of its tests fails, passed when every test
        it collects passes."""
        error = errors.get(path)
        if error is not None:
            return NodeResult(FAILED, f"does not collect: {error.message}")
        items = [n for n in self.collected if n.split("::", 1)[0] == path]
        if not items:
            return NodeResult(FAILED, "collects no test")
        results = [self.node(n, errors, None) for n in items]
        failed = [(n, r) for n, r in zip(items, results, strict=True) if r.outcome == FAILED]
        if failed:
            nodeid, result = failed[0]
            return NodeResult(FAILED, f"{nodeid}: {result.why}")
        if all(r.outcome == PASSED for r in results):
            return NodeResult(PASSED)
        return NodeResult(SKIPPED, "its tests were skipped by the suite")


def _failure(report: Mapping[str, Any]) -> str:
    when = report.get("w")
    what = "subtest failed" if report.get("sub") else f"{when} {report.get('o')}"
    return f"{what}: {report.get('msg') or report.get('o')}"


@dataclass(frozen=True)
class HostRun:
    """How a host runs a slice and what its receipt names besides the results.

    ``seed`` is the public seed the receipt answers to; ``head`` the commit it names (or
    ``None``); ``host_role`` the host's one-line name; ``freeze_report`` the freeze report
    whose grants may be skipped (or ``None``); ``timeout_s`` the run's wall clock. The run's
    own ``PYTHONHASHSEED`` and Hypothesis seed is ``hash_seed``, drawn afresh
    (``draw_hash_seed``) unless given (to reproduce a receipt's run), and recorded in the
    receipt. With ``split`` (a merge base and the paths the patch adds or changes since
    it), the patch's own test files run in a pytest process apart from the others
    (``split.run_apart``) and the receipt names that base (``split_base``). ``canary``: the
    slice's canary node ids, named in the receipt.
    """

    seed: int
    head: str | None
    host_role: str
    freeze_report: Path | None
    timeout_s: float
    split: tuple[str, frozenset[str]] | None = None
    hash_seed: int | None = None
    canary: tuple[str, ...] | None = None


def run_slice(repo: Path, nodeids: Sequence[str], slice_sha256: str, host: HostRun) -> RunResult:
    """Run ``nodeids`` with pytest in ``repo`` as ``host`` says (its seeds, head, role,
    freeze report, wall clock, split and canary: ``HostRun``) and return the (unsigned)
    receipt.

    ``nodeids`` must be a parsed, non-empty slice (an empty one is never evidence). Never
    raises for anything pytest or the tests do; raises ``ValueError`` for an empty slice,
    ``ReportError`` for a malformed ``freeze_report``, ``OSError`` only when the child cannot
    be started.
    """
    if not nodeids:
        raise ValueError("an empty slice: nothing to run")
    started = utc_stamp()
    split, timeout_s, freeze_report = host.split, host.timeout_s, host.freeze_report
    drawn = draw_hash_seed() if host.hash_seed is None else host.hash_seed
    if split is not None:
        from patchlane.lanes.replay.split import run_apart

        run = run_apart(
            repo, nodeids, split[1], hash_seed=drawn, timeout_s=timeout_s,
            freeze_report=freeze_report,
        )  # fmt: skip
    else:
        run = run_tests(
            repo,
            nodeids=nodeids,
            hash_seed=drawn,
            timeout_s=timeout_s,
            freeze_report=freeze_report,
        )
    receipt = receipt_for(
        run,
        seed=host.seed,
        hash_seed=drawn,
        slice_sha256=slice_sha256,
        head=host.head,
        host_role=host.host_role,
        started=started,
        canary=host.canary,
    )
    if split is not None:
        receipt = dataclasses.replace(receipt, split_base=split[0])
    return RunResult(receipt, run)


def receipt_for(
    run: TestRun,
    *,
    seed: int,
    hash_seed: int,
    slice_sha256: str,
    head: str | None,
    host_role: str,
    started: str,
    canary: tuple[str, ...] | None = None,
) -> Receipt:
    """Return the (unsigned) receipt of ``run``, a run of the slice ``slice_sha256`` under
    ``hash_seed`` that began at ``started`` and ends now; ``canary``: which of its node ids
    were the canary (``None``: not told)."""
    return Receipt(
        seed=seed,
        slice_sha256=slice_sha256,
        failed_nodeids=run.ids(FAILED),
        skipped_by_freeze=run.ids(FROZEN),
        host_role=host_role,
        passed_nodeids=run.ids(PASSED),
        skipped_nodeids=run.ids(SKIPPED),
        head=head,
        started=started,
        finished=utc_stamp(),
        patchlane_version=patchlane.__version__,
        isolation=isolation().kind,
        hash_seed=hash_seed,
        canary_nodeids=None if canary is None else tuple(sorted(canary)),
    )
