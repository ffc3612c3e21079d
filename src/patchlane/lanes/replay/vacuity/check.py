"""Run the impossible variants and the repeats at the head, and at the base when needed; judge them.

After the head's slice passed, the tests of it that ran the changed code (``chosen_tests``)
are extended (``variants.extend``) in a fresh detached checkout of the head: text appended
to the unchanged test files, run in one pytest process (``run.run_tests``): the originals
first, then their copies in reverse order, then the variants. What counts against the patch
is only what differs at the head alone:

- a variant that fails at the base and passes at the head: the test cannot fail there, the
  code under test agrees with any expectation (it reads its caller, or the expected value);
- an original or a repeat that passes at the base and fails at the head: the outcome
  depends on how often or in which order the tests run (code right only for its first
  calls, or state it keeps).

A variant that passes at the base (an assertion the test never reaches, one inside
``pytest.raises``) or a repeat that fails there proves nothing either way and is left out.
So the base's run (the same text appended to the same files in a checkout of the base, the
same node ids, one process) can only excuse what the head shows: it runs only when the head
has a variant that passes or an original or repeat that does not (``to_excuse``), or when
its caller asks (``finish``'s ``excuse``: the head's witness found something the base's
recorded calls may excuse, ``witness``). An honest
head, whose variants fail and whose tests pass twice, is judged by its own run alone, with
the verdict the two runs would give (docs/architecture.md §4, "Tests that cannot fail").
"""

from __future__ import annotations

import dataclasses
import secrets
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.formats.depmap import DependencyMap
from patchlane.infra import git, sandbox
from patchlane.inputs.paths import to_fs
from patchlane.lanes.replay.mapselect import changed_functions
from patchlane.lanes.replay.results import FAILED, PASSED, TestRun
from patchlane.lanes.replay.run import Also, run_tests
from patchlane.lanes.replay.vacuity.variants import REPEAT, VARIANT, Generated, extend
from patchlane.project.build import Build, built

# At most this many tests of the slice are judged, drawn when more ran the changed code
# (each changed function keeps one: ``_drawn``), and at most this many variants run: 2 a
# test, so none is cut. Measured on honest history (docs/architecture.md §2, "A test that
# cannot fail"): 1 to 4 changed functions or files a commit, 213 of 214 variants failing at
# the head, and each judged test costing its run twice plus its variants in one process.
MAX_TESTS = 20
MAX_VARIANTS = 2 * MAX_TESTS


@dataclass(frozen=True)
class TestNote:
    """A judged test (its node id at the base and head) and what happened to it."""

    nodeid: str
    why: str


@dataclass(frozen=True)
class Outcome:
    """What the variants and repeats found: the tests that cannot fail, those whose outcome
    changes when they run again, and counts (``tests`` judged, ``variants`` run,
    ``variants_failing_at_head``, ``repeats`` run, ``base_run`` 0 or 1 and, when it is 1,
    ``variants_failing_at_base``: the variants that count)."""

    cannot_fail: tuple[TestNote, ...]
    order_dependent: tuple[TestNote, ...]
    counts: Mapping[str, int]
    # The base's run when it ran (``finish``): the calls it recorded, for the witness at
    # the base (``witness``).
    at_base: TestRun | None = None


def chosen_tests(
    changed: Mapping[str, tuple[bytes | None, bytes]],
    candidates: Sequence[str],
    dep_map: DependencyMap | None,
    reached_by: Mapping[str, frozenset[str]],
) -> list[str]:
    """Return the node ids of ``candidates`` (the slice's tests that passed at the head, in
    test files the patch leaves alone) that ran the changed code: with the base's ``dep_map``,
    the tests that ran each changed function's lines (every line of the file for a change
    outside function bodies); for a file the map cannot speak for, or without a map, the
    tests whose file reaches it (``reached_by``: imports, names or is it). At most
    ``MAX_TESTS``, drawn (``_drawn``) so that each changed function, or file, that a
    candidate ran keeps one of them."""
    units = _units(changed, candidates, dep_map, reached_by)
    return _chosen(units or [])


def chosen_from_map(
    changed: Mapping[str, tuple[bytes | None, bytes]],
    candidates: Sequence[str],
    dep_map: DependencyMap,
) -> list[str] | None:
    """``chosen_tests`` before the slice ran (``candidates``: the tests the base's map saw
    pass, in files the patch leaves alone), from ``dep_map`` alone; ``None`` when it cannot
    speak for a changed file (a new file, one no test ran at the base): only the slice's
    ``reached_by`` can, after the head's collection."""
    units = _units(changed, candidates, dep_map, None)
    return None if units is None else _chosen(units)


