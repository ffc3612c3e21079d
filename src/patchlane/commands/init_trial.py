"""What ``patchlane init`` adopts as properties: only what holds at the base.

A property that fails at the untouched base fails at every head too, and makes every patch
``reject`` (docs/architecture.md §2: the environment's or the map's fault, never the patch's).
So before it proposes them, ``init`` runs its candidates (the property module, the
``@given`` tests it found) once, as the property lane runs them (``run_property_lane``: a
child per file, in the sandbox, the map's seed and case count), against the work tree it
scaffolds. It keeps what passed and leaves out, with one line each, what did not: a
``@given`` test that needs pytest fixtures or xunit setup (the lane calls a test without
pytest), one that fails, errors or times out there, a test file or module that does not
import. Left out is never counted as failed: nothing left out reaches the map.

The lane runs every ``prop_*`` function of a property module, so a module with one
property that fails at the base is left out whole; a test file is kept as a file when all
of its ``@given`` tests pass, else as the node ids of those that do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.formats.property_report import MODULE_LEVEL, PropertyReport
from patchlane.infra.ui import Output, one_line
from patchlane.project.config import DEFAULT_TIMEOUT_S, PropertyLane, ReplayLane, ReviewMap

# A failure message is the test's own text: one line of it is enough to say why.
MESSAGE_CHARS = 160
# What the child says of a test it cannot call without pytest (``child.pytests``).
UNSUPPORTED = "not supported as a property"


@dataclass(frozen=True)
class LeftOut:
    """One candidate not adopted (a node id, a test file, or a module) and why."""

    name: str
    why: str

    def line(self) -> str:
        """The line ``init`` prints for it."""
        return f"left out {self.name}: {self.why}"


@dataclass(frozen=True)
class Adopted:
    """What holds at the base: the property module (``None``: none, or left out), the
    ``lanes.property.tests`` entries (test files and node ids), and what was left out."""

    module: str | None
    tests: tuple[str, ...]
    left_out: tuple[LeftOut, ...]

    @property
    def any(self) -> bool:
        """Whether anything was adopted (else the code is judged by its tests alone)."""
        return self.module is not None or bool(self.tests)


def adopt(
    repo: Path,
    paths: tuple[str, ...],
    module: str | None,
    test_files: tuple[str, ...],
    *,
    seed: int,
    cases: int,
    out: Output,
) -> Adopted:
    """Run the candidates once at the work tree and return what holds (``Adopted``).

    ``paths`` are the code paths (the lane's ``paths``), ``module`` the property module's
    dotted name (or ``None``), ``test_files`` the test files with ``@given`` tests. What a
    candidate does (fail, error, hang, not import) is a reason to leave it out, never an
    error; raises what the property lane raises for its own input (``PatchlaneError``)."""
    if module is None and not test_files:
        return Adopted(None, (), ())
    report = _run(repo, paths, module, test_files, seed, cases, out)
    return _judge(report, module, test_files)


def _run(
    repo: Path,
    paths: tuple[str, ...],
    module: str | None,
    test_files: tuple[str, ...],
    seed: int,
    cases: int,
    out: Output,
) -> PropertyReport:
    """One property lane run of the candidates on the work tree (no oracle audit, no
    result cache: the work tree can change while a child reads it)."""
    from patchlane.lanes.property.lane import PropertyRequest, run_property_lane

    lane = PropertyLane(
        paths=paths,
        modules=(module,) if module is not None else (),
        seed=seed,
        cases=cases,
        timeout_s=DEFAULT_TIMEOUT_S,
        pythonpath=(),
        tests=test_files,
    )
    trial = ReviewMap(
        label="review-map.yml (as init would write it)",
        property=lane,
        fixture=None,
        freeze=None,
        replay=ReplayLane(tests=(), private=(), require_signature=False),
        ignore=(),
    )
    request = PropertyRequest(seed=seed, cases=cases, mutants=0, result_cache=False)
    return run_property_lane(repo, trial, request, base=None, head=None, out=out)


def _judge(report: PropertyReport, module: str | None, test_files: Sequence[str]) -> Adopted:
    """Sort a lane report's properties into kept and left out."""
    failed: dict[str, list[tuple[str, str]]] = {}
    for failure in report.failures:
        failed.setdefault(failure.module, []).append((failure.property, failure.message))
    passed: dict[str, list[str]] = {}
    for run in report.properties:
        if run.outcome == "pass":
            names = passed.setdefault(run.module, [])
            if run.property not in names:
                names.append(run.property)
    left: list[LeftOut] = []
    kept_module = None
    if module is not None:
        problems = failed.get(module, [])
        for name, message in problems:
            what = module if name == MODULE_LEVEL else f"{module}.{name}"
            left.append(LeftOut(what, _why(message)))
        if problems:
            left.append(
                LeftOut(
                    module,
                    "the property lane runs every prop_* function of a module: the module "
                    "is left out until each of them holds at the base",
                )
            )
        elif passed.get(module):
            kept_module = module
    tests: list[str] = []
    for path in test_files:
        problems = failed.get(path, [])
        whole = [message for name, message in problems if name == MODULE_LEVEL]
        if whole:
            left.append(LeftOut(path, _why(whole[0])))
            continue
        for name, message in problems:
            left.append(LeftOut(name, _why(message)))
        good = [n for n in passed.get(path, []) if n not in {name for name, _ in problems}]
        if not problems and good:
            tests.append(path)
        else:
            tests.extend(good)
    return Adopted(kept_module, tuple(tests), tuple(left))


def _why(message: str) -> str:
    """Why a candidate is left out, from the lane's message for it."""
    first = _short(message)
    if UNSUPPORTED in message:
        # Not a failure: the lane calls a test without pytest, which fills fixtures.
        return f"{first} (the replay still runs it as a test)"
    return f"does not hold at the base: {first}"


def _short(message: str) -> str:
    lines = [line for line in message.strip().splitlines() if line.strip()]
    text = one_line(lines[0]) if lines else "no message"
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."
