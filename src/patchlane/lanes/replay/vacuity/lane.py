"""The replay lane's step for tests that cannot fail: after the head's slice passed.

``start_early`` chooses the tests that ran the changed code from the base's dependency map
and starts their run at the head (``check.run_head``) beside the head's slice; without a
map that can choose, ``start_with_slice`` does it once the slice is chosen, from its tests,
still beside its run; ``start`` does it after the slice passed, beside the checks at the
base, only when neither could. Neither depends on the other's runs. The head's run records the calls its tests
make to the changed functions (``witness.watched``). ``checked`` then, in one line of
steps: the witness at the head (those calls made again outside the tests), the base's run
when the head's run or its witness shows something the base could excuse
(``check.finish``), the base's witness after it, ``copied.scan``; it adds what they found
to a passing report, and a review event (``vacuity_events``, rule 6) for each thing that
keeps the verdict at ``undecided``: a variant that passes at the head, an outcome that
changes when the tests run again, an answer that differs outside the tests, copied values
past the threshold.
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
from patchlane.lanes.replay.results import TestRun
from patchlane.lanes.replay.vacuity.check import (
    HeadRun,
    Sides,
    chosen_from_map,
    chosen_tests,
    finish,
    run_head,
)
from patchlane.lanes.replay.vacuity.copied import COPIED_LIMIT, Value, scan_against, tests_literals
from patchlane.lanes.replay.vacuity.witness import (
    Judged,
    Where,
    Witnessed,
    compare,
    recorded,
    watched,
    witnessed,
)
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


def _tests_literals(repo: Path, cls: Classification) -> frozenset[Value]:
    """The literals of the base's test files (``_test_sources``: ``copied.tests_literals``).
    Raises ``GitError``."""
    return tests_literals(_test_sources(repo, cls))


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


def _witness_at(
    repo: Path, cls: Classification, run: TestRun, commit: str, *, hash_seed: int
) -> Witnessed:
    """Make the calls ``run`` recorded again outside the tests, at ``commit``
    (``witness.witnessed``); return the answers. Raises what ``witnessed`` raises."""
    where = Where(
        repo,
        commit,
        build_of(cls),
        cls.map_source.review_map.replay.tests,
        module_patterns_at(repo, cls.merge_base),
    )
    return witnessed(
        where,
        recorded(run.calls),
        run,
        hash_seed=hash_seed,
        timeout_s=RUN_TIMEOUT_S,
    )


def _witness_event(at_head: Witnessed, at_base: Witnessed | None) -> tuple[Judged, str]:
    """Judge the head's witness (excused by the base's, when it ran) and return it with
    the review event it calls for (empty for none)."""
    judged = compare(at_head, at_base)
    shown = list(dict.fromkeys(c.shown() for c in judged.unexcused))
    if shown:
        return (
            judged,
            f"the changed code answers differently outside its tests ({_quote(shown, 3)})",
        )
    if at_head.problem and at_base is not None and not at_base.problem:
        return judged, f"the changed code does not run outside its tests ({at_head.problem})"
    return judged, ""


@dataclass(frozen=True)
class Vacuity:
    """What every step of this judgement takes: the repository, the patch's classification,
    the thread ``pool`` its runs start in, the hash seed of the gate's children, where it
    speaks, and the base's dependency map (``None``: none)."""

    repo: Path
    cls: Classification
    pool: Executor
    hash_seed: int
    out: Output
    dep_map: DependencyMap | None = None


@dataclass(frozen=True)
class Judging:
    """The judgement of the tests that ran the changed code, under way (``start``,
    ``start_early``): the changed code, the two sides, the head's run to come (``None``:
    no test ran the changed code), whether it started beside the slice, and the base's
    tests' literals to come (``None``: computed when judged)."""

    code: dict[str, tuple[bytes | None, bytes]]
    sides: Sides
    head: Future[HeadRun] | None
    beside_slice: bool = False
    # The literals of the base's tests (``copied.tests_literals``), computed beside the runs.
    literals: Future[frozenset[Value]] | None = None


def start_early(v: Vacuity) -> Judging | None:
    """Start the head's run (``check.run_head``) in ``v.pool`` before the head's slice runs,
    beside it, on the tests the base's map (``v.dep_map``) chose (``check.chosen_from_map``);
    ``checked`` judges only those that pass in the slice. ``None`` when it cannot be
    started yet (no map, no changed code, a changed file the map cannot speak for, no test
    that ran the change): ``start`` does it after the slice. Raises ``GitError``."""
    repo, cls, dep_map = v.repo, v.cls, v.dep_map
    if dep_map is None:
        return None
    code = changed_code(repo, cls)
    if not code:
        return None
    own = cls.changed_paths
    candidates = [n for n in sorted(dep_map.passed_at_base) if n.split("::", 1)[0] not in own]
    nodeids = chosen_from_map(code, candidates, dep_map)
    if not nodeids:
        return None
    v.out.progress(
        f"replay: {len(nodeids)} test(s) ran the changed code at the base; running their "
        "impossible variants and repeats at the head, beside the slice"
    )
    return dataclasses.replace(_started(v, code, nodeids), beside_slice=True)


