"""Run the impossible variants and the repeats at the base and at the head, and judge them.

After the head's slice passed, the tests of it that ran the changed code (``chosen_tests``)
are extended (``variants.extend``) in a detached checkout of each side, the same text
appended to the same unchanged test files, and run in one pytest process per side
(``run.run_tests``; the two sides at once): the originals first, then their copies in reverse order, then the
variants. What counts against the patch is only what differs at the head alone:

- a variant that fails at the base and passes at the head: the test cannot fail there, the
  code under test agrees with any expectation (it reads its caller, or the expected value);
- an original or a repeat that passes at the base and fails at the head: the outcome
  depends on how often or in which order the tests run (code right only for its first
  calls, or state it keeps).

A variant that passes at the base (an assertion the test never reaches, one inside
``pytest.raises``) or a repeat that fails there proves nothing either way and is left out.
"""

from __future__ import annotations

import dataclasses
import secrets
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from patchlane.formats.depmap import DependencyMap
from patchlane.infra import git
from patchlane.inputs.paths import to_fs
from patchlane.lanes.replay.mapselect import changed_functions
from patchlane.lanes.replay.run import FAILED, PASSED, Also, TestRun, run_tests
from patchlane.lanes.replay.vacuity.variants import REPEAT, VARIANT, Generated, extend
from patchlane.project.build import Build, built

# At most this many tests of the slice are judged, drawn at random when more ran the
# changed code, and at most this many variants run (measured: docs/architecture.md §4).
MAX_TESTS = 40
MAX_VARIANTS = 40


@dataclass(frozen=True)
class TestNote:
    """A judged test (its node id at the base and head) and what happened to it."""

    nodeid: str
    why: str


@dataclass(frozen=True)
class Outcome:
    """What the variants and repeats found: the tests that cannot fail, those whose outcome
    changes when they run again, and counts (``tests`` judged, ``variants`` run,
    ``variants_failing_at_base``: those that count, ``repeats`` run)."""

    cannot_fail: tuple[TestNote, ...]
    order_dependent: tuple[TestNote, ...]
    counts: Mapping[str, int]
    # The watched functions' calls each side's run recorded (``TestRun.calls``) and its
    # ``sys.path``, for the witness (``witness``): (base's, head's).
    calls: tuple[tuple[tuple[str, str, str, str], ...], ...] = ((), ())
    sys_paths: tuple[tuple[str, ...], ...] = ((), ())
    roots: tuple[str, str] = ("", "")


def chosen_tests(
    changed: Mapping[str, tuple[bytes | None, bytes]],
    candidates: Sequence[str],
    dep_map: DependencyMap | None,
    reached_by: Mapping[str, frozenset[str]],
) -> list[str]:
    """Return the node ids of ``candidates`` (the slice's tests that passed at the head, in
    test files the patch leaves alone) that ran the changed code: with the base's ``dep_map``,
    the tests that ran a changed function's lines (every line of the file for a change
    outside function bodies); for a file the map cannot speak for, or without a map, the
    tests whose file reaches it (``reached_by``: imports, names or is it). At most
    ``MAX_TESTS``, drawn at random beyond that."""
    wanted: set[str] = set()
    by_file: dict[str, list[str]] = {}
    for nodeid in candidates:
        by_file.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    for path, (base, head) in sorted(changed.items()):
        ran: set[str] | None = None
        if dep_map is not None and base is not None:
            functions = changed_functions(base, head)
            if functions:
                ran = set()
                for _, start, end in functions:
                    ran |= set(dep_map.ran_lines(path, range(start, end + 1)))
            else:
                ran = set(dep_map.ran_file(path))
        if not ran:
            ran = {n for f in reached_by.get(path, ()) for n in by_file.get(f, ())}
        wanted |= ran
    chosen = sorted(n for n in candidates if n in wanted)
    if len(chosen) > MAX_TESTS:
        # Drawn after the slice passed, from os.urandom: code cannot be tuned to the draw.
        chosen = sorted(secrets.SystemRandom().sample(chosen, MAX_TESTS))
    return chosen


@dataclass(frozen=True)
class Sides:
    """The two commits to compare (``base``, ``head``) in ``repo``, and the map's build
    command each tree runs first."""

    repo: Path
    base: str
    head: str
    build: Build | None


