"""Select the replay slice (docs/architecture.md §4): what the local lanes could not decide.

The head commit is materialised from git objects into a temp dir (never the work tree: the
slice must name what the head holds), pytest collects it in an isolated child, and the
slice is the union of

1. every test in a changed test file (under ``replay.tests``),
2. every test whose file (or one of its ``conftest.py``) imports a changed module, directly
   or through other project modules (``importgraph``), or whose ``conftest.py`` changed,
3. every test in a file whose source names a changed fixture file (its path or basename as
   a string literal),
4. every node id in the failure log (included even when pytest no longer collects it: a
   logged failure must not pass by disappearing),

or, with ``all_tests``, the whole collected suite. Once that selection is fixed, a random
sample of the collected tests outside it joins the slice (``canary``); with a dependency map
the collection also takes the files of a random sample of the map's tests, so that the
canary can land in any test file. A text file pytest collects as doctests
(``--doctest-glob``) is a test file like any other: its examples' imports are its edges.
A selected node id that cannot be a slice line (``slicefile.nodeid_problem``: a test file
whose name holds an unprintable character) is left out of the slice and said so in
``Selection.not_replayed``: the gate makes that a review event, never a bad-input exit.
So is every head entry the gate cannot materialise or name that pytest may collect or a
lane covers (``unmaterialised``).
It also finds out whether the slice may leave the machine: a file it needs under
``replay.private``, or holding a secret, makes it private.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchlane.formats import slicefile
from patchlane.formats.canary import Canary
from patchlane.formats.depmap import DependencyMap
from patchlane.infra.tree import materialise
from patchlane.infra.ui import Output, one_line, show
from patchlane.inputs.paths import to_fs, under, under_any
from patchlane.lanes.replay import canary, importseen, mapselect
from patchlane.lanes.replay.chosen import Scope
from patchlane.lanes.replay.collect import DEFAULT_TIMEOUT_S, Collected, collect
from patchlane.lanes.replay.run import CollectError, child_env
from patchlane.lanes.replay.secrets import scan_file
from patchlane.lanes.replay.staticrules import (
    BROKEN_BY_PATCH,
    CHANGED_TEST,
    FAILURE_LOG,
    IMPORTS,
    NAMES,
    NOT_COLLECTED,
    PROCESSES,
    READS_SOURCE,
    SHARED_STATE,
    WHOLE_SUITE,
    StaticRules,
    named_basenames,
    names_file,
)
from patchlane.project import importgraph
from patchlane.project.build import COMPILED_RULE, Build, built, compiled_paths
from patchlane.project.config import ReviewMap
from patchlane.project.testmodules import (
    CONFTEST,
    DEFAULT_PATTERNS,
    ModulePatterns,
    conftests,
    is_suite_path,
)
from patchlane.project.unmaterialised import review_events

# The static rules about a changed path the dependency map may speak for (a module, a data
# file): a reason of theirs says why the map did not (``_Selector._map_left``). A changed test
# file or conftest is never the map's, and needs no such word.
_MAP_COULD_DECIDE = frozenset({IMPORTS, NAMES, PROCESSES, READS_SOURCE})

# Which of some test files (or directories) that do not collect at the head collect at the
# base (``basecheck.collects_at_base``, bound to a repository and a base).
CollectsAtBase = Callable[[Sequence[str]], frozenset[str]]


@dataclass(frozen=True)
class Selection:
    """A selected slice and what it took to choose it.

    ``reasons``: node id -> why it is in the slice (one line each). ``private``: (path, why)
    for every needed file that keeps the slice off shared hosts. ``suite_size``: the number
    of tests in the suite the slice was drawn from (with a dependency map, the base's tests
    it recorded; without one, what pytest collects under ``replay.tests`` at the head);
    ``added``: the slice's node ids that suite does not hold (tests the patch adds), so
    that ``len(nodeids) - len(added) <= suite_size``. ``files_needed``: the selected test
    files, their ``conftest.py`` files, the project modules they import (transitively) and
    the data files they name. ``notes``: what a reviewer should know (e.g. a failure-log
    node id that pytest no longer collects).
    """

    nodeids: tuple[str, ...]
    slice_bytes: bytes
    sha256: str
    private: tuple[tuple[str, str], ...]
    reasons: dict[str, list[str]]
    suite_size: int
    files_needed: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    added: tuple[str, ...] = field(default=())
    # Every node id pytest collected at the head, and the test files it could not collect.
    collected: tuple[str, ...] = field(default=())
    collect_errors: tuple[CollectError, ...] = field(default=())
    # Changed path -> the test files that reach it (import, name, or are it; "*" for the
    # whole suite under --all). A changed source file no test file reaches has no evidence.
    reached_by: dict[str, frozenset[str]] = field(default_factory=dict)
    # Files of the head's tree pytest held as plugins after collecting the suite.
    plugin_files: tuple[str, ...] = field(default=())
    # One line per head entry the gate cannot materialise or name (``unmaterialised``) and
    # per test file whose selected node ids the slice format cannot carry (left out of the
    # slice, so not replayed): each a review event for the gate.
    not_replayed: tuple[str, ...] = field(default=())
    # Rule -> how many tests of the slice it selected (a test may count under several).
    rule_counts: dict[str, int] = field(default_factory=dict)
    # Node id -> the rules that chose it, the one of its first reason first.
    rules_of: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Whether a dependency map was used, and which (or why none was).
    dependency_map: str = "none"
    # The random sample of the tests outside the selection, part of ``nodeids``
    # (``canary``); ``None`` under --all (the slice is the suite) and for an empty selection.
    canary: Canary | None = None

    def reason_lines(self) -> dict[str, str]:
        """Return, for each node id of the slice, ``RULE: why`` (its first rule and reason)."""
        out: dict[str, str] = {}
        for nodeid in self.nodeids:
            rules, whys = self.rules_of.get(nodeid, ()), self.reasons.get(nodeid, [])
            rule = rules[0] if rules else "unknown rule"
            why = whys[0] if whys else "no reason recorded"
            # A reason may already lead with its rule (the canary's).
            out[nodeid] = why if why.startswith(f"{rule}: ") else f"{rule}: {why}"
        return out

    def to_json(self, slice_path: str) -> dict[str, object]:
        """Return the ``--json`` form: ``{slice, sha256, count, suite_size, added, private,
        reasons, rules, rules_of, dependency_map, canary, notes}``."""
        return {
            "slice": slice_path,
            "sha256": self.sha256,
            "count": len(self.nodeids),
            "suite_size": self.suite_size,
            "added": len(self.added),
            "private": [{"path": p, "why": w} for p, w in self.private],
            "reasons": {n: list(self.reasons[n]) for n in self.nodeids},
            "rules": dict(sorted(self.rule_counts.items())),
            "rules_of": {n: list(self.rules_of.get(n, ())) for n in self.nodeids},
            "dependency_map": self.dependency_map,
            "canary": None if self.canary is None else self.canary.to_json(),
            "notes": list(self.notes),
        }


def file_of(nodeid: str) -> str:
    """Return the file part of a node id (``tests/x.py`` of ``tests/x.py::T::t[1]``).

    A head path holding ``::`` would be split wrong; it is a review event of its own
    (``unmaterialised``), so no verdict rests on that split."""
    return nodeid.split("::", 1)[0]


def _all_files(root: Path) -> list[str]:
    out: list[str] = []
    for dirpath, _, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        out.extend(n if rel_dir == "." else f"{rel_dir}/{n}" for n in filenames)
    return sorted(out)


class _Selector:
    """One selection's state: the tree, its graph, and the reasons collected so far."""

    def __init__(
        self,
        root: Path,
        review_map: ReviewMap,
        changed: frozenset[str],
        patterns: ModulePatterns = DEFAULT_PATTERNS,
    ) -> None:
        self.root = root
        self.map = review_map
        self.changed = changed
        # What a test module is, by the base's pytest configuration (docs/architecture.md §2).
        self.patterns = patterns
        self.sources = importgraph.python_sources(root)
        self.reasons: dict[str, list[str]] = {}
        self.rules: dict[str, set[str]] = {}
        self.first_rule: dict[str, str] = {}  # the rule of each node id's first reason
        self.notes: list[str] = []
        # Head entries the gate cannot replay (``unmaterialised.review_events``).
        self.unreplayable: list[str] = []
        self.reached_by: dict[str, set[str]] = {}
        # With a dependency map: the changed paths it decides, and the tests it knows.
        self.decided: frozenset[str] = frozenset()
        self.known: frozenset[str] = frozenset()
        # The map itself and the paths it left to the static rules, each with why: a static
        # reason for a path the map speaks of says why the map did not decide it.
        self.depmap: DependencyMap | None = None
        self.undecided: dict[str, str] = {}
        self.shared_state = self._shared_state()
        # Changed code modules whose import-time change a look at the head's import may lift
        # (``_outside_state``; judged in ``decide_slice`` by ``importseen``).
        self.import_findings: list[importseen.Finding] = []

    def _shared_state(self) -> dict[str, str]:
        """Changed test files of the head that change state every later test in the process
        shares (``sharedstate``, every function read) -> where and how. A changed code module
        is judged by what of its import-time code changed (``_outside_state``: ``inert``), not
        by what it did at the base already (an ABC registered at import, unchanged)."""
        from patchlane.lanes.replay.sharedstate import shared_state_change

        tests = self.map.replay.tests
        found: dict[str, str] = {}
        for path in sorted(self.changed):
            data = self.sources.get(path)
            if data is None or not is_suite_path(path, tests, self.patterns):
                continue
            where = shared_state_change(data, every_function=True)
            if where is not None:
                found[path] = where
        return found

    def reach(self, changed: str, test_file: str) -> None:
        self.reached_by.setdefault(changed, set()).add(test_file)

    def add(self, nodeid: str, why: str, rule: str, path: str | None = None) -> bool:
        """Add ``nodeid`` to the slice for ``why`` (a reason line) under ``rule`` (its kind,
        counted in the report), unless the dependency map decides ``path`` for this test.
        Returns whether it was added."""
        if path in self.decided and nodeid in self.known:
            return False
        if path is not None and rule in _MAP_COULD_DECIDE:
            why = self._map_left(nodeid, path, why)
        whys = self.reasons.setdefault(nodeid, [])
        if why not in whys:
            whys.append(why)
        self.rules.setdefault(nodeid, set()).add(rule)
        self.first_rule.setdefault(nodeid, rule)
        return True

    def _map_left(self, nodeid: str, path: str, why: str) -> str:
        """Return ``why`` (a static rule's reason about ``path``) with, when a dependency map
        is in use, why the map did not decide ``path`` for ``nodeid``: the map marks the
        test blind, has no record of it, or leaves the path to the static rules. Returns
        ``why`` unchanged without a map."""
        depmap = self.depmap
        if depmap is None:
            return why
        blind = depmap.blind_why(nodeid)
        if blind is not None:
            return f"{why}; the dependency map cannot vouch for this test: {blind}"
        if nodeid not in depmap.tests:
            return f"{why}; the dependency map has no record of this test"
        left = self.undecided.get(path)
        if left is not None:
            return f"{why}; the dependency map does not decide {path}: {left}"
        return why

    def roots(self) -> list[str]:
        lane = self.map.property
        return importgraph.tree_roots(self.root, lane.pythonpath if lane is not None else ())

    def by_imports_and_fixtures(
        self, by_file: dict[str, list[str]], graph: importgraph.ImportGraph
    ) -> None:
        """Rules 1-3: changed test files, imports of changed modules, named fixtures."""
        rules = StaticRules(self, graph)
        for test_file, ids in sorted(by_file.items()):
            whys = rules.whys(test_file)
            if any(rule == CHANGED_TEST and about is None for _, rule, about in whys):
                self.reach(test_file, test_file)  # a changed module's own doctests
            for nodeid in ids:
                for why, rule, about in whys:
                    # A test that starts processes may run the module, one that reads the
                    # source may check it: selected, yet no evidence that anything runs it.
                    weak = rule in (PROCESSES, READS_SOURCE)
                    if self.add(nodeid, why, rule, about) and about and not weak:
                        self.reach(about, test_file)

    def candidates(
        self,
        files: Iterable[str],
        graph: importgraph.ImportGraph,
        depmap: DependencyMap,
        decision: mapselect.Decision,
    ) -> set[str]:
        """Return the test files worth collecting when the map decides: those with a test
        the map needs, and those a static rule still selects for a test the map does not
        decide (a path it leaves alone, a test that started a process)."""
        rules = StaticRules(self, graph)
        by_base_file: dict[str, list[str]] = {}
        for nodeid in depmap.tests:
            by_base_file.setdefault(file_of(nodeid), []).append(nodeid)
        wanted = {file_of(n) for needs in decision.needs.values() for n in needs}
        for test_file in sorted(set(files)):
            known = test_file in by_base_file and all(
                n in self.known for n in by_base_file[test_file]
            )
            if any(about not in self.decided or not known for _, _, about in rules.whys(test_file)):
                wanted.add(test_file)
        return wanted

    def use_map(
        self,
        depmap: DependencyMap,
        changes: list[mapselect.Change],
        by_file: dict[str, list[str]],
        graph: importgraph.ImportGraph,
    ) -> mapselect.Decision:
        """Let the dependency map decide what it can (``mapselect.decide``) before the static
        rules run: they then skip every (test, path) pair the map decides. Returns the
        decision, for ``by_map``."""
        tests = self.map.replay.tests

        def harness(path: str) -> bool:
            # A module collected only for its doctests (``--doctest-modules``, tests inside
            # the package) is source: the map judges it; its doctests are its importers'.
            return is_suite_path(path, tests, self.patterns) or (
                path in by_file and not path.endswith(".py")
            )

        def importers(path: str) -> set[str]:
            names = frozenset(graph.module_names(path))
            return {
                n
                for test_file, ids in by_file.items()
                if any(
                    graph.reach(start, names)
                    for start in [test_file, *conftests(test_file, self.sources)]
                )
                for n in ids
            }

        def module_importers(name: str) -> set[str]:
            return {n for path in graph.names.get(name, ()) for n in importers(path)}

        decision = mapselect.decide(
            depmap,
            changes,
            is_test_or_harness=harness,
            module_names=graph.module_names,
            static_importers=importers,
            module_importers=module_importers,
        )
        # A path the map adds tests for but leaves to the static rules too (a data file)
        # is not decided: the static rules keep every test they select for it.
        self.decided = frozenset(decision.needs) - frozenset(decision.undecided)
        self.known = frozenset(depmap.tests) - depmap.blind_tests
        self.depmap, self.undecided = depmap, dict(decision.undecided)
        return decision

    def by_map(self, decision: mapselect.Decision, collected: set[str]) -> None:
        """Add the tests the map needs for each path it decides (those the head still
        collects; a test the patch deleted is the deleted-test check's)."""
        for path, needs in sorted(decision.needs.items()):
            for nodeid, why in sorted(needs.items()):
                if nodeid in collected and self.add(nodeid, why, decision.rules[path]):
                    self.reach(path, file_of(nodeid))
        if decision.undecided:
            left = ", ".join(f"{show(p)} ({why})" for p, why in sorted(decision.undecided.items()))
            self.notes.append(f"dependency map: static rules for {left}")

    def by_failure_log(self, failure_log: frozenset[str], by_file: dict[str, list[str]]) -> None:
        """Rule 4: every logged node id, collected or not; a logged file, all its tests."""
        collected = {n for ids in by_file.values() for n in ids}
        for nodeid in sorted(failure_log):
            if "::" not in nodeid:  # a file that failed to collect on the logged run
                for n in by_file.get(nodeid, []):
                    self.add(n, "its file is in the failure log", FAILURE_LOG)
                if nodeid not in by_file:
                    self.notes.append(f"failure log names {show(nodeid)}, which has no tests now")
                continue
            problem = slicefile.nodeid_problem(nodeid)
            if problem:
                # A logged failure must not pass by disappearing: not replayable, it is a
                # review event (docs/architecture.md §1 rule 6).
                self.unreplayable.append(
                    f"failure-log node id {show(nodeid)} left out of the slice "
                    f"({one_line(problem)}): the logged failure is not replayed"
                )
            elif nodeid in collected:
                self.add(nodeid, "in the failure log", FAILURE_LOG)
            else:
                self.add(
                    nodeid,
                    "in the failure log; not collected at head (it must not pass)",
                    FAILURE_LOG,
                )
                self.notes.append(
                    f"failure-log node id {show(nodeid)} is not collected at head; "
                    "it stays in the slice and will fail on the host unless it exists there"
                )

    def needed(self, nodeids: tuple[str, ...], graph: importgraph.ImportGraph) -> list[str]:
        """Return the files the slice needs (see ``Selection.files_needed``)."""
        tests = sorted({file_of(n) for n in nodeids})
        files: set[str] = set()
        for test_file in tests:
            if test_file not in self.sources:
                continue  # a logged node id whose file is gone
            for start in [test_file, *conftests(test_file, self.sources)]:
                files |= graph.files_reached(start)
        data_roots = (self.map.fixture.paths if self.map.fixture else ()) + self.map.replay.private
        data_files = [p for p in _all_files(self.root) if under_any(p, data_roots)]
        for test_file in tests:
            named = named_basenames(self.sources.get(test_file, b""))
            files.update(p for p in data_files if names_file(named, p))
        return sorted(files)

    def private(self, needed: list[str]) -> list[tuple[str, str]]:
        """Return (path, why) for needed files under ``replay.private`` or holding a secret."""
        out: list[tuple[str, str]] = []
        for path in needed:
            for prefix in self.map.replay.private:
                if under(path, prefix):
                    out.append((path, f"under replay.private ({prefix})"))
                    break
            out.extend((path, finding.why()) for finding in scan_file(self.root, path))
        return sorted(set(out))


