"""The run that a replay's test process does: a slice with pytest, every report streamed back.

The test process is ``python -m pytest`` as the project runs it (no argument, no variable of
patchlane's: docs/explanation/decisions/0031-plain-run.md), started by ``run.run_tests`` (or
``chosen.start``) in the tree. Its job arrives on a socket as stdin, which
``patchlane.pytest_plugin`` (an entry-point plugin: it loads before any conftest) takes at
import and hands to ``start``: pytest's extra options, the node ids to run (or the files whose
every test runs), the result descriptor and the run's token. ``start`` sets the run up before
pytest parses its options: modules below the tree are found from source only
(``patchlane.infra.bytecode``), so no bytecode of the tree runs.

The node ids reach pytest through this module's plugin, never through argv: pytest is asked
to collect the tree root, the plugin ignores every path that is neither a wanted file nor one
of its directories, and keeps exactly the wanted items (a node id with ``[``, ``::``, spaces
or non-ASCII text, or a file with ``[`` in its name, runs like any other).

Every report is sent as it happens, one JSON line with the token: a collection error, each
phase of each test (subtests included), the start and the end of each test's protocol (the
start is what the parent's clock of that test counts from: ``lanes.replay.testbound``; a
test's end, when it left nothing behind, is written with the next test's start, as no test
code runs between them), and at last pytest's exit status. The parent folds them, so nothing the tests do afterwards (an ``atexit`` hook, a
finaliser, ``os._exit``) can change what was already sent; the process ends with ``os._exit``
right after pytest's own unconfigure (``_Finish``), so the project's ``atexit`` handlers never
run at all.

Before pytest parses its options, ``tripwire`` snapshots pytest's, pluggy's and patchlane's
machinery of the outcome stream (and, at session start, the hook implementations that make
and carry reports); before every record of a collection or a test, and at the end, it is
checked, and a change is sent as ``{"tamper": [...]}``: the parent then believes no outcome of
the run.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _pytest._code.code
import _pytest.assertion.rewrite
import _pytest.config
import pytest

from patchlane.child import tripwire, writes
from patchlane.child.channel import (
    ResultWriter,
    collect_error,
    failure_line,
    hide_drawn_seed,
    last_line,
    tree_plugins,
    without_xdist,
)
from patchlane.child.importstate import ImportWatch
from patchlane.child.leftover import StateWatch, phrases, preload
from patchlane.child.messages import ReplayJob
from patchlane.child.origins import module_origins
from patchlane.child.replay_plugins import BLOCKED_RERUN_PLUGINS, HypothesisAsInPytest, NoRerun
from patchlane.child.rewritten import stored
from patchlane.infra.bytecode import source_only_below

# What the run child checks: ``tripwire.arm``'s pair (capture the hooks, check).
Guard = tuple[Callable[..., None], Callable[..., bool]]
# The most tests between two full looks of the tripwire (besides each test file's first).
FULL_EVERY = 100


class _SliceRunner:
    """pytest plugin: run exactly the wanted items and send every report as it happens."""

    def __init__(
        self,
        writer: ResultWriter,
        root: Path,
        nodeids: list[str],
        files: list[str],
        guard: Guard,
        then_files: tuple[str, ...] = (),
    ) -> None:
        self.writer = writer
        self._hooks, self._check = guard
        self.root = root
        self.nodeids = frozenset(nodeids)
        # A slice line that is a file's own id (it did not collect when the slice was made)
        # stands for every test of that file.
        self.files = frozenset(files) | {n for n in nodeids if "::" not in n}
        # Run after the slice, in this process: the tests that can see what it left behind.
        self.then_files = frozenset(then_files)
        self.watch = StateWatch(os.fspath(root), writes.install())
        self.preload: tuple[str, ...] = ()
        wanted_files = {n.split("::", 1)[0] for n in nodeids} | self.files | self.then_files
        self.wanted_files = frozenset(wanted_files)
        dirs: set[str] = {""}
        for path in wanted_files:
            parts = path.split("/")[:-1]
            dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        self.wanted_dirs = frozenset(dirs)
        # The project's importable names (``child.origins``), set from the job.
        self.project: tuple[str, ...] = ()
        # The file of the last test started, and how many tests since the last full check.
        self._file = ""
        self._since = 0
        # The same for the state watch (``pytest_runtest_logfinish``), and the test modules.
        self._watched_file = ""
        self._watched = 0
        self._test_modules: dict[str, types.ModuleType] = {}
        # The last test's end record, not yet sent (``pytest_runtest_logstart``).
        self._ended: list[dict[str, object]] = []
        # ``replay map``: the base's own suite, trusted (docs/explanation/trust-model.md):
        # the tripwire checks once, at the end, and no state is watched between tests.
        self.trusted = False

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Every plugin of the environment and pytest's own are configured; no test module
        # has been imported yet.
        plugins = session.config.pluginmanager.get_plugins()
        ours = [p for p in plugins if isinstance(p, NoRerun | HypothesisAsInPytest | Started)]
        self._hooks(session.config.pluginmanager, [self, self.writer, *ours])
        self._check()

    def _rel(self, path: Path) -> str | None:
        # Lexical, not resolved: an in-tree symlink is judged by the path pytest walks.
        rel = os.path.relpath(os.path.abspath(path), self.root)  # noqa: PTH100 - lexical on purpose
        if rel == os.curdir:
            return ""
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            return None
        return Path(rel).as_posix()

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        rel = self._rel(collection_path)
        if rel is None:
            return True  # outside the tree: never part of a slice
        if rel in self.wanted_files or rel in self.wanted_dirs:
            return None  # the project's own rules still apply
        return True

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        keep = [
            i for i in items if i.nodeid in self.nodeids or i.nodeid.split("::", 1)[0] in self.files
        ]
        kept = {id(i) for i in keep}
        then = [
            i for i in items if id(i) not in kept and i.nodeid.split("::", 1)[0] in self.then_files
        ]
        keep += then
        kept.update(id(i) for i in then)
        dropped = [i for i in items if id(i) not in kept]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        self._check(True)  # the test modules (and the code they import) have run
        self.writer.emit({"collected": [i.nodeid for i in keep]})

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if not report.failed:
            return
        error = collect_error(report.nodeid, str(report.longreprtext or ""))
        self.writer.emit({**error, "collect_error": error.pop("nodeid")})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.passed and report.when != "call" and not hasattr(report, "wasxfail"):
            return  # a passing setup or teardown: the end of protocol says it happened
        # Before the record, what is cheap to check (``tripwire.arm``): the full look is at
        # the boundaries (``pytest_runtest_logstart``) and at the end, and a tamper record
        # sent then fails every node that had not failed before it.
        if not self.trusted:
            self._check(False, False)
        record: dict[str, object] = {
            "n": report.nodeid,
            "w": report.when,
            "o": report.outcome,
            # pytest >= 9 (built-in) and the pytest-subtests plugin both report a subtest as
            # its own report of the parent's node id, with a ``context``.
            "sub": hasattr(report, "context"),
            "x": hasattr(report, "wasxfail"),
        }
        if report.skipped:
            record["loc"] = self._skip_location(report)
        if report.failed or report.skipped:
            longrepr = report.longrepr
            text = str(longrepr[2]) if isinstance(longrepr, tuple) else report.longreprtext
            record["msg"] = last_line(str(text or "")) or report.outcome
            if report.failed:
                # The failing assertion itself (pytest's crash message), not only where.
                crash = getattr(getattr(longrepr, "reprcrash", None), "message", None)
                line = failure_line(str(crash) if crash else None, str(text or ""))
                record["msg"] = line or report.outcome
        self.writer.emit(record)

    def _skip_location(self, report: pytest.TestReport) -> str | None:
        """Where a skip or xfail was raised: the file of the skip (its marker's item, or the
        frame that called ``skip``), repository-relative; ``None`` when outside the tree."""
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            path = Path(str(longrepr[0]))
            if not path.is_absolute():
                path = self.root / path
            return self._rel(path)
        return report.location[0] if report.location else None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        if self.preload:
            preload(os.fspath(self.root), self.preload)
        # Each test file's module, whose own entries the watch compares at that file's tests'
        # ends (and every module's at each file's first test and every ``FULL_EVERY`` tests).
        self._test_modules = {
            i.nodeid.split("::", 1)[0]: module
            for i in session.items
            if isinstance(module := getattr(i, "module", None), types.ModuleType)
        }
        if not self.trusted:
            # The test modules have run: what they set is the suite's set-up.
            self.watch.start(self._test_modules.values())

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        # The tripwire's full look (every function's parts, every namespace) at each test
        # file's first test and every ``FULL_EVERY`` tests: no test is running (the last
        # one's teardown is done), and what stays rebound from one test file to the next, or
        # for ``FULL_EVERY`` tests, is seen before the next record is sent.
        where = nodeid.split("::", 1)[0]
        self._since += 1
        if not self.trusted and (where != self._file or self._since >= FULL_EVERY):
            self._file, self._since = where, 0
            self._check(True)
        # Before its setup: the parent's clock of this test starts here (``testbound``),
        # and its progress line names it while it runs. The last test's end goes with it
        # (``pytest_runtest_logfinish``): one write, not two.
        self.writer.emit_all([*self._ended, {"start": nodeid}])
        self._ended = []

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if self.trusted:
            # ``replay map``: no state is watched between tests (the base's suite).
            self._ended = [{"fin": nodeid}]
            return
        self._check(True, False)  # after its teardown: its own monkeypatch is undone
        where = nodeid.split("::", 1)[0]
        self._watched += 1
        everything = where != self._watched_file or self._watched >= FULL_EVERY
        if everything:
            self._watched_file, self._watched = where, 0
        left = self.watch.after(self._test_modules.get(where), everything=everything)
        if left:
            self.writer.emit_all([{"left": phrases(left), "by": nodeid}, {"fin": nodeid}])
        else:
            # Sent with the next test's start, or at the end: no test code runs between
            # (an end record says nothing of an outcome: those are sent as they are made).
            self._ended = [{"fin": nodeid}]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._plugins(session.config)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.writer.emit_all(self._ended)
        self._ended = []
        self._check(True)
        self._plugins(session.config)  # again: a test or fixture may register one while it runs

    def _plugins(self, config: pytest.Config) -> None:
        found = tree_plugins(config.pluginmanager, os.fspath(self.root))
        self.writer.emit({"plugins": found})
        # Where the project's modules came from so far (after collection, and again at the
        # end: a test may import one late); the parent reads it through its mounts.
        self.writer.emit({"origins": module_origins(self.project)})


class _AskThenRun(_SliceRunner):
    """pytest plugin for a run that chooses its own slice: collect the candidates as
    ``collect`` would (``CollectScope``), send their node ids, ask the parent which to run,
    then run exactly those. One pytest start and one collection serve selection and run.

    The answer is ``{"run": [node ids] | null}`` (``null``: run nothing). Whatever the
    child's code does to this exchange, the parent folds only the node ids it chose: one
    that no report names failed.
    """

    def __init__(self, writer: ResultWriter, root: Path, job: ReplayJob, guard: Guard) -> None:
        super().__init__(writer, root, [], [], guard)
        from patchlane.child.replay_collect import CollectScope

        self.answer_fd = int(job["answer_fd"])
        self.scope = CollectScope(
            list(job["extra_paths"]),
            frozenset(job["doctest_only"]),
            job["only_files"],
            job.get("exclude_files", ()),
        )
        self.preload = tuple(job.get("preload", ()))
        # What importing the changed modules changed outside them (``start``): watched until
        # the question, which only the records sent before it inform.
        self.import_watch: ImportWatch | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        if self._rel(collection_path) is None:
            return True
        return self.scope.ignore(collection_path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        self.scope.add_paths(config)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        self._check(True)
        if self.import_watch is not None:
            self.import_watch.close()
        self.writer.emit({"candidates": self.scope.suite_items(items)})
        self._plugins(config)
        self.writer.emit({"ask": "slice"})
        chosen = self._answer().get("run")
        nodeids = [n for n in chosen if isinstance(n, str)] if isinstance(chosen, list) else []
        self.nodeids = frozenset(nodeids)
        self.files = frozenset(n for n in nodeids if "::" not in n)
        super().pytest_collection_modifyitems(config, items)

    def _answer(self) -> dict[str, object]:
        data = bytearray()
        while chunk := os.read(self.answer_fd, 65536):
            data += chunk
        os.close(self.answer_fd)
        answer = json.loads(data.decode("utf-8")) if data else {}
        return answer if isinstance(answer, dict) else {}


def _guard(writer: ResultWriter, fd: int, token: str) -> Guard:
    """Import pytest's built-in plugins (pytest would, at its start) and snapshot the
    machinery of the outcome stream now, before any code of the tree runs; return the pair
    that captures the hooks and checks. A tamper record is sent through ``tripwire``'s own
    writer, and counted like the writer's records (the final line's count)."""
    for name in _pytest.config.default_plugins:
        importlib.import_module(f"_pytest.{name}")
    send = tripwire.sender(fd, token)

    def counted(record: dict[str, object]) -> None:
        send(record)
        writer.count += 1

    return tripwire.arm(counted)


@dataclass(eq=False)  # a plugin: hashed by identity
class Started:
    """A replay's run, set up in ``patchlane.pytest_plugin`` at its import (before any code of
    the tree): the ``plugins`` to register, the options to add to pytest's (``args``, never
    ``sys.argv``) and the ``paths`` to collect. Registered as a plugin itself (``attach``):
    it adds them when pytest loads the initial conftests."""

    plugins: list[object]
    args: list[str]
    paths: list[str]
    # ``replay map``: coverage traces the run, and its modules stay as they are (``unlist``).
    keep_modules: bool = False

    def register(self, pluginmanager: pytest.PytestPluginManager) -> None:
        """Block the rerun plugins that cannot be kept loaded without rerunning
        (``BLOCKED_RERUN_PLUGINS``) and ``pytest-randomly``, and register the run's own
        plugins and this object. pytest-rerunfailures stays loaded, as in a plain run (its
        options, its marker, its threads): ``NoRerun`` takes only its reruns away."""
        for name in BLOCKED_RERUN_PLUGINS:
            for spelling in (name, f"pytest_{name}"):
                pluginmanager.set_blocked(spelling)
        for name in ("randomly", "pytest_randomly"):
            pluginmanager.set_blocked(name)
        for plugin in [*self.plugins, self]:
            if not pluginmanager.is_registered(plugin):
                pluginmanager.register(plugin)

    def pytest_load_initial_conftests(self, args: list[str]) -> None:
        """Add the job's options to pytest's (never to ``sys.argv``, which a plain run has
        as it is)."""
        args[:] = [*self.args, *args, *self.paths]


def attach(started: Started, before: frozenset[str]) -> None:
    """Register ``started`` on the plugin manager that is loading ``patchlane.pytest_plugin``
    (an entry point or ``-p``: pytest's own import of plugins, in a caller's frame), so that
    the plugin module itself keeps nothing of the run; then take the modules the run's set-up
    loaded since ``before`` off ``sys.modules`` (``unlist``). Raises ``RuntimeError`` when no
    plugin manager is importing it (the run then reports nothing: nothing passes)."""
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, _pytest.config.PytestPluginManager):
                started.register(value)
                if not started.keep_modules:
                    unlist(before)
                return
        frame = frame.f_back  # type: ignore[assignment]
    raise RuntimeError("patchlane.pytest_plugin was not imported by pytest's plugin manager")


# What the run's set-up loads that a plain run does not: patchlane's own modules (below the
# package: ``patchlane`` and its plugin module load in every run) and ``ctypes``
# (``channel.erase_startup_entry``).
_SETUP_ONLY = ("patchlane.", "ctypes", "_ctypes")


def unlist(before: frozenset[str]) -> list[str]:
    """Take off ``sys.modules`` (and off their parent packages) the modules of
    ``_SETUP_ONLY`` loaded since ``before`` (the run's set-up: no code of the tree has run
    yet), so that the tests see the modules a plain run has. What they define stays alive
    through the run's objects, and the tripwire holds their namespaces (``tripwire.arm``);
    a test that imports one gets a fresh copy, as it would in a plain run. Returns the names
    taken off, sorted. Never raises."""
    taken = sorted(
        name
        for name in list(sys.modules)
        if name not in before
        and name != "patchlane.pytest_plugin"
        and (name.startswith(_SETUP_ONLY[0]) or name.partition(".")[0] in _SETUP_ONLY[1:])
    )
    for name in taken:
        module = sys.modules.pop(name, None)
        parent, _, child = name.rpartition(".")
        package = sys.modules.get(parent) if parent else None
        if module is not None and package is not None and vars(package).get(child) is module:
            del vars(package)[child]  # ``patchlane.child``: an import made it an attribute
    return taken


class _Finish:
    """Sends pytest's exit status as the last record and ends the process right after
    pytest's own unconfigure: nothing the project registered (``atexit``) runs later."""

    def __init__(self, writer: ResultWriter) -> None:
        self.writer = writer
        self.session: pytest.Session | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        session = self.session
        status = getattr(session, "exitstatus", None)
        code = int(status) if isinstance(status, int) else -1
        if code == -1:
            self.writer.emit({"raised": "pytest ended before its session finished"})
        self.writer.emit({"exit": code})
        self.writer.finish()


