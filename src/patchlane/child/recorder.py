"""The dependency map's recording plugin, loaded in the run child (docs/architecture.md §4).

``patchlane replay map`` runs the whole suite once on the base commit, materialised from git;
this plugin records, per test, what it depended on:

- the lines it executed in files of the tree (coverage.py's tracer; at every switch of
  context the lines recorded since are charged to the context that ran them, without
  coverage's own dynamic contexts, which write to SQLite at every switch);
- the files of the tree it opened for reading and the directories of the tree it listed
  (audit events ``open``, ``os.listdir``, ``os.scandir``, ``glob.glob``);
- the project modules first imported while it ran;
- the fixtures it used: a fixture's setup is recorded in a context of its own (a session
  fixture is set up once, inside the first test that needs it, yet every user depends on
  it); what runs outside every test and fixture (imports, collection) has the context "";
- whether it is a Hypothesis test (it then depends on whole files: another run draws other
  examples);
- whether it started a process (audit events ``subprocess.Popen``, ``os.system``,
  ``os.exec``, ``os.posix_spawn``, ``os.spawn``, ``os.fork``, ``os.forkpty``; and
  ``_posixsubprocess.fork_exec``, which ``multiprocessing`` calls without one), or a raw
  ``_thread`` thread, or ran after the project replaced coverage's tracer: what runs there
  is not traced, so such a test is "blind" (with the reason) and selection keeps the static
  rules for it;
- a process started while a module of the tree was imported (outside every test): its
  program and arguments, and that module (``blind_at_import``; ``lanes.replay.importblind``
  blinds the tests that imported it, or every test for a conftest). A program that is no
  Python interpreter and whose arguments name nothing of the tree blinds nothing.

Python >= 3.12 records with coverage's ``sys.monitoring`` core (its line events are
re-armed at every context switch, so each test sees every line it runs); 3.11 with the C
tracer. Reads served from ``linecache`` (``inspect.getsource``) are charged to the context
that asked, without clearing the cache at each switch (docs/architecture.md §4).

At the end of the session it writes one JSON document (``Recording``'s shape) to the path the
parent gave. The base is trusted code (it is what the patch is judged against), so what it
records is believed; nothing of a patch ever runs in a recording.
"""

from __future__ import annotations

import _posixsubprocess
import _thread
import json
import linecache
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patchlane.child.importstart import harmless_start
from patchlane.child.messages import FIXTURE, IMPORT

_READ_EVENTS = frozenset({"open", "sqlite3.connect"})
_LIST_EVENTS = frozenset({"os.listdir", "os.scandir", "glob.glob"})
_PROCESS_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        # A tracer of the project's own replaces coverage's while it is set.
        "sys.settrace",
        "sys.setprofile",
    }
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# Events after which a path may resolve elsewhere: the memo of resolved paths is dropped.
_NAMESPACE_EVENTS = frozenset(
    {"os.symlink", "os.link", "os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.chdir",
     "os.chroot", "shutil.rmtree", "shutil.move", "shutil.unpack_archive"}
)  # fmt: skip
_SYSMON = sys.version_info >= (3, 12)

__all__ = ["FIXTURE", "IMPORT", "Recorder"]


class _Installing(threading.local):
    """Per thread: how many of coverage's own tracer installs are under way."""

    depth = 0