@dataclass(frozen=True)
class SliceRequest:
    """What a slice is selected for: the patch ``merge_base..head`` and what changed in it
    (``changed_paths``, both sides of renames), the node ids that failed before
    (``failure_log``), whether every test is selected (``all_tests``), and ``dep_map``: the
    dependency map of ``merge_base`` (``lanes.replay.maprecord.find``), which narrows the
    slice where it can (``mapselect``), with ``dep_map_note`` saying which map it is, or
    why there is none."""

    head: str
    merge_base: str
    changed_paths: frozenset[str]
    failure_log: frozenset[str]
    all_tests: bool
    dep_map: DependencyMap | None = None
    dep_map_note: str = "none"


def select_slice(
    repo: Path,
    review_map: ReviewMap,
    request: SliceRequest,
    *,
    base: str,
    out: Output | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    seed: int | None = None,
) -> Selection:
    """Select the replay slice of the patch ``request`` describes (``SliceRequest``; see the
    module docstring).

    ``base`` is taken for the gate's uniform call; what changed is ``request``'s
    ``changed_paths``. ``timeout_s`` bounds the collection child's wall clock. ``seed``:
    collect in the environment the replay run gets with that seed (the same node ids);
    without it, in a minimal one. Returns the ``Selection``. Raises
    ``GitError`` when the head cannot be read, ``CollectionError`` when pytest cannot
    collect the head's tests, ``SliceError`` when a collected node id cannot be a slice
    line, ``BuildFailed`` when the map's build command fails at the head.
    """
    del base  # the diff arrives as changed_paths
    with tempfile.TemporaryDirectory(prefix="patchlane-select-") as tmp:
        root = Path(tmp) / "tree"
        plan = plan_slice(
            repo,
            review_map,
            root,
            request,
            collects_at_base=base_collector(repo, review_map, request.merge_base, seed, timeout_s),
        )
        if out is not None:
            out.progress(plan.progress)
        # The map's build command runs before pytest collects, as in ``--replay local``.
        built(Build.of(review_map.replay), root, "head")
        env = None if seed is None else child_env(seed)
        scope = plan.scope
        result = collect(
            root,
            scope.extra_paths,
            timeout_s=timeout_s,
            env=env,
            doctest_only=scope.doctest_only,
            only_files=scope.only_files,
        )
        return decide_slice(plan, result)


