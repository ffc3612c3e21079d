"""Select the replay slice (docs/architecture.md §4): what the local lanes could not decide.

The head commit is materialised from git objects into a temp dir (never the work tree: the
slice must name what the head holds), pytest collects it in an isolated child, and the
slice is the union of what these rules select, each named in the report by the rule string
in brackets (``Selection.rule_counts``; the static rules' strings are ``staticrules``'):

1. every test in a changed test file under ``replay.tests``, a changed doctest file, the
   doctests of a changed module, and a test module that shares its file name with a changed
   one [``changed test file``];
2. every test whose ``conftest.py`` or test package ``__init__.py`` changed [``its conftest
   changed``];
3. every test whose file (or one of its ``conftest.py``) imports a changed module, directly
   or through other project modules (``importgraph``) [``static import graph``];
4. every test in a file that starts processes, for each changed module it does not import
   (the process may run it) [``starts processes``];
5. every test in a file whose source names a changed fixture or data file (its path or
   basename as a string literal), or that a module it imports names [``names a changed
   file``];
6. every test in a file that names a changed source file or a folder above it (it may read
   it as text) [``may read a changed source file``];
7. every test, when a changed file changes state every later test shares (``sharedstate``,
   or the head's look at a changed module's import: ``importseen``) [``a changed file
   changes state every test shares``];
8. every test, when the patch changes compiled code, which no import graph follows
   [``compiled code``];
9. every node id in the failure log, and every test of a file it names (included even when
   pytest no longer collects it: a logged failure must not pass by disappearing) [``failure
   log``];
10. every test file of the slice that does not collect at the head [``does not collect at
    head``], and every test file no rule selects that does not collect at the head but does
    at the base: the patch broke it [``does not collect at head, collects at the base``];
11. with a dependency map (``mapselect``), for the changed paths the map can speak for, its
    decision instead of rules 3-6: the tests that ran the changed code [``ran changed
    code``], that imported or ran a module changed outside one function [``module-level
    change``], that read a changed data file [``read changed data``], every test when
    changed code keeps state [``changed code keeps state``], the tests that imported or ran
    a module whose docstrings alone changed [``changed docstring``];

or, with ``all_tests``, the whole collected suite [``--all``]. Once that selection is fixed,
a random sample of the collected tests outside it joins the slice [``canary``]; with a
dependency map the collection also takes the files of a random sample of the map's tests,
so that the canary can land in any test file. A text file pytest collects as doctests
(``--doctest-glob``) is a test file like any other: its examples' imports are its edges.
A selected node id that cannot be a slice line (``slicefile.nodeid_problem``: a test file
whose name holds an unprintable character) is left out of the slice and said so in
``Selection.not_replayed``: the gate makes that a review event, never a bad-input exit.
So is every head entry the gate cannot materialise or name that pytest may collect or a
lane covers (``unmaterialised``).
It also finds out whether the slice may leave the machine: a file it needs under
``replay.private``, or holding a secret (``secrets``), makes it private.

The sequence: ``plan_slice`` (materialise the head, let the map decide, name what to
collect), then ``decide_slice`` on what pytest collected (the rules, ``selector``), which
returns the ``Selection``; ``select_slice`` does both around its own collection.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.formats import slicefile
from patchlane.formats.depmap import DependencyMap
from patchlane.infra import git
from patchlane.infra.tree import materialise
from patchlane.infra.ui import Output, show
from patchlane.inputs.paths import to_fs, under_any
from patchlane.lanes.replay import canary, mapselect
from patchlane.lanes.replay.basecheck import BaseRun, collects_at_base
from patchlane.lanes.replay.chosen import Scope
from patchlane.lanes.replay.collect import DEFAULT_TIMEOUT_S, Collected, collect
from patchlane.lanes.replay.run import child_env
from patchlane.lanes.replay.selection import CollectsAtBase, Selection, SliceRequest, file_of
from patchlane.lanes.replay.selector import (
    HeadCollection,
    MapPlan,
    Selector,
    apply_rules,
    broken_by_patch,
    drawn_canary,
    drop_unusable,
    graph_notes,
    load_text_tests,
    looked,
    outside_state,
    rule_counts_of,
    rules_of_node,
    tests_by_file,
)
from patchlane.project import importgraph
from patchlane.project.build import Build, built, compiled_paths
from patchlane.project.config import ReviewMap
from patchlane.project.harness import module_patterns_at
from patchlane.project.testmodules import (
    CONFTEST,
    ModulePatterns,
    is_suite_path,
)
from patchlane.project.unmaterialised import review_events


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
        seed_or_0 = 0 if seed is None else seed
        base = BaseRun(repo, merge_base, seed_or_0, timeout_s, Build.of(review_map.replay))
        return collects_at_base(base, paths, review_map.replay.tests)

    return ask


@dataclass(frozen=True)
class SlicePlan:
    """What selection settles before pytest collects: the materialised head (``root``,
    which must outlive the plan's use), what to collect (``scope``) and the map's part."""

    selector: Selector
    scope: Scope
    progress: str
    map_plan: MapPlan | None
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
    selector = Selector(root, review_map, changed_paths, module_patterns_at(repo, merge_base))
    # What the real checkout has and the gate cannot replay is a review event, not a note
    # (docs/architecture.md §1 rule 6; ``unmaterialised``).
    events, notes = review_events(materialised.skipped, root, review_map)
    selector.notes.extend(notes)
    selector.unreplayable.extend(events)
    map_plan = None
    if not all_tests:
        changes = _changes(repo, merge_base, root, changed_paths)
        outside_state(selector, changes, dep_map)
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


def decide_slice(plan: SlicePlan, result: Collected) -> Selection:
    """Apply the selection's rules to what pytest collected at the head (``result``).
    Returns the ``Selection``; raises ``SliceError`` when a selected node id cannot be a
    slice line."""
    selector, map_plan = plan.selector, plan.map_plan
    by_file, broken = tests_by_file(selector, result)
    graph = (
        map_plan.graph
        if map_plan is not None
        else importgraph.build(selector.sources, selector.roots(), by_file)
    )
    selector.notes.extend(graph_notes(graph))
    looked(selector, result)
    head = HeadCollection(result, by_file, broken, graph)
    apply_rules(selector, head, map_plan, plan.all_tests, plan.failure_log)
    broken_by_patch(selector, broken, plan.collects_at_base)
    not_replayed = [*selector.unreplayable, *drop_unusable(selector.reasons)]
    selector.notes.extend(not_replayed)
    # Drawn only now, after the slice is fixed (docs/architecture.md §4, "Replay slice").
    drawn = None if plan.all_tests else drawn_canary(selector, result, map_plan)
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
        rule_counts=rule_counts_of(selector.rules, nodeids),
        rules_of={n: rules_of_node(selector, n) for n in nodeids},
        dependency_map=plan.dep_map_note,
        canary=drawn,
    )


def _map_plan(
    selector: Selector,
    depmap: DependencyMap,
    changes: list[mapselect.Change],
    failure_log: frozenset[str],
) -> MapPlan:
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
    load_text_tests(selector, files)
    graph = importgraph.build(selector.sources, selector.roots(), files)
    decision = selector.use_map(depmap, changes, base_by_file, graph)
    touched = (
        _touches_collection(changes, tests, selector.patterns)
        or next(iter(selector.shared_state), None)
        # A look at a changed module's import may yet select every test.
        or next((f.path for f in selector.import_findings), None)
        # Compiled code selects every test (``apply_rules``): all of them are collected.
        or next(iter(compiled_paths(selector.changed, Build.of(selector.map.replay))), None)
    )
    if touched is not None:
        # What the patch does to the test files can change how the others collect (a
        # deleted __init__.py that makes two modules clash, a new test module that stubs
        # sys.modules, a new test file outside replay.tests): collect them all.
        selector.notes.append(f"collected every test file: the patch changes {show(touched)}")
        return MapPlan(depmap, decision, graph, None)
    only = selector.candidates(files, graph, depmap, decision)
    only |= changed_tests | {file_of(n) for n in failure_log}
    selector.notes.append(
        f"collected {len(only)} of the base's {len(base_by_file)} test file(s): the dependency "
        "map's candidates"
    )
    return MapPlan(depmap, decision, graph, frozenset(only))


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


def _collect_scope(selector: Selector, only: tuple[str, ...] | None) -> tuple[Scope, str]:
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
