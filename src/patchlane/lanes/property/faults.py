"""Whose fault an import that failed is, once the runs are judged: the environment's (a
third-party package missing at base and head alike), the base's (its module does not
import with its own code either), or else the patch's (docs/architecture.md §2). The first
two are exit 2, never a verdict on the patch.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from patchlane.child.messages import ImportResult, Job
from patchlane.errors import EnvironmentFault
from patchlane.formats.property_report import ChildTiming
from patchlane.infra import process
from patchlane.infra.tree import materialise
from patchlane.lanes.property import discover, judge
from patchlane.lanes.property.jobs import SOURCES, ChildJob, Context, guarded, home, start
from patchlane.lanes.property.outcomes import Outcomes
from patchlane.lanes.property.trees import base_broken

HYPOTHESIS_FIX = "pip install 'patchlane[hypothesis]'"
# The one "property" an import probe reports on.
_IMPORT = "(import)"
# Asks patchlane's own environment, with nothing of the repository on the path, whether a
# top-level module is installed (``python -s -P -B -c CODE NAME``: exit 0 when it is).
_INSTALLED = (
    "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)"
)


@dataclass(frozen=True)
class Checked:
    """What the checks ran: the import children's timings, and the number of the next
    home a child may take (``jobs.home``)."""

    timings: tuple[ChildTiming, ...]
    next_home: int


@dataclass
class _Probe:
    """What the checks of one lane run share while they run (local to ``check``): the
    homes they number, the base commit materialised whole (once, when first needed), and
    the import children's timings."""

    ctx: Context
    homes: Iterator[int]
    whole: Path | None = None
    timings: list[ChildTiming] = field(default_factory=list)


def check(ctx: Context, outcomes: Outcomes, first_home: int) -> Checked:
    """Raise ``EnvironmentFault`` for the first module (map order) whose import failed for
    want of a third-party package the base lacks alike, then ``InputError`` for the first
    whose base version failed to import and fails with the base's own code as well;
    return what the checks ran (their children's homes numbered from ``first_home``).

    Only what the head changes counts against the patch (docs/architecture.md §2): a
    package missing from patchlane's environment fails every run, base or head, and says
    nothing about the patch. The child only names the package; everything that makes it
    the environment's fault is checked here.
    """
    probe = _Probe(ctx, itertools.count(first_home))
    _check_environment(probe, outcomes)
    _check_base_imports(probe, outcomes)
    return Checked(tuple(probe.timings), next(probe.homes))


def _check_environment(probe: _Probe, outcomes: Outcomes) -> None:
    """Raise ``EnvironmentFault`` for the first module (map order) whose import failed
    for want of a third-party package that the base lacks alike (``_fails_alike``)."""
    checked: dict[tuple[str, str], bool] = {}
    for module in probe.ctx.lane.modules:
        for source in SOURCES:
            package = outcomes.missing.get((module, source))
            if package is None:
                continue
            if (module, package) not in checked:
                checked[(module, package)] = _fails_alike(probe, module, package)
            if checked[(module, package)]:
                raise EnvironmentFault(_install_hint(probe.ctx, module, package))


def _check_base_imports(probe: _Probe, outcomes: Outcomes) -> None:
    """Raise ``InputError`` for the first module (map order) whose base version failed
    to import in the lane's run and fails to import with the base's own code as well
    (the whole base commit, in a child): the base is the user's, not the patch's
    (docs/architecture.md §2), and no patch can be judged by an oracle that does not
    import. A base module that imports with the base's code failed because of the
    head's: that failure stays the patch's (red)."""
    ctx = probe.ctx
    if ctx.trees.base is None:
        return
    for module in ctx.lane.modules:
        if module not in outcomes.base_import_failed:
            continue
        whole = _whole_base(probe)
        file = discover.find_module_file(module, discover.search_roots(whole, ctx.lane))
        if file is None:
            continue
        real = Path(os.path.realpath(file))
        record = _import_record(probe, module, real, whole)
        if record is None or record["message"] is None:
            continue
        label = real.relative_to(whole).as_posix() if real.is_relative_to(whole) else module
        why = f"{record['message']}, with the base's own code too"
        raise base_broken(ctx.trees, label, f"the property module {module}", why, None)