def base_collector(
    repo: Path, review_map: ReviewMap, merge_base: str, seed: int | None, timeout_s: float
) -> CollectsAtBase:
    """``basecheck.collects_at_base`` for ``merge_base`` of ``repo``, as ``plan_slice``
    takes it."""

    def ask(paths: Sequence[str]) -> frozenset[str]:
        from patchlane.lanes.replay.basecheck import collects_at_base

        tests = review_map.replay.tests
        seed_or_0 = 0 if seed is None else seed
        return collects_at_base(
            repo,
            merge_base,
            paths,
            tests,
            hash_seed=seed_or_0,
            timeout_s=timeout_s,
            build=Build.of(review_map.replay),
        )

    return ask


@dataclass(frozen=True)
class SlicePlan:
    """What selection settles before pytest collects: the materialised head (``root``,
    which must outlive the plan's use), what to collect (``scope``) and the map's part."""

    selector: _Selector
    scope: Scope
    progress: str
    map_plan: _MapPlan | None
    all_tests: bool
    failure_log: frozenset[str]
    dep_map_note: str
    collects_at_base: CollectsAtBase | None = None


def plan_slice(
    repo: Path,
    review_map: ReviewMap,
    root: Path,
    request: SliceRequest,
    *,
    collects_at_base: CollectsAtBase | None = None,
) -> SlicePlan:
    """Materialise ``request.head`` into ``root`` (a path that does not exist yet) and
    settle what comes before collection for the patch ``request`` describes
    (``SliceRequest``): with its ``dep_map``, the map's decision and the candidate test
    files. ``collects_at_base``: asked, for the test files that do not collect at the head and
    that no rule selects, which the base collects (they then join the slice: the patch
    broke them). Returns the ``SlicePlan`` for ``decide_slice``. Raises ``GitError`` when
    the head cannot be read."""
    merge_base, changed_paths, dep_map = request.merge_base, request.changed_paths, request.dep_map
    all_tests, failure_log = request.all_tests, request.failure_log
    materialised = materialise(repo, request.head, root)
    from patchlane.project.harness import module_patterns_at

    selector = _Selector(root, review_map, changed_paths, module_patterns_at(repo, merge_base))
    # What the real checkout has and the gate cannot replay is a review event, not a note
    # (docs/architecture.md §1 rule 6; ``unmaterialised``).
    events, notes = review_events(materialised.skipped, root, review_map)
    selector.notes.extend(notes)
    selector.unreplayable.extend(events)
    map_plan = None
    if not all_tests:
        changes = _changes(repo, merge_base, root, changed_paths)
        _outside_state(selector, changes, dep_map)
        if dep_map is not None:
            map_plan = _map_plan(selector, dep_map, changes, failure_log)
    only = None if map_plan is None or map_plan.only is None else tuple(sorted(map_plan.only))
    setting = canary.setting_for(review_map.replay.canary)
    if only is not None and map_plan is not None and not setting.off:
        # The canary is drawn from what is collected: without more files than the map's
        # candidates, a patch would know which files it can never land in.
        wider = canary.widen(only, map_plan.depmap.tests, setting, file_of)
        selector.notes.append(
            f"canary: collected {len(wider) - len(only)} more test file(s), drawn at random"
        )
        only = wider
    scope, progress = _collect_scope(selector, only)
    watched = sorted({n for f in selector.import_findings for n in f.names})
    if watched:
        files = tuple(sorted({f.path for f in selector.import_findings}))
        scope = dataclasses.replace(scope, watch_imports=tuple(watched), watch_files=files)
    return SlicePlan(
        selector,
        scope,
        progress,
        map_plan,
        all_tests,
        failure_log,
        request.dep_map_note,
        collects_at_base,
    )


