"""The child process that asks pytest to collect a materialised tree's tests.

Started by ``collect`` as ``python -s -P -B -X utf8 -m patchlane.child.replay_collect``
with the tree as its working directory, a minimal environment and (when available) no
network namespace; reads its job (JSON) from stdin. pytest is imported *before* the tree
goes on ``sys.path`` (as ``python -m pytest`` would put it), so that a file in the tree
cannot shadow it; then an audit hook that refuses (and records) every network access is
installed, and only then does pytest load the project's conftest files and test modules.

Unlike the property child, process creation is not blocked: installed pytest plugins
legitimately start processes while configuring (pytest-benchmark asks git for the commit),
and collection runs no test. A process started here stays in the child's process group
(killed when it ends) and, where ``unshare`` works, in its network namespace.

Node ids are taken from ``session.items`` by a plugin rather than parsed from the
``--collect-only -q`` text: the text is display (a node id could be cut or wrapped), the
items are what pytest would run. Each goes to the job's result descriptor as one JSON line
with the job's token; then ``{"exit", "errors", "violations"}`` and ``{"done", "count"}``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from patchlane.child.channel import (
    ResultWriter,
    collect_error,
    hide_drawn_seed,
    tree_plugins,
    without_xdist,
)
from patchlane.child.guard import BLOCKED_EVENTS
from patchlane.child.messages import ReplayJob
from patchlane.infra.bytecode import import_tree_from_source

NETWORK_EVENTS = frozenset(e for e in BLOCKED_EVENTS if e.startswith("socket."))


class NetworkRefused(OSError):
    """Raised inside the child for a network access during collection."""


# The local wildcards are named here, not bound: a test module binding them stays local.
_LOOPBACK_NAMES = frozenset({"localhost", "::1", "0.0.0.0", "::", ""})  # noqa: S104


def _loopback(event: str, args: tuple[Any, ...]) -> bool:
    """Whether a network event stays on this machine: a Unix socket, a loopback address, or
    a local name. Test modules that start a local server (or bind a free port) at import do
    the same in the full suite; they are not the network this guard keeps collection off."""
    if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
        address = args[1] if len(args) > 1 else None
    elif event == "socket.getaddrinfo":
        address = (args[0],) if args else None
    else:
        return False
    if isinstance(address, (str, bytes)):
        return True  # AF_UNIX: a path
    if not isinstance(address, tuple) or not address:
        return False
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if host is None:
        return True  # getaddrinfo(None, port): the local wildcard
    return isinstance(host, str) and (host in _LOOPBACK_NAMES or host.startswith("127."))


def _install_network_guard(violations: list[str]) -> None:
    """Refuse, and record, every network audit event that leaves this machine from now on
    (forever: an audit hook cannot be removed, so the project cannot undo it)."""
    events = NETWORK_EVENTS

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in events and not _loopback(event, args):
            violations.append(event)
            raise NetworkRefused(f"network blocked by patchlane during collection: {event}")

    sys.addaudithook(hook)


class _Collector:
    """pytest plugin: remembers collection errors and sends every collected node id.

    ``doctest_only``: files collected only for their doctests (changed modules of the code
    under test): their other items and their collection errors are not the suite's.
    """

    def __init__(
        self,
        writer: ResultWriter,
        doctest_only: frozenset[str],
        extra_paths: list[str],
        only_files: list[str] | None = None,
    ) -> None:
        self.writer = writer
        self.errors: list[dict[str, object]] = []
        self.doctest_only = doctest_only
        self.plugins: list[str] = []
        self.scope = CollectScope(extra_paths, doctest_only, only_files)

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        return self.scope.ignore(collection_path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        self.scope.add_paths(config)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed and report.nodeid.split("::", 1)[0] not in self.doctest_only:
            self.errors.append(collect_error(report.nodeid, str(report.longreprtext or "")))

    def pytest_collection_finish(self, session: Any) -> None:
        self.plugins = tree_plugins(session.config.pluginmanager, os.fspath(Path.cwd()))
        for nodeid in self.scope.suite_items(session.items):
            self.writer.emit({"nodeid": nodeid})


class CollectScope:
    """What a collection covers: the project's own choice (``testpaths``, or the rootdir)
    plus ``extra_paths`` (the map's ``replay.tests``), the doctests of ``doctest_only``
    (changed modules of the code under test) and, with ``only_files``, nothing but those
    files and their directories. Shared by this child and the replay's run child when it
    collects the candidates itself (``child.replay_run``)."""

    def __init__(
        self,
        extra_paths: list[str],
        doctest_only: frozenset[str],
        only_files: list[str] | None,
        exclude_files: Sequence[str] = (),
    ) -> None:
        self.extra_paths = extra_paths
        # Files never collected here (the patch's own test modules, run in a process of
        # their own: docs/architecture.md §4, "Replay slice").
        self.exclude = frozenset(exclude_files)
        self.doctest_only = doctest_only
        self.root = os.path.abspath(Path.cwd())  # noqa: PTH100 - lexical, like pytest's paths
        self.only: frozenset[str] | None = None
        self.only_dirs: frozenset[str] = frozenset()
        if only_files is not None:
            wanted = set(only_files) | set(doctest_only)
            self.only = frozenset(wanted)
            dirs = {""}
            for path in wanted:
                parts = path.split("/")[:-1]
                dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
            self.only_dirs = frozenset(dirs)

    def ignore(self, collection_path: Path) -> bool | None:
        """``True`` for an excluded file and, with ``only_files``, for every path that is
        neither a wanted file nor one of their directories; ``None`` (the project's own
        rules) for the rest."""
        if self.only is None and not self.exclude:
            return None
        rel = os.path.relpath(os.path.abspath(collection_path), self.root)  # noqa: PTH100
        if rel == os.curdir:
            return None
        rel = Path(rel).as_posix()
        if rel in self.exclude:
            return True
        if self.only is None:
            return None
        if rel.startswith("../") or rel == "..":
            return True
        return None if rel in self.only or rel in self.only_dirs else True

    def add_paths(self, config: pytest.Config) -> None:
        """Add to ``config.args`` the paths the project's own choice leaves out: the extra
        paths and the changed modules whose doctests are wanted."""
        if not self.extra_paths and not self.doctest_only:
            return
        root = Path.cwd()
        covered = [Path(os.path.abspath(root / a)) for a in config.args]  # noqa: PTH100
        wanted = list(self.extra_paths)
        if config.getoption("doctestmodules", False):
            # Only then: named on the command line, pytest would import a module that the
            # project's own run never collects (a setup.py, a benchmark script).
            wanted += sorted(self.doctest_only)
        for rel in wanted:
            path = Path(os.path.abspath(root / rel))  # noqa: PTH100 - lexical, like pytest
            if not any(path == c or c in path.parents for c in covered):
                config.args.append(rel)

    def suite_items(self, items: list[Any]) -> list[str]:
        """The node ids of ``items`` that belong to the suite: of a ``doctest_only`` file,
        its doctests alone (a function named test_* in a module pytest would not collect
        is not a test)."""
        return [
            item.nodeid
            for item in items
            if item.nodeid.split("::", 1)[0] not in self.doctest_only
            or type(item).__name__ == "DoctestItem"
        ]


def main() -> None:
    """Run the job read from stdin; always ends the process with ``os._exit``."""
    job: ReplayJob = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    writer = ResultWriter(int(job["result_fd"]), str(job["token"]))
    violations: list[str] = []
    # The tree is materialised without bytecode; should any appear, modules below the
    # root still come from source only (patchlane.infra.bytecode), as in the run child.
    import_tree_from_source(Path.cwd())
    # What ``python -m pytest`` does: the working directory (the tree root) first.
    sys.path.insert(0, str(Path.cwd()))
    _install_network_guard(violations)
    collector = _Collector(
        writer,
        frozenset(job.get("doctest_only", [])),
        list(job.get("extra_paths", [])),
        job.get("only_files"),
    )
    args = list(job["args"])
    args[:0] = without_xdist()
    # What the test modules read at import is a plain ``pytest`` run's environment.
    hide_drawn_seed()
    try:
        code = int(pytest.main(args, plugins=[collector]))
    except BaseException as e:  # noqa: BLE001 - whatever the project does, report it
        code = -1
        collector.errors.append(
            {"nodeid": "", "message": f"pytest raised {type(e).__name__}: {e}", "missing": None}
        )
    writer.emit(
        {
            "exit": code,
            "errors": collector.errors,
            "violations": list(violations),
            "plugins": collector.plugins,
        }
    )
    writer.finish()


if __name__ == "__main__":
    main()