def _fails_alike(probe: _Probe, module: str, package: str) -> bool:
    """Return whether ``package`` is a third-party package missing here that fails the
    base's ``module`` too: not a module of the project at head or at base, not
    installed in patchlane's environment, and the base's module imported with the
    base's own code (a full base tree, in a child) misses exactly that package. A
    patch that adds ``import some_missing_pkg`` anywhere fails this last test: the
    base imports fine, so the failure is the patch's (red, as any other)."""
    ctx = probe.ctx
    head_roots = discover.search_roots(ctx.trees.head_root, ctx.lane)
    if discover.provides(package, head_roots) or _installed(probe, package):
        return False
    if ctx.trees.base is None:
        return True  # no base: the tree run is all there is, and it is not the patch
    whole = _whole_base(probe)
    roots = discover.search_roots(whole, ctx.lane)
    if discover.provides(package, roots):
        return False
    file = discover.find_module_file(module, roots)
    if file is None:
        return False  # no such module at base: the patch added it, and its imports
    record = _import_record(probe, module, Path(os.path.realpath(file)), whole)
    if record is None or record["message"] is None:
        return False
    return record["missing"] == package


def _installed(probe: _Probe, package: str) -> bool:
    """Whether patchlane's environment finds top-level ``package`` with nothing of the
    repository on the path (in doubt, yes: then nothing is blamed on it)."""
    made = home(probe.ctx, next(probe.homes))
    argv = [*process.PYTHON_ARGV, "-c", _INSTALLED, package]
    try:
        proc = subprocess.run(
            argv,
            env=process.minimal_env(made),
            cwd=made,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return True
    return proc.returncode != 1


def _whole_base(probe: _Probe) -> Path:
    """Materialise the whole base commit once (only on this rare path)."""
    if probe.whole is None:
        trees = probe.ctx.trees
        assert trees.base is not None  # noqa: S101 - only called with a base
        probe.whole = probe.ctx.scratch / "base-whole"
        materialise(trees.repo, trees.base, probe.whole)
    return probe.whole


def _import_record(probe: _Probe, module: str, file: Path, root: Path) -> ImportResult | None:
    """Import the base's ``module`` with the base's own code in a child; return its
    well-formed import record (``message`` ``None`` when it imported), or ``None`` when
    the module does not parse or the child gave no trustworthy record."""
    ctx = probe.ctx
    label = file.relative_to(root).as_posix() if file.is_relative_to(root) else file.name
    version = discover.read_version(module, "base", file, label)
    if version.error is not None:
        return None
    made = home(ctx, next(probe.homes))
    payload: Job = {
        "mode": "import",
        "module": module,
        "names": [_IMPORT],
        "expect_file": os.fspath(file),
        "paths": [os.fspath(p) for p in discover.search_roots(root, ctx.lane)],
        "cwd": os.fspath(root),
        "trees": [os.fspath(root)],
        "seed": ctx.seed,
        "cases": ctx.cases,
        "case": None,
        "hypothesis": version.uses_hypothesis,
        "home": os.fspath(made),
        "guarded": guarded(),
    }
    job = ChildJob(module, "base", "import", (_IMPORT,), payload, ctx.lane.timeout_s, made)
    ctx.out.progress(f"property: {module} (base, import with the base's code)")
    env = process.minimal_env(made)
    result = start(process.CHILD_ARGV, job, cwd=root, env=env, layers=ctx.layers)
    probe.timings.append(ChildTiming(module, "base", "import", result.seconds))
    got, problems = judge.records(job.names, result, judge.valid_import_record)
    record = got.get(_IMPORT)
    if problems or record is None:
        return None
    return record


def _install_hint(ctx: Context, module: str, package: str) -> str:
    trees = ctx.trees
    if trees.base is not None:
        where = "at base and head alike"
    else:
        where = f"at head {trees.head[:12]}" if trees.head else "in the work tree"
    if package == "hypothesis":
        fix = f"Hypothesis runs from patchlane's own environment: {HYPOTHESIS_FIX}"
    else:
        fix = f"install {package} in the environment patchlane runs in ({sys.executable})"
    return (
        f"property module {module} cannot import {package!r} (not installed, not a "
        f"module of the repository), {where}: {fix}"
    )