def _outside_state(
    selector: _Selector, changes: list[mapselect.Change], depmap: DependencyMap | None
) -> None:
    """Add to ``selector.shared_state`` every changed code module whose import-time code may
    change state outside the module (``inert``): it runs at collection, before every test,
    so every test is selected. A project module counts as imported at collection when the
    map saw its lines run there; without a map, none does (an import of one then counts)."""
    from patchlane.lanes.replay import inert

    roots = selector.roots()
    files: dict[str, str] = {}
    for path in selector.sources:
        if path.endswith(".py"):
            for name in importgraph.module_names(path, roots):
                files.setdefault(name, path)

    def where(name: str) -> str:
        path = files.get(name)
        if path is None:
            return inert.OUTSIDE
        collected = depmap is not None and bool(depmap.import_lines.get(path))
        return inert.COLLECTED if collected else inert.LAZY

    tests = selector.map.replay.tests
    for change in changes:
        path = change.path
        if not path.endswith(".py") or path in selector.shared_state:
            continue
        if is_suite_path(path, tests, selector.patterns):
            continue  # the patch's test code: ``sharedstate`` reads its every function
        names = importgraph.module_names(path, roots)
        package = names[0] if names else ""
        if package and not path.endswith("/__init__.py") and path != "__init__.py":
            package = package.rpartition(".")[0]
        found = inert.outside_change(change.base or b"", change.head or b"", where, package)
        if found is None:
            continue
        finding = importseen.Finding(path, found, tuple(names), _fixed(change, names, found, where))
        if finding.fixed is not None:
            selector.shared_state[path] = importseen.judge(finding, {}).why
        else:
            # Every test file is still collected (``_map_plan``): the look may widen.
            selector.import_findings.append(finding)