def _no_rewritten_bytecode_below(root: Path, store: str | None) -> None:
    """pytest keeps the test modules it rewrites as ``<name>.<tag>-pytest-<version>.pyc``
    beside them and trusts one whose header matches the source's mtime and size: one planted
    in the tree would run instead of the test. Below ``root`` it is never read (it is still
    written, as in a plain run); with no bytecode prefix in the environment
    (docs/explanation/decisions/0031-plain-run.md) this is where that is decided. What is
    read below ``root`` instead, when the job names a ``store``: the code patchlane's own
    process rewrote for the bytes the module has now (``child.rewritten``)."""
    rewrite = _pytest.assertion.rewrite
    read = rewrite._read_pyc
    inside = os.path.realpath(root).rstrip(os.sep) + os.sep

    def _read_pyc(source: Path, pyc: Path, trace: Callable[[str], None] = lambda _: None) -> Any:
        if os.path.realpath(source).startswith(inside):
            return None if store is None else stored(store, Path(source))
        return read(source, pyc, trace)

    rewrite._read_pyc = _read_pyc


# The most distinct file texts ``_statements_found_once`` keeps answers for.
_TEXTS_KEPT = 64


def _statements_found_once() -> None:
    """pytest finds the statement of each traceback entry of a failure by parsing the
    entry's whole file and walking its tree again, once per failure: the run of impossible
    variants (``lanes.replay.vacuity``), whose variants are meant to fail, tens of them
    appended to one test file, spent a third of its time there. Here the answer for the
    same text, line and kind is pytest's own, computed once per process (keyed by the
    text itself: a file edited in between is parsed again). Before the tripwire's snapshot
    (``start``), as ``_no_rewritten_bytecode_below``: in every run alike, so that no run
    can be told from another by it."""
    code = _pytest._code.code
    find = code.getstatementrange_ast  # type: ignore[attr-defined]
    found: dict[str, dict[tuple[int, bool], tuple[Any, int, int]]] = {}

    def getstatementrange_ast(
        lineno: int, source: Any, assertion: bool = False, astnode: Any = None
    ) -> tuple[Any, int, int]:
        if astnode is not None:
            return find(lineno, source, assertion, astnode)
        text = "\n".join(source.lines)
        answers = found.get(text)
        if answers is None:
            if len(found) >= _TEXTS_KEPT:
                found.clear()
            answers = found[text] = {}
        answer = answers.get((lineno, assertion))
        if answer is None:
            # Parsed once per text: the tree of an earlier answer is given back to pytest.
            tree = next(iter(answers.values()))[0] if answers else None
            answer = answers[(lineno, assertion)] = find(lineno, source, assertion, tree)
        return answer

    code.getstatementrange_ast = getstatementrange_ast  # type: ignore[attr-defined]