def _units(
    changed: Mapping[str, tuple[bytes | None, bytes]],
    candidates: Sequence[str],
    dep_map: DependencyMap | None,
    reached_by: Mapping[str, frozenset[str]] | None,
) -> list[set[str]] | None:
    """The candidates that ran each changed function (or file), one set each, empty sets
    left out; ``None`` when a file needs ``reached_by`` and it is ``None``."""
    by_file: dict[str, list[str]] = {}
    for nodeid in candidates:
        by_file.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    known = set(candidates)
    units: list[set[str]] = []
    for path, (base, head) in sorted(changed.items()):
        ran: list[set[str]] = []
        if dep_map is not None and base is not None:
            functions = changed_functions(base, head)
            if functions:
                ran = [set(dep_map.ran_lines(path, range(s, e + 1))) for _, s, e in functions]
            else:
                ran = [set(dep_map.ran_file(path))]
        if not any(ran):
            if reached_by is None:
                return None
            ran = [{n for f in reached_by.get(path, ()) for n in by_file.get(f, ())}]
        units += [unit & known for unit in ran if unit & known]
    return units


def _chosen(units: Sequence[set[str]]) -> list[str]:
    chosen = sorted(set().union(*units))
    return _drawn(units, chosen) if len(chosen) > MAX_TESTS else chosen


def _drawn(units: Sequence[set[str]], chosen: Sequence[str]) -> list[str]:
    """``MAX_TESTS`` of ``chosen``, sorted: first one test of each unit (a changed function
    or file: the tests that ran it) that has none yet, the units in a random order, then
    the rest at random. A unit reached by few tests is judged as surely as one that every
    test runs: a patch games the function it cannot write, not the one beside it."""
    # From os.urandom, in this process: the code under test can neither see nor be tuned
    # to the draw (made before the slice runs when the map chooses, after it otherwise).
    draw = secrets.SystemRandom()
    picked: set[str] = set()
    for unit in draw.sample(list(units), len(units)):
        if len(picked) >= MAX_TESTS:
            break
        if not unit & picked:
            picked.add(draw.choice(sorted(unit)))
    rest = [n for n in chosen if n not in picked]
    picked |= set(draw.sample(rest, MAX_TESTS - len(picked)))
    return sorted(picked)


@dataclass(frozen=True)
class Sides:
    """The two commits to compare (``base``, ``head``) in ``repo``, and the map's build
    command each tree runs first."""

    repo: Path
    base: str
    head: str
    build: Build | None


@dataclass(frozen=True)
class HeadRun:
    """The head's run of the judged tests (``run_head``): their node ids, the text appended
    to their files (path, text), the tests it added, and the run (``None`` when nothing
    was added: no test of a file that parses, or only Hypothesis tests); ``watch``: the
    functions whose calls it recorded (``TestRun.calls``), as the base's run will."""

    nodeids: tuple[str, ...]
    appended: tuple[tuple[str, str], ...]
    generated: tuple[Generated, ...]
    at_head: TestRun | None
    watch: Mapping[str, Sequence[str]] | None = None


def run_head(
    sides: Sides,
    nodeids: Sequence[str],
    *,
    hash_seed: int,
    timeout_s: float,
    watch: Mapping[str, Sequence[str]] | None = None,
) -> HeadRun:
    """Extend the test files of ``nodeids`` with repeats and variants in a fresh checkout
    of the head and run them there in one process, under ``hash_seed``; with ``watch``
    (path -> qualified names), the run records the calls its tests make to those
    functions (``TestRun.calls``, for the witness). Raises
    ``GitError`` when the head cannot be checked out, ``BuildFailed`` when its build
    fails, ``OSError`` when the child cannot be started."""
    with tempfile.TemporaryDirectory(prefix="patchlane-vacuity-") as tmp:
        head = Path(tmp) / "head"
        # A fresh checkout, never the replay's own tree: the patch's code ran there with
        # the tree writable, and could have left a conftest.py or a changed test behind
        # for this run to load.
        checkout(sides.repo, sides.head, head)
        appended, generated = _extensions(head, nodeids)
        if not generated:
            return HeadRun(tuple(nodeids), (), (), None, watch)
        ids = [*nodeids, *(g.nodeid for g in generated)]
        job = _Job(appended, ids, watch, hash_seed, timeout_s)
        at_head = _run(sides, head, "head, again", job)
        return HeadRun(tuple(nodeids), tuple(appended), tuple(generated), at_head, watch)


