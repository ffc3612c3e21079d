"""Collect a materialised tree's test node ids with pytest, in an isolated child.

Collection imports the project's test modules, which is running the patch's code: it gets
the property lane's isolation (``infra.process``): its own process group killed on
exit or timeout, a minimal environment, a network namespace when one can be made, an audit
hook that refuses network access, and results only from the token-carrying result channel.
"""

from __future__ import annotations

import secrets
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchlane.child.messages import ReplayJob
from patchlane.errors import PatchlaneError
from patchlane.infra import process
from patchlane.infra.bytecode import process_pycache
from patchlane.infra.origins import ProbeError, presentation
from patchlane.infra.sandbox import Confinement, isolation
from patchlane.infra.ui import one_line
from patchlane.lanes.replay.results import CollectError, file_part

CHILD_ARGV = (sys.executable, "-s", "-P", "-X", "utf8", "-m")
CHILD_MODULE = "patchlane.child.replay_collect"
COLLECT_RESULT_LIMIT = 64 * 1024 * 1024
DEFAULT_TIMEOUT_S = 300.0
# pytest's exit codes: 0 collected, 5 nothing collected (an empty suite, not an error).
_OK_EXITS = (0, 5)
TAIL_LINES = 5


class CollectionError(PatchlaneError):
    """pytest could not collect the tests; ``lines`` holds the child's last lines.

    The message is one line (the summary and the last lines joined), because the error
    boundary prints exactly one line.
    """

    def __init__(self, summary: str, lines: Sequence[str] = ()) -> None:
        self.summary = summary
        self.lines = tuple(lines)
        detail = " | ".join(self.lines)
        super().__init__(f"{summary}: {detail}" if detail else summary)


class NetworkAtCollection(CollectionError):
    """Collection tried to reach the network, which no sandboxed child has: the code did
    something the replay cannot judge (never the patch's plain failure)."""


