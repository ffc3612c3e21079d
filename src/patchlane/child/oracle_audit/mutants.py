"""Mutants of the code under test, and a property re-run against each of them.

A mutant is one small change to one function's AST (a comparison, arithmetic, boolean,
constant or return mutation), compiled in the function's own module and swapped in as the
function's ``__code__``: every reference to the function, including a
``from billing import apply_refund`` made before the swap, runs the mutant. A property
that still passes against a mutant did not notice the change; one that notices no mutant
at all checks nothing.

Everything here runs inside the property lane's child process: the mutants execute
patched (untrusted) code with the same isolation as the property itself, and each run is
bounded by an ``ITIMER_REAL`` timer so that a mutant that loops forever costs at most its
timeout.

The parts: ``mutations`` (the changes a function's AST admits, and applying one),
``recompile`` (``MutableFunction``: a live function rebuilt from its source, and its
mutants) and this module (which mutants a run tries, and running the property against
them under the timer). Callers import from here: it re-exports what they use.
"""

from __future__ import annotations

import math
import signal
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from patchlane.child.oracle_audit.astnorm import qualified_name
from patchlane.child.oracle_audit.mutations import KINDS, Unmutatable
from patchlane.child.oracle_audit.recompile import MutableFunction, Mutant

__all__ = [
    "KINDS",
    "MutableFunction",
    "Mutant",
    "MutantOutcome",
    "MutationRun",
    "Unmutatable",
    "plan_mutants",
    "prepare",
    "run_mutants",
    "select_mutants",
]

# After the first expiry the timer keeps firing at this period, so that a mutant whose
# code swallows one timeout (a bare ``except:`` in a loop) is interrupted again.
_REFIRE_S = 0.05
# A caller's timer that fell due while mutants ran is re-armed to fire at once.
_MIN_REARM_S = 0.001


class _MutantTimeout(BaseException):
    """Raised by the alarm handler inside a mutant's run; never escapes this module.

    A ``BaseException`` so that ``except Exception`` in the property or the code under
    test does not swallow it.
    """


@dataclass(frozen=True)
class MutantOutcome:
    """What the property did against one mutant.

    ``status`` is ``killed`` (the property raised; ``detail`` names the exception),
    ``timeout`` (the run exceeded its timeout) or ``survived`` (the property passed).
    """

    mutant: Mutant
    status: str
    detail: str = ""

    @property
    def killed(self) -> bool:
        """Return whether the property caught this mutant (raised or timed out)."""
        return self.status != "survived"