def _fixed(
    change: mapselect.Change, names: Sequence[str], found: str, where: Callable[[str], str]
) -> str | None:
    """Why no look at the head's import can lift ``found`` (``None``: one may): a module the
    patch adds, one the base did not import at collection, text ``inert`` could not read, or
    a change that imports such a module (its code runs where it did not)."""
    from patchlane.lanes.replay import inert

    if change.base is None or change.head is None:
        return importseen.NEW_MODULE
    if not names or any(where(n) != inert.COLLECTED for n in names):
        return importseen.NOT_COLLECTED
    if ": imports " in found:
        return importseen.NEW_IMPORT
    if "not valid Python" in found or "nested too deeply" in found:
        return importseen.UNREADABLE
    return None


def _looked(selector: _Selector, result: Collected) -> None:
    """Judge each pending import finding by the head's look at its import (``importseen``):
    add it to ``shared_state`` (every test) unless the look saw nothing, then a note."""
    for finding in selector.import_findings:
        judged = importseen.judge(finding, result.imports)
        if judged.widen:
            selector.shared_state[finding.path] = judged.why
        else:
            selector.notes.append(judged.why)


def decide_slice(plan: SlicePlan, result: Collected) -> Selection:
    """Apply the selection's rules to what pytest collected at the head (``result``).
    Returns the ``Selection``; raises ``SliceError`` when a selected node id cannot be a
    slice line."""
    selector, map_plan = plan.selector, plan.map_plan
    by_file, broken = _tests_by_file(selector, result)
    graph = (
        map_plan.graph
        if map_plan is not None
        else importgraph.build(selector.sources, selector.roots(), by_file)
    )
    selector.notes.extend(_graph_notes(graph))
    _looked(selector, result)
    _apply_rules(
        selector, result, by_file, broken, graph, map_plan, plan.all_tests, plan.failure_log
    )
    _broken_by_patch(selector, broken, plan.collects_at_base)
    not_replayed = [*selector.unreplayable, *_drop_unusable(selector.reasons)]
    selector.notes.extend(not_replayed)
    # Drawn only now, after the slice is fixed (docs/architecture.md §4, "Replay slice").
    drawn = None if plan.all_tests else _canary(selector, result, map_plan)
    nodeids = tuple(sorted(selector.reasons))
    data = slicefile.render(nodeids, "<collected node ids>")
    needed = selector.needed(nodeids, graph)
    private = selector.private(needed)
    # The suite the slice was drawn from: the base's recorded tests, else the head's
    # collection. A test the patch adds is in the slice but not in the base's suite: counted
    # apart, so that a slice is never "489 of 488".
    suite = frozenset(result.nodeids) if map_plan is None else frozenset(map_plan.depmap.tests)
    return Selection(
        nodeids=nodeids,
        slice_bytes=data,
        sha256=slicefile.sha256(data),
        private=tuple(private),
        reasons={n: selector.reasons[n] for n in nodeids},
        suite_size=len(suite),
        files_needed=tuple(needed),
        notes=tuple(selector.notes),
        added=tuple(n for n in nodeids if n not in suite),
        collected=tuple(result.nodeids),
        collect_errors=tuple(broken.values()),
        reached_by={p: frozenset(t) for p, t in selector.reached_by.items()},
        plugin_files=result.plugin_files,
        not_replayed=tuple(not_replayed),
        rule_counts=_rule_counts(selector.rules, nodeids),
        rules_of={n: _rules_of(selector, n) for n in nodeids},
        dependency_map=plan.dep_map_note,
        canary=drawn,
    )