@dataclass(frozen=True)
class Collected:
    """What pytest collected: the node ids in collection order, the files it could not
    collect (a test file that no longer imports is the patch's failure, or the environment's:
    the caller decides), and the isolation used."""

    nodeids: tuple[str, ...]
    network: str
    seconds: float
    errors: tuple[CollectError, ...] = ()
    # Files of the tree pytest held as plugins once collection finished (see
    # ``channel.tree_plugins``).
    plugin_files: tuple[str, ...] = ()
    # Dotted module name -> what each import of it changed outside it, as the run child saw
    # (``child.importstate``; only the asking run child watches: elsewhere, empty).
    imports: Mapping[str, tuple[ImportSeen, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ImportSeen:
    """One import of a watched module as the run child saw it: ``status`` (``ok``: the look
    can be trusted) and what it changed outside the module (``changes``, one phrase each)."""

    name: str
    status: str
    changes: tuple[str, ...]

    @classmethod
    def of(cls, record: Mapping[str, object], watched: Iterable[str]) -> ImportSeen | None:
        """Read a child's ``import_state`` record, or ``None`` when ``record`` is not one
        of a watched name. A malformed one reads as an untrusted look (never ``ok``)."""
        name = record.get("import_state")
        if not isinstance(name, str) or name not in set(watched):
            return None
        status = record.get("status")
        changes = record.get("changes")
        if not isinstance(status, str) or not isinstance(changes, list):
            return cls(name, "a malformed record", ())
        return cls(name, status, tuple(str(c)[:200] for c in changes))


def pytest_args(root: Path, test_paths: Sequence[str]) -> list[str]:
    """Return the pytest arguments: collect only, quietly, without the cache, patchlane's
    own plugin or random ordering, with the tree as rootdir (node ids are then relative to
    the repository root whatever the project's configuration)."""
    return [
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:patchlane",
        "-p",
        "no:randomly",
        # No ``-W`` of patchlane's: it would outrank the project's own ``filterwarnings``.
        # The notice that once needed one (patchlane imported before pytest marks installed
        # plugins for rewriting) is gone: the package docstring says PYTEST_DONT_REWRITE.
        f"--rootdir={root}",
        *test_paths,
    ]


def collect(
    root: Path,
    test_paths: Sequence[str],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: dict[str, str] | None = None,
    doctest_only: Sequence[str] = (),
    only_files: Sequence[str] | None = None,
) -> Collected:
    """Collect what the project's full suite collects (its ``testpaths``, or the whole
    tree) and the tests under ``test_paths`` (repository paths that exist in ``root``).

    ``doctest_only``: files (changed modules of the code under test) collected for their
    doctests alone, when the project's configuration collects doctests; their other items
    and their import errors are left out. Returns the node ids pytest collected and the
    files it could not collect (no ``test_paths`` at all: nothing). With ``only_files``,
    pytest walks only those files and their directories (every other path is ignored, as
    in the slice's run), so that a test file pytest would not collect by itself is not
    collected here either. Raises
    ``CollectionError`` when the child times out, breaks the result protocol, is caught by
    the sandbox, or pytest itself fails (not one file).
    """
    paths = [p.rstrip("/") or "." for p in test_paths]
    if not paths:
        return Collected((), "none", 0.0)
    layers = isolation()
    argv = (*CHILD_ARGV, CHILD_MODULE)
    with tempfile.TemporaryDirectory(prefix="patchlane-collect-home-") as home:
        if env is not None:
            # Whatever environment the caller built, bytecode in the tree is never read
            # (patchlane.infra.bytecode); minimal_env sets the same prefix.
            env = {**env, "PYTHONPYCACHEPREFIX": process_pycache()}
        child_env = env if env is not None else process.minimal_env(Path(home))
        try:
            # What the test modules import as the project is the tree's (infra.origins).
            shown = presentation(root, child_env, sandboxed=layers.sandboxed, writable=False)
        except ProbeError as e:
            raise CollectionError(str(e)) from e
        try:
            run = process.run_child(
                process.Launch(
                    argv,
                    ReplayJob(
                        # No paths: pytest collects what the project's full suite collects
                        # (testpaths, or the rootdir); the child adds ours where that misses them.
                        args=pytest_args(shown.child_path(root), []),
                        extra_paths=paths,
                        doctest_only=list(doctest_only),
                        only_files=None if only_files is None else list(only_files),
                    ),
                    token=secrets.token_hex(16),
                    timeout_s=timeout_s,
                    # A suite's node ids can be tens of MiB (packaging: 64k parametrized tests).
                    result_limit=COLLECT_RESULT_LIMIT,
                    cwd=root,
                    # The run's own environment when given: node ids computed from it (a
                    # temp dir, a variable, a hash seed) must be the ones the run will see.
                    env=child_env,
                    # Collection writes nothing the run needs: the tree stays read-only, so
                    # that what a test module does at import cannot change what runs later.
                    confinement=Confinement(Path(home), readable=(root,), presented=shown),
                    isolation=layers,
                )
            )
        except OSError as e:
            raise CollectionError(f"pytest could not be started: {e.strerror or e}") from e
    nodeids, errors, plugin_files = _judge(run, timeout_s)
    return Collected(nodeids, layers.kind, run.seconds, errors, plugin_files)


def tail_lines(run: process.ChildRun) -> list[str]:
    """The last ``TAIL_LINES`` non-blank lines a child wrote (stdout, then stderr), each
    escaped into one printable line: the project's bytes, for a ``CollectionError``."""
    text = (run.stdout_tail + b"\n" + run.stderr_tail).decode("utf-8", "replace")
    lines = [one_line(line.strip()) for line in text.splitlines() if line.strip()]
    return lines[-TAIL_LINES:]


def _text(value: object, default: str) -> str:
    """Return ``value`` when it is a string, else ``default``.

    The child's records are the patch's to forge (its code runs in that process), and
    ``str()`` of what JSON can hold is not safe: a list nested nine hundred deep raises
    RecursionError.
    """
    return value if isinstance(value, str) else default


def _judge(
    run: process.ChildRun, timeout_s: float
) -> tuple[tuple[str, ...], tuple[CollectError, ...], tuple[str, ...]]:
    """Return the node ids, collection errors and plugin files of a finished child, or
    raise ``CollectionError``."""
    if run.timed_out:
        raise CollectionError(f"test collection timed out after {timeout_s:g} s", tail_lines(run))
    if run.problems or run.done_count is None or run.done_count != len(run.records):
        why = run.problems[0] if run.problems else "the child ended without its final line"
        raise CollectionError(f"test collection failed ({why})", tail_lines(run))
    *items, final = run.records or ({},)
    exit_code = final.get("exit")
    errors = final.get("errors")
    violations = final.get("violations")
    if (
        not isinstance(exit_code, int)
        or not isinstance(errors, list)
        or not isinstance(violations, list)
    ):
        raise CollectionError("test collection failed (no exit record)", tail_lines(run))
    if violations:
        shown = [one_line(_text(v, "(not a message)")) for v in violations[:TAIL_LINES]]
        raise NetworkAtCollection("test collection tried to reach the network", shown)
    file_errors: list[CollectError] = []
    for error in errors:
        nodeid = error.get("nodeid") if isinstance(error, dict) else None
        if not isinstance(nodeid, str) or not nodeid:
            # Not one file's error (pytest itself, a conftest at the root): no test of the
            # project can be told apart from another, so nothing can be selected.
            message = error.get("message") if isinstance(error, dict) else error
            detail = one_line(_text(message, "(not a message)"))
            raise CollectionError("pytest could not collect the tests", [detail])
        missing = error.get("missing")
        file_errors.append(
            CollectError(
                # A class that does not collect (a bad parametrize inside it) is its
                # file's failure: the file stands in the slice by its own id.
                file_part(nodeid),
                one_line(_text(error.get("message"), "") or "collection error"),
                missing if isinstance(missing, str) else None,
            )
        )
    # With collection errors pytest stops before running (exit 2, "interrupted"): expected.
    if exit_code not in _OK_EXITS and not (file_errors and exit_code == 2):
        raise CollectionError(f"pytest collection exited with {exit_code}", tail_lines(run))
    nodeids: list[str] = []
    for record in items:
        nodeid = record.get("nodeid")
        if not isinstance(nodeid, str) or set(record) != {"nodeid"}:
            raise CollectionError("test collection failed (a malformed node id record)")
        nodeids.append(nodeid)
    plugins = final.get("plugins")
    plugin_files = [p for p in plugins if isinstance(p, str)] if isinstance(plugins, list) else []
    return tuple(nodeids), tuple(file_errors), tuple(sorted(plugin_files))