def judge(
    sides: Sides,
    nodeids: Sequence[str],
    *,
    hash_seed: int,
    timeout_s: float,
    watch: Mapping[str, Sequence[str]] | None = None,
) -> Outcome:
    """Extend the test files of ``nodeids`` with repeats and variants, run them at the base
    and at the head (one process each, under ``hash_seed``), and return the ``Outcome``.
    With ``watch`` (path -> qualified names), each run also records the calls its tests
    make to those functions (``Outcome.calls``, for the witness).
    Raises ``GitError`` when a commit cannot be checked out, ``BuildFailed`` when a
    build fails, ``OSError`` when a child cannot be started."""
    with (
        tempfile.TemporaryDirectory(prefix="patchlane-vacuity-") as tmp,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        # The two sides are independent until compared: each is checked out, built and
        # run beside the other, so the check costs about one side's time, not two.
        trees = (Path(tmp) / "base", Path(tmp) / "head")
        commits = (sides.base, sides.head)
        for done in [
            pool.submit(git.checkout_detached, sides.repo, c, t)
            for c, t in zip(commits, trees, strict=True)
        ]:
            done.result()
        generated = _extended(trees, nodeids)
        if not generated:
            return Outcome((), (), {"tests": 0})
        ids = [*nodeids, *(g.nodeid for g in generated)]

        def run(tree: Path, where: str) -> TestRun:
            built(sides.build, tree, where)
            return run_tests(
                tree, nodeids=ids, hash_seed=hash_seed, timeout_s=timeout_s, also=Also(watch=watch)
            )

        at_base, at_head = (
            pool.submit(run, trees[0], "base"),
            pool.submit(run, trees[1], "head, again"),
        )
        base_run, head_run = at_base.result(), at_head.result()
        judged = compare(nodeids, generated, base_run, head_run)
        return dataclasses.replace(
            judged,
            calls=(base_run.calls, head_run.calls),
            sys_paths=(base_run.sys_path, head_run.sys_path),
            roots=(base_run.root, head_run.root),
        )


def _extended(trees: tuple[Path, Path], nodeids: Sequence[str]) -> list[Generated]:
    """Append the repeats and variants of ``nodeids`` to their test files in both
    ``trees`` (the same text: the files are the same on both sides); return the tests
    added, repeats first, at most ``MAX_VARIANTS`` variants."""
    by_file: dict[str, list[str]] = {}
    for nodeid in nodeids:
        by_file.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    repeats: list[Generated] = []
    variants: list[Generated] = []
    for path, ids in sorted(by_file.items()):
        target = to_fs(trees[0], path)
        if target.is_symlink() or not target.is_file():
            continue
        try:
            source = target.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        extension = extend(source, path, ids)
        if not extension.generated:
            continue
        for tree in trees:
            with to_fs(tree, path).open("a", encoding="utf-8") as f:
                f.write(("" if source.endswith("\n") else "\n") + extension.text)
        repeats += [g for g in extension.generated if g.kind == REPEAT]
        variants += [g for g in extension.generated if g.kind == VARIANT]
    return [*repeats, *variants[:MAX_VARIANTS]]


def compare(
    nodeids: Sequence[str], generated: Sequence[Generated], at_base: TestRun, at_head: TestRun
) -> Outcome:
    """Judge the two runs (see the module docstring) and return the ``Outcome``."""

    def outcome(run: TestRun, nodeid: str) -> tuple[str, str]:
        result = run.results.get(nodeid)
        return (FAILED, "not run") if result is None else (result.outcome, result.why)

    cannot_fail: list[TestNote] = []
    order: list[TestNote] = []
    counting = 0
    for nodeid in nodeids:
        base, _ = outcome(at_base, nodeid)
        head, why = outcome(at_head, nodeid)
        if base == PASSED and head != PASSED:
            order.append(
                TestNote(
                    nodeid,
                    "passes at the base but not at the head when the tests that ran the "
                    f"changed code run alone in one process ({head}: {why})",
                )
            )
    for g in generated:
        base, _ = outcome(at_base, g.nodeid)
        head, why = outcome(at_head, g.nodeid)
        if g.kind == VARIANT:
            if base != FAILED:
                continue  # no evidence: the base passes it too, or skips it
            counting += 1
            if head == PASSED:
                cannot_fail.append(
                    TestNote(
                        g.original,
                        f"its impossible variant ({g.what}) fails at the base and passes "
                        "at the head",
                    )
                )
        elif base == PASSED and head != PASSED:
            order.append(
                TestNote(
                    g.original,
                    "passes the first time but not when run again in the same process, in "
                    f"reverse order, at the head only ({head}: {why})",
                )
            )
    counts = {
        "tests": len(nodeids),
        "variants": sum(g.kind == VARIANT for g in generated),
        "variants_failing_at_base": counting,
        "repeats": sum(g.kind == REPEAT for g in generated),
    }
    return Outcome(tuple(cannot_fail), tuple(_first_per_test(order)), counts)


def _first_per_test(notes: Sequence[TestNote]) -> list[TestNote]:
    seen: set[str] = set()
    kept = []
    for note in notes:
        if note.nodeid not in seen:
            seen.add(note.nodeid)
            kept.append(note)
    return kept
