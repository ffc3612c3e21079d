"""The ``local`` engine: every unit on this machine, no server.

One thread pool of ``plan.jobs`` threads does both kinds of work: a unit's preparation
(``work.prepare``: its checkout, environment and dependency map, once) and, as soon as that
is ready, its pairs (``work.gate_pair``), each a child process of its own. The threads only
drive children, so a killed child is one pair's infrastructure failure, never the run's;
such a pair is gated once more. A preparation that fails is tried once more too; when it
fails again, every pair of that unit comes back ``undecided`` with the reason, and the other
units go on.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed

from patchlane import __version__
from patchlane.errors import Exit
from patchlane.infra.ui import one_line
from patchlane.triage.units import (
    BaseEvent,
    Pair,
    PairResult,
    Prepared,
    Report,
    RunPlan,
    Unit,
    infra_result,
)
from patchlane.triage.work import SetupFailed, gate_pair, prepare

# How often an infrastructure failure is tried: once, then once more.
ATTEMPTS = 2


class LocalEngine:
    """Runs units on this machine, ``plan.jobs`` pieces of work at a time."""

    name = "local"

    def run(self, units: Sequence[Unit], plan: RunPlan, report: Report) -> None:
        """Prepare each unit once and gate its pairs, calling ``report`` (one call at a
        time) with one ``BaseEvent`` per unit and one ``PairResult`` per pair. Raises
        nothing for a unit's or a pair's failure."""
        lock = threading.Lock()

        def said(event: BaseEvent | PairResult) -> None:
            with lock:
                report(event)

        with ThreadPoolExecutor(max_workers=plan.jobs, thread_name_prefix="tasks") as pool:
            prepared = {pool.submit(prepare_unit, u, plan): u for u in units}
            gates: list[Future[None]] = []
            for done in as_completed(prepared):
                unit = prepared[done]
                ready, event = done.result()
                said(event)
                for pair in unit.pairs:
                    if ready is None:
                        said(infra_result(pair, event.error or "preparation failed", ATTEMPTS))
                    else:
                        gates.append(pool.submit(_gate_and_say, ready, pair, plan, said))
            for gate in as_completed(gates):
                gate.result()


def prepare_unit(unit: Unit, plan: RunPlan) -> tuple[Prepared | None, BaseEvent]:
    """Prepare ``unit``'s base, once more after a failure; return what is ready (``None``
    after two failures) and the event to report. Raises nothing."""

    start = time.monotonic()
    error = "preparation failed"
    for _ in range(ATTEMPTS):
        try:
            ready = prepare(unit.base, plan)
        except SetupFailed as e:
            error = f"infrastructure: set-up failed: {one_line(str(e))}"
            continue
        except Exception as e:  # noqa: BLE001 - one base's failure never stops the run
            error = _internal(e)
            continue
        return ready, BaseEvent(ready.base_key, ready.node, ready.seconds, None)
    return None, BaseEvent(unit.base.key, _node(), time.monotonic() - start, error)


def gate_with_retry(prepared: Prepared, pair: Pair, plan: RunPlan) -> PairResult:
    """Gate ``pair``; an infrastructure failure is gated once more. Returns the last
    result with ``attempts`` set. Raises nothing: a bug in the worker is an ``undecided``
    row with exit code 4 (it is retried, and the run's exit code says a bug happened)."""

    result: PairResult | None = None
    for attempt in range(1, ATTEMPTS + 1):
        try:
            result = gate_pair(prepared, pair, plan)
        except Exception as e:  # noqa: BLE001 - one pair's failure never stops the run
            result = infra_result(pair, _internal(e), attempt, code=Exit.INTERNAL)
        result = _with_attempts(result, attempt)
        if not result.infra:
            break
    assert result is not None  # noqa: S101 - ATTEMPTS >= 1
    return result


def _gate_and_say(prepared: Prepared, pair: Pair, plan: RunPlan, said: Report) -> None:
    said(gate_with_retry(prepared, pair, plan))


def _with_attempts(result: PairResult, attempt: int) -> PairResult:
    return dataclasses.replace(result, attempts=attempt)


def _internal(e: Exception) -> str:
    return f"infrastructure: internal error (a bug in patchlane {__version__}): {type(e).__name__}: {e}"


def _node() -> str:
    return socket.gethostname()