class Recorder:
    """pytest plugin: coverage contexts and audit events, per test and per fixture, into one
    JSON file (see the module docstring; ``formats.depmap`` reads it)."""

    def __init__(self, root: Path, out: Path) -> None:
        import coverage

        self.root = os.path.realpath(root)
        self.inside = self.root.rstrip(os.sep) + os.sep
        self.out = out
        self.context = IMPORT
        self.opened: dict[str, set[str]] = {}
        self.listed: dict[str, set[str]] = {}
        self.imported: dict[str, set[str]] = {}
        self.blind: dict[str, str] = {}  # context -> why it is blind (the first reason)
        # Starts while modules of the tree were imported: those modules, why (importblind).
        self.at_import: list[dict[str, object]] = []
        self._resolved: dict[str, str | None] = {}  # path string -> _rel's answer
        self.uses: dict[str, list[str]] = {}
        self.whole_files: set[str] = set()
        self.shared: set[str] = set()
        # No data file, no configuration file of the project's: the recording is patchlane's.
        self.cov = coverage.Coverage(
            data_file=None, config_file=False, include=[self.inside + "*"], branch=False
        )
        if _SYSMON:
            self.cov.set_option("run:core", "sysmon")
        self.cov.start()
        # The lines each context ran, per measured file: line -> contexts. Kept here rather
        # than in coverage's dynamic contexts, whose every switch writes the lines so far
        # to its SQLite database (one flush per test and fixture, then a query per file).
        self.lines: dict[str, dict[int, set[str]]] = {}
        self._raw = _raw_lines(self.cov)
        # What coverage traces with; a project that replaces it loses the rest of the run.
        self.tracer = sys.gettrace()
        self.tracing_lost = False
        # Per thread: how many of coverage's own tracer installs are under way.
        self._installing = _Installing()
        sys.addaudithook(self._audit)
        self._serialise_settrace()
        self._watch_untraced_starts()
        self._watch_linecache()

    def _serialise_settrace(self) -> None:
        """Let one thread at a time install a trace function. CPython 3.11 refuses a second
        install while one is under way ("Cannot install a trace function while another ...",
        python/cpython#98257), and an install runs this recorder's audit hook, Python code
        that may hand the GIL over: threads started together (a ``multiprocessing.Pool``'s
        three) then died at their first line, and the run hung. Every install goes through
        one lock: ``sys.settrace`` (which ``threading`` calls as each thread starts) and the
        per-thread hook coverage leaves to ``threading``, which installs its C tracer. An
        install that fails anyway blinds the context it ran in: its thread is not traced.

        Each ``threading`` thread's start installs coverage's own hook, and that hook its
        tracer, both through ``sys.settrace`` and its audit event: while one of these runs
        (``self._installing`` counts them on the thread) that event is coverage's, not the
        project replacing its tracer, and does not blind the test (boltons' thread-safety
        tests and socket servers ran traced, yet were blind)."""
        lock = threading.RLock()
        settrace = sys.settrace
        install = threading.gettrace()
        own = self._installing

        def serialised_install(frame: Any, event: Any, arg: Any) -> Any:
            with lock:
                depth = own.depth
                own.depth = depth + 1
                try:
                    return install(frame, event, arg)  # type: ignore[misc]
                finally:
                    own.depth = depth

        def serialised_settrace(function: Any) -> None:
            with lock:
                depth = own.depth
                # Only coverage's own hook, as ``threading`` installs it in a new thread.
                ours = install is not None and function is serialised_install
                own.depth = depth + 1 if ours else depth
                try:
                    settrace(function)
                except RuntimeError:
                    self.blind.setdefault(self.context, "a trace function was not installed")
                    raise
                finally:
                    own.depth = depth

        sys.settrace = serialised_settrace
        if install is not None:  # 3.11's C tracer; sys.monitoring (3.12+) leaves none
            threading.settrace(serialised_install)

    def _watch_linecache(self) -> None:
        """Charge every read of a tree file served from ``linecache`` to the current
        context: ``inspect.getsource`` and tracebacks read through it, and only the first
        reader opens the file. Every function of ``linecache`` reads its module's ``cache``
        global, so the one dict put there sees them all (its data is kept)."""
        recorder = self

        class _Cache(dict):  # type: ignore[type-arg]
            def __getitem__(self, key: Any) -> Any:
                recorder._read_cached(key)
                return super().__getitem__(key)

            def get(self, key: Any, default: Any = None) -> Any:
                recorder._read_cached(key)
                return super().get(key, default)

        linecache.cache = _Cache(linecache.cache)

    def _read_cached(self, filename: object) -> None:
        rel = self._rel(filename) if isinstance(filename, str) else None
        if rel:
            self.opened.setdefault(rel, set()).add(self.context)

    def _watch_untraced_starts(self) -> None:
        """Mark blind the contexts that start what neither coverage nor an audit event sees:
        ``multiprocessing`` with spawn or forkserver starts its children through
        ``_posixsubprocess.fork_exec`` (no audit event), and a thread started with
        ``_thread.start_new_thread`` is not traced. Only the base's trusted code runs here."""
        fork_exec = _posixsubprocess.fork_exec
        start_new_thread = _thread.start_new_thread

        popen = subprocess.Popen._execute_child.__code__  # type: ignore[attr-defined]

        def watched_fork_exec(*args: Any, **kwargs: Any) -> Any:
            # ``subprocess.Popen`` calls it after its own audit event, which is judged on
            # its program; any other caller (multiprocessing) has none, and is blind.
            if sys._getframe(1).f_code is not popen:
                self._mark_blind(self.context, "started a process without an audit event")
            return fork_exec(*args, **kwargs)

        def watched_start(*args: Any, **kwargs: Any) -> Any:
            self._mark_blind(self.context, "started a raw _thread thread")
            return start_new_thread(*args, **kwargs)

        _posixsubprocess.fork_exec = watched_fork_exec
        _thread.start_new_thread = watched_start

    def _mark_blind(self, context: str, why: str) -> None:
        """Mark ``context`` blind for ``why``. Outside every test (imports, collection, a
        plugin's session start) only a start the tree's own code asked for counts (a
        conftest's server, which any test may talk to: ``depmap`` then blinds every test); a
        third-party plugin that runs ``git`` as the session starts (pytest-benchmark) runs
        none of the project's code."""
        if context != IMPORT or self._tree_frames():
            self.blind.setdefault(context, why)

    def _tree_frames(self) -> list[Any]:
        """The frames of the stack whose code is a file of the tree, innermost first."""
        found: list[Any] = []
        frame: Any = sys._getframe(1)
        while frame is not None:
            name = frame.f_code.co_filename
            # "<frozen runpy>", "<string>": not a file, and relative to the tree if resolved.
            if name.startswith(os.sep) and self._rel(name) is not None:
                found.append(frame)
            frame = frame.f_back
        return found

    def _process_start(self, event: str, args: tuple[Any, ...]) -> None:
        """A process start (or a tracer replaced). Inside a test or fixture: that context is
        blind. Outside every test: nothing when no tree code asked for it; a program that
        cannot run the project's Python (``importstart.harmless_start``) blinds nothing;
        any other start blinds the importers of the modules whose bodies were running (every
        module of the tree being imported), every test when no module body was (a hook)."""
        why = f"{event}: {_describe(event, args)}"
        if self.context != IMPORT:
            self.blind.setdefault(self.context, why)
            return
        frames = self._tree_frames()
        if not frames or harmless_start(event, args, self.root, self._rel):
            return
        bodies = [f for f in frames if f.f_code.co_name == "<module>"]
        if not bodies or event in ("sys.settrace", "sys.setprofile"):
            self.blind.setdefault(IMPORT, why + " (outside every test, not while importing)")
            return
        # Every module being imported on the stack: the innermost's importers use what it
        # made, and so may the importers of each module that imported it then.
        modules = [
            {
                "module": str(f.f_globals.get("__name__") or ""),
                "file": self._rel(f.f_code.co_filename) or "",
            }
            for f in bodies
        ]
        self.at_import.append({"modules": modules, "why": why})

    def _switch(self, context: str) -> None:
        if self._raw is None:
            self.cov.switch_context(context)
        else:
            self._take_lines(self._raw)
        self.context = context
        if _SYSMON:
            # sys.monitoring reports a line once, then no more: re-armed, each context
            # sees every line it runs (what coverage's dynamic contexts cannot do there).
            sys.monitoring.restart_events()  # type: ignore[attr-defined,unused-ignore]

    def _take_lines(self, raw: dict[str, set[int]]) -> None:
        """Charge the lines the tracer recorded since the last switch to the current context
        and take them out of its sets. As coverage's own flush: the sets stay in place (the
        tracer holds them), and a thread that adds to one meanwhile loses nothing."""
        context = self.context
        for name, live in raw.copy().items():
            taken = live.copy()
            if not taken and name in self.lines:
                continue
            by_line = self.lines.setdefault(name, {})
            for number in taken:
                contexts = by_line.get(number)
                if contexts is None:
                    by_line[number] = {context}
                else:
                    contexts.add(context)
            live.difference_update(taken)

    def _rel(self, path: object) -> str | None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str | os.PathLike):
            return None  # a file descriptor, or nothing
        text = os.fspath(path)
        if not isinstance(text, str):
            text = os.fsdecode(text)
        # Memoised for absolute paths only (a relative one depends on the cwd); the memo is
        # dropped whenever a link, a rename, a removal or a cwd change may move an answer.
        absolute = text.startswith(os.sep)
        known = self._resolved.get(text, self) if absolute else self
        if known is not self:
            return known  # type: ignore[return-value]
        try:
            real = os.path.realpath(text)
        except (OSError, ValueError):
            return None
        if real == self.root:
            answer: str | None = ""
        elif not real.startswith(self.inside):
            answer = None
        else:
            answer = Path(real[len(self.inside) :]).as_posix()
        if absolute:
            self._resolved[text] = answer
        return answer

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        context = self.context
        if event in _NAMESPACE_EVENTS or event in _PROCESS_EVENTS:
            self._resolved.clear()
        if event in _PROCESS_EVENTS:
            if event == "sys.settrace" and self._installing.depth:
                return  # coverage installing its own tracer in a new thread
            self._process_start(event, args)
        elif event in _READ_EVENTS and args and not _writes(args):
            rel = self._rel(_sqlite_path(args[0]) if event == "sqlite3.connect" else args[0])
            if rel:
                self.opened.setdefault(rel, set()).add(context)
        elif event in _LIST_EVENTS and args:
            where = args[0] if event != "glob.glob" else _glob_root(str(args[0]))
            rel = self._rel(where if where is not None else ".")
            if rel is not None:
                self.listed.setdefault(rel, set()).add(context)

    def _imports_during(self, before: set[str], context: str) -> None:
        for name in set(sys.modules) - before:
            rel = self._rel(getattr(sys.modules.get(name), "__file__", None))
            if rel:
                self.imported.setdefault(name, set()).add(context)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        before = set(sys.modules)
        self.uses[item.nodeid] = sorted(set(getattr(item, "fixturenames", ())))
        if hasattr(getattr(item, "obj", None), "hypothesis"):
            # Hypothesis draws its examples afresh each run: the lines one run reached are
            # not all the test can reach, so it depends on every file it touched, wholly.
            self.whole_files.add(item.nodeid)
        self._switch(item.nodeid)
        try:
            yield
        finally:
            self._switch(IMPORT)
            self._imports_during(before, item.nodeid)
            if not self._tracing():
                self.tracing_lost = True  # the project replaced the tracer: nothing is seen
            if self.tracing_lost:
                self.blind.setdefault(item.nodeid, "ran after coverage's tracer was replaced")

    def _tracing(self) -> bool:
        """Whether coverage still measures: its trace function (3.11), its monitoring tool."""
        if _SYSMON:
            monitoring: Any = getattr(sys, "monitoring")  # noqa: B009 - 3.12+
            return any(monitoring.get_tool(i) == "coverage.py" for i in range(6))
        return sys.gettrace() is self.tracer

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        # A fixture fetched with ``request.getfixturevalue`` is not in ``fixturenames``;
        # the request knows every fixture it resolved (pytest keeps no public list).
        defs = getattr(getattr(item, "_request", None), "_fixture_defs", None)
        if isinstance(defs, dict):
            used = set(self.uses.get(item.nodeid, ())) | {str(name) for name in defs}
            self.uses[item.nodeid] = sorted(used)
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any]) -> Iterator[None]:
        # A fixture wider than a function is set up once, inside the first test that uses
        # it; its own context lets every test that uses it be charged with its lines.
        outer = self.context
        before = set(sys.modules)
        context = FIXTURE + fixturedef.argname
        if fixturedef.scope != "function" and not _pytest_own(fixturedef):
            # One value for many tests: what one test's code did to it, the next one sees.
            self.shared.add(fixturedef.argname)
        # Its teardown runs later, inside whichever test ends its scope (a session
        # fixture's, inside the suite's last test): finalizers run last-in first-out, so
        # one added before the fixture's own switches back, one added after switches in.
        saved: list[str] = []
        fixturedef.addfinalizer(lambda: self._switch(saved.pop()) if saved else None)
        self._switch(context)
        try:
            yield
        finally:
            self._switch(outer)
            self._imports_during(before, context)

            def enter() -> None:
                saved.append(self.context)
                self._switch(context)

            fixturedef.addfinalizer(enter)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        self.cov.stop()
        lines: dict[str, dict[str, list[str]]] = {}
        if self._raw is None:
            data = self.cov.get_data()
            for measured in data.measured_files():
                rel = self._rel(measured)
                if rel:
                    by_line = data.contexts_by_lineno(measured)
                    lines[rel] = {str(n): sorted(set(c)) for n, c in by_line.items()}
        else:
            self._take_lines(self._raw)  # what ran since the last switch, and in threads until now
            for measured, by_number in self.lines.items():
                rel = self._rel(measured)
                if rel:
                    into = lines.setdefault(rel, {})
                    for n, c in by_number.items():
                        into[str(n)] = sorted(c.union(into.get(str(n), ())))
        document = {
            "lines": lines,
            "opened": {p: sorted(c) for p, c in self.opened.items()},
            "listed": {p: sorted(c) for p, c in self.listed.items()},
            "imported": {m: sorted(c) for m, c in self.imported.items()},
            "blind": dict(sorted(self.blind.items())),
            "blind_at_import": self.at_import,
            "uses": self.uses,
            "whole_files": sorted(self.whole_files),
            "shared": sorted(self.shared),
        }
        tmp = self.out.with_name(self.out.name + ".tmp")
        tmp.write_text(json.dumps(document, sort_keys=True), encoding="utf-8")
        tmp.replace(self.out)