def _canary(selector: _Selector, result: Collected, plan: _MapPlan | None) -> Canary | None:
    """Draw the canary from the collected tests outside the slice and add it to the
    slice. ``outside`` counts the suite's tests outside the slice (with a map, the map's
    tests too, of which only the collected ones can be drawn). Returns the ``Canary``, or
    ``None`` for an empty selection: that stays empty, never evidence (a canary that
    passes says nothing about the change)."""
    if not selector.reasons:
        return None
    suite = set(result.nodeids) | (set(plan.depmap.tests) if plan is not None else set())
    outside = len(suite - set(selector.reasons))
    pool = [
        n
        for n in result.nodeids
        if n not in selector.reasons and "::" in n and slicefile.nodeid_problem(n) is None
    ]
    drawn = canary.draw(pool, outside, canary.setting_for(selector.map.replay.canary))
    for nodeid in drawn.nodeids:
        selector.add(nodeid, canary.REASON, canary.RULE)
    return drawn


def _graph_notes(graph: importgraph.ImportGraph) -> Iterator[str]:
    """What a reviewer should know about the static graph: files it cannot read (taken to
    import everything) and test files that start processes."""
    yield from (
        f"not valid Python: {show(p)} (taken to import every project module)"
        if p.endswith(".py")
        else f"doctest examples not readable: {show(p)} (taken to import every project module)"
        for p in graph.unparsable
    )
    yield from (
        f"starts processes: {show(p)} (taken to run every project module)"
        for p in graph.starts_processes
    )


def _apply_rules(
    selector: _Selector,
    result: Collected,
    by_file: dict[str, list[str]],
    broken: dict[str, CollectError],
    graph: importgraph.ImportGraph,
    plan: _MapPlan | None,
    all_tests: bool,
    failure_log: frozenset[str],
) -> None:
    """Select: the whole suite (``all_tests``), or the static rules and the map's decision;
    then the failure log, and the test files that do not collect."""
    if all_tests:
        for nodeid in [*result.nodeids, *broken]:
            selector.add(nodeid, "--all: the whole suite", WHOLE_SUITE)
        for path in selector.changed:
            selector.reach(path, "*")
    else:
        selector.by_imports_and_fixtures(by_file, graph)
        if plan is not None:
            selector.by_map(plan.decision, set(result.nodeids))
        for path, where in sorted(selector.shared_state.items()):
            # pytest runs the suite in one process: tests that never import the file run
            # after it and see what it set. No map or graph follows that; all of them run.
            why = f"{path} changes state every later test shares ({where})"
            for nodeid in [*result.nodeids, *broken]:
                selector.add(nodeid, why, SHARED_STATE)
        for path in compiled_paths(selector.changed, Build.of(selector.map.replay)):
            # No graph or map sees through an extension: which test runs its code is
            # unknown, so every test does (docs/architecture.md §2, "Compiled code").
            why = f"{path} is compiled code, which no import graph follows"
            for nodeid in [*result.nodeids, *broken]:
                selector.add(nodeid, why, COMPILED_RULE)
            selector.reach(path, "*")
    selector.by_failure_log(failure_log, by_file)
    for path in broken:
        if path in selector.reasons:
            selector.add(path, f"does not collect at head: {broken[path].message}", NOT_COLLECTED)


