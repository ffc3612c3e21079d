"""Run exactly a slice's node ids with pytest on the host and build the receipt.

pytest runs in a child process in its own session from the repository root, with the node ids
passed through an argument file (``@FILE``, pytest 8.2+: a long slice never meets the kernel's
argument limit) and per-node outcomes written by patchlane's plugin (``--patchlane-results``).
Only an outcome of ``passed`` counts as passed: a node that fails, errors, is not collected, is
deselected, xfails or skips for any reason but a granted freeze is failed. On the wall-clock
timeout the whole process group is killed and every node without a written result is failed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import patchlane
from patchlane.jsonio import loads_strict
from patchlane.lanes.replay.receipt import Receipt, utc_stamp

# What the results file may say about a node (see pytest_plugin._Results).
_OUTCOMES = frozenset({"passed", "failed", "skipped", "error", "xfailed", "xpassed", "not_run"})
# pytest exit codes after which per-node results are believed: 0 all passed, 1 some failed,
# 5 nothing collected. Any other (interrupted, internal error, usage error) means the session
# did not finish normally, so even a "passed" it wrote is not evidence.
_NORMAL_EXITS = frozenset({0, 1, 5})
_TAIL = 64 * 1024
_DROPPED_ENV = frozenset({"PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"})


@dataclass(frozen=True)
class RunResult:
    """One slice run: the receipt (unsigned), pytest's last exit code (``None`` when killed on
    the timeout or never started), whether it timed out, and the tail of pytest's output."""

    receipt: Receipt
    returncode: int | None
    timed_out: bool
    output_tail: bytes


def pytest_argv(
    results: Path, args_file: Path, repo: Path, freeze: tuple[Path, Path] | None
) -> list[str]:
    """Return the pytest command line (``freeze`` is ``(report, skip record)`` or ``None``).

    ``--continue-on-collection-errors``: one test file that does not import must fail its own
    node ids, not stop the whole slice.
    """
    argv = [
        sys.executable, "-m", "pytest",
        "-p", "no:cacheprovider", "-p", "no:randomly",
        f"--rootdir={repo}",  # node ids are relative to the rootdir, which is the repo root
        "-q", "--no-header", "--continue-on-collection-errors",
        f"--patchlane-results={results}",
    ]  # fmt: skip
    if freeze is not None:
        argv += [f"--patchlane-freeze-report={freeze[0]}", f"--patchlane-skip-record={freeze[1]}"]
    argv.append(f"@{args_file}")
    return argv


def child_env(seed: int) -> dict[str, str]:
    """Return pytest's environment: the host's, with the seed pinned and without the variables
    that would change which tests run or how, or keep patchlane's own plugin from loading."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env["PYTHONHASHSEED"] = str(seed)
    env["PATCHLANE_SEED"] = str(seed)
    return env


def run_slice(
    repo: Path,
    nodeids: Sequence[str],
    slice_sha256: str,
    *,
    seed: int,
    head: str | None,
    host_role: str,
    freeze_report: Path | None,
    timeout_s: float,
) -> RunResult:
    """Run ``nodeids`` with pytest in ``repo`` and return the (unsigned) receipt.

    ``nodeids`` must be a parsed, non-empty slice (pytest given no node id would run the whole
    suite). Never raises for anything pytest or the tests do; raises ``OSError`` only when the
    child cannot be started.
    """
    if not nodeids:
        raise ValueError("an empty slice: nothing to run")
    started = utc_stamp()
    deadline = time.monotonic() + timeout_s
    env = child_env(seed)
    outcomes: dict[str, str] = {}
    frozen: frozenset[str] = frozenset()
    returncode: int | None = None
    timed_out = False
    with tempfile.TemporaryDirectory(prefix="patchlane-replay-") as tmp:
        work = Path(tmp)
        log = work / "pytest.log"
        # pytest refuses a whole run when one node id names nothing ("not found", exit 4), so
        # the slice's files are collected first and only node ids that exist are run; the
        # others are failed as not collected.
        present, returncode = _collect(repo, nodeids, work, env, log, deadline)
        if present is None:
            timed_out = True
        elif present:
            args_file = _args_file(work / "run.args", present)
            results = work / "results.json"
            record = work / "skip-record.json"
            freeze = None if freeze_report is None else (freeze_report.absolute(), record)
            argv = pytest_argv(results, args_file, repo, freeze)
            returncode, timed_out = _run(argv, repo, env, log, deadline)
            if returncode in _NORMAL_EXITS:
                outcomes = _read_outcomes(results)
            if freeze is not None:
                frozen = _read_skipped(record)
        finished = utc_stamp()
        tail = _tail(log)
    passed, failed, skipped = classify(nodeids, outcomes, frozen)
    receipt = Receipt(
        seed=seed,
        slice_sha256=slice_sha256,
        failed_nodeids=failed,
        skipped_by_freeze=skipped,
        host_role=host_role,
        passed_nodeids=passed,
        head=head,
        started=started,
        finished=finished,
        patchlane_version=patchlane.__version__,
    )
    return RunResult(receipt, returncode, timed_out, tail)


def classify(
    nodeids: Sequence[str], outcomes: Mapping[str, str], frozen: frozenset[str]
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Return ``(passed, failed, skipped_by_freeze)``, each sorted.

    Passed: the outcome is exactly ``passed``. Skipped by freeze: the outcome is ``skipped`` and
    the plugin's skip record says it skipped that node for its freeze. Everything else, a node
    without an outcome included, is failed.
    """
    passed, failed, skipped = [], [], []
    for nodeid in nodeids:
        outcome = outcomes.get(nodeid)
        if outcome == "passed":
            passed.append(nodeid)
        elif outcome == "skipped" and nodeid in frozen:
            skipped.append(nodeid)
        else:
            failed.append(nodeid)
    return tuple(sorted(passed)), tuple(sorted(failed)), tuple(sorted(skipped))