def _raw_lines(cov: Any) -> dict[str, set[int]] | None:
    """The live sets coverage's tracer adds line numbers to, by file (``Collector.data``,
    shared by its C tracer and its ``sys.monitoring`` core), or ``None`` when this version
    of coverage keeps them elsewhere: the recorder then uses its dynamic contexts."""
    data = getattr(getattr(cov, "_collector", None), "data", None)
    if not isinstance(data, dict) or not all(isinstance(v, set) for v in data.values()):
        return None
    return data


def _describe(event: str, args: tuple[Any, ...]) -> str:
    """A short account of a process start for a blinding's reason: its argv, cut."""
    argv: object = args[1] if event == "subprocess.Popen" and len(args) > 1 else args[:2]
    if event in ("os.exec", "os.posix_spawn") and len(args) > 1:
        argv = args[1]
    if event == "os.spawn" and len(args) > 2:
        argv = args[2]
    text = " ".join(map(str, argv)) if isinstance(argv, list | tuple) else str(argv)
    return (text[:120] + "…") if len(text) > 120 else text or "(no arguments)"


def _pytest_own(fixturedef: pytest.FixtureDef[Any]) -> bool:
    """Whether a fixture is one of pytest's own (``tmp_path_factory``, ``cache``): its value
    holds pytest's state, not the project's. The fixtures pytest makes for a unittest
    class's ``setUpClass`` or an xunit ``setup_module`` are the project's state, though
    pytest defines them."""
    if fixturedef.argname.startswith(("_unittest_", "_xunit_")):
        return False
    module = str(getattr(fixturedef.func, "__module__", "") or "")
    return module == "pytest" or module.startswith(("_pytest.", "pytest."))


def _writes(args: tuple[Any, ...]) -> bool:
    """Whether an ``open`` audit event opens for writing (its mode, or its flags)."""
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else 0
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _glob_root(pattern: str) -> str:
    """The directory a glob pattern lists: its components before the first wildcard."""
    fixed: list[str] = []
    for part in Path(pattern).parts[:-1]:
        if any(c in part for c in "*?["):
            break
        fixed.append(part)
    return os.path.join(*fixed) if fixed else "."  # noqa: PTH118 - str in, str out


def _sqlite_path(database: object) -> object:
    """The file a ``sqlite3.connect`` names: a ``file:`` URI's path without its query."""
    if isinstance(database, str) and database.startswith("file:"):
        path, _, query = database[len("file:") :].partition("?")
        if "mode=memory" in query.split("&"):
            return None  # an in-memory database: no file is read
        return path[len("//") :] if path.startswith("//") else path
    return database
