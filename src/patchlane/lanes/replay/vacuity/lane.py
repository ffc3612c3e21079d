"""The replay lane's step for tests that cannot fail: after the head's slice passed.

``start`` chooses the tests that ran the changed code and starts their run (``check.judge``)
beside the checks at the base, which it does not depend on; ``checked`` adds to a passing
report what ``check.judge`` and ``copied.scan`` found, and a review event
(``vacuity_events``, rule 6) for each thing that keeps the verdict at ``undecided``: a
variant that passes at the head, an outcome that changes when the tests run again, copied
values past the threshold.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path

from patchlane.formats.depmap import DependencyMap
from patchlane.formats.replay_report import JudgedTest, ReplayReport
from patchlane.formats.status import Status
from patchlane.infra import git
from patchlane.infra.ui import Output
from patchlane.lanes.replay.compiled import build_of
from patchlane.lanes.replay.vacuity.check import Outcome, Sides, chosen_tests, judge
from patchlane.lanes.replay.vacuity.copied import COPIED_LIMIT, scan
from patchlane.project.classify import Classification
from patchlane.project.harness import module_patterns_at
from patchlane.project.replay_command import RUN_TIMEOUT_S
from patchlane.project.testmodules import is_suite_path


def _quote(items: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def changed_code(repo: Path, cls: Classification) -> dict[str, tuple[bytes | None, bytes]]:
    """Return path -> (the base's bytes, ``None`` for a new file; the head's bytes) for each
    Python file of the code under test the patch adds or changes (not a test file, not a
    control file). Raises ``GitError``."""
    roots = cls.map_source.review_map.replay.tests
    patterns = module_patterns_at(repo, cls.merge_base)
    found: dict[str, tuple[bytes | None, bytes]] = {}
    for f in cls.files:
        if f.status[:1] == "D" or f.control or not f.path.endswith(".py"):
            continue
        if is_suite_path(f.path, roots, patterns):
            continue
        head = git.read_file_at(repo, cls.head, f.path)
        if head is None or head[0].mode == git.MODE_SYMLINK:
            continue
        base = git.read_file_at(repo, cls.merge_base, f.old_path or f.path)
        found[f.path] = (None if base is None else base[1], head[1])
    return found


def _test_sources(repo: Path, cls: Classification) -> list[bytes]:
    """The base's test files (``is_suite_path``, Python) under the map's test roots."""
    roots = cls.map_source.review_map.replay.tests
    patterns = module_patterns_at(repo, cls.merge_base)
    listed = [r.rstrip("/") for r in roots if r not in ("", ".", "./")]
    entries = git.ls_tree(repo, cls.merge_base, listed)
    oids = [
        e.oid
        for e in entries
        if e.kind == "blob"
        and e.mode != git.MODE_SYMLINK
        and e.path.endswith(".py")
        and is_suite_path(e.path, roots, patterns)
    ]
    return list(git.read_blobs(repo, oids))


@dataclass(frozen=True)
class Judging:
    """The judgement of the tests that ran the changed code, under way (``start``): the
    changed code, the test files that reach each file of it (``Selection.reached_by``),
    and the run's ``Outcome`` to come (``None``: no test ran the changed code)."""

    code: dict[str, tuple[bytes | None, bytes]]
    reached_by: dict[str, frozenset[str]]
    outcome: Future[Outcome] | None


def start(
    repo: Path,
    cls: Classification,
    report: ReplayReport,
    pool: Executor,
    *,
    reached_by: dict[str, frozenset[str]],
    dep_map: DependencyMap | None,
    hash_seed: int,
    out: Output,
) -> Judging | None:
    """Start judging, in ``pool``, the tests of the passing ``report`` that ran the changed
    code (``check.judge``); return what ``checked`` finishes, ``None`` for a report that is
    not a pass or a patch that changes no code under test. Raises ``GitError``; the run's
    errors (``check.judge``'s) come with its ``Outcome``."""
    if report.status != Status.PASS:
        return None
    code = changed_code(repo, cls)
    if not code:
        return None
    own = cls.changed_paths
    candidates = [n for n in report.passed if "::" in n and n.split("::", 1)[0] not in own]
    nodeids = tuple(chosen_tests(code, candidates, dep_map, reached_by))
    if not nodeids:
        return Judging(code, reached_by, None)
    out.progress(
        f"replay: {len(nodeids)} test(s) ran the changed code; running their impossible "
        "variants and repeats at the head (and at the base if the head needs it)"
    )
    sides = Sides(repo, cls.merge_base, cls.head, build_of(cls))
    outcome = pool.submit(judge, sides, nodeids, hash_seed=hash_seed, timeout_s=RUN_TIMEOUT_S)
    return Judging(code, reached_by, outcome)


def checked(
    repo: Path, cls: Classification, report: ReplayReport, judging: Judging | None
) -> ReplayReport:
    """Return the passing ``report`` with what the tests that ran the changed code show
    (the module docstring), once ``judging`` (``start``'s) is done; ``report`` unchanged
    when it is not a pass or ``judging`` is ``None``. Raises ``GitError``, ``BuildFailed``,
    ``OSError`` as ``check.judge`` does."""
    if report.status != Status.PASS or judging is None:
        return report
    code = judging.code
    events: list[str] = []
    cannot_fail: tuple[JudgedTest, ...] = ()
    order: tuple[JudgedTest, ...] = ()
    counts: dict[str, int] = {"tests": 0}
    if judging.outcome is not None:
        found = judging.outcome.result()
        counts = dict(found.counts)
        cannot_fail = tuple(JudgedTest(n.nodeid, n.why) for n in found.cannot_fail)
        order = tuple(JudgedTest(n.nodeid, n.why) for n in found.order_dependent)
    if cannot_fail:
        events.append(
            "the tests cannot fail: the code under test agrees with any expectation "
            f"({_quote([f'{t.nodeid}: {t.why}' for t in cannot_fail], 3)})"
        )
    if order:
        events.append(
            "the outcome changes when the same tests run again or in another order, at the "
            f"head only ({_quote([f'{t.nodeid} {t.why}' for t in order], 3)})"
        )
    # Only the code the tests reach: a changed file no test reaches (an example, a script)
    # is no evidence anyway (``unreached``), and its literals say nothing of the tests.
    reached = {p: c for p, c in code.items() if judging.reached_by.get(p)}
    copied = scan(reached, _test_sources(repo, cls))
    shown = (*copied.tables, *copied.values)
    if copied.past_threshold:
        what = (
            f"{len(copied.tables)} table(s) of the tests' values"
            if copied.tables
            else f"{len(copied.values)} values (the limit is {COPIED_LIMIT})"
        )
        events.append(
            f"the patch adds to the code values copied from the base's tests: {what}: "
            f"{_quote(list(shown), 6)}"
        )
    report = dataclasses.replace(
        report,
        vacuity_counts=counts,
        cannot_fail=cannot_fail,
        order_dependent=order,
        copied_values=shown,
        vacuity_events=tuple(events),
    )
    return report