def _args_file(path: Path, lines: Sequence[str]) -> Path:
    """Write pytest's ``@FILE``: one argument per line (slice paths never start with '@' or '-')."""
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def _collect(
    repo: Path, nodeids: Sequence[str], work: Path, env: dict[str, str], log: Path, deadline: float
) -> tuple[list[str] | None, int | None]:
    """Return ``(the slice's node ids that pytest collects, in slice order, or None on the
    timeout; pytest's exit code, None when it did not run or was killed)``.

    Only the files the slice names and that exist are collected (a missing file, like a missing
    node id, would stop the run).
    """
    files = sorted({n.partition("::")[0] for n in nodeids})
    files = [f for f in files if (repo / f).is_file()]
    if not files:
        return [], None
    results = work / "collected.json"
    argv = [*pytest_argv(results, _args_file(work / "collect.args", files), repo, None)]
    argv.insert(-1, "--collect-only")
    returncode, timed_out = _run(argv, repo, env, log, deadline)
    if timed_out:
        return None, None
    if returncode not in _NORMAL_EXITS:
        return [], returncode
    collected = {n for n, outcome in _read_outcomes(results).items() if outcome == "not_run"}
    return [n for n in nodeids if n in collected], returncode


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], log: Path, deadline: float
) -> tuple[int | None, bool]:
    """Run ``argv`` in its own session; return ``(exit code or None, timed out)``.

    The whole process group is killed when the child exits (a test's stray grandchild must not
    outlive the run) and on the timeout. The exit is seen without reaping (``WNOWAIT``), so the
    group id cannot have been reused by the time it is killed.
    """
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    timed_out = False
    try:
        while not _exited(proc.pid):
            if time.monotonic() >= deadline:
                timed_out = True
                break
            time.sleep(0.05)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return (None if timed_out else proc.returncode), timed_out


def _exited(pid: int) -> bool:
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _read_outcomes(path: Path) -> dict[str, str]:
    """Read the plugin's results file; anything but a well-formed one counts as no results."""
    try:
        value = loads_strict(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(v, str) and v in _OUTCOMES}


def _read_skipped(path: Path) -> frozenset[str]:
    """Read the freeze plugin's skip record: the node ids it skipped for a granted freeze."""
    try:
        value = loads_strict(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return frozenset()
    skipped = value.get("skipped") if isinstance(value, dict) else None
    if not isinstance(skipped, list):
        return frozenset()
    return frozenset(
        s["nodeid"] for s in skipped if isinstance(s, dict) and isinstance(s.get("nodeid"), str)
    )


def _tail(log: Path) -> bytes:
    try:
        data = log.read_bytes()
    except OSError:
        return b""
    return data[-_TAIL:]
