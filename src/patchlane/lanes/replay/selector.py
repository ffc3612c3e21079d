"""The selection's rules at work: ``Selector`` holds what the static rules and the map found
for one patch, and the functions here apply the rules to what pytest collected at the head
(``select`` calls them in order: ``select.decide_slice``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.formats import slicefile
from patchlane.formats.canary import Canary
from patchlane.formats.depmap import DependencyMap
from patchlane.infra.ui import one_line, show
from patchlane.inputs.paths import to_fs, under, under_any
from patchlane.lanes.replay import canary, importseen, inert, mapselect
from patchlane.lanes.replay.collect import Collected
from patchlane.lanes.replay.results import CollectError
from patchlane.lanes.replay.secrets import scan_file
from patchlane.lanes.replay.selection import CollectsAtBase, file_of
from patchlane.lanes.replay.sharedstate import shared_state_change
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
from patchlane.project.build import COMPILED_RULE, Build, compiled_paths
from patchlane.project.config import ReviewMap
from patchlane.project.testmodules import (
    DEFAULT_PATTERNS,
    ModulePatterns,
    conftests,
    is_suite_path,
)

# The static rules about a changed path the dependency map may speak for (a module, a data
# file): a reason of theirs says why the map did not (``Selector._map_left``). A changed test
# file or conftest is never the map's, and needs no such word.
_MAP_COULD_DECIDE = frozenset({IMPORTS, NAMES, PROCESSES, READS_SOURCE})


def all_files(root: Path) -> list[str]:
    out: list[str] = []
    for dirpath, _, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        out.extend(n if rel_dir == "." else f"{rel_dir}/{n}" for n in filenames)
    return sorted(out)


class Selector:
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
        # (``outside_state``; judged in ``decide_slice`` by ``importseen``).
        self.import_findings: list[importseen.Finding] = []

    def _shared_state(self) -> dict[str, str]:
        """Changed test files of the head that change state every later test in the process
        shares (``sharedstate``, every function read) -> where and how. A changed code module
        is judged by what of its import-time code changed (``outside_state``: ``inert``), not
        by what it did at the base already (an ABC registered at import, unchanged)."""
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

        lookups = mapselect.Lookups(harness, graph.module_names, importers, module_importers)
        decision = mapselect.decide(depmap, changes, lookups)
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
        data_files = [p for p in all_files(self.root) if under_any(p, data_roots)]
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


def outside_state(
    selector: Selector, changes: list[mapselect.Change], depmap: DependencyMap | None
) -> None:
    """Add to ``selector.shared_state`` every changed code module whose import-time code may
    change state outside the module (``inert``): it runs at collection, before every test,
    so every test is selected. A project module counts as imported at collection when the
    map saw its lines run there; without a map, none does (an import of one then counts)."""
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
        finding = importseen.Finding(
            path, found, tuple(names), fixed_by(change, names, found, where)
        )
        if finding.fixed is not None:
            selector.shared_state[path] = importseen.judge(finding, {}).why
        else:
            # Every test file is still collected (``_map_plan``): the look may widen.
            selector.import_findings.append(finding)


def looked(selector: Selector, result: Collected) -> None:
    """Judge each pending import finding by the head's look at its import (``importseen``):
    add it to ``shared_state`` (every test) unless the look saw nothing, then a note."""
    for finding in selector.import_findings:
        judged = importseen.judge(finding, result.imports)
        if judged.widen:
            selector.shared_state[finding.path] = judged.why
        else:
            selector.notes.append(judged.why)


def drawn_canary(selector: Selector, result: Collected, plan: MapPlan | None) -> Canary | None:
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


def graph_notes(graph: importgraph.ImportGraph) -> Iterator[str]:
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


@dataclass(frozen=True)
class HeadCollection:
    """What pytest collected at the head (``result``), its node ids by test file, the test
    files that did not collect (``broken``), and the static import graph the rules read."""

    result: Collected
    by_file: dict[str, list[str]]
    broken: dict[str, CollectError]
    graph: importgraph.ImportGraph


def apply_rules(
    selector: Selector,
    head: HeadCollection,
    plan: MapPlan | None,
    all_tests: bool,
    failure_log: frozenset[str],
) -> None:
    """Select: the whole suite (``all_tests``), or the static rules and the map's decision
    (``plan``); then the failure log, and the test files that do not collect."""
    result, by_file, broken, graph = head.result, head.by_file, head.broken, head.graph
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


def broken_by_patch(
    selector: Selector, broken: dict[str, CollectError], collects_at_base: CollectsAtBase | None
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
class MapPlan:
    """What the dependency map settles before collection: its decision, the import graph
    (of the base's test files and the changed ones), and the test files to collect."""

    depmap: DependencyMap
    decision: mapselect.Decision
    graph: importgraph.ImportGraph
    only: frozenset[str] | None  # None: collect what the full suite collects


def rules_of_node(selector: Selector, nodeid: str) -> tuple[str, ...]:
    """The rules that chose ``nodeid``: the one its first reason came with, then the rest."""
    first = selector.first_rule.get(nodeid)
    rest = sorted(selector.rules.get(nodeid, set()) - {first})
    return (first, *rest) if first is not None else tuple(rest)


def rule_counts_of(rules: dict[str, set[str]], nodeids: tuple[str, ...]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for nodeid in nodeids:
        for rule in rules.get(nodeid, ()):
            counts[rule] = counts.get(rule, 0) + 1
    return counts


def tests_by_file(
    selector: Selector, result: Collected
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
    load_text_tests(selector, by_file)
    return by_file, broken


def load_text_tests(selector: Selector, files: Iterable[str]) -> None:
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


def drop_unusable(reasons: dict[str, list[str]]) -> list[str]:
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


def fixed_by(
    change: mapselect.Change, names: Sequence[str], found: str, where: Callable[[str], str]
) -> str | None:
    """Why no look at the head's import can lift ``found`` (``None``: one may): a module the
    patch adds, one the base did not import at collection, text ``inert`` could not read, or
    a change that imports such a module (its code runs where it did not)."""
    if change.base is None or change.head is None:
        return importseen.NEW_MODULE
    if not names or any(where(n) != inert.COLLECTED for n in names):
        return importseen.NOT_COLLECTED
    if ": imports " in found:
        return importseen.NEW_IMPORT
    if "not valid Python" in found or "nested too deeply" in found:
        return importseen.UNREADABLE
    return None