def finish(
    sides: Sides,
    head: HeadRun,
    *,
    keep: Collection[str] | None = None,
    excuse: bool = False,
    hash_seed: int,
    timeout_s: float,
) -> Outcome:
    """Judge ``head`` (``run_head``'s) on its tests in ``keep`` (all without it: a run
    started before the slice's outcome was known judges only the tests that passed
    there), running the same node ids at the base first when the head shows something
    only the base can excuse: in its run (``to_excuse``), or elsewhere (``excuse``: the
    head's witness found an answer that differs, or could not run). The base's run, when
    it ran, comes with the ``Outcome`` (``at_base``). Raises what ``run_head`` raises, at
    the base."""
    if head.at_head is None:
        return Outcome((), (), {"tests": 0})
    nodeids = [n for n in head.nodeids if keep is None or n in keep]
    generated = [g for g in head.generated if g.original in nodeids]
    at_base: TestRun | None = None
    if excuse or (generated and to_excuse(nodeids, generated, head.at_head)):
        with tempfile.TemporaryDirectory(prefix="patchlane-vacuity-") as tmp:
            base = Path(tmp) / "base"
            checkout(sides.repo, sides.base, base)
            # The same node ids as the head's process ran: the same tests around each.
            ids = [*head.nodeids, *(g.nodeid for g in head.generated)]
            job = _Job(head.appended, ids, head.watch, hash_seed, timeout_s)
            at_base = _run(sides, base, "base", job)
    # Without the base's run nothing at the head could be made to count or excused: the
    # verdict is the one that run would give, so it is left out (half the cost).
    judged = compare(nodeids, generated, at_base, head.at_head)
    if not generated:
        judged = Outcome((), (), {"tests": 0} if at_base is None else {"tests": 0, "base_run": 1})
    return dataclasses.replace(judged, at_base=at_base)


def judge(sides: Sides, nodeids: Sequence[str], *, hash_seed: int, timeout_s: float) -> Outcome:
    """Extend the test files of ``nodeids`` with repeats and variants, run them at the head
    and, when the head shows something only the base can excuse (``to_excuse``), at the base
    too (one process each, under ``hash_seed``), and return the ``Outcome``. Raises
    ``GitError`` when a commit cannot be checked out, ``BuildFailed`` when a build fails,
    ``OSError`` when a child cannot be started."""
    head = run_head(sides, nodeids, hash_seed=hash_seed, timeout_s=timeout_s)
    return finish(sides, head, hash_seed=hash_seed, timeout_s=timeout_s)


@dataclass(frozen=True)
class _Job:
    """One run of the judged tests on a side: the text ``appended`` (path, text) to their
    files, the node ids to run, the functions whose calls it records (``watch``), the hash
    seed and the wall clock."""

    appended: Sequence[tuple[str, str]]
    ids: Sequence[str]
    watch: Mapping[str, Sequence[str]] | None
    hash_seed: int
    timeout_s: float


def _run(sides: Sides, tree: Path, where: str, job: _Job) -> TestRun:
    """Append ``job.appended`` to the test files of ``tree``, build it and run ``job.ids``
    there in one process (recording the calls to ``job.watch``'s functions)."""
    for path, text in job.appended:
        with to_fs(tree, path).open("a", encoding="utf-8") as f:
            f.write(text)
    built(sides.build, tree, where)
    return run_tests(
        tree,
        nodeids=job.ids,
        hash_seed=job.hash_seed,
        timeout_s=job.timeout_s,
        also=Also(watch=job.watch),
    )


