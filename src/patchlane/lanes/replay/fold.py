"""Fold what a pytest child streamed back into one outcome per node (``TestRun``).

The rules (docs/architecture.md, "Replay outcomes"):

- every report counts: a failed or errored setup, call, teardown or subtest fails the node,
  and no later report (a passing parent, a rerun) turns it back;
- a skip or xfail the suite makes on its own is ``skipped`` (neither evidence nor failure;
  the gate then runs those nodes at the base, where one that passes was hidden by the patch:
  ``basecheck``); a skip by a granted freeze is ``skipped_by_freeze``; a strict xpass is a
  failure, as pytest says;
- a node with no streamed outcome (not collected, deselected, never finished) is failed;
- pytest's exit status must agree with the outcomes: a run that was interrupted, hit an
  internal or usage error, exited 1 with no failed node, or never said how it ended cannot
  pass, so every node it reported as passed is failed, with the reason;
- a test that runs past its bound (``testbound``: the parent's clock, from the streamed start
  of each test) stops the run: that node fails, "timed out after N s", and every other node
  that had not failed by its own report is failed as not judged (``TestRun.not_judged``);
- a run whose own machinery changed while it ran (the child's ``tripwire``: pytest's reports,
  runner or hooks, pluggy, patchlane's plugin) cannot pass either, and believes no outcome:
  from its tamper record on no report is taken, and every node that had not failed before
  it fails with what changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from patchlane.infra.origins import foreign
from patchlane.infra.process import ChildRun
from patchlane.infra.sandbox import Presentation
from patchlane.infra.ui import one_line
from patchlane.lanes.replay.results import (
    FAILED,
    FROZEN,
    PASSED,
    SKIPPED,
    CollectError,
    NodeResult,
    TestRun,
    file_part,
)
from patchlane.lanes.replay.testbound import Clock, not_judged_why, stalled_problem, timed_out_why
from patchlane.pytest_plugin import skip_reason

# pytest's exit codes: 0 all passed, 1 tests failed, 5 nothing collected.
_EXIT_WORDS = {
    2: "was interrupted",
    3: "hit an internal error",
    4: "refused its command line (usage error)",
    5: "ran no tests",
    -1: "raised out of pytest.main",
}


def fold(
    records: Iterable[Mapping[str, Any]],
    nodeids: Sequence[str],
    files: Sequence[str],
    allowed: Mapping[str, tuple[str, str]],
    child: ChildRun | None = None,
    *,
    shown: Presentation | None = None,
    clock: Clock | None = None,
) -> TestRun:
    """Fold the child's records into one ``NodeResult`` per node (see the module docstring).

    ``child`` is what the process did besides its records (``infra.process.ChildRun``: the
    channel's problems, whether it timed out, its last output, its exit status); without
    it, a clean end. ``returncode`` is the process's exit status: pytest's own when it ended before its
    session (a conftest that fails to import: exit 4) and so never sent one. Only a status
    that fails the run is taken from it; one that would pass never is. With ``shown`` (how
    the child saw the tree), the run's ``foreign`` lists the project modules its record says
    came from outside the tree (``infra.origins.foreign``), and a run that reported its exit
    status but no record of them is listed too. With ``clock`` (the parent's clock of each
    test, ``testbound.Clock``), a run it stopped is folded as the module docstring says."""
    state = _Fold()
    for record in records:
        if isinstance(record.get("calls"), list):
            state.take_calls(record)
        else:
            state.take(record)
    wanted = list(dict.fromkeys(nodeids))
    file_set = frozenset(files)
    wanted += [n for n in state.collected if n.split("::", 1)[0] in file_set and n not in wanted]
    errors: dict[str, CollectError] = {}
    for error in state.errors:
        errors.setdefault(error.nodeid, error)
    results: dict[str, NodeResult] = {}
    for nodeid in wanted:
        grant = allowed.get(nodeid)
        freeze_text = f"Skipped: {skip_reason(*grant)}" if grant else None
        results[nodeid] = state.node(nodeid, errors, freeze_text)
    channel_problems = child.problems if child is not None else ()
    timed_out = child.timed_out if child is not None else False
    output_tail = child.stdout_tail + child.stderr_tail if child is not None else b""
    returncode = child.returncode if child is not None else None
    problems = list(channel_problems)
    if state.tamper is not None:
        # A failure reported before the machinery changed stays what it was.
        why = state.tamper
        problems.insert(0, why)
        results = {
            n: r if r.outcome == FAILED and state.failed_before(n) else NodeResult(FAILED, why)
            for n, r in results.items()
        }
    stop = _stop_problem(clock)
    problems += (
        [stop] if stop else ["the run timed out; nodes without an outcome failed"] * timed_out
    )
    code = state.exit_code
    if code is None and returncode not in (None, 0, 1, 5) and not timed_out:
        code = returncode
    failed = any(r.outcome == FAILED for r in results.values())
    if code is None and not timed_out:
        problems.append("pytest ended without reporting its exit status")
    elif code is not None and code not in (0, 1):
        if not (code == 5 and not wanted):
            problems.append(f"pytest {_EXIT_WORDS.get(code, f'exited {code}')} (exit {code})")
    elif code == 1 and not failed and not state.errors:
        problems.append("pytest exited 1 although no node failed")
    if state.raised:
        problems.append(f"pytest raised: {state.raised}")
    if problems:
        # The run's own account contradicts itself or is incomplete: no pass in it is evidence.
        why = f"the run cannot be believed: {problems[0]}"
        results = {
            n: NodeResult(FAILED, why) if r.outcome == PASSED else r for n, r in results.items()
        }
    if code == 0 and failed:
        problems.append("pytest exited 0 although a node failed")
    results, not_judged = _stopped_at(results, state, clock if stop else None)
    return TestRun(
        results=results,
        collected=tuple(n for n in state.collected if n in results),
        collect_errors=tuple(state.errors),
        exit_code=code,
        problems=tuple(problems),
        timed_out=timed_out,
        output_tail=output_tail,
        plugin_files=tuple(sorted(state.plugins)),
        left=dict(state.left),
        foreign=_foreign(state, shown),
        calls=tuple(state.calls),
        sys_path=tuple(state.sys_path),
        root=state.root,
        overran=clock.overran if stop and clock is not None else None,
        bound_s=clock.bound_s if clock is not None else None,
        not_judged=tuple(not_judged),
        durations=dict(clock.durations) if clock is not None else {},
    )


def _stop_problem(clock: Clock | None) -> str | None:
    """Why the run cannot pass when ``clock`` stopped it (a test past its bound, or no test
    named when it stopped), else ``None``."""
    if clock is None or clock.bound_s is None or not clock.stop.is_set():
        return None
    if clock.overran is None:
        return stalled_problem(clock.bound_s)
    return (
        f"{one_line(clock.overran)[:200]} ran past its bound of {clock.bound_s:g} s; the run "
        "was stopped there"
    )


def _stopped_at(
    results: Mapping[str, NodeResult], state: _Fold, clock: Clock | None
) -> tuple[dict[str, NodeResult], list[str]]:
    """``results`` of a run ``clock`` stopped when a node ran past its bound: that node
    failed, timed out; every other node that did not fail by its own report (a skip stays
    one) failed as not judged. Returns them and the not-judged node ids (``results`` as
    they are, and none, when no node ran past its bound, or when the run's machinery
    changed: then no report is believed and that node fails with the rest)."""
    out: dict[str, NodeResult] = {}
    not_judged: list[str] = []
    overran = clock.overran if clock is not None else None
    bound_s = clock.bound_s if clock is not None else None
    if overran is None or bound_s is None or state.tamper is not None:
        return dict(results), not_judged
    for nodeid, result in results.items():
        if nodeid == overran:
            out[nodeid] = NodeResult(FAILED, timed_out_why(bound_s))
        elif result.outcome in (SKIPPED, FROZEN) or state.failed_before(nodeid):
            out[nodeid] = result
        else:
            out[nodeid] = NodeResult(FAILED, not_judged_why(one_line(overran)[:200], bound_s))
            not_judged.append(nodeid)
    return out, not_judged


def _foreign(state: _Fold, shown: Presentation | None) -> tuple[str, ...]:
    """The project modules the run imported from outside the tree (see ``fold``)."""
    if shown is None or not shown.names:
        return ()
    if state.origins is None:
        if state.exit_code not in (0, 1) or state.tamper is not None:
            return ()  # pytest never ran the tests as asked: the run cannot pass already
        return ("(the run did not report where the project's modules came from)",)
    return tuple(foreign(state.origins, shown))


@dataclass
class _Fold:
    """The records of one run, grouped by node id as they arrived."""

    reports: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)
    collected: list[str] = field(default_factory=list)
    errors: list[CollectError] = field(default_factory=list)
    exit_code: int | None = None
    raised: str | None = None
    plugins: set[str] = field(default_factory=set)
    # Why no outcome of the run can be believed (its first tamper record), or None.
    tamper: str | None = None
    left: dict[str, str] = field(default_factory=dict)
    # Where the project's modules came from (``child.origins``, every record merged), or
    # None when the run sent no such record.
    origins: dict[str, list[str]] | None = None
    calls: list[tuple[str, str, str, str]] = field(default_factory=list)
    sys_path: list[str] = field(default_factory=list)
    root: str = ""

    def take(self, record: Mapping[str, Any]) -> None:
        if isinstance(record.get("tamper"), list) and self.tamper is None:
            # The child's own module, loaded into this process only for a run whose
            # machinery changed (rare): its wording is the child's.
            from patchlane.child.tripwire import describe

            found = [one_line(str(c)) for c in record["tamper"][:20]] or ["its machinery"]
            self.tamper = describe(found)
        elif self.tamper is not None and ("n" in record or "fin" in record):
            return  # after the machinery changed, a report says nothing
        elif isinstance(record.get("left"), list) and isinstance(record.get("by"), str):
            for what in record["left"][:50]:
                self.left.setdefault(one_line(str(what))[:200], record["by"])
        elif isinstance(record.get("plugins"), list):
            self.plugins.update(p for p in record["plugins"] if isinstance(p, str))
        elif isinstance(record.get("origins"), dict):
            merged = self.origins if self.origins is not None else {}
            for module, where in record["origins"].items():
                paths = [where] if isinstance(where, str) else where
                if isinstance(module, str) and isinstance(paths, list):
                    known = merged.setdefault(module, [])
                    known += [p for p in paths if isinstance(p, str) and p not in known]
            self.origins = merged
        elif isinstance(record.get("n"), str):
            self.reports.setdefault(record["n"], []).append(record)
        elif isinstance(record.get("fin"), str):
            self.finished.add(record["fin"])
        elif isinstance(record.get("collected"), list):
            self.collected.extend(n for n in record["collected"] if isinstance(n, str))
        elif isinstance(record.get("collect_error"), str):
            missing = record.get("missing")
            self.errors.append(
                CollectError(
                    # By file: a class that does not collect fails its file's own id.
                    file_part(record["collect_error"]),
                    str(record.get("message") or "collection error"),
                    missing if isinstance(missing, str) else None,
                )
            )
        elif "exit" in record and isinstance(record["exit"], int) and self.exit_code is None:
            self.exit_code = record["exit"]
        elif isinstance(record.get("raised"), str):
            self.raised = record["raised"]

    def take_calls(self, record: Mapping[str, Any]) -> None:
        """Keep a ``calls`` record (``child.calls``): the well-formed calls, and the
        run's ``sys.path``."""
        self.calls = [
            (c[0], c[1], c[2], c[3])
            for c in record["calls"]
            if isinstance(c, list) and len(c) == 4 and all(isinstance(x, str) for x in c)
        ]
        where = record.get("sys_path")
        if isinstance(where, list):
            self.sys_path = [p for p in where if isinstance(p, str)]
        root = record.get("root")
        self.root = root if isinstance(root, str) else ""

    def failed_before(self, nodeid: str) -> bool:
        """Whether a report taken (before any tamper record) failed ``nodeid``."""
        return any(r.get("o") not in (PASSED, SKIPPED) for r in self.reports.get(nodeid, []))

    def node(
        self,
        nodeid: str,
        errors: Mapping[str, CollectError],
        freeze_text: str | None,
    ) -> NodeResult:
        if "::" not in nodeid:
            return self._file(nodeid, errors)
        reports = self.reports.get(nodeid, [])
        for report in reports:
            if report.get("o") not in (PASSED, SKIPPED):
                # failed, or a rerun plugin's "rerun": a failed attempt is a failure.
                return NodeResult(FAILED, _failure(report))
        skips = [r for r in reports if r.get("o") == SKIPPED]
        xpass = [r for r in reports if r.get("o") == PASSED and r.get("x")]
        if skips or xpass:
            first = (skips or xpass)[0]
            message = str(first.get("msg") or "skipped")
            granted = freeze_text is not None and message == freeze_text
            if granted and skips and first.get("w") == "setup":
                return NodeResult(FROZEN, message)
            where = first.get("loc")
            at = f" (raised at {where})" if isinstance(where, str) else ""
            if xpass and not skips:
                return NodeResult(SKIPPED, "xpassed (not strict): neither evidence nor failure")
            kind = "xfailed" if first.get("x") else "skipped"
            return NodeResult(SKIPPED, f"{kind} by the suite{at}: {message}")
        if nodeid not in self.collected:
            error = errors.get(nodeid.split("::", 1)[0])
            if error is not None:
                return NodeResult(FAILED, f"its file does not collect: {error.message}")
            return NodeResult(FAILED, "not collected")
        if not any(r.get("w") == "call" for r in reports) or nodeid not in self.finished:
            return NodeResult(FAILED, "no outcome streamed (deselected, or the run stopped)")
        return NodeResult(PASSED)

    def _file(self, path: str, errors: Mapping[str, CollectError]) -> NodeResult:
        """A slice line that names a whole file (it did not collect when the slice was made):
        failed when it does not collect or any of its tests fails, passed when every test
        it collects passes."""
        error = errors.get(path)
        if error is not None:
            return NodeResult(FAILED, f"does not collect: {error.message}")
        items = [n for n in self.collected if n.split("::", 1)[0] == path]
        if not items:
            return NodeResult(FAILED, "collects no test")
        results = [self.node(n, errors, None) for n in items]
        failed = [(n, r) for n, r in zip(items, results, strict=True) if r.outcome == FAILED]
        if failed:
            nodeid, result = failed[0]
            return NodeResult(FAILED, f"{nodeid}: {result.why}")
        if all(r.outcome == PASSED for r in results):
            return NodeResult(PASSED)
        return NodeResult(SKIPPED, "its tests were skipped by the suite")


def _failure(report: Mapping[str, Any]) -> str:
    when = report.get("w")
    what = "subtest failed" if report.get("sub") else f"{when} {report.get('o')}"
    return f"{what}: {report.get('msg') or report.get('o')}"