@dataclass(frozen=True)
class MutationRun:
    """All outcomes of one property against the selected mutants.

    ``notes`` say what was not mutated and why (no source, a wrapper, no timer, ...).
    """

    outcomes: tuple[MutantOutcome, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def functions(self) -> tuple[str, ...]:
        """Return the names of the functions whose mutants ran, in mutant order."""
        return tuple(dict.fromkeys(o.mutant.function for o in self.outcomes))

    @property
    def tried(self) -> int:
        """Return the number of mutants the property ran against."""
        return len(self.outcomes)

    @property
    def killed(self) -> int:
        """Return the number of mutants the property caught."""
        return sum(1 for outcome in self.outcomes if outcome.killed)

    @property
    def survivors(self) -> tuple[str, ...]:
        """Return the descriptions of the mutants the property did not catch."""
        return tuple(o.mutant.description for o in self.outcomes if not o.killed)


def prepare(called: Sequence[types.FunctionType]) -> tuple[list[MutableFunction], list[str]]:
    """Return the mutable functions among ``called`` (sorted by name, each code once) and
    notes naming the ones left out and why."""
    functions: list[MutableFunction] = []
    notes: list[str] = []
    seen: set[types.CodeType] = set()
    for func in called:
        if not isinstance(func, types.FunctionType):
            notes.append(f"{func!r}: not mutated: not a Python function")
            continue
        if func.__code__ in seen:
            continue
        seen.add(func.__code__)
        try:
            functions.append(MutableFunction(func))
        except Unmutatable as exc:
            notes.append(f"{qualified_name(func)}: not mutated: {exc}")
    functions.sort(key=lambda f: (f.name, f.original.co_filename, f.original.co_firstlineno))
    return functions, notes


def select_mutants(mutants: Sequence[Mutant], limit: int) -> list[Mutant]:
    """Return at most ``limit`` of ``mutants``, spread fairly, in their original order.

    Functions take turns (in order of first appearance) and each function's turn takes
    its next kind in ``KINDS`` rotation, so a small budget still covers every function
    and every kind of mutation before it spends a second mutant on any of them.
    """
    if limit <= 0:
        return []
    if len(mutants) <= limit:
        return list(mutants)
    # Positions into ``mutants``, queued per function and kind in their original order.
    queues: dict[str, dict[str, deque[int]]] = {}
    for position, mutant in enumerate(mutants):
        by_kind = queues.setdefault(mutant.function, {kind: deque() for kind in KINDS})
        by_kind[mutant.kind].append(position)
    cursor = dict.fromkeys(queues, 0)
    picked: set[int] = set()
    while len(picked) < limit:
        for function, by_kind in queues.items():
            if len(picked) == limit:
                break
            for step in range(len(KINDS)):
                turn = (cursor[function] + step) % len(KINDS)
                queue = by_kind[KINDS[turn]]
                if queue:
                    picked.add(queue.popleft())
                    cursor[function] = turn + 1
                    break
    return [mutant for position, mutant in enumerate(mutants) if position in picked]


def plan_mutants(
    called: Sequence[types.FunctionType], limit: int
) -> tuple[list[Mutant], list[str]]:
    """Return the mutants a run with this ``limit`` tries, and notes on what was left out."""
    functions, notes = prepare(called)
    every = [mutant for function in functions for mutant in function.mutants()]
    return select_mutants(every, limit), notes


# This module's frames, as the alarm handler sees them (the compiler's own spelling). The
# handler never raises in them, so what runs while armed on our side (``_run_bounded``,
# ``_describe``) must stay in this module.
_THIS_FILE = (lambda: None).__code__.co_filename


class _Alarm:
    """The ``SIGALRM`` handler for mutant runs.

    It raises ``_MutantTimeout`` only while armed and never inside this module's own
    frames, so the bookkeeping that restores ``__code__`` cannot be interrupted by it.
    """

    def __init__(self) -> None:
        self.armed = False
        self.fired = False

    def handler(self, signum: int, frame: types.FrameType | None) -> None:
        """Record the expiry; raise ``_MutantTimeout`` unless disarmed or in this module."""
        if not self.armed:
            return
        self.fired = True
        if frame is not None and frame.f_code.co_filename == _THIS_FILE:
            return  # the timer fires again after _REFIRE_S if the run goes on
        raise _MutantTimeout


def _timer_unavailable() -> str | None:
    if not (hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")):
        return "this platform has no interval timer (SIGALRM) to bound a mutant's run"
    if threading.current_thread() is not threading.main_thread():
        return "the per-mutant timeout needs SIGALRM, which only the main thread receives"
    if signal.getsignal(signal.SIGALRM) is None:
        return "the current SIGALRM handler was not installed from Python and could not be restored"
    return None


def _describe(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()
    first = message[0] if message else ""
    if len(first) > 100:
        first = first[:97] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _run_bounded(
    prop: Callable[[], None],
    func: types.FunctionType,
    code: types.CodeType,
    alarm: _Alarm,
    budget: float,
) -> tuple[str, str]:
    """Run ``prop`` with ``func`` running ``code``, for at most ``budget`` seconds.

    Returns ``(status, detail)``: ``survived`` (it passed), ``killed`` (it raised:
    ``detail`` names the exception) or ``timeout``. ``func``'s own code is back in place
    when this returns or raises (``KeyboardInterrupt`` is the only exception let through).
    """
    original = func.__code__
    alarm.fired = False
    detail: str | None = None
    try:
        func.__code__ = code
        alarm.armed = True
        signal.setitimer(signal.ITIMER_REAL, budget, _REFIRE_S)
        prop()
    except _MutantTimeout:
        pass  # alarm.fired says so
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - anything the property raises kills the mutant
        detail = _describe(exc)
    finally:
        # Only this module's frames run here, so the alarm cannot interrupt the restore.
        alarm.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        func.__code__ = original
    if alarm.fired:
        return "timeout", f"exceeded {budget:g} s"
    if detail is not None:
        return "killed", detail
    return "survived", ""


def run_mutants(
    prop: Callable[[], None],
    called: Sequence[types.FunctionType],
    *,
    limit: int,
    per_mutant_timeout_s: float,
    deadline: float = math.inf,
) -> MutationRun:
    """Run ``prop`` once against each selected mutant of the ``called`` functions, until
    ``deadline`` (``time.monotonic``): mutants past it are not tried, and a note says so.

    Returns every outcome (in mutant order) with notes on functions or mutants left out.
    Each function's original ``__code__`` is restored after each run, whatever the
    property did. The caller's ``SIGALRM`` handler and ``ITIMER_REAL`` timer are paused
    and restored (a timer that fell due meanwhile fires right after; its deadline also
    caps the mutant runs). Must run in the main thread for the timeout; elsewhere nothing
    is run and a note says so. Raises ``ValueError`` for a negative ``limit`` or a
    non-positive timeout.
    """
    if limit < 0:
        raise ValueError(f"mutants limit must be >= 0, not {limit}")
    if not per_mutant_timeout_s > 0:
        raise ValueError(f"per-mutant timeout must be > 0, not {per_mutant_timeout_s}")
    if limit == 0:
        return MutationRun()
    selected, notes = plan_mutants(called, limit)
    if not selected:
        return MutationRun(notes=tuple(notes))
    reason = _timer_unavailable()
    if reason is not None:
        return MutationRun(notes=(*notes, f"mutation skipped: {reason}"))
    previous_handler = signal.getsignal(signal.SIGALRM)
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, 0)
    outer_deadline = time.monotonic() + previous_delay if previous_delay > 0 else math.inf
    timer_deadline = outer_deadline
    outer_deadline = min(outer_deadline, deadline)
    alarm = _Alarm()
    outcomes: list[MutantOutcome] = []
    signal.signal(signal.SIGALRM, alarm.handler)
    try:
        # A baseline run first: the property must pass unmutated within the timeout, or a
        # mutant's failure or timeout would be the property's own (slow, flaky), not a kill.
        baseline = selected[0].target
        budget = min(per_mutant_timeout_s, outer_deadline - time.monotonic())
        if budget <= 0:
            notes.append(_stopped(timer_deadline, deadline))
            selected = []
            status, detail = "survived", ""
        else:
            status, detail = _run_bounded(prop, baseline.func, baseline.original, alarm, budget)
        if status != "survived":
            reason = f"failed: {detail}" if status == "killed" else f"took longer than {budget:g} s"
            notes.append(f"mutation skipped: the property, unmutated, {reason}")
            selected = []
        for mutant in selected:
            budget = min(per_mutant_timeout_s, outer_deadline - time.monotonic())
            if budget <= 0:
                notes.append(_stopped(timer_deadline, deadline))
                break
            try:
                code = mutant.target.compile_mutant(mutant.change)
            except Unmutatable as exc:
                notes.append(f"{mutant.description}: skipped: {exc}")
                continue
            status, detail = _run_bounded(prop, mutant.target.func, code, alarm, budget)
            if status == "timeout" and budget < per_mutant_timeout_s:
                notes.append(_stopped(timer_deadline, deadline))
                break
            outcomes.append(MutantOutcome(mutant, status, detail))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay > 0:
            remaining = outer_deadline - time.monotonic()
            signal.setitimer(signal.ITIMER_REAL, max(remaining, _MIN_REARM_S), previous_interval)
    return MutationRun(tuple(outcomes), tuple(notes))


def _stopped(timer_deadline: float, deadline: float) -> str:
    """Why the mutant runs stopped before the last one: the audit's budget or the caller's
    own timer, whichever fell due first."""
    if deadline <= timer_deadline:
        return "mutation stopped early: the audit's time budget ran out"
    return "mutation stopped early: the caller's own timer fell due"
