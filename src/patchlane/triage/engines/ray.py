"""The ``ray`` engine (``patchlane triage --tasks … --engine ray``): the same worker
functions as the local engine (``triage.work.prepare`` and ``triage.work.gate_pair``), run as
Ray tasks on a cluster: one started for the run on this machine, or an existing one
(``--address`` / ``RAY_ADDRESS``).

Per base, one task prepares it (checkout, environment, dependency map) and returns the
``Prepared`` with the Ray node it ran on; then one task per pair, pinned to that node (the
checkout, environment and map live there) and given the ``Prepared`` as an object
reference, gates the pair and returns its ``PairResult`` with the evidence as bytes. The
driver takes results as they finish (``ray.wait``) and reports each one.

Ray's own retries are the retry (``max_retries=1``: a task whose worker died runs again;
``retry_exceptions``: one that raised runs again; a pair whose gate came back as an
infrastructure failure raises on its first attempt so that Ray runs it again). A pair whose
task fails twice, or whose base could not be prepared, becomes an infrastructure
``undecided``; one unit's failure never stops the others.

The patch's code never runs as Ray task code: ``gate_pair`` runs the gate as a child
process, and the gate runs the patch's code in its sandboxed children, as on the local
engine. Ray is imported here only, and this module only when ``--engine ray`` is asked;
Ray's untyped surface stays behind the few helpers below.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import logging
import os
import shutil
import signal
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchlane import __version__
from patchlane.errors import Exit, PatchlaneError, UsageError
from patchlane.triage.units import (
    BaseEvent,
    BaseSpec,
    Pair,
    PairResult,
    Prepared,
    Report,
    RunPlan,
    Unit,
    content_key,
    infra_result,
)

INSTALL_HINT = "--engine ray needs Ray: pip install 'patchlane[ray]'"

# The logger of Ray's token set-up (ray._private): only its warning is silenced.
_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"

# Longest infrastructure reason kept (Ray's errors carry whole tracebacks; a row has one line).
_REASON_CHARS = 300


class EngineFailed(PatchlaneError):
    """The Ray cluster could not be started or reached (the engine's own failure)."""


class WorkerMismatch(PatchlaneError):
    """A Ray worker's patchlane is not the driver's version."""


class _RetryPair(Exception):
    """Raised by a pair's task on its first attempt when the gate came back as an
    infrastructure failure, so that Ray's ``retry_exceptions`` runs it once more."""


def load_ray() -> Any:
    """Return the ``ray`` module; raises ``UsageError`` (one line: how to install the extra)
    when Ray is not installed."""
    try:
        return importlib.import_module("ray")
    except ImportError as error:
        raise UsageError(INSTALL_HINT) from error


class RayEngine:
    """Runs units as Ray tasks: on the cluster at ``address`` (``None``: ``RAY_ADDRESS``,
    else a local cluster started for the run with ``plan.jobs`` CPUs). Making one raises
    ``UsageError`` when Ray is not installed."""

    name = "ray"

    def __init__(self, address: str | None = None) -> None:
        self.address = address
        self._ray = load_ray()

    def run(self, units: Sequence[Unit], plan: RunPlan, report: Report) -> None:
        """Prepare each unit's base in a task, gate its pairs in tasks pinned to that base's
        node, and ``report`` a ``BaseEvent`` per base and one ``PairResult`` per pair as
        they finish. Raises ``EngineFailed`` when the cluster cannot be started or reached."""
        ray = self._ray
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        _connect(ray, address, plan.jobs)
        try:
            _Run(ray, plan, report).drive(units)
        finally:
            ray.shutdown()


def _connect(ray: Any, address: str | None, jobs: int) -> None:
    """Connect to the cluster at ``address``, or start a local one with ``jobs`` CPUs;
    raises ``EngineFailed``."""
    # Ray asks before sending usage statistics; a gate run sends none.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
    try:
        if address is None:
            # "local": a new cluster of our own even when RAY_ADDRESS is set to "" or "auto".
            # Token authentication is Ray's default for a new local cluster, which it warns
            # about on every start; kept, and said without the warning.
            logging.getLogger(_AUTH_LOGGER).setLevel(logging.ERROR)
            ray.init(
                address="local",
                num_cpus=jobs,
                include_dashboard=False,
                **quiet,
            )
        else:
            ray.init(address=address, **quiet)
    except Exception as error:
        where = "start a local Ray cluster" if address is None else f"reach Ray at {address}"
        raise EngineFailed(f"--engine ray: cannot {where}: {_first_line(error)}") from error


def _first_line(error: BaseException) -> str:
    """Return the first non-empty line of ``error``'s message, cut to a row's length."""
    text = str(error).strip().splitlines()
    line = text[0] if text else type(error).__name__
    return line[:_REASON_CHARS]


def _failure(error: BaseException, what: str) -> tuple[str, int]:
    """Return the reason and exit code for a task that failed twice with ``error``, as the
    local engine words them: the task's own ``PatchlaneError`` (``SetupFailed``) is ``what``
    failed; another exception of the task's (``RayTaskError.cause``) is a bug in patchlane
    (exit 4); else Ray's own error (a worker that died, out of memory, a node lost)."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, PatchlaneError):
        return f"infrastructure: {what} failed: {_first_line(cause)}", int(Exit.UNDECIDED)
    if isinstance(cause, BaseException):
        bug = f"internal error (a bug in patchlane {__version__}): {type(cause).__name__}"
        return f"infrastructure: {bug}: {_first_line(cause)}", int(Exit.INTERNAL)
    return f"infrastructure: {type(error).__name__}: {_first_line(error)}", int(Exit.UNDECIDED)


# --- what runs on a Ray worker (module-level, so Ray finds them by name) ---------------------


def prepare_task(spec: BaseSpec, plan: RunPlan, version: str) -> Prepared:
    """Prepare ``spec`` on this worker's node; returns the ``Prepared`` naming the Ray node.
    Raises ``WorkerMismatch`` when this node's patchlane is not the driver's, and what
    ``work.prepare`` raises (``SetupFailed``)."""
    if version != __version__:
        raise WorkerMismatch(
            f"the Ray worker has patchlane {__version__}, the driver {version}: install patchlane {version} on every node"
        )
    from patchlane.triage import work

    ray = importlib.import_module("ray")
    prepared = work.prepare(spec, plan)
    return dataclasses.replace(prepared, node=str(ray.get_runtime_context().get_node_id()))


def gate_task(prepared: Prepared, pair: Pair, plan: RunPlan, marks: str) -> PairResult:
    """Gate ``pair`` on the node where ``prepared`` lives; returns its ``PairResult`` with
    ``attempts`` counted on this node (``marks``: this run's folder of attempt marks).
    Raises ``_RetryPair`` on a first attempt whose gate was an infrastructure failure."""
    from patchlane.triage import work

    attempt = _mark_attempt(Path(marks), pair.name)
    if attempt > 1:
        _stop_leftovers(plan.work_dir, pair.key)
    result = work.gate_pair(prepared, pair, plan)
    if result.infra and attempt == 1:
        raise _RetryPair(result.reason)
    # Done: Ray runs the task no more, and the work dir keeps no mark of it.
    (Path(marks) / _mark_name(pair.name)).unlink(missing_ok=True)
    return dataclasses.replace(result, attempts=attempt)


def _mark_attempt(marks: Path, name: str) -> int:
    """Return this attempt's number for the pair ``name`` (1, then 2 when a mark of an
    earlier attempt is there): Ray retries a task without telling it, and the retry of a
    pinned task runs on the same node, so a file there counts."""
    marks.mkdir(parents=True, exist_ok=True)
    mark = marks / _mark_name(name)
    try:
        mark.touch(exist_ok=False)
    except FileExistsError:
        return 2
    return 1


def _mark_name(name: str) -> str:
    """Return the file name of the pair ``name``'s attempt mark (names are unique in a run)."""
    return content_key(name)[:32]


def _stop_leftovers(work_dir: str, key: str) -> None:
    """Kill the gate an earlier attempt of the pair ``key`` left running on this node, and
    remove its folder. ``gate_pair`` starts the gate in a session of its own (so that its
    timeout kills the whole group): when the worker dies (SIGKILL, out of memory) nothing
    stops that gate, which would run on beside the retry. It is found by its command line,
    which names the pair's folder (``<work_dir>/pairs/<key[:12]>-…``), and told from a live
    gate of another pair with the same key by its parent: no longer a Ray worker. Linux's
    /proc; elsewhere nothing is found."""
    pairs = Path(work_dir).absolute() / "pairs"
    for entry in Path("/proc").iterdir():
        leftover = _leftover_folder(entry, pairs, key) if entry.name.isdigit() else None
        if leftover is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(entry.name), signal.SIGKILL)
            shutil.rmtree(pairs / leftover, ignore_errors=True)