def _broken_by_patch(
    selector: _Selector, broken: dict[str, CollectError], collects_at_base: CollectsAtBase | None
) -> None:
    """A test file that does not collect at the head fails the project's full suite
    whatever it imports. One no rule selected joins the slice, where it fails, when the base
    collects it: the patch broke it (a new test file whose module name clashes with it, a
    package ``__init__`` that now raises). A missing third-party module is left to the
    rules and the environment check, and a file the base cannot collect either is the
    base's own failure (a note)."""
    left = sorted(p for p, e in broken.items() if p not in selector.reasons and e.missing is None)
    if not left or collects_at_base is None:
        return
    ok = collects_at_base(left)
    for path in left:
        if path in ok:
            selector.add(
                path,
                f"does not collect at head, collects at the base: {broken[path].message}",
                BROKEN_BY_PATCH,
            )
        else:
            selector.notes.append(f"{show(path)} does not collect at the base either: left out")


@dataclass(frozen=True)
class _MapPlan:
    """What the dependency map settles before collection: its decision, the import graph
    (of the base's test files and the changed ones), and the test files to collect."""

    depmap: DependencyMap
    decision: mapselect.Decision
    graph: importgraph.ImportGraph
    only: frozenset[str] | None  # None: collect what the full suite collects


def _map_plan(
    selector: _Selector,
    depmap: DependencyMap,
    changes: list[mapselect.Change],
    failure_log: frozenset[str],
) -> _MapPlan:
    """Let the map decide, then name the test files worth collecting: those it needs, those
    a static rule still selects, the changed test files and the failure log's."""
    base_by_file: dict[str, list[str]] = {}
    for nodeid in depmap.tests:
        base_by_file.setdefault(file_of(nodeid), []).append(nodeid)
    tests = selector.map.replay.tests
    patterns = selector.patterns
    changed_tests = {
        c.path for c in changes if c.head is not None and is_suite_path(c.path, tests, patterns)
    }
    # Test modules the map has no test of (one that skipped itself at the base with a
    # module-level importorskip, one pytest did not collect) are the static rules' to judge.
    unmapped = {
        path
        for path in selector.sources
        if is_suite_path(path, tests, patterns)
        and path.rsplit("/", 1)[-1] not in (CONFTEST, "__init__.py")
        and path not in base_by_file
    }
    files = set(base_by_file) | changed_tests | unmapped
    _load_text_tests(selector, files)
    graph = importgraph.build(selector.sources, selector.roots(), files)
    decision = selector.use_map(depmap, changes, base_by_file, graph)
    touched = (
        _touches_collection(changes, tests, selector.patterns)
        or next(iter(selector.shared_state), None)
        # A look at a changed module's import may yet select every test.
        or next((f.path for f in selector.import_findings), None)
        # Compiled code selects every test (``_apply_rules``): all of them are collected.
        or next(iter(compiled_paths(selector.changed, Build.of(selector.map.replay))), None)
    )
    if touched is not None:
        # What the patch does to the test files can change how the others collect (a
        # deleted __init__.py that makes two modules clash, a new test module that stubs
        # sys.modules, a new test file outside replay.tests): collect them all.
        selector.notes.append(f"collected every test file: the patch changes {show(touched)}")
        return _MapPlan(depmap, decision, graph, None)
    only = selector.candidates(files, graph, depmap, decision)
    only |= changed_tests | {file_of(n) for n in failure_log}
    selector.notes.append(
        f"collected {len(only)} of the base's {len(base_by_file)} test file(s): the dependency "
        "map's candidates"
    )
    return _MapPlan(depmap, decision, graph, frozenset(only))


def _touches_collection(
    changes: list[mapselect.Change], tests: tuple[str, ...], patterns: ModulePatterns
) -> str | None:
    """The first changed path that can change how the suite collects: a Python file of the
    suite (``is_suite_path``: added, changed or deleted), or an ``__init__.py`` under the
    test roots added or deleted (it changes the names pytest imports test modules by);
    else ``None``. A source module under a root (tests inside the package) changed in
    place is the map's to judge: its importers are collected."""
    for change in changes:
        if not change.path.endswith(".py"):
            continue
        if is_suite_path(change.path, tests, patterns):
            return change.path
        init = change.path.rsplit("/", 1)[-1] == "__init__.py"
        if init and change.status != "M" and under_any(change.path, tests):
            return change.path
    return None


def _changes(
    repo: Path, merge_base: str, head_root: Path, paths: frozenset[str]
) -> list[mapselect.Change]:
    """Both sides of every changed path: the merge base's bytes (git) and the head's (the
    materialised tree); ``None`` where a side has no regular file."""
    from patchlane.infra import git

    # One ls-tree and one cat-file for all of them, not two git processes per path.
    wanted = sorted(paths)
    if not wanted:
        return []  # ls-tree without paths would list the whole commit
    entries = {
        e.path: e
        for e in git.ls_tree(repo, merge_base, wanted)
        if e.path in paths and e.kind == "blob" and e.mode in git.REGULAR_MODES
    }
    blobs: dict[str, bytes] = {}
    if entries:
        oids = [e.oid for e in entries.values()]
        blobs = dict(zip(entries, git.read_blobs(repo, oids), strict=True))
    changes: list[mapselect.Change] = []
    for path in wanted:
        base = blobs.get(path)
        target = to_fs(head_root, path)
        head = target.read_bytes() if target.is_file() and not target.is_symlink() else None
        status = "A" if base is None else "D" if head is None else "M"
        changes.append(mapselect.Change(path, status, base, head))
    return changes