def start_with_slice(
    v: Vacuity, slice_ids: Sequence[str], reached_by: dict[str, frozenset[str]]
) -> Judging | None:
    """Start the head's run (``check.run_head``) in ``v.pool`` once the slice is chosen and
    before it runs, beside it, when ``start_early`` could not: on the tests of the slice
    (``slice_ids``) that ran the changed code (``check.chosen_tests``, with the head's
    ``reached_by``, as ``start`` chooses among the tests that passed); ``checked`` judges
    only those that pass in the slice. ``None`` when nothing is to be judged, or when a
    line of the slice stands for a whole file (its tests are known only once it ran):
    ``start`` does it after the slice. Raises ``GitError``."""
    if any("::" not in n for n in slice_ids):
        return None
    code = changed_code(v.repo, v.cls)
    if not code:
        return None
    own = v.cls.changed_paths
    candidates = [n for n in slice_ids if n.split("::", 1)[0] not in own]
    nodeids = chosen_tests(code, candidates, v.dep_map, reached_by)
    if not nodeids:
        return None
    v.out.progress(
        f"replay: {len(nodeids)} test(s) of the slice ran the changed code; running their "
        "impossible variants and repeats at the head, beside the slice"
    )
    return dataclasses.replace(_started(v, code, nodeids), beside_slice=True)


def start(
    v: Vacuity, report: ReplayReport, reached_by: dict[str, frozenset[str]]
) -> Judging | None:
    """Start the head's run (``check.run_head``) in ``v.pool`` on the tests of the passing
    ``report`` that ran the changed code (``check.chosen_tests``); return what ``checked``
    finishes, ``None`` for a report that is not a pass or a patch that changes no code
    under test. Raises ``GitError``; the run's errors come with its result."""
    if report.status != Status.PASS:
        return None
    repo, cls = v.repo, v.cls
    code = changed_code(repo, cls)
    if not code:
        return None
    own = cls.changed_paths
    candidates = [n for n in report.passed if "::" in n and n.split("::", 1)[0] not in own]
    nodeids = chosen_tests(code, candidates, v.dep_map, reached_by)
    if not nodeids:
        sides = Sides(repo, cls.merge_base, cls.head, build_of(cls))
        return Judging(code, sides, None, literals=v.pool.submit(_tests_literals, repo, cls))
    v.out.progress(
        f"replay: {len(nodeids)} test(s) ran the changed code; running their impossible "
        "variants and repeats at the head (and at the base if the head needs it)"
    )
    return _started(v, code, nodeids)


def _started(
    v: Vacuity, code: dict[str, tuple[bytes | None, bytes]], nodeids: Sequence[str]
) -> Judging:
    """The judgement of ``nodeids`` (they ran the changed ``code``), its runs started in
    ``v.pool``."""
    repo, cls, pool = v.repo, v.cls, v.pool
    sides = Sides(repo, cls.merge_base, cls.head, build_of(cls))
    # The head's run records the calls its tests make to the changed functions, for the
    # witness (``checked``).
    head = pool.submit(
        run_head,
        sides,
        nodeids,
        hash_seed=v.hash_seed,
        timeout_s=RUN_TIMEOUT_S,
        watch=watched(code) or None,
    )
    return Judging(code, sides, head, literals=pool.submit(_tests_literals, repo, cls))


def checked(
    v: Vacuity,
    report: ReplayReport,
    judging: Judging | None,
    reached_by: dict[str, frozenset[str]],
) -> ReplayReport:
    """Return the passing ``report`` with what its tests that ran the changed code show
    (the module docstring), once ``judging``'s head run is done (and the base's, when the
    head needs it: ``check.finish``); ``report`` unchanged when it is not a pass or
    ``judging`` is ``None``. Only tests that passed in ``report`` are judged. Raises
    ``GitError``, ``BuildFailed``, ``OSError`` as ``check.run_head`` does."""
    if report.status != Status.PASS or judging is None:
        return report
    repo, cls, hash_seed, out = v.repo, v.cls, v.hash_seed, v.out
    code = judging.code
    events: list[str] = []
    cannot_fail: tuple[JudgedTest, ...] = ()
    order: tuple[JudgedTest, ...] = ()
    counts: dict[str, int] = {"tests": 0}
    differing: tuple[str, ...] = ()
    if judging.head is not None:
        head = judging.head.result()
        # The witness at the head first: an answer that differs there, or a witness that
        # cannot run, is something the base may share (state its tests set through a
        # fixture, an environment the witness cannot give), so it calls for the base's run
        # as the head's own run may.
        witness = Witnessed((), ())
        if head.watch and head.at_head is not None and head.at_head.calls:
            out.progress(
                f"replay: making {len(recorded(head.at_head.calls))} call(s) of the changed "
                "code again outside its tests"
            )
            witness = _witness_at(repo, cls, head.at_head, cls.head, hash_seed=hash_seed)
        suspect = bool(compare(witness).differences or witness.problem)
        found = finish(
            judging.sides,
            head,
            keep=frozenset(report.passed),
            excuse=suspect,
            hash_seed=hash_seed,
            timeout_s=RUN_TIMEOUT_S,
        )
        counts = {**found.counts, "beside_slice": int(judging.beside_slice)}
        if head.watch:
            at_base = None
            if suspect and found.at_base is not None:
                # The base's own recorded calls, witnessed at the base.
                at_base = _witness_at(repo, cls, found.at_base, cls.merge_base, hash_seed=hash_seed)
            judged, event = _witness_event(witness, at_base)
            counts.update(judged.counts)
            differing = tuple(c.shown() for c in judged.unexcused)
            events += [event] if event else []
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
    reached = {p: c for p, c in code.items() if reached_by.get(p)}
    in_tests = (
        judging.literals.result() if judging.literals is not None else _tests_literals(repo, cls)
    )
    copied = scan_against(reached, in_tests)
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
        witness_differing=differing,
        vacuity_events=tuple(events),
    )
    return report
