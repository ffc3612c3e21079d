"""The property lane's children: what every step of one lane run reads (``Context``), one
child's job and its payload, the home each child gets, and starting children in the
sandbox, many at once, their results taken in job order (``execute``).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from patchlane.child.messages import Job
from patchlane.formats.depmap import MAPS
from patchlane.formats.property_report import ChildTiming
from patchlane.infra import process
from patchlane.infra.cache import default_cache
from patchlane.infra.cachekey import key_dir
from patchlane.infra.sandbox import Confinement, Isolation
from patchlane.infra.ui import Output, one_line
from patchlane.lanes.property import discover
from patchlane.lanes.property.cache import audits
from patchlane.lanes.property.cache import results as resultcache
from patchlane.lanes.property.trees import Trees
from patchlane.project.config import PropertyLane

# The two versions of a property module, in report order.
SOURCES = ("base", "head")


@dataclass(frozen=True)
class Context:
    """What every step of one lane run reads and none writes: the lane, the map's label
    (its errors name the file), the trees, the scratch directory the children's homes go
    in, the properties' seed, cases and one ``case``, the isolation layers, where progress
    goes, and the result cache (``None``: not used)."""

    lane: PropertyLane
    label: str
    trees: Trees
    scratch: Path
    seed: int
    cases: int
    case: int | None
    layers: Isolation
    out: Output
    cache: resultcache.ResultCache | None


@dataclass(frozen=True)
class ChildJob:
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
class Finished:
    """One job's child result (``cached``: taken from the result cache, not run)."""

    job: ChildJob
    result: process.ChildRun
    cached: bool = False

    @property
    def timing(self) -> ChildTiming:
        """The child's entry in the report's ``timings.children``."""
        job = self.job
        return ChildTiming(job.module, job.source, job.mode, self.result.seconds, self.cached)


def home(ctx: Context, number: int) -> Path:
    """Make and return the child's own home directory ``home-NUMBER``. Each step numbers
    the homes it makes on from where the step before it stopped, so that a lane run's
    children get their homes in the order they are made, one number each."""
    made = ctx.scratch / f"home-{number}"
    made.mkdir()
    return made


def guarded() -> list[str]:
    """Return the job's ``guarded`` directories, which make the child's sandbox block writes into the parts of
    patchlane's cache directory that later runs take results from: the property results,
    the base's oracle audits and the dependency maps
    (docs/explanation/decisions/0016-caches.md), and the directory of the key their MACs
    are made with (a key the patch wrote would be one it knows: docs/architecture.md §4)."""
    cache = default_cache()
    folders = (resultcache.FOLDER, audits.FOLDER, MAPS)
    found = [os.fspath((cache / d).resolve()) for d in folders]
    return [*found, os.fspath(key_dir().resolve())]


def _paths(ctx: Context, source: str) -> tuple[list[str], list[str]]:
    """Return the child's ``sys.path`` entries and its trees (for file names)."""
    trees, lane = ctx.trees, ctx.lane
    head = [os.fspath(p) for p in discover.search_roots(trees.head_root, lane)]
    roots = [os.fspath(trees.head_root)]
    if source == "base" and trees.base_root is not None:
        base = discover.search_roots(trees.base_root, lane)
        return [os.fspath(p) for p in base] + head, [os.fspath(trees.base_root), *roots]
    return head, roots


def run_payload(ctx: Context, version: discover.ModuleVersion, names: Sequence[str]) -> Job:
    """Return the payload of a run child for ``names`` of a property module version (an
    audit child's starts from it), without its ``home``."""
    paths, trees = _paths(ctx, version.source)
    return {
        "mode": "run",
        "module": version.module,
        "names": list(names),
        "expect_file": os.fspath(version.file),
        "paths": paths,
        "cwd": os.fspath(ctx.trees.head_root),
        "trees": trees,
        "seed": ctx.seed,
        "cases": ctx.cases,
        "case": ctx.case,
        "hypothesis": version.uses_hypothesis,
        "guarded": guarded(),
    }


def execute(
    ctx: Context,
    jobs: Sequence[ChildJob],
    ready: Mapping[int, process.ChildRun] | None = None,
) -> tuple[Finished, ...]:
    """Run ``jobs`` in children, as many at once as there are processors, except those in
    ``ready`` (a job's index -> its result from the cache), and return every result in job
    order."""
    ready = ready or {}
    if not jobs:
        return ()
    workers = max(1, min(len(jobs) - len(ready), os.cpu_count() or 1))
    finished = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures: dict[int, Future[process.ChildRun]] = {}
        for i, job in enumerate(jobs):
            if i in ready:
                continue
            ctx.out.progress(f"property: {job.module} ({job.source}, {job.mode})")
            env = process.minimal_env(job.home)
            futures[i] = pool.submit(
                start,
                process.CHILD_ARGV,
                job,
                cwd=ctx.trees.head_root,
                env=env,
                layers=ctx.layers,
            )
        # Taken in job order, so that the report never depends on which child ended first.
        for i, job in enumerate(jobs):
            cached = i in ready
            result = ready[i] if cached else futures[i].result()
            if result.stderr_tail:
                tail = result.stderr_tail.decode("utf-8", "replace").strip().splitlines()
                # The code under test's bytes: one escaped line, never a line of ours.
                last = one_line(tail[-1]) if tail else ""
                ctx.out.debug(f"{job.module} ({job.source}) stderr: {last}")
            finished.append(Finished(job, result, cached))
    return tuple(finished)


def start(
    argv: Sequence[str],
    job: ChildJob,
    *,
    cwd: Path,
    env: dict[str, str],
    layers: Isolation,
) -> process.ChildRun:
    """Run one job's child in the sandbox (its home writable, its trees read-only: a
    property has no business writing the tree, and the next module's child reads the same
    one); a child that cannot even be started is a run without results (red), not a crash
    of the lane."""
    trees = tuple(Path(t) for t in job.payload.get("trees", ()))
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
        return process.run_child(launch)
    except OSError as e:
        why = f"the child could not be started: {e.strerror or e}"
        # 127: what a shell reports for a command it could not run.
        return process.ChildRun((), None, (why,), 127, False, 0.0, b"", b"")