def start(job: ReplayJob) -> Started:
    """Set up the run ``job`` asks for (the tripwire's snapshot, the recorder, source-only
    imports below the tree, the Hypothesis seed) in the test process, before pytest parses its options;
    return what the plugin registers and adds. Raises ``KeyError``/``ValueError`` for a
    malformed job (the parent then gets no record: nothing passes)."""
    root = Path.cwd()
    # Before the tripwire's snapshot: this is the machinery it then holds to.
    rewritten = job.get("rewritten")
    _no_rewritten_bytecode_below(root, rewritten if isinstance(rewritten, str) else None)
    _statements_found_once()
    writer = ResultWriter(int(job["result_fd"]), str(job["token"]))
    # Below the root, modules come from source only: a committed ``.pyc`` never runs. Its
    # path hook is in place before the guard takes the import system as it is.
    source_only_below(root)
    watched = [n for n in job.get("watch_imports", ()) if isinstance(n, str)]
    if watched and "answer_fd" in job:
        # Before any conftest or test module, and before the guard takes the import system
        # as it is (the watch's finder is then part of it): what importing a changed module
        # changes outside it, one record per import, sent before the question.
        files = [os.path.join(root, f) for f in job.get("watch_files", ()) if isinstance(f, str)]  # noqa: PTH118
        own = (writer, vars(writer), writes._COUNT)
        import_watch = ImportWatch(watched, writer.emit, own, files)
        import_watch.install()
    guard = _guard(writer, int(job["result_fd"]), str(job["token"]))
    plugins: list[object] = []
    record = job.get("record")
    if record:
        # ``replay map``: coverage starts before the tree is importable (and before pytest
        # imports a test module), so that every line of the tree is traced.
        from patchlane.child.recorder import Recorder

        plugins.append(Recorder(root, Path(record)))
    calls = job.get("calls")
    if calls:
        # The vacuity check's run: the changed functions' calls, for the witness.
        from patchlane.child.calls import CallRecorder

        plugins.append(CallRecorder(os.fspath(root), calls, writer.emit))
    runner = (
        _AskThenRun(writer, root, job, guard)
        if "answer_fd" in job
        else _SliceRunner(
            writer,
            root,
            list(job["nodeids"]),
            list(job.get("files", [])),
            guard,
            tuple(job.get("then_files", ())),
        )
    )
    runner.project = tuple(n for n in job.get("project", []) if isinstance(n, str))
    if watched and isinstance(runner, _AskThenRun):
        runner.import_watch = import_watch
    runner.trusted = bool(record)
    seed = job.get("seed")
    hypothesis = HypothesisAsInPytest(None if seed is None else str(seed))
    # This interpreter hashes under the drawn seed already; the tests see the environment
    # of a plain ``pytest`` run, so a test cannot pass only where the gate pins it.
    hide_drawn_seed()
    # Asking: no path, so that pytest collects what the project's full suite collects
    # (its testpaths, or the rootdir), as ``collect`` does.
    paths = [] if "answer_fd" in job else [str(root)]
    args = [*job["args"], *without_xdist()]
    plugins = [runner, NoRerun(), hypothesis, *plugins, _Finish(writer)]
    return Started(plugins, args, paths, keep_modules=bool(record))