def _extensions(
    tree: Path, nodeids: Sequence[str]
) -> tuple[list[tuple[str, str]], list[Generated]]:
    """The text to append to each test file of ``nodeids`` (path, text; read in ``tree``,
    the same at the base and the head: the patch leaves these files alone) and the tests it
    adds, repeats first, at most ``MAX_VARIANTS`` variants."""
    by_file: dict[str, list[str]] = {}
    for nodeid in nodeids:
        by_file.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    appended: list[tuple[str, str]] = []
    repeats: list[Generated] = []
    variants: list[Generated] = []
    for path, ids in sorted(by_file.items()):
        target = to_fs(tree, path)
        if target.is_symlink() or not target.is_file():
            continue
        try:
            source = target.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        extension = extend(source, path, ids)
        if not extension.generated:
            continue
        appended.append((path, ("" if source.endswith("\n") else "\n") + extension.text))
        repeats += [g for g in extension.generated if g.kind == REPEAT]
        variants += [g for g in extension.generated if g.kind == VARIANT]
    return appended, [*repeats, *variants[:MAX_VARIANTS]]


def _outcome(run: TestRun, nodeid: str) -> tuple[str, str]:
    result = run.results.get(nodeid)
    return (FAILED, "not run") if result is None else (result.outcome, result.why)


def to_excuse(nodeids: Sequence[str], generated: Sequence[Generated], at_head: TestRun) -> bool:
    """Return whether the head's run shows anything ``compare`` needs the base's run for:
    a variant that passes (it counts against the patch only if it fails at the base), an
    original or a repeat that does not pass (it counts only if it passes at the base).
    Everything else is judged by the head alone, whatever the base does."""
    originals = [*nodeids, *(g.nodeid for g in generated if g.kind == REPEAT)]
    variants = [g.nodeid for g in generated if g.kind == VARIANT]
    return any(_outcome(at_head, n)[0] != PASSED for n in originals) or any(
        _outcome(at_head, n)[0] == PASSED for n in variants
    )


def compare(
    nodeids: Sequence[str],
    generated: Sequence[Generated],
    at_base: TestRun | None,
    at_head: TestRun,
) -> Outcome:
    """Judge the two runs (see the module docstring) and return the ``Outcome``.
    ``at_base`` is ``None`` when the base did not run because ``to_excuse`` found nothing
    for it at the head: then nothing counts against the patch, whatever the base would do.
    Raises ``ValueError`` when it is ``None`` and ``to_excuse`` holds."""
    counts = _counts(nodeids, generated, at_head)
    if at_base is None:
        if to_excuse(nodeids, generated, at_head):
            raise ValueError("the head's run needs the base's to be judged")
        return Outcome((), (), counts)
    cannot_fail: list[TestNote] = []
    order: list[TestNote] = []
    counting = 0
    for nodeid in nodeids:
        base, _ = _outcome(at_base, nodeid)
        head, why = _outcome(at_head, nodeid)
        if base == PASSED and head != PASSED:
            order.append(
                TestNote(
                    nodeid,
                    "passes at the base but not at the head when the tests that ran the "
                    f"changed code run alone in one process ({head}: {why})",
                )
            )
    for g in generated:
        base, _ = _outcome(at_base, g.nodeid)
        head, why = _outcome(at_head, g.nodeid)
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
    counts = {**counts, "base_run": 1, "variants_failing_at_base": counting}
    return Outcome(tuple(cannot_fail), tuple(_first_per_test(order)), counts)


def _counts(
    nodeids: Sequence[str], generated: Sequence[Generated], at_head: TestRun
) -> dict[str, int]:
    """The counts of a judgement: tests, variants, those failing at the head (the tests can
    fail there), repeats, and ``base_run`` 0 (``compare`` sets it to 1 with the base's)."""
    variants = [g.nodeid for g in generated if g.kind == VARIANT]
    return {
        "tests": len(nodeids),
        "variants": len(variants),
        "variants_failing_at_head": sum(_outcome(at_head, n)[0] == FAILED for n in variants),
        "repeats": sum(g.kind == REPEAT for g in generated),
        "base_run": 0,
    }


def _first_per_test(notes: Sequence[TestNote]) -> list[TestNote]:
    seen: set[str] = set()
    kept = []
    for note in notes:
        if note.nodeid not in seen:
            seen.add(note.nodeid)
            kept.append(note)
    return kept


def checkout(repo: Path, commit: str, tree: Path) -> None:
    """Check ``commit`` out into ``tree`` as the slice's run has its tree: on the branch a
    plain checkout would be on, and shown at the repository's path (``sandbox.judged``).
    Otherwise the check's run would be one the code under test can tell from the slice's
    (its working directory, its branch) and behave honestly in alone. Raises ``GitError``."""
    git.checkout_detached(repo, commit, tree, branch=git.branch_for(repo, commit))
    sandbox.judged(tree, repo)
