"""The plan step: every property module version and test file version found in the trees,
read without running anything (``discover``, ``testplan``), turned into the run jobs, the
report's order of properties and the module-level failures found on the way.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from patchlane.child.messages import Job
from patchlane.errors import InputError, MapError, UsageError
from patchlane.formats.property_report import MODULE_LEVEL, Failure
from patchlane.lanes.property import discover, testplan
from patchlane.lanes.property.cache import results as resultcache
from patchlane.lanes.property.jobs import ChildJob, Context, guarded, home, run_payload
from patchlane.lanes.property.trees import base_broken


@dataclass(frozen=True)
class Plan:
    """The plan step's result: the run jobs in the order they run (map order, base before
    head, then the test files'); each module's and test file's property names in report
    order (``order``: source order, the base's first, then the head's own); the head's
    module versions (what the audit reads); the test plan (``None`` when the map names no
    tests); and the module-level failures found while planning."""

    jobs: tuple[ChildJob, ...]
    order: Mapping[str, tuple[str, ...]]
    head_versions: Mapping[str, discover.ModuleVersion]
    tests: testplan.TestPlan | None
    failures: tuple[Failure, ...]


def plan(ctx: Context, only: str | None) -> Plan:
    """Find every module version, record module-level failures, and plan the run jobs
    (their homes numbered from 1, one per job).

    Raises ``UsageError`` when ``only`` names no property of any module version,
    ``MapError`` for a module at neither commit, ``InputError`` for a base version that
    cannot be read or run (``trees.base_broken``).
    """
    homes = itertools.count(1)
    jobs: list[ChildJob] = []
    order: dict[str, list[str]] = {m: [] for m in ctx.lane.modules}
    failures: list[Failure] = []
    head_versions: dict[str, discover.ModuleVersion] = {}
    found_only = only is None
    for module in ctx.lane.modules:
        failed = any(f.module == module and f.property == MODULE_LEVEL for f in failures)
        versions = _versions(ctx, module, failures, failed=failed)
        for version in versions:
            names = tuple(n for n in version.names if only is None or n == only)
            found_only = found_only or bool(names)
            for name in version.names:
                if name not in order[module]:
                    order[module].append(name)
            if names:
                payload = run_payload(ctx, version, names)
                jobs.append(_job(ctx, version.module, version.source, payload, homes))
            if version.source == "head":
                head_versions[module] = version
    tests = None
    if ctx.lane.tests:
        tests = testplan.plan(ctx.lane, _test_trees(ctx), ctx.label, only)
        test_jobs, test_failures, test_order = _plan_tests(ctx, tests, homes)
        jobs.extend(test_jobs)
        failures.extend(test_failures)
        for path, tails in test_order.items():
            known = order.setdefault(path, [])
            known.extend(n for n in tails if n not in known)
        found_only = any(v.names for v in tests.versions) or found_only
    if not found_only:
        modules = ", ".join(ctx.lane.modules)
        raise UsageError(f"--only {only}: no property of that name in {modules}")
    return Plan(
        tuple(jobs),
        {module: tuple(names) for module, names in order.items()},
        head_versions,
        tests,
        tuple(failures),
    )


def _test_trees(ctx: Context) -> dict[str, Path]:
    """The trees the map's test files are found in: the base's tests tree, then the head."""
    trees = {"head": ctx.trees.head_root}
    if ctx.trees.base_tests is not None:
        trees = {"base": ctx.trees.base_tests, **trees}
    return trees


def _plan_tests(
    ctx: Context, found: testplan.TestPlan, homes: Iterator[int]
) -> tuple[list[ChildJob], list[Failure], dict[str, list[str]]]:
    """Return a run job for each version of each test file the map names (``tests``) that
    can run, the failures of those that cannot, and each file's names in report order."""
    line = testplan.skipped_line(found.skipped)
    if line is not None:
        ctx.out.progress(line)
    jobs: list[ChildJob] = []
    failures: list[Failure] = []
    order: dict[str, list[str]] = {path: [] for path in found.files}
    for version in found.versions:
        if version.error is not None and version.source == "base":
            # The base's own test file, named by its map: the user's to fix (exit 2).
            raise base_broken(
                ctx.trees,
                version.path,
                f"the test file {version.path}",
                version.error,
                version.error_line,
            )
        if version.error is not None:
            failures.append(_module_failure(ctx, version.path, version.source, version.error))
            continue
        directory = version.path.rpartition("/")[0]
        overlap = discover.overlapping_prefixes(ctx.lane, [directory + "/"])
        if version.source == "base" and overlap:
            why = "its directory also holds code under test, so its base version would "
            why += "test the base's code: keep tests apart"
            failures.append(_module_failure(ctx, version.path, "base", why))
            continue
        for name in version.names:
            if name not in order[version.path]:
                order[version.path].append(name)
        if version.names:
            jobs.append(_test_job(ctx, version, homes))
    return jobs, failures, order