def _rules_of(selector: _Selector, nodeid: str) -> tuple[str, ...]:
    """The rules that chose ``nodeid``: the one its first reason came with, then the rest."""
    first = selector.first_rule.get(nodeid)
    rest = sorted(selector.rules.get(nodeid, set()) - {first})
    return (first, *rest) if first is not None else tuple(rest)


def _rule_counts(rules: dict[str, set[str]], nodeids: tuple[str, ...]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for nodeid in nodeids:
        for rule in rules.get(nodeid, ()):
            counts[rule] = counts.get(rule, 0) + 1
    return counts


def _collect_scope(selector: _Selector, only: tuple[str, ...] | None) -> tuple[Scope, str]:
    """What to collect at the head: the tests under ``replay.tests`` (with ``only``, just
    those files), and the doctests of its changed modules of the code under test (they are
    those modules' own tests). A ``replay.tests`` path the head lacks is a note. Returns the
    scope and a progress line."""
    root, review_map = selector.root, selector.map
    test_paths = [p for p in review_map.replay.tests if to_fs(root, p).exists()]
    for p in review_map.replay.tests:
        if p not in test_paths:
            selector.notes.append(f"replay.tests path {show(p)} is not in the head commit")
    code_paths = review_map.property.paths if review_map.property else ()
    doctest_only = sorted(
        p
        for p in selector.changed
        if p.endswith(".py")
        and under_any(p, code_paths)
        and p.rsplit("/", 1)[-1] != CONFTEST
        and not under_any(p, review_map.replay.tests)
        and not any(c in p for c in "[]:")  # pytest's argv syntax: not passable
        and to_fs(root, p).is_file()
    )
    # collect() takes each path without its trailing slash; the run child's scope alike.
    paths = tuple(p.rstrip("/") or "." for p in test_paths)
    progress = f"replay: collecting tests under {', '.join(test_paths) or 'nothing'}"
    return Scope(paths, tuple(doctest_only), only), progress


def _tests_by_file(
    selector: _Selector, result: Collected
) -> tuple[dict[str, list[str]], dict[str, CollectError]]:
    """Group the collected node ids by file; return ``(by_file, broken)``.

    ``broken`` maps each test file that does not collect at the head to its error: it
    stands in ``by_file`` (and so in the slice) as its own id, failing there, unless the
    patch does not reach it at all. The text files pytest collects as doctests
    (``--doctest-glob``) join ``selector.sources``: the graph reads their examples' imports
    like a test module's.
    """
    by_file: dict[str, list[str]] = {}
    for nodeid in result.nodeids:
        by_file.setdefault(file_of(nodeid), []).append(nodeid)
    broken = {e.nodeid: e for e in result.errors if "::" not in e.nodeid}
    for path, error in sorted(broken.items()):
        by_file.setdefault(path, []).append(path)
        selector.notes.append(f"{show(path)} does not collect at head: {error.message}")
    _load_text_tests(selector, by_file)
    return by_file, broken


def _load_text_tests(selector: _Selector, files: Iterable[str]) -> None:
    """Add the text files among ``files`` (doctests pytest collects, ``--doctest-glob``)
    to ``selector.sources``: the graph reads their examples' imports."""
    for path in sorted(files):
        if (
            not path.endswith(".py")
            and path not in selector.sources
            and slicefile.nodeid_problem(path) is None  # a safe path inside the tree
            and to_fs(selector.root, path).is_file()
        ):
            selector.sources[path] = to_fs(selector.root, path).read_bytes()


def _drop_unusable(reasons: dict[str, list[str]]) -> list[str]:
    """Remove from ``reasons`` every node id that cannot be a slice line and return one
    message per test file that lost some.

    Such a node id (a test file whose name holds an unprintable character, a path pytest
    gives but the slice format refuses) cannot be replayed: the host would refuse the slice.
    The project's full suite would still run it, so leaving it out silently could accept a
    patch whose suite fails; the gate turns each message into a review event (rule 6). A
    failure-log id was already checked (``by_failure_log``) and is never here.
    """
    by_file: dict[str, list[tuple[str, str]]] = {}
    for nodeid in sorted(reasons):
        problem = slicefile.nodeid_problem(nodeid)
        if problem:
            by_file.setdefault(file_of(nodeid), []).append((nodeid, problem))
    messages: list[str] = []
    for path, dropped in sorted(by_file.items()):
        for nodeid, _ in dropped:
            del reasons[nodeid]
        path_problem = slicefile.nodeid_problem(path)
        if path_problem:
            messages.append(
                f"test file {show(path)} has a name the slice format cannot carry "
                f"({one_line(path_problem)}): its {len(dropped)} selected test(s) not replayed"
            )
        else:
            messages.append(
                f"{len(dropped)} selected node id(s) of {show(path)} cannot be slice lines "
                f"({one_line(dropped[0][1])}): not replayed"
            )
    return messages
