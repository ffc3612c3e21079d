"""Collect a materialised tree's test node ids with pytest, in an isolated child.

Collection imports the project's test modules, which is running the patch's code: it gets
the property lane's isolation (``lanes.property.process``): its own process group killed on
exit or timeout, a minimal environment, a network namespace when one can be made, an audit
hook that refuses network access, and results only from the token-carrying result channel.
"""

from __future__ import annotations

import secrets
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import PatchlaneError
from patchlane.lanes.property import process
from patchlane.ui import one_line

CHILD_ARGV = (sys.executable, "-s", "-P", "-B", "-X", "utf8", "-m")
CHILD_MODULE = "patchlane.lanes.replay.collect_child"
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


@dataclass(frozen=True)
class Collected:
    """What pytest collected: the node ids in collection order and the isolation used."""

    nodeids: tuple[str, ...]
    network: str
    seconds: float


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
        f"--rootdir={root}",
        *test_paths,
    ]


def collect(
    root: Path, test_paths: Sequence[str], *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> Collected:
    """Collect the tests under ``test_paths`` (repository paths that exist in ``root``).

    Returns the node ids pytest collected (no paths at all: nothing). Raises
    ``CollectionError`` when the child times out, breaks the result protocol, is caught by
    the sandbox, or pytest reports collection errors.
    """
    paths = [p.rstrip("/") or "." for p in test_paths]
    if not paths:
        return Collected((), "none", 0.0)
    layers = process.isolation()
    argv = (*layers.prefix, *CHILD_ARGV, CHILD_MODULE)
    with tempfile.TemporaryDirectory(prefix="patchlane-collect-home-") as home:
        try:
            run = process.run_child(
                argv,
                {"args": pytest_args(root, paths)},
                token=secrets.token_hex(16),
                timeout_s=timeout_s,
                cwd=root,
                env=process.minimal_env(Path(home)),
            )
        except OSError as e:
            raise CollectionError(f"pytest could not be started: {e.strerror or e}") from e
    return Collected(_judge(run, timeout_s), layers.network, run.seconds)


def _tail(run: process.ChildRun) -> list[str]:
    # The project's bytes: each line escaped into one printable line of ours.
    text = (run.stdout_tail + b"\n" + run.stderr_tail).decode("utf-8", "replace")
    lines = [one_line(line.strip()) for line in text.splitlines() if line.strip()]
    return lines[-TAIL_LINES:]


def _judge(run: process.ChildRun, timeout_s: float) -> tuple[str, ...]:
    """Return the node ids of a finished child, or raise ``CollectionError``."""
    if run.timed_out:
        raise CollectionError(f"test collection timed out after {timeout_s:g} s", _tail(run))
    if run.problems or run.done_count is None or run.done_count != len(run.records):
        why = run.problems[0] if run.problems else "the child ended without its final line"
        raise CollectionError(f"test collection failed ({why})", _tail(run))
    *items, final = run.records or ({},)
    exit_code = final.get("exit")
    errors = final.get("errors")
    violations = final.get("violations")
    if (
        not isinstance(exit_code, int)
        or not isinstance(errors, list)
        or not isinstance(violations, list)
    ):
        raise CollectionError("test collection failed (no exit record)", _tail(run))
    if violations:
        shown = [one_line(str(v)) for v in violations[:TAIL_LINES]]
        raise CollectionError("test collection tried to reach the network", shown)
    if errors:
        shown = [one_line(str(e)) for e in errors[:TAIL_LINES]]
        raise CollectionError(f"pytest could not collect {len(errors)} file(s)", shown)
    if exit_code not in _OK_EXITS:
        raise CollectionError(f"pytest collection exited with {exit_code}", _tail(run))
    nodeids: list[str] = []
    for record in items:
        nodeid = record.get("nodeid")
        if not isinstance(nodeid, str) or set(record) != {"nodeid"}:
            raise CollectionError("test collection failed (a malformed node id record)")
        nodeids.append(nodeid)
    return tuple(nodeids)
