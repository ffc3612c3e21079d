"""The property lane: materialise base and head, run every property module version in its
own child, judge what came back, and build the report.

Trust (docs/architecture.md §2): the deciding map is the caller's (the base's); each property module
runs twice, from the base (its property packages first on ``sys.path``, then the head's
code) and from the head, and a property fails if either run fails. The list of properties
each run must report on comes from parsing the module's source in this process, never from
the child, and a child's word counts only when its result channel is complete and
well-formed (see ``infra.process`` and ``child.properties``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from patchlane.child.messages import ImportResult, Job
from patchlane.errors import EnvironmentFault, InputError, MapError, UsageError
from patchlane.formats.property_report import (
    MODULE_LEVEL,
    STOPPED,
    CacheUse,
    ChildTiming,
    Failure,
    IsolationInfo,
    Mutation,
    OracleFinding,
    PropertyReport,
    PropertyRun,
    status_and_reason,
)
from patchlane.infra import git, process
from patchlane.infra.sandbox import Confinement, Isolation, network_layers
from patchlane.infra.sandbox import isolation as sandbox_isolation
from patchlane.infra.tree import materialise
from patchlane.infra.ui import Output, one_line
from patchlane.inputs.paths import to_fs
from patchlane.lanes.property import DEFAULT_MUTANTS, discover, judge, testplan
from patchlane.lanes.property.cache import results as resultcache
from patchlane.project.classify import property_module_prefixes
from patchlane.project.config import PropertyLane, ReviewMap

ORACLE_MODULE = "patchlane.child.oracle_audit.audit"
_SOURCES = ("base", "head")
# The one "property" an import probe reports on.
_IMPORT = "(import)"
# Asks patchlane's own environment, with nothing of the repository on the path, whether a
# top-level module is installed (``python -s -P -B -c CODE NAME``: exit 0 when it is).
_INSTALLED = (
    "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)"
)
HYPOTHESIS_FIX = "pip install 'patchlane[hypothesis]'"
# How the child's message for a module that did not import begins (``child.properties``).
IMPORT_FAILED = "import failed: "


@dataclass(frozen=True)
class _Job:
    """One child to start: a module version, the properties it must report, its payload."""

    module: str
    source: str
    mode: str  # run | audit | import
    names: tuple[str, ...]
    payload: Job
    timeout_s: float
    home: Path
    # What the run's result-cache key is made of (``resultcache.describe``); ``None``: the
    # run is not looked up or stored.
    described: resultcache.Description | None = None


@dataclass(frozen=True)
class _Trees:
    """Where the code under test (head) and the base's property packages are on disk, what
    of the base's property packages could not be materialised (``(path, why)``), and where
    each module's top-level package really resolves at base (``base_places``, repository
    paths such as ``checks/``; see ``_places``)."""

    repo: Path
    head_root: Path
    base_root: Path | None
    base: str | None
    head: str | None
    where: str
    base_skipped: tuple[tuple[str, str], ...] = ()
    base_places: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The base's versions of the test files the map names (``testplan``), if any.
    base_tests: Path | None = None


@dataclass(frozen=True)
class PropertyRequest:
    """What one property lane run is asked to do, whatever the revisions it runs on.

    ``seed`` and ``cases``: the properties' seed and cases per property. ``mutants`` bounds
    the oracle audit's mutants per property (0: no mutation). ``only`` runs one property
    name; ``case`` (with ``only``) one case of it. ``changed`` (a patch's changed paths):
    the audit runs only when one of them is a head property module or a file it imports
    (statically, transitively); an audit of unchanged oracles and code would repeat the
    base's. ``result_cache``: reuse the results of earlier runs whose inputs are
    unchanged, and store this run's (``resultcache``; materialised commits only, never the
    work tree).
    """

    seed: int
    cases: int
    mutants: int = DEFAULT_MUTANTS
    only: str | None = None
    case: int | None = None
    changed: frozenset[str] | None = None
    result_cache: bool = True


def start_property_lane(
    repo: Path,
    review_map: ReviewMap,
    request: PropertyRequest,
    *,
    base: str | None,
    head: str | None = "HEAD",
    out: Output | None = None,
    isolation: Isolation | None = None,
) -> LaneStarted:
    """Run the property lane's properties as ``request`` asks (its seed, cases, mutants,
    ``only``/``case``, changed paths and result cache: ``PropertyRequest``); start its
    oracle audit, which may still be running when this returns (``LaneStarted.finish``
    waits for it).

    ``base``/``head`` are revisions: with ``base``, the base's property modules and the
    head's are both run against the head commit's code; with ``base=None`` and a ``head``
    only that commit is run; with both ``None`` the work tree (no base, oracles from the
    work tree). ``isolation`` overrides the probed layers (tests). Raises ``MapError`` when the map has
    no property lane or names a module that exists neither at base nor at head,
    ``InputError`` when the base holds a property module only as an entry that cannot be
    materialised (a symlink out of the repository), ``EnvironmentFault`` when a module
    cannot import a third-party package at base and head alike (docs/architecture.md §2: exit 2, not
    the patch's fault), ``UsageError`` for bad options or an ``only`` that names no
    property, ``GitError`` for an unknown revision.
    """
    lane = review_map.property
    if lane is None:
        raise MapError(review_map.label, "no property lane (lanes.property): nothing to run")
    only = request.only
    _check_options(request.seed, request.cases, request.mutants, only, request.case)
    out = out or Output(quiet=True)
    layers = isolation or sandbox_isolation()
    started = time.monotonic()
    stack = contextlib.ExitStack()
    # The code under test may leave files it made unremovable: never an error of ours.
    tmp = stack.enter_context(
        tempfile.TemporaryDirectory(prefix="patchlane-property-", ignore_cleanup_errors=True)
    )
    try:
        scratch = Path(tmp).resolve()
        trees = _trees(repo, review_map, base, head, scratch)
        lane_run = _LaneRun(lane, review_map, trees, scratch, request, layers, out)
        lane_run.cache = _result_cache(trees) if request.result_cache else None
        lane_run.plan(only)
        lane_run.run_properties()
        lane_run.check_environment()
        lane_run.check_base_imports()
        audit, pending = _start_audit(
            lane_run, stack, only=only, changed=request.changed, mutants=request.mutants
        )
    except BaseException:
        stack.close()
        raise

    def finish(stop: bool = False) -> PropertyReport:
        said = audit
        if stop and pending is not None and not pending.done():
            # The verdict is already red: the audit, which only informs, is not waited for
            # (its running children are killed, the rest never start).
            lane_run.stop.set()
        with stack:  # waits for the audit's thread, then removes the trees
            if pending is not None:
                said = pending.result()
        if lane_run.stop.is_set():
            lane_run.findings.clear()
            lane_run.mutations.clear()
            said = STOPPED
        return _lane_report(lane_run, said, started)

    return LaneStarted(_lane_report(lane_run, audit, started), finish)


def _lane_report(lane_run: _LaneRun, audit: str, started: float) -> PropertyReport:
    """The lane's report from what ``lane_run`` holds now (``audit``: what it says of the
    oracle audit; ``started``: ``time.monotonic()`` when the lane began)."""
    lane, trees = lane_run.lane, lane_run.trees
    runs, failures = lane_run.ordered()
    status, reason = status_and_reason(failures, runs, lane_run.seed, lane_run.cases, trees.where)
    return PropertyReport(
        status=status,
        reason=reason,
        seed=lane_run.seed,
        cases=lane_run.cases,
        modules=lane.modules,
        base=trees.base,
        head=trees.head,
        properties=runs,
        failures=failures,
        oracle_findings=tuple(lane_run.findings),
        mutation=tuple(lane_run.mutations),
        oracle_audit=audit,
        isolation=IsolationInfo(network_layers(lane_run.layers), lane.timeout_s),
        seconds=time.monotonic() - started,
        children=tuple(lane_run.timings),
        cache=lane_run.cache_use,
        skipped_tests=lane_run.tests.skipped if lane_run.tests is not None else (),
    )


def _start_audit(
    lane_run: _LaneRun,
    stack: contextlib.ExitStack,
    *,
    only: str | None,
    changed: frozenset[str] | None,
    mutants: int,
) -> tuple[str, Future[str] | None]:
    """Start the oracle audit in a thread the ``stack`` joins; return what the report says
    of it until then and the running audit, whose result is what it says after (``None``
    when it does not run)."""
    if only is not None or not lane_run.passed_at_head():
        return "not run", None
    if importlib.util.find_spec(ORACLE_MODULE) is None:
        return "not available", None

    def audit() -> str:
        # Whether the patch reaches a property takes parsing the head's sources: done here,
        # off the caller's path, like the audit itself.
        if changed is not None and not lane_run.reaches(changed):
            return "unchanged"  # no property module, nothing they import: the base's
        lane_run.audit(mutants)
        return "ran"

    # Informational, never a verdict: it runs while the caller goes on.
    pool = stack.enter_context(ThreadPoolExecutor(max_workers=1))
    return "not run", pool.submit(audit)


def run_property_lane(
    repo: Path,
    review_map: ReviewMap,
    request: PropertyRequest,
    *,
    base: str | None,
    head: str | None = "HEAD",
    out: Output | None = None,
    isolation: Isolation | None = None,
) -> PropertyReport:
    """Run the whole property lane, its oracle audit included, and return its report (see
    ``start_property_lane`` for the options and what it raises)."""
    started = start_property_lane(
        repo, review_map, request, base=base, head=head, out=out, isolation=isolation
    )
    return started.finish()


class Finish(Protocol):
    """``LaneStarted.finish``: the whole report, waiting for the audit unless ``stop``."""

    def __call__(self, stop: bool = False) -> PropertyReport: ...


@dataclass(frozen=True)
class LaneStarted:
    """The property lane with its properties run and its oracle audit perhaps still running.

    ``report`` has every property's result (status, failures: all a verdict reads) and no
    audit yet; ``finish`` waits for the audit, removes the lane's trees and returns the
    whole report; ``finish(stop=True)`` (the verdict is red already) stops an audit still
    running instead, and the report says ``oracle_audit: stopped``. Call ``finish``
    exactly once, also when the caller fails meanwhile.
    """

    report: PropertyReport
    finish: Finish


def _result_cache(trees: _Trees) -> resultcache.ResultCache | None:
    """Return the result cache for this lane run's trees, or ``None`` for the work tree (it
    can change while a child reads it, so what was hashed may not be what was read).
    Raises ``CacheKeyError`` when the cache key cannot be read or made."""
    if trees.head is None:
        return None
    from patchlane.infra.bytecode import process_pycache
    from patchlane.infra.cache import default_cache
    from patchlane.infra.cachekey import load_or_create_key

    roots = {"head": trees.head_root}
    if trees.base_root is not None:
        roots["base"] = trees.base_root
    try:
        prefix = process_pycache()
    except OSError:
        return None
    key = load_or_create_key(default_cache())
    return resultcache.ResultCache(default_cache() / resultcache.FOLDER, roots, (prefix,), key)


def _guarded() -> list[str]:
    """Return the job's ``guarded`` directories, which make the child's sandbox block writes into the parts of
    patchlane's cache directory that later runs take results from: the property results and
    the dependency maps (docs/explanation/decisions/0016-caches.md), and the directory of the
    key their MACs are made with (a key the patch wrote would be one it knows:
    docs/architecture.md §4)."""
    from patchlane.formats.depmap import MAPS
    from patchlane.infra.cache import default_cache
    from patchlane.infra.cachekey import key_dir

    cache = default_cache()
    guarded = [os.fspath((cache / d).resolve()) for d in (resultcache.FOLDER, MAPS)]
    return [*guarded, os.fspath(key_dir().resolve())]


def _check_options(seed: int, cases: int, mutants: int, only: str | None, case: int | None) -> None:
    for label, value, minimum in (("seed", seed, 0), ("cases", cases, 1), ("mutants", mutants, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise UsageError(f"--{label} {value!r}: must be an integer of at least {minimum}")
    if case is not None:
        if only is None:
            raise UsageError("--case needs --only NAME (a case index belongs to one property)")
        if isinstance(case, bool) or not isinstance(case, int) or case < 0:
            raise UsageError(f"--case {case!r}: must be an integer of at least 0")


def _trees(
    repo: Path, review_map: ReviewMap, base: str | None, head: str | None, scratch: Path
) -> _Trees:
    if base is None and head is None:
        where = "no base, oracles from the work tree"
        return _Trees(repo, repo.resolve(), None, None, None, where)
    head_commit = git.resolve_commit(repo, head or "HEAD")
    base_commit = git.resolve_commit(repo, base) if base is not None else None
    head_root = scratch / "head"
    materialise(repo, head_commit, head_root)
    _build_head(review_map, head_root)
    if base_commit is None:
        where = f"no base, oracles from head {head_commit[:12]}"
        return _Trees(repo, head_root, None, None, head_commit, where)
    base_root, skipped, places = _materialise_base(repo, review_map, base_commit, scratch)
    base_tests = None
    if review_map.property is not None and review_map.property.tests:
        base_tests = base_root / testplan.BASE_DIR
        materialise(repo, base_commit, base_tests, testplan.base_paths(review_map.property))
    where = f"oracles from base {base_commit[:12]} and head {head_commit[:12]}"
    return _Trees(
        repo, head_root, base_root, base_commit, head_commit, where, skipped, places, base_tests
    )


def _build_head(review_map: ReviewMap, root: Path) -> None:
    """Build the head's compiled code in ``root`` with the map's ``lanes.replay.build``, so
    that properties call the patch's extension, never a stale build (docs/architecture.md
    §2, "Compiled code"). A build that fails leaves the tree unbuilt: the replay lane
    judges that failure (against the base's build too), and a property that imports the
    extension errors meanwhile, which is never a pass. Raises nothing for what it does."""
    from patchlane.project.build import Build, run_build

    build = Build.of(review_map.replay)
    if build is not None:
        run_build(build, root, "head")


def _materialise_base(
    repo: Path, review_map: ReviewMap, commit: str, scratch: Path
) -> tuple[Path, tuple[tuple[str, str], ...], dict[str, tuple[str, ...]]]:
    """Write the base's property packages to ``scratch/base``. Return that root, what was
    not materialised (``(path, why)``) and, per module, the places where its top-level
    package really resolves at base (``_places``; none for a module the base lacks).

    Where a module lives is only known by looking: first every candidate built from the
    module names is written (each name under every import root), and each module is
    located there in the child's ``sys.path`` order of roots. The base tree must hold
    nothing else: its roots go on ``sys.path`` ahead of the head's, so a candidate that is
    not where the module resolves (``src/checks/`` beside the property package
    ``checks/``) or a package refused for holding code under test would put the base's
    code where the head's belongs. When the candidates hold more than the places of the
    modules that may run from the base, the tree is written again with only those.
    """
    lane = review_map.property
    assert lane is not None  # noqa: S101 - the lane runs only with a property lane
    candidates = property_module_prefixes(review_map)
    if not candidates:  # no property module (only tests the map names): an empty tree
        (scratch / "base").mkdir()
        return scratch / "base", (), {}
    probe_root = scratch / "base-candidates"
    probe = materialise(repo, commit, probe_root, candidates)
    # A module the base does not hold has no base version to refuse (nor to run): the
    # checks for a missing base module apply to it instead.
    roots = discover.search_roots(probe_root, lane)
    places = {
        module: _places(probe_root, lane, module)
        if discover.find_module_file(module, roots) is not None
        else ()
        for module in lane.modules
    }
    keep = sorted(
        {
            place
            for found in places.values()
            if not discover.overlapping_prefixes(lane, found)
            for place in found
        }
    )
    present = {c for c in candidates if os.path.lexists(to_fs(probe_root, c))}
    base_root = scratch / "base"
    if present <= set(keep):
        probe_root.rename(base_root)  # in-tree links are relative: they survive the move
        return base_root, probe.skipped, places
    if not keep:
        base_root.mkdir()
        return base_root, probe.skipped, places
    narrow = materialise(repo, commit, base_root, keep)
    skipped = tuple(dict.fromkeys((*probe.skipped, *narrow.skipped)))
    return base_root, skipped, places


def _places(root: Path, lane: PropertyLane, module: str) -> tuple[str, ...]:
    """Return the repository paths where ``module``'s top-level package (or module)
    resolves in the tree at ``root``, its import roots searched in the child's ``sys.path``
    order (``discover.top_level_places``): ``checks/`` for a package directory,
    ``props.py`` for a module, each portion of a namespace package, and for an in-tree
    symlink also the path it resolves to (its bytes are what runs). ``""`` stands for the
    whole tree. Empty when the tree holds nothing of that name."""
    real_root = Path(os.path.realpath(root))
    out: dict[str, None] = {}
    for place in discover.top_level_places(module, discover.search_roots(root, lane)):
        suffix = "/" if place.is_dir() else ""
        for path, within in ((place, root), (Path(os.path.realpath(place)), real_root)):
            if path.is_relative_to(within):
                rel = path.relative_to(within).as_posix()
                out.setdefault("" if rel == "." else rel + suffix)
    return tuple(out)


class _LaneRun:
    """The state of one lane run: the plan, then the children's verdicts."""

    def __init__(
        self,
        lane: PropertyLane,
        review_map: ReviewMap,
        trees: _Trees,
        scratch: Path,
        request: PropertyRequest,
        layers: Isolation,
        out: Output,
    ) -> None:
        self.lane = lane
        self.review_map = review_map
        self.trees = trees
        self.scratch = scratch
        self.seed = request.seed
        self.cases = request.cases
        self.case = request.case
        self.layers = layers
        self.out = out
        self.jobs: list[_Job] = []
        self.order: dict[str, list[str]] = {m: [] for m in lane.modules}
        self.runs: list[PropertyRun] = []
        self.failures: list[Failure] = []
        self.findings: list[OracleFinding] = []
        self.mutations: list[Mutation] = []
        self.timings: list[ChildTiming] = []
        # Set when the verdict no longer waits for this run (``LaneStarted.finish``).
        self.stop = threading.Event()
        self.passed: dict[tuple[str, str], float] = {}  # (module, name) -> seconds, at head
        self.head_versions: dict[str, discover.ModuleVersion] = {}
        self.tests: testplan.TestPlan | None = None
        # (module, source) -> the package a run's import could not find (the child's hint).
        self.missing: dict[tuple[str, str], str] = {}
        # Property modules whose base version did not import in the lane's run (against
        # the head's code): the patch's fault, unless the base's own code fails it too.
        self.base_import_failed: set[str] = set()
        self.mutants = 0
        self._homes = 0
        self._base_whole: Path | None = None
        self.cache: resultcache.ResultCache | None = None
        self.cache_use: CacheUse | None = None
        # Finished runs for the cache: (job, what to store or None, why not).
        self._offers: list[tuple[_Job, resultcache.Offer | None, str]] = []

    # -- planning ------------------------------------------------------------------------

    def plan(self, only: str | None) -> None:
        """Find every module version, record module-level failures, and queue run jobs.

        Raises ``UsageError`` when ``only`` names no property of any module version.
        """
        found_only = only is None
        for module in self.lane.modules:
            versions = self._versions(module)
            for version in versions:
                names = tuple(n for n in version.names if only is None or n == only)
                found_only = found_only or bool(names)
                for name in version.names:
                    if name not in self.order[module]:
                        self.order[module].append(name)
                if names:
                    self.jobs.append(self._run_job(version, names))
                if version.source == "head":
                    self.head_versions[module] = version
        found_only = self._plan_tests(only) or found_only
        if not found_only:
            modules = ", ".join(self.lane.modules)
            raise UsageError(f"--only {only}: no property of that name in {modules}")

    def _plan_tests(self, only: str | None) -> bool:
        """Queue a run job for each version of each test file the map names (``tests``);
        return whether any ``@given`` test is to run."""
        if not self.lane.tests:
            return False
        trees = {"head": self.trees.head_root}
        if self.trees.base_tests is not None:
            trees = {"base": self.trees.base_tests, **trees}
        found = testplan.plan(self.lane, trees, self.review_map.label, only)
        self.tests = found
        line = testplan.skipped_line(found.skipped)
        if line is not None:
            self.out.progress(line)
        for path in found.files:
            self.order.setdefault(path, [])
        for version in found.versions:
            if version.error is not None and version.source == "base":
                # The base's own test file, named by its map: the user's to fix (exit 2).
                raise self._base_broken(
                    version.path, f"the test file {version.path}", version.error, version.error_line
                )
            if version.error is not None:
                self._module_failure(version.path, version.source, version.error)
                continue
            directory = version.path.rpartition("/")[0]
            overlap = discover.overlapping_prefixes(self.lane, [directory + "/"])
            if version.source == "base" and overlap:
                why = "its directory also holds code under test, so its base version would "
                self._module_failure(
                    version.path, "base", why + "test the base's code: keep tests apart"
                )
                continue
            for name in version.names:
                if name not in self.order[version.path]:
                    self.order[version.path].append(name)
            if version.names:
                self.jobs.append(self._test_job(version))
        return any(v.names for v in found.versions)

    def _test_job(self, version: testplan.TestVersion) -> _Job:
        """The run job of one version of a test file the map names (``pytests``)."""
        head = self.trees.head_root
        trees = [os.fspath(head)]
        if version.source == "base":
            trees.insert(0, os.fspath(version.tree))
        payload: Job = {
            "mode": "run",
            "module": version.module,
            "names": list(version.names),
            "expect_file": os.fspath(version.file),
            "paths": testplan.child_paths(version, discover.search_roots(head, self.lane)),
            "cwd": os.fspath(head),
            "trees": trees,
            "seed": self.seed,
            "cases": self.cases,
            "case": self.case,
            "hypothesis": True,
            "tests": True,
            "guarded": _guarded(),
        }
        return self._job(version.path, version.source, version.names, payload)

    def _versions(self, module: str) -> list[discover.ModuleVersion]:
        trees = self.trees
        base_version = None
        if trees.base_root is not None:
            # Only where the base's module really is counts (issue 9): a candidate built
            # from its name under another root (``src/checks/`` for ``checks.props`` at
            # the repository root) holds nothing of it.
            overlap = discover.overlapping_prefixes(self.lane, trees.base_places.get(module, ()))
            if overlap:
                self._module_failure(
                    module,
                    "base",
                    f"its package ({', '.join(overlap)}) also holds code under test, so its "
                    "base version would test the base's code: keep properties in a package "
                    "of their own",
                )
            else:
                base_version = self._locate(module, "base", trees.base_root)
                if base_version is None:
                    self._check_base_materialised(module)
                elif base_version.error is not None:
                    raise self._base_broken(
                        base_version.error_file or module,
                        f"the property module {module}",
                        base_version.error,
                        base_version.error_line,
                    )
        head_version = self._locate(module, "head", trees.head_root)
        versions = [v for v in (base_version, head_version) if v is not None]
        # A module at neither commit is the map's fault, whatever the patch did (docs/architecture.md §2):
        # the patch cannot change the base, and it is the base that lacks it.
        if not versions and trees.base_root is None:
            place = f"at head {trees.head[:12]}" if trees.head else "in the work tree"
            raise self._map_error(f"no such module {module!r} {place}")
        if not versions and not self._failed_module(module):
            raise self._map_error(f"no such module {module!r} at base or head")
        for version in versions:
            if version.error is not None:
                self._module_failure(module, version.source, version.error)
        good = [v for v in versions if v.error is None]
        if versions and good and not any(v.names for v in good):
            self._module_failure(module, good[-1].source, "defines no prop_* function")
        return [v for v in good if v.names]

    def _base_broken(self, file: str, what: str, error: str, line: int | None) -> InputError:
        """The error for the base's version of a property module or test file (``what``)
        that cannot be read or parsed (``error``, at ``file``:``line``): the base is the
        user's, not the patch's (docs/architecture.md §2), and no patch can be judged by an
        oracle that does not parse (exit 2, the file and line named)."""
        where = f"{file}:{line}" if line else file
        detail = error.removeprefix(f"{where}: ").removeprefix(f"{file}: ")
        base = (self.trees.base or "")[:12]
        return InputError(
            file,
            f"{detail} ({what} at the base {base}, as the base's review map names it: fix "
            "it there; every patch is judged by it)",
            line,
        )

    def _map_error(self, message: str) -> MapError:
        lane = self.lane
        where = f"lanes.property.{lane.modules_key}"
        return MapError(self.review_map.label, f"{where}: {message}", lane.modules_line)

    def _check_base_materialised(self, module: str) -> None:
        """Raise ``InputError`` when the base holds ``module`` (or a package on its way)
        only as an entry that was not materialised (a symlink that leaves the repository,
        loops or dangles): its base version would silently not run, and the head's, which
        the patch controls, would be all there is."""
        candidates = discover.module_paths(self.lane, module)
        for path, why in self.trees.base_skipped:
            if path in candidates:
                base = (self.trees.base or "")[:12]
                raise InputError(
                    f"{path} (base {base})",
                    f"property module {module}: the base's version cannot be run ({why}); "
                    "make it a regular file or a symlink that stays inside the repository",
                )

    def _failed_module(self, module: str) -> bool:
        return any(f.module == module and f.property == MODULE_LEVEL for f in self.failures)

    def _locate(self, module: str, source: str, root: Path) -> discover.ModuleVersion | None:
        file = discover.find_module_file(module, discover.search_roots(root, self.lane))
        if file is None:
            return None
        label = file.relative_to(root).as_posix()
        return discover.read_version(module, source, Path(os.path.realpath(file)), label)

    def _module_failure(self, module: str, source: str, message: str) -> None:
        self.failures.append(
            Failure(MODULE_LEVEL, module, source, self.seed, None, None, message, "module")
        )

    def _home(self) -> Path:
        self._homes += 1
        home = self.scratch / f"home-{self._homes}"
        home.mkdir()
        return home

    def _paths(self, source: str) -> tuple[list[str], list[str]]:
        """Return the child's ``sys.path`` entries and its trees (for file names)."""
        head = [os.fspath(p) for p in discover.search_roots(self.trees.head_root, self.lane)]
        trees = [os.fspath(self.trees.head_root)]
        if source == "base" and self.trees.base_root is not None:
            base = discover.search_roots(self.trees.base_root, self.lane)
            return [os.fspath(p) for p in base] + head, [os.fspath(self.trees.base_root), *trees]
        return head, trees

    def _payload(self, version: discover.ModuleVersion, names: Sequence[str]) -> Job:
        paths, trees = self._paths(version.source)
        return {
            "mode": "run",
            "module": version.module,
            "names": list(names),
            "expect_file": os.fspath(version.file),
            "paths": paths,
            "cwd": os.fspath(self.trees.head_root),
            "trees": trees,
            "seed": self.seed,
            "cases": self.cases,
            "case": self.case,
            "hypothesis": version.uses_hypothesis,
            "guarded": _guarded(),
        }

    def _run_job(self, version: discover.ModuleVersion, names: tuple[str, ...]) -> _Job:
        return self._job(version.module, version.source, names, self._payload(version, names))

    def _job(self, module: str, source: str, names: tuple[str, ...], payload: Job) -> _Job:
        """A run job with its own home, described for the result cache when it is on."""
        home = self._home()
        payload = {**payload, "home": os.fspath(home)}
        described = None
        if self.cache is not None:
            described = resultcache.describe(
                payload,
                source,
                self.cache.roots,
                timeout_s=self.lane.timeout_s,
                isolation=(self.layers.kind, *self.layers.netns_prefix),
            )
        if described is not None:
            payload["record"] = True  # the child records what it reads (``reads``)
        timeout = self.lane.timeout_s
        return _Job(module, source, "run", names, payload, timeout, home, described)

    # -- running -------------------------------------------------------------------------

    def _execute(
        self,
        jobs: list[_Job],
        judge: Callable[[_Job, process.ChildRun], None],
        ready: Mapping[int, process.ChildRun] | None = None,
    ) -> None:
        """Run ``jobs`` in children, except those in ``ready`` (a job's index -> its result
        from the cache), and ``judge`` every result in job order."""
        ready = ready or {}
        if not jobs:
            return
        workers = max(1, min(len(jobs) - len(ready), os.cpu_count() or 1))
        argv = process.CHILD_ARGV
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures: dict[int, Future[process.ChildRun]] = {}
            for i, job in enumerate(jobs):
                if i in ready:
                    continue
                self.out.progress(f"property: {job.module} ({job.source}, {job.mode})")
                env = process.minimal_env(job.home)
                futures[i] = pool.submit(
                    _start,
                    argv,
                    job,
                    cwd=self.trees.head_root,
                    env=env,
                    layers=self.layers,
                    stop=self.stop,
                )
            # Judged in job order, so that the report never depends on which child ended first.
            for i, job in enumerate(jobs):
                cached = i in ready
                result = ready[i] if cached else futures[i].result()
                timing = ChildTiming(job.module, job.source, job.mode, result.seconds, cached)
                self.timings.append(timing)
                if job.described is not None and not cached:
                    result = self._offer(job, result)
                if result.stderr_tail:
                    tail = result.stderr_tail.decode("utf-8", "replace").strip().splitlines()
                    # The code under test's bytes: one escaped line, never a line of ours.
                    last = one_line(tail[-1]) if tail else ""
                    self.out.debug(f"{job.module} ({job.source}) stderr: {last}")
                judge(job, result)

    def run_properties(self) -> None:
        """Run every queued job, or take its result from the cache when nothing it read has
        changed, and judge each one's results; then store the runs that may be reused."""
        ready: dict[int, process.ChildRun] = {}
        cache = self.cache
        if cache is not None:
            for i, job in enumerate(self.jobs):
                if job.described is None:
                    continue
                start = time.monotonic()
                records = cache.lookup(job.described)
                if records is not None:
                    ready[i] = resultcache.hit_run(records, time.monotonic() - start)
                    self.out.progress(f"property: {job.module} ({job.source}, from the cache)")
            for entry in cache.unverified:
                self.out.progress(f"property: cache entry {entry} did not verify: not used")
        self._execute(self.jobs, self._judge_run, ready)
        if cache is not None:
            self._store(cache, hits=len(ready))

    def _offer(self, job: _Job, result: process.ChildRun) -> process.ChildRun:
        """Take the child's record of its reads out of ``result`` (which is returned
        without it, to be judged) and keep the run for the cache if it may be stored."""
        assert job.described is not None  # noqa: S101 - only jobs with a key are offered
        result, reads = resultcache.split(result)
        records, why = resultcache.trusted_records(job.names, result)
        if reads is None:
            why = why or "the child sent no well-formed record of its reads"
        if records is None or reads is None:
            self._offers.append((job, None, why))
            return result
        offer = resultcache.Offer(job.described, records, reads, job.home)
        self._offers.append((job, offer, ""))
        return result

    def _store(self, cache: resultcache.ResultCache, *, hits: int) -> None:
        """Store the offered runs and count what the cache did for this lane run."""
        offers = [offer for _, offer, _ in self._offers if offer is not None]
        stored = iter(cache.store(offers))
        count = 0
        for job, offer, why in self._offers:
            if offer is not None:
                why = next(stored)
            if why:
                self.out.debug(f"property cache: {job.module} ({job.source}) not stored: {why}")
            else:
                count += 1
        self.cache_use = CacheUse(
            hits=hits, misses=len(self.jobs) - hits, stored=count, unverified=len(cache.unverified)
        )

    def passed_at_head(self) -> bool:
        """Whether any head property of a property module passed (the oracle audit's
        candidates: tests the map names are not audited)."""
        return any(module in self.lane.modules for module, _name in self.passed)

    def _judge_run(self, job: _Job, result: process.ChildRun) -> None:
        got, problems = judge.records(job.names, result, judge.valid_run_record)
        for name in job.names:
            record = got.get(name)
            style = record["style"] if record is not None else "unknown"
            if record is not None and record["outcome"] == "fail":
                if record["missing"] is not None and not problems:
                    self.missing.setdefault((job.module, job.source), record["missing"])
                if job.source == "base" and str(record["message"]).startswith(IMPORT_FAILED):
                    # A claim of the child, where head code ran: check_base_imports decides.
                    self.base_import_failed.add(job.module)
                kind = record["kind"]
                failure = Failure(
                    name,
                    job.module,
                    job.source,
                    self.seed,
                    record["case_index"],
                    record["arguments"],
                    record["message"],
                    kind,
                )
            elif record is not None and not problems:
                self.runs.append(PropertyRun(job.module, name, job.source, style, "pass"))
                if job.source == "head":
                    self.passed[(job.module, name)] = float(record["seconds"])
                continue
            elif record is None and result.timed_out:
                message = (
                    f"timed out after {job.timeout_s:g} s (timeout_s); "
                    "the child's process group was killed"
                )
                failure = Failure(
                    name, job.module, job.source, self.seed, None, None, message, "timeout"
                )
            else:
                why = "; ".join(problems[:3]) or "no result"
                prefix = "reported a pass, but " if record is not None else ""
                message = f"{prefix}the child's results cannot be trusted: {why}"
                failure = Failure(
                    name, job.module, job.source, self.seed, None, None, message, "protocol"
                )
            self.failures.append(failure)
            outcome = {"assertion": "fail", "timeout": "timeout"}.get(failure.kind, "error")
            self.runs.append(PropertyRun(job.module, name, job.source, style, outcome))

    # -- faults of the environment --------------------------------------------------------

    def check_environment(self) -> None:
        """Raise ``EnvironmentFault`` for the first module (map order) whose import failed
        for want of a third-party package that the base lacks alike (``_fails_alike``).

        Only what the head changes counts against the patch (docs/architecture.md §2): a package
        missing from patchlane's environment fails every run, base or head, and says
        nothing about the patch. The child only names the package; everything that makes
        it the environment's fault is checked here.
        """
        checked: dict[tuple[str, str], bool] = {}
        for module in self.lane.modules:
            for source in _SOURCES:
                package = self.missing.get((module, source))
                if package is None:
                    continue
                if (module, package) not in checked:
                    checked[(module, package)] = self._fails_alike(module, package)
                if checked[(module, package)]:
                    raise EnvironmentFault(self._install_hint(module, package))

    def check_base_imports(self) -> None:
        """Raise ``InputError`` for the first module (map order) whose base version failed
        to import in the lane's run and fails to import with the base's own code as well
        (the whole base commit, in a child): the base is the user's, not the patch's
        (docs/architecture.md §2), and no patch can be judged by an oracle that does not
        import. A base module that imports with the base's code failed because of the
        head's: that failure stays the patch's (red)."""
        if self.trees.base is None:
            return
        for module in self.lane.modules:
            if module not in self.base_import_failed:
                continue
            whole = self._whole_base()
            file = discover.find_module_file(module, discover.search_roots(whole, self.lane))
            if file is None:
                continue
            real = Path(os.path.realpath(file))
            record = self._import_record(module, real, whole)
            if record is None or record["message"] is None:
                continue
            label = real.relative_to(whole).as_posix() if real.is_relative_to(whole) else module
            why = f"{record['message']}, with the base's own code too"
            raise self._base_broken(label, f"the property module {module}", why, None)

    def _fails_alike(self, module: str, package: str) -> bool:
        """Return whether ``package`` is a third-party package missing here that fails the
        base's ``module`` too: not a module of the project at head or at base, not
        installed in patchlane's environment, and the base's module imported with the
        base's own code (a full base tree, in a child) misses exactly that package. A
        patch that adds ``import some_missing_pkg`` anywhere fails this last test: the
        base imports fine, so the failure is the patch's (red, as any other)."""
        head_roots = discover.search_roots(self.trees.head_root, self.lane)
        if discover.provides(package, head_roots) or self._installed(package):
            return False
        if self.trees.base is None:
            return True  # no base: the tree run is all there is, and it is not the patch
        whole = self._whole_base()
        roots = discover.search_roots(whole, self.lane)
        if discover.provides(package, roots):
            return False
        file = discover.find_module_file(module, roots)
        if file is None:
            return False  # no such module at base: the patch added it, and its imports
        return self._probe_import(module, Path(os.path.realpath(file)), whole) == package

    def _installed(self, package: str) -> bool:
        """Whether patchlane's environment finds top-level ``package`` with nothing of the
        repository on the path (in doubt, yes: then nothing is blamed on it)."""
        home = self._home()
        argv = [*process.PYTHON_ARGV, "-c", _INSTALLED, package]
        try:
            proc = subprocess.run(
                argv,
                env=process.minimal_env(home),
                cwd=home,
                capture_output=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return True
        return proc.returncode != 1

    def _whole_base(self) -> Path:
        """Materialise the whole base commit once (only on this rare path)."""
        if self._base_whole is None:
            assert self.trees.base is not None  # noqa: S101 - only called with a base
            self._base_whole = self.scratch / "base-whole"
            materialise(self.trees.repo, self.trees.base, self._base_whole)
        return self._base_whole

    def _probe_import(self, module: str, file: Path, root: Path) -> str | None:
        """Import the base's ``module`` with the base's own code in a child; return the
        package it missed, or ``None`` when it imported (or failed otherwise)."""
        record = self._import_record(module, file, root)
        if record is None or record["message"] is None:
            return None
        return record["missing"]

    def _import_record(self, module: str, file: Path, root: Path) -> ImportResult | None:
        """Import the base's ``module`` with the base's own code in a child; return its
        well-formed import record (``message`` ``None`` when it imported), or ``None`` when
        the module does not parse or the child gave no trustworthy record."""
        label = file.relative_to(root).as_posix() if file.is_relative_to(root) else file.name
        version = discover.read_version(module, "base", file, label)
        if version.error is not None:
            return None
        home = self._home()
        payload: Job = {
            "mode": "import",
            "module": module,
            "names": [_IMPORT],
            "expect_file": os.fspath(file),
            "paths": [os.fspath(p) for p in discover.search_roots(root, self.lane)],
            "cwd": os.fspath(root),
            "trees": [os.fspath(root)],
            "seed": self.seed,
            "cases": self.cases,
            "case": None,
            "hypothesis": version.uses_hypothesis,
            "home": os.fspath(home),
            "guarded": _guarded(),
        }
        job = _Job(module, "base", "import", (_IMPORT,), payload, self.lane.timeout_s, home)
        self.out.progress(f"property: {module} (base, import with the base's code)")
        env = process.minimal_env(home)
        result = _start(process.CHILD_ARGV, job, cwd=root, env=env, layers=self.layers)
        self.timings.append(ChildTiming(module, "base", "import", result.seconds))
        got, problems = judge.records(job.names, result, judge.valid_import_record)
        record = got.get(_IMPORT)
        if problems or record is None:
            return None
        return record

    def _install_hint(self, module: str, package: str) -> str:
        if self.trees.base is not None:
            where = "at base and head alike"
        else:
            where = f"at head {self.trees.head[:12]}" if self.trees.head else "in the work tree"
        if package == "hypothesis":
            fix = f"Hypothesis runs from patchlane's own environment: {HYPOTHESIS_FIX}"
        else:
            fix = f"install {package} in the environment patchlane runs in ({sys.executable})"
        return (
            f"property module {module} cannot import {package!r} (not installed, not a "
            f"module of the repository), {where}: {fix}"
        )

    # -- the oracle audit ----------------------------------------------------------------

    def reaches(self, changed: frozenset[str]) -> bool:
        """Whether a changed path is one of the head's property modules or a file of the
        head tree that one of them imports, directly or not (the static import graph; a
        computed import reaches every module)."""
        from patchlane.project import importgraph

        head = self.trees.head_root
        roots = [
            r.relative_to(head).as_posix() if r != head else ""
            for r in discover.search_roots(head, self.lane)
        ]
        sources = {
            p.relative_to(head).as_posix(): p.read_bytes()
            for p in head.rglob("*.py")
            if p.is_file() and not p.is_symlink()
        }
        graph = importgraph.build(sources, roots)
        for version in self.head_versions.values():
            start = version.file.relative_to(head).as_posix()
            if graph.files_reached(start) & changed:
                return True
        return False

    def audit(self, mutants: int) -> None:
        """Audit every head property that passed, one child per module; record findings
        and kill ratios. Never adds failures: an audit says how good an oracle is, not
        whether the patch broke it."""
        # The head's property packages where they really are: a candidate built from a
        # module's name that does not exist would, as a bare prefix, also hide code under
        # test (``src/checks`` covers ``src/checksum.py``), and one that holds other code
        # is not a property package.
        head = self.trees.head_root
        excluded = list(
            dict.fromkeys(
                os.fspath(head.joinpath(*rel.rstrip("/").split("/")))
                for module in self.lane.modules
                for rel in _places(head, self.lane, module)
            )
        )
        if self.trees.base_root is not None:
            excluded.append(os.fspath(self.trees.base_root))
        jobs = []
        for module in self.lane.modules:
            version = self.head_versions.get(module)
            names = tuple(n for n in self.order[module] if (module, n) in self.passed)
            if version is None or not names:
                continue
            # A mutant that loops must not eat the whole budget: each gets ten times what
            # the property took (at least a second); the child's clock allows them all.
            budgets = {n: max(1.0, 10 * self.passed[(module, n)]) for n in names}
            # The child stops starting mutants at the budget; one already running may take
            # its own timeout, and the clock allows for that and for the import.
            longest = max(budgets.values())
            timeout = self.lane.timeout_s + self.lane.audit_budget_s + 2 * longest
            home = self._home()
            payload: Job = {
                **self._payload(version, names),
                "mode": "audit",
                "case": None,
                "home": os.fspath(home),
                "project_root": os.fspath(self.trees.head_root),
                "exclude": excluded,
                "mutants": mutants,
                "per_mutant_timeout_s": budgets,
                "budget_s": self.lane.audit_budget_s,
            }
            jobs.append(_Job(module, "head", "audit", names, payload, timeout, home))
        self.mutants = mutants
        self._execute(jobs, self._judge_audit)

    def _judge_audit(self, job: _Job, result: process.ChildRun) -> None:
        got, problems = judge.records(job.names, result, judge.valid_audit_record)
        for name in job.names:
            record = got.get(name)
            if record is None or problems:
                why = (
                    "timed out"
                    if result.timed_out and record is None
                    else "; ".join(problems[:3]) or "no result"
                )
                self.mutations.append(Mutation(job.module, name, 0, 0, f"no audit result: {why}"))
                continue
            audit = record["audit"]
            if "error" in audit:
                self.mutations.append(Mutation(job.module, name, 0, 0, audit["error"]))
                continue
            for kind, detail in audit["findings"]:
                self.findings.append(
                    OracleFinding(module=job.module, property=name, kind=kind, detail=detail)
                )
            if self.mutants > 0:
                self.mutations.append(Mutation(job.module, name, audit["mutants"], audit["killed"]))

    # -- the report ----------------------------------------------------------------------

    def ordered(self) -> tuple[tuple[PropertyRun, ...], tuple[Failure, ...]]:
        """Return the runs and failures in report order: modules as the map lists them,
        properties in source order (base first, then head-only ones), base before head."""
        files = self.tests.files if self.tests is not None else ()
        modules = {m: i for i, m in enumerate((*self.lane.modules, *files))}

        def key(module: str, name: str, source: str) -> tuple[int, int, int]:
            names = self.order.get(module, [])
            index = (
                -1 if name == MODULE_LEVEL else (names.index(name) if name in names else len(names))
            )
            return modules.get(module, len(modules)), index, _SOURCES.index(source)

        runs = sorted(self.runs, key=lambda r: key(r.module, r.property, r.source))
        failures = sorted(self.failures, key=lambda f: key(f.module, f.property, f.source))
        return tuple(runs), tuple(failures)


def _start(
    argv: Sequence[str],
    job: _Job,
    *,
    cwd: Path,
    env: dict[str, str],
    layers: Isolation,
    stop: threading.Event | None = None,
) -> process.ChildRun:
    """Run one job's child in the sandbox (its home writable, its trees read-only: a
    property has no business writing the tree, and the next module's child reads the same
    one); a child that cannot even be started is a run without results (red), not a crash
    of the lane."""
    trees = tuple(Path(t) for t in job.payload.get("trees", ()))
    if stop is not None and stop.is_set():
        return process.ChildRun(
            (), None, ("not started: no longer wanted",), 0, True, 0.0, b"", b""
        )
    try:
        launch = process.Launch(
            argv,
            job.payload,
            token=secrets.token_hex(16),
            timeout_s=job.timeout_s,
            cwd=cwd,
            env=env,
            confinement=Confinement(job.home, readable=(cwd, *trees)),
            isolation=layers,
        )
        return process.run_child(launch, stop=stop)
    except OSError as e:
        why = f"the child could not be started: {e.strerror or e}"
        # 127: what a shell reports for a command it could not run.
        return process.ChildRun((), None, (why,), 127, False, 0.0, b"", b"")
