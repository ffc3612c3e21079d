"""The replay lane's step for tests that cannot fail: after the head's slice passed.

``checked`` adds to a passing report what ``check.judge`` and ``copied.scan`` found, and a
review event (``vacuity_events``, rule 6) for each thing that keeps the verdict at
``undecided``: a variant that passes at the head, an outcome that changes when the tests run
again, copied values past the threshold.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from patchlane.formats.depmap import DependencyMap
from patchlane.formats.replay_report import JudgedTest, ReplayReport
from patchlane.formats.status import Status
from patchlane.infra import git
from patchlane.infra.ui import Output
from patchlane.lanes.replay.compiled import build_of
from patchlane.lanes.replay.vacuity.check import Outcome, Sides, chosen_tests, judge
from patchlane.lanes.replay.vacuity.copied import COPIED_LIMIT, scan
from patchlane.lanes.replay.vacuity.witness import Where, compare, recorded, watched, witnessed
from patchlane.project.classify import Classification
from patchlane.project.harness import module_patterns_at
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


def _witness(
    repo: Path,
    cls: Classification,
    found: Outcome,
    *,
    hash_seed: int,
    timeout_s: float,
    out: Output,
) -> tuple[dict[str, int], tuple[str, ...], str]:
    """Make the calls the head's run recorded again outside the tests (``witness``) and, when
    an answer differs or the witness cannot run, the base's recorded calls at the base; return
    the counts, the calls that differ at the head alone (shown) and the review event (empty
    for none). Raises what ``witness.witnessed`` raises."""
    calls = recorded(found.calls[1])
    if not calls:
        return {"calls_recorded": 0, "calls_witnessed": 0, "calls_differing": 0}, (), ""
    roots = cls.map_source.review_map.replay.tests
    patterns = module_patterns_at(repo, cls.merge_base)
    build = build_of(cls)
    out.progress(f"replay: making {len(calls)} call(s) of the changed code again outside its tests")
    at_head = witnessed(
        Where(repo, cls.head, build, roots, patterns),
        calls,
        found.sys_paths[1],
        found.roots[1],
        hash_seed=hash_seed,
        timeout_s=timeout_s,
    )
    judged = compare(at_head)
    if not judged.differences and not at_head.problem:
        return dict(judged.counts), (), ""
    # Something the base may share (state its tests set up, an environment the witness
    # cannot give): its own recorded calls, witnessed at the base.
    at_base = witnessed(
        Where(repo, cls.merge_base, build, roots, patterns),
        recorded(found.calls[0]),
        found.sys_paths[0],
        found.roots[0],
        hash_seed=hash_seed,
        timeout_s=timeout_s,
    )
    judged = compare(at_head, at_base)
    shown = tuple(c.shown() for c in judged.unexcused)
    if shown:
        event = (
            "the changed code answers differently outside its tests "
            f"({_quote(list(dict.fromkeys(shown)), 3)})"
        )
    elif at_head.problem and not at_base.problem:
        event = f"the changed code does not run outside its tests ({at_head.problem})"
    else:
        event = ""
    return dict(judged.counts), shown, event


def checked(
    repo: Path,
    cls: Classification,
    report: ReplayReport,
    *,
    reached_by: dict[str, frozenset[str]],
    dep_map: DependencyMap | None,
    hash_seed: int,
    timeout_s: float,
    out: Output,
) -> ReplayReport:
    """Return the passing ``report`` with what the tests that ran the changed code show
    (the module docstring); any other report unchanged. Raises ``GitError``,
    ``BuildFailed``, ``OSError`` as ``check.judge`` does."""
    if report.status != Status.PASS:
        return report
    code = changed_code(repo, cls)
    if not code:
        return report
    own = cls.changed_paths
    candidates = [n for n in report.passed if "::" in n and n.split("::", 1)[0] not in own]
    nodeids = chosen_tests(code, candidates, dep_map, reached_by)
    events: list[str] = []
    cannot_fail: tuple[JudgedTest, ...] = ()
    order: tuple[JudgedTest, ...] = ()
    counts: dict[str, int] = {"tests": 0}
    differing: tuple[str, ...] = ()
    if nodeids:
        out.progress(
            f"replay: {len(nodeids)} test(s) ran the changed code; running their impossible "
            "variants and repeats at the base and the head"
        )
        watch = watched(code)
        found = judge(
            Sides(repo, cls.merge_base, cls.head, build_of(cls)),
            nodeids,
            hash_seed=hash_seed,
            timeout_s=timeout_s,
            watch=watch,
        )
        counts = dict(found.counts)
        if watch:
            witness_counts, differing, event = _witness(
                repo, cls, found, hash_seed=hash_seed, timeout_s=timeout_s, out=out
            )
            counts.update(witness_counts)
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
        witness_differing=differing,
        vacuity_events=tuple(events),
    )
    return report