def _leftover_folder(proc: Path, pairs: Path, key: str) -> str | None:
    """Return the name of the folder under ``pairs`` that the process ``proc`` names when
    it leads its own process group, the folder is the pair ``key``'s and its parent is not
    a Ray worker (its worker died); else ``None``."""
    under = os.fsencode(pairs) + b"/"
    try:
        argv = (proc / "cmdline").read_bytes().split(b"\0")
        ppid, pgid = (int(x) for x in (proc / "stat").read_text().rsplit(")", 1)[1].split()[1:3])
        parent = Path(f"/proc/{ppid}/cmdline").read_bytes() if ppid > 1 else b""
    except (OSError, ValueError):
        return None
    if pgid != int(proc.name) or parent.startswith(b"ray::"):
        return None
    for arg in argv:
        if arg.startswith(under):
            folder = os.fsdecode(arg[len(under) :]).split("/")[0]
            if folder.startswith(f"{key[:12]}-"):
                return folder
    return None


# --- the driver ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _BaseTask:
    unit: Unit


@dataclass(frozen=True)
class _PairTask:
    pair: Pair
    started: float


class _Run:
    """One run's tasks in flight: base preparations, then their pairs."""

    def __init__(self, ray: Any, plan: RunPlan, report: Report) -> None:
        self.ray = ray
        self.plan = plan
        self.report = report
        self.plan_ref = ray.put(plan)
        # Each run marks its attempts apart: a rerun with the same work dir starts at 1.
        self.marks = str(Path(plan.work_dir) / "ray-attempts" / uuid.uuid4().hex)
        options = {"num_cpus": 1, "max_retries": 1, "retry_exceptions": True}
        self.prepare = ray.remote(**options)(prepare_task)
        self.gate = ray.remote(**options)(gate_task)
        self.pending: dict[Any, _BaseTask | _PairTask] = {}

    def drive(self, units: Sequence[Unit]) -> None:
        """Submit every base's preparation, then each pair as its base is ready; report
        every result as it finishes, until none is in flight."""
        for unit in units:
            if unit.pairs:
                ref = self.prepare.remote(unit.base, self.plan_ref, __version__)
                self.pending[ref] = _BaseTask(unit)
        while self.pending:
            ready, _ = self.ray.wait(list(self.pending), num_returns=1)
            for ref in ready:
                task = self.pending.pop(ref)
                if isinstance(task, _BaseTask):
                    self._base_done(ref, task.unit)
                else:
                    self._pair_done(ref, task)

    def _base_done(self, ref: Any, unit: Unit) -> None:
        """Report the base's preparation; on success submit its pairs to its node, given the
        ``Prepared`` by reference; on failure report each pair as infrastructure."""
        try:
            prepared: Prepared = self.ray.get(ref)
        except Exception as error:  # noqa: BLE001 - a failed preparation is a row, never an abort
            reason, _ = _failure(error, "set-up")
            self.report(BaseEvent(unit.base.key, "", 0.0, reason))
            for pair in unit.pairs:
                self.report(infra_result(pair, reason, attempts=2))
            return
        self.report(BaseEvent(unit.base.key, prepared.node, prepared.seconds, None))
        strategy = _pinned(prepared.node)
        for pair in unit.pairs:
            task = self.gate.options(scheduling_strategy=strategy)
            pair_ref = task.remote(ref, pair, self.plan_ref, self.marks)
            self.pending[pair_ref] = _PairTask(pair, time.monotonic())

    def _pair_done(self, ref: Any, task: _PairTask) -> None:
        """Report the pair's result, or its infrastructure row when its task failed twice."""
        try:
            result: PairResult = self.ray.get(ref)
        except Exception as error:  # noqa: BLE001 - a lost worker is the pair's row
            seconds = time.monotonic() - task.started
            reason, code = _failure(error, "the gate")
            result = infra_result(task.pair, reason, 2, seconds, code)
        self.report(result)


def _pinned(node: str) -> Any:
    """Return the scheduling strategy that runs a task on ``node`` and nowhere else: the
    base's checkout, environment and map are there."""
    strategies = importlib.import_module("ray.util.scheduling_strategies")
    return strategies.NodeAffinitySchedulingStrategy(node_id=node, soft=False)