def _test_job(ctx: Context, version: testplan.TestVersion, homes: Iterator[int]) -> ChildJob:
    """The run job of one version of a test file the map names (``pytests``)."""
    head = ctx.trees.head_root
    trees = [os.fspath(head)]
    if version.source == "base":
        trees.insert(0, os.fspath(version.tree))
    payload: Job = {
        "mode": "run",
        "module": version.module,
        "names": list(version.names),
        "expect_file": os.fspath(version.file),
        "paths": testplan.child_paths(version, discover.search_roots(head, ctx.lane)),
        "cwd": os.fspath(head),
        "trees": trees,
        "seed": ctx.seed,
        "cases": ctx.cases,
        "case": ctx.case,
        "hypothesis": True,
        "tests": True,
        "guarded": guarded(),
    }
    return _job(ctx, version.path, version.source, payload, homes)


def _versions(
    ctx: Context, module: str, failures: list[Failure], *, failed: bool
) -> list[discover.ModuleVersion]:
    """Return the versions of ``module`` to run (base first), adding to ``failures`` why
    any other is not run (``failed``: the module has a module-level failure already).
    Raises as ``plan`` does."""
    trees = ctx.trees
    base_version = None
    if trees.base_root is not None:
        # Only where the base's module really is counts (issue 9): a candidate built
        # from its name under another root (``src/checks/`` for ``checks.props`` at
        # the repository root) holds nothing of it.
        overlap = discover.overlapping_prefixes(ctx.lane, trees.base_places.get(module, ()))
        if overlap:
            why = (
                f"its package ({', '.join(overlap)}) also holds code under test, so its "
                "base version would test the base's code: keep properties in a package "
                "of their own"
            )
            failures.append(_module_failure(ctx, module, "base", why))
            failed = True
        else:
            base_version = _locate(ctx, module, "base", trees.base_root)
            if base_version is None:
                _check_base_materialised(ctx, module)
            elif base_version.error is not None:
                raise base_broken(
                    trees,
                    base_version.error_file or module,
                    f"the property module {module}",
                    base_version.error,
                    base_version.error_line,
                )
    head_version = _locate(ctx, module, "head", trees.head_root)
    versions = [v for v in (base_version, head_version) if v is not None]
    # A module at neither commit is the map's fault, whatever the patch did (docs/architecture.md §2):
    # the patch cannot change the base, and it is the base that lacks it.
    if not versions and trees.base_root is None:
        place = f"at head {trees.head[:12]}" if trees.head else "in the work tree"
        raise _map_error(ctx, f"no such module {module!r} {place}")
    if not versions and not failed:
        raise _map_error(ctx, f"no such module {module!r} at base or head")
    for version in versions:
        if version.error is not None:
            failures.append(_module_failure(ctx, module, version.source, version.error))
    good = [v for v in versions if v.error is None]
    if versions and good and not any(v.names for v in good):
        failures.append(_module_failure(ctx, module, good[-1].source, "defines no prop_* function"))
    return [v for v in good if v.names]


def _map_error(ctx: Context, message: str) -> MapError:
    lane = ctx.lane
    where = f"lanes.property.{lane.modules_key}"
    return MapError(ctx.label, f"{where}: {message}", lane.modules_line)


def _check_base_materialised(ctx: Context, module: str) -> None:
    """Raise ``InputError`` when the base holds ``module`` (or a package on its way)
    only as an entry that was not materialised (a symlink that leaves the repository,
    loops or dangles): its base version would silently not run, and the head's, which
    the patch controls, would be all there is."""
    candidates = discover.module_paths(ctx.lane, module)
    for path, why in ctx.trees.base_skipped:
        if path in candidates:
            base = (ctx.trees.base or "")[:12]
            raise InputError(
                f"{path} (base {base})",
                f"property module {module}: the base's version cannot be run ({why}); "
                "make it a regular file or a symlink that stays inside the repository",
            )


def _locate(ctx: Context, module: str, source: str, root: Path) -> discover.ModuleVersion | None:
    file = discover.find_module_file(module, discover.search_roots(root, ctx.lane))
    if file is None:
        return None
    label = file.relative_to(root).as_posix()
    return discover.read_version(module, source, Path(os.path.realpath(file)), label)


def _module_failure(ctx: Context, module: str, source: str, message: str) -> Failure:
    return Failure(MODULE_LEVEL, module, source, ctx.seed, None, None, message, "module")


def _job(ctx: Context, module: str, source: str, payload: Job, homes: Iterator[int]) -> ChildJob:
    """A run job for the properties its payload names, with its own home, described for
    the result cache when it is on."""
    made = home(ctx, next(homes))
    payload = {**payload, "home": os.fspath(made)}
    described = None
    if ctx.cache is not None:
        described = resultcache.describe(
            payload,
            source,
            ctx.cache.roots,
            timeout_s=ctx.lane.timeout_s,
            isolation=(ctx.layers.kind, *ctx.layers.netns_prefix),
        )
    if described is not None:
        payload["record"] = True  # the child records what it reads (``reads``)
    timeout = ctx.lane.timeout_s
    names = tuple(payload["names"])
    return ChildJob(module, source, "run", names, payload, timeout, made, described)
