"""Overhead benchmark: what ``patchlane gate`` costs on top of the slice's own pytest run,
step by step, and what its property lane costs next to running the properties once.

Issue 11's done-when: gate overhead (gate wall time minus the slice's own pytest run)
<= 1.5 s median on a ~1,000-test project on 2 cores, and the property lane <= 2x the time of
running its properties once at the head, with the breakdown per step.

For each project of ``bench/trial.py`` (its trial repository, venv, ``--map-style smoke``
review map and patches are built by ``trial``: history patches between released versions and
seeded bugs) it runs, in the project's venv, one process at a time:

1. a warm-up ``patchlane gate --replay local --dep-map auto --dep-cache WORK/depcache`` on the
   first patch of each base: it records the base's dependency map and fills patchlane's
   bytecode cache (``PATCHLANE_CACHE_DIR=WORK/plcache``); reported apart as the first use;
2. for every patch, the same gate (``--repeat`` times; the run of median wall time is kept):
   its wall time, verdict.json's ``timings`` (seconds per step), the slice and suite sizes
   from the replay report. The replay lane does not record its pytest child's wall time, so
   the slice's own run is the ``replay: run`` step (materialising the head, the pytest child,
   the receipt): overhead = wall - that step. As a cross-check the slice's node ids also run
   under plain pytest in a clean export of the head (``overhead vs plain``);
3. the properties once at the head: ``patchlane property --head HEAD --mutants 0`` (its
   report's lane seconds, and its wall time), and the property module itself, each ``prop_*``
   called once with the gate's seed and cases in a fresh interpreter in the head's export.
   The gate's property lane is its ``property lane`` step plus the audit it waited for.

Targets are reported, not enforced. Exit 2 when a project could not be set up or a gate gave
no timings (no figure for it), else 0. Standard library only, plus ``trial`` (and
``bench_slice`` for its coverage.py check and table layout); needs ``git`` and PyPI.
See bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_slice  # noqa: E402  (bench/bench_slice.py: coverage.py check, table layout)
import trial  # noqa: E402  (bench/trial.py, next to this file)

TARGET_OVERHEAD_S = 1.5  # median gate wall - the slice's own pytest run
TARGET_PROPERTY_RATIO = 2.0  # property lane / its properties run once at the head
DEFAULT_PROJECTS = ("pyasn1",)
RUN_STEP = "replay: run"
MAP_STEP = "replay: dependency map"
PROPERTY_STEPS = ("property lane", "property lane: oracle audit (waited for)")
START_STEP = "(start-up and exit)"  # wall - timings.total: interpreter, imports, exit
GAPS_STEP = "(between steps)"  # timings.total - the steps: map, registry, JSON, note
# Entries of ``timings`` that count rather than time (patchlane after c9b06af): kept apart.
CACHED_RUNS = "property lane: runs from the cache"
COUNTS = (CACHED_RUNS,)
SHORT = {
    "classify": "classify",
    "property lane": "prop",
    "fixture lane": "fixture",
    "freeze lane": "freeze",
    MAP_STEP: "dep map",
    "replay: selection": "select",
    RUN_STEP: "run",
    "replay: checks at the base": "base chk",
    "property lane: oracle audit (waited for)": "audit wait",
    START_STEP: "start/exit",
    GAPS_STEP: "gaps",
}
BARE_PROPERTIES = """\
import importlib, json, sys, time
sys.path.insert(0, ".")
started = time.perf_counter()
module = importlib.import_module(sys.argv[1])
names = sorted(n for n in dir(module) if n.startswith("prop_") and callable(getattr(module, n)))
for name in names:
    getattr(module, name)(int(sys.argv[2]), int(sys.argv[3]))
print(json.dumps({"properties": names, "seconds": time.perf_counter() - started}))
"""


def say(message: str) -> None:
    """Write one progress line to stderr; returns nothing."""
    print(f"bench_overhead: {message}", file=sys.stderr, flush=True)


def load() -> tuple[float, float, float]:
    """Return the machine's 1, 5 and 15 minute load averages (zeros where unknown)."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return (0.0, 0.0, 0.0)
    return (round(one, 2), round(five, 2), round(fifteen, 2))


def _read_json(path: Path) -> dict[str, Any]:
    """Return the JSON object in ``path``, or ``{}`` when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _median(values: Sequence[float | None]) -> float | None:
    """Return the median of the values that are not ``None``, or ``None`` when none is."""
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def _r(value: float | None, places: int = 3) -> float | None:
    """Return ``value`` rounded, ``None`` kept."""
    return None if value is None else round(value, places)


# --------------------------------------------------------------------------------------------
# One gate run
# --------------------------------------------------------------------------------------------


@dataclass
class GateRun:
    """One ``patchlane gate`` process: what it decided, its wall time and its timings."""

    ok: bool  # exited with a verdict and wrote timings
    verdict: str
    exit: int | None
    reason: str
    wall: float
    timings: dict[str, float]  # seconds per step, and total
    counts: dict[str, int]  # the entries of ``COUNTS`` (property runs from the cache)
    slice_size: int | None
    suite_size: int | None
    dependency_map: str
    property_runs_s: float | None  # its children that ran the properties (base and head)
    property_audit_s: float | None  # its oracle audit children (concurrent with replay)
    seed: int | None
    cases: int | None
    load1: float
    out_dir: str

    @property
    def steps(self) -> dict[str, float]:
        """Return the seconds per step, with the start-up (wall - total) and the time between
        steps (total - the steps) added as pseudo-steps."""
        steps = {k: v for k, v in self.timings.items() if k != "total"}
        total = self.timings.get("total")
        if total is not None:
            steps[GAPS_STEP] = max(total - sum(steps.values()), 0.0)
            steps[START_STEP] = max(self.wall - total, 0.0)
        return steps

    @property
    def run_s(self) -> float | None:
        """Return the ``replay: run`` step's seconds, or ``None`` when replay did not run."""
        return self.timings.get(RUN_STEP)

    @property
    def property_s(self) -> float:
        """Return the seconds the gate spent on the property lane (its steps)."""
        return sum(self.timings.get(k, 0.0) for k in PROPERTY_STEPS)


def _children(timings: dict[str, Any], mode: str) -> float | None:
    """Return the seconds of the property lane's children of ``mode`` (``run``: the base's
    and the head's properties; ``audit``), or ``None`` when the report lists none."""
    found = [c.get("seconds", 0.0) for c in timings.get("children", []) if c.get("mode") == mode]
    return float(sum(found)) if found else None


def gate_once(t: trial.ProjectTrial, patch: trial.Patch, out_dir: Path, cfg: Config) -> GateRun:
    """Run the gate on ``patch`` with the evidence in ``out_dir``; return the ``GateRun``."""
    extra = ["--dep-map", cfg.dep_map]
    if cfg.audit_mutants is not None:
        extra += ["--mutants", str(cfg.audit_mutants)]
    if cfg.dep_map == "auto":
        extra += ["--dep-cache", os.fspath(cfg.depcache)]
    load1 = load()[0]
    g = trial.gate(t.python, t.repo, patch, out_dir, cfg.gate_timeout, extra=extra, env=cfg.env)
    verdict = _read_json(out_dir / "verdict.json")
    replay = _read_json(out_dir / "replay-report.json")
    prop = _read_json(out_dir / "property-report.json")
    timings = verdict.get("timings") or {}
    prop_timings = prop.get("timings") or {}
    return GateRun(
        ok=bool(verdict) and bool(timings) and g["verdict"] == verdict.get("verdict"),
        verdict=str(g["verdict"]),
        exit=g["exit"],
        reason=g["reasons"][0] if g["reasons"] else "",
        wall=g["seconds"],
        timings={str(k): float(v) for k, v in timings.items() if k not in COUNTS},
        counts={str(k): int(v) for k, v in timings.items() if k in COUNTS},
        slice_size=replay.get("slice_count", g["slice_size"]),
        suite_size=replay.get("suite_size"),
        dependency_map=str(replay.get("dependency_map") or ""),
        property_runs_s=_children(prop_timings, "run"),
        property_audit_s=_children(prop_timings, "audit"),
        seed=prop.get("seed"),
        cases=prop.get("cases"),
        load1=load1,
        out_dir=os.fspath(out_dir),
    )


@dataclass
class Config:
    """How every measurement runs: the gate's options, the environment, the limits."""

    dep_map: str
    depcache: Path
    env: dict[str, str]
    repeat: int
    gate_timeout: float
    suite_timeout: float
    audit_mutants: int | None = None  # the gate's --mutants (None: its default)


def bench_env(work: Path) -> dict[str, str]:
    """Return the environment of every measured process: ``trial.clean_env`` with patchlane's
    cache in ``WORK/plcache`` and bytecode written under ``WORK/pycache`` (an installed
    package's modules are compiled once, not on every start, as for a user)."""
    env = trial.clean_env({"PATCHLANE_CACHE_DIR": os.fspath(work / "plcache")})
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PATCHLANE_DEP_MAP", None)
    env["PYTHONPYCACHEPREFIX"] = os.fspath(work / "pycache")
    return env


# --------------------------------------------------------------------------------------------
# The references: the slice under plain pytest, the properties once at the head
# --------------------------------------------------------------------------------------------


@dataclass
class Reference:
    """What the gate is compared with, for one patch (each the median of ``--repeat`` runs)."""

    plain_slice_s: float | None = None  # pytest over the slice's node ids, head export
    plain_slice_exit: int | None = None
    once_lane_s: float | None = None  # patchlane property --head: its report's seconds
    once_wall_s: float | None = None  # ... that command's wall time
    bare_s: float | None = None  # each prop_* once, fresh interpreter, head export (wall)
    errors: list[str] = field(default_factory=list)


def plain_slice(python: Path, tree: Path, nodeids: list[str], seed: int, cfg: Config) -> trial.Proc:
    """Run the slice's node ids with plain pytest in ``tree`` (its default tracebacks, as
    the gate's run child has them: a slice that fails hundreds of tests spends seconds on
    them); return the process."""
    env = {**cfg.env, "PYTHONHASHSEED": str(seed)}
    argv = trial.pytest_argv(python, nodeids)
    return trial.run(argv, cwd=tree, env=env, timeout=cfg.suite_timeout)


@functools.cache
def _has_option(python: Path, command: str, option: str) -> bool:
    """Return whether ``patchlane COMMAND --help`` in ``python`` lists ``option``."""
    proc = trial.run([python, "-m", "patchlane", command, "--help"])
    return option in proc.stdout


def properties_once(
    t: trial.ProjectTrial, patch: trial.Patch, g: GateRun, out: Path, cfg: Config
) -> tuple[float | None, float, str]:
    """Run ``patchlane property --head HEAD --mutants 0`` with the gate's seed and cases (and
    ``--property-cache off`` where patchlane has it); return (its report's lane seconds less its
    audit child's, its wall seconds, an error or "")."""
    argv: list[str | Path] = [
        t.python, "-m", "patchlane", "property", "--repo", t.repo, "--head", patch.head,
        "--seed", str(g.seed), "--cases", str(g.cases), "--mutants", "0", "--out", out, "--json",
    ]  # fmt: skip
    if _has_option(t.python, "property", "--property-cache"):
        argv += ["--property-cache", "off"]  # a run, not a result from the gate's cache
    proc = trial.run(argv, cwd=t.repo, env=cfg.env, timeout=cfg.gate_timeout)
    timings = _read_json(out).get("timings") or {}
    seconds = timings.get("seconds")
    if proc.returncode not in (0, 1) or seconds is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return None, proc.seconds, f"patchlane property exit {proc.returncode}: {' | '.join(tail)}"
    # --mutants 0 still starts an audit child (it tries no mutant): not part of running the
    # properties once, so its seconds are left out.
    audit = sum(
        c.get("seconds", 0.0) for c in timings.get("children", []) if c.get("mode") == "audit"
    )
    return float(seconds) - audit, proc.seconds, ""


def bare_properties(python: Path, tree: Path, seed: int, cases: int, cfg: Config) -> trial.Proc:
    """Call each ``prop_*`` of the property module once in a fresh interpreter in ``tree``."""
    argv: list[str | Path] = [
        python,
        "-c",
        BARE_PROPERTIES,
        trial.PROPS_MODULE,
        str(seed),
        str(cases),
    ]
    return trial.run(argv, cwd=tree, env=cfg.env, timeout=cfg.gate_timeout)


def reference(t: trial.ProjectTrial, patch: trial.Patch, g: GateRun, cfg: Config) -> Reference:
    """Return the ``Reference`` figures of ``patch`` (the gate run ``g`` gave the slice,
    seed and cases)."""
    ref = Reference()
    tree = t.scratch / "head"
    shutil.rmtree(tree, ignore_errors=True)
    trial.export_commit(t.repo / ".git", t.commits[patch.head], tree)
    slice_file = Path(g.out_dir) / "replay-slice.txt"
    nodeids = (
        [x for x in slice_file.read_text(encoding="utf-8").splitlines() if x.strip()]
        if slice_file.is_file()
        else []
    )
    seed = g.seed if g.seed is not None else trial.GATE_SEED
    plain, once, walls, bare = [], [], [], []
    for i in range(cfg.repeat):
        if nodeids and g.run_s is not None:
            proc = plain_slice(t.python, tree, nodeids, seed, cfg)
            plain.append(proc.seconds)
            ref.plain_slice_exit = proc.returncode
        if g.seed is None or g.cases is None:
            continue  # the property lane did not run: nothing to compare it with
        lane_s, wall, error = properties_once(t, patch, g, t.scratch / f"prop-{i}.json", cfg)
        walls.append(wall)
        if error:
            ref.errors.append(error)
        elif lane_s is not None:
            once.append(lane_s)
        proc = bare_properties(t.python, tree, seed, g.cases, cfg)
        if proc.returncode == 0:
            bare.append(proc.seconds)
        else:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-2:]
            ref.errors.append(f"bare property run exit {proc.returncode}: {' | '.join(tail)}")
    shutil.rmtree(tree, ignore_errors=True)
    ref.plain_slice_s = _median(plain)
    ref.once_lane_s, ref.once_wall_s, ref.bare_s = _median(once), _median(walls), _median(bare)
    return ref


# --------------------------------------------------------------------------------------------
# One patch, one project
# --------------------------------------------------------------------------------------------


@dataclass
class OverheadResult:
    """What the benchmark measured for one patch (the gate run of median wall time)."""

    project: str
    name: str
    kind: str
    detail: str
    base: str
    head: str
    verdict: str
    reason: str
    slice_size: int | None
    suite_size: int | None
    replay_ran: bool
    wall: float
    slice_run: float | None  # the replay: run step
    overhead: float | None  # wall - slice_run (wall when replay did not run)
    plain_slice: float | None
    overhead_vs_plain: float | None
    steps: dict[str, float]
    property_gate: float  # the gate's property lane steps
    property_runs: float | None  # the gate's property children, base and head runs
    property_audit: float | None  # the gate's oracle audit children (not waited for)
    property_cached: int | None  # property runs the gate took from its result cache
    property_once: float | None  # patchlane property --head, lane seconds
    property_once_wall: float | None
    property_bare: float | None
    ratio_once: float | None  # property_gate / property_once
    ratio_bare: float | None  # property_gate / property_bare
    dependency_map: str
    load1: float
    walls: list[float]
    evidence: str
    errors: list[str] = field(default_factory=list)


def result_of(patch: trial.Patch, runs: list[GateRun], ref: Reference) -> OverheadResult:
    """Return the ``OverheadResult`` of ``patch`` from its gate runs and references."""
    g = sorted(runs, key=lambda r: r.wall)[(len(runs) - 1) // 2]
    ran = g.run_s is not None
    overhead = g.wall - (g.run_s or 0.0)
    plain = ref.plain_slice_s

    def ratio(den: float | None) -> float | None:
        """Return the gate's property seconds over ``den``, or ``None``."""
        return _r(g.property_s / den, 2) if den and g.seed is not None else None

    errors = list(ref.errors)
    if ref.plain_slice_exit not in (None, 0, 1):
        errors.append(f"plain pytest over the slice exited {ref.plain_slice_exit}")
    return OverheadResult(
        project=patch.project, name=patch.name, kind=patch.kind, detail=patch.detail,
        base=patch.base, head=patch.head, verdict=g.verdict, reason=g.reason,
        slice_size=g.slice_size, suite_size=g.suite_size, replay_ran=ran,
        wall=round(g.wall, 3), slice_run=_r(g.run_s), overhead=round(overhead, 3),
        plain_slice=_r(plain),
        overhead_vs_plain=_r(g.wall - plain) if ran and plain is not None else None,
        steps={k: round(v, 3) for k, v in g.steps.items()},
        property_gate=round(g.property_s, 3), property_runs=_r(g.property_runs_s),
        property_audit=_r(g.property_audit_s), property_cached=g.counts.get(CACHED_RUNS),
        property_once=_r(ref.once_lane_s), property_once_wall=_r(ref.once_wall_s),
        property_bare=_r(ref.bare_s), ratio_once=ratio(ref.once_lane_s),
        ratio_bare=ratio(ref.bare_s), dependency_map=g.dependency_map, load1=g.load1,
        walls=[round(r.wall, 3) for r in runs], evidence=g.out_dir, errors=errors,
    )  # fmt: skip


@dataclass
class FirstUse:
    """The warm-up gate of one base: the map recorded, the caches filled."""

    project: str
    base: str
    patch: str
    verdict: str
    wall: float
    map_s: float | None  # the replay: dependency map step (recording the map)
    steps: dict[str, float]
    dependency_map: str
    ok: bool


def measure_patch(
    t: trial.ProjectTrial, patch: trial.Patch, n: int, total: int, cfg: Config
) -> tuple[OverheadResult | None, list[str]]:
    """Gate ``patch`` ``--repeat`` times and measure its references; return the result (or
    ``None`` with the errors when no gate gave timings)."""
    runs: list[GateRun] = []
    errors: list[str] = []
    for i in range(1, cfg.repeat + 1):
        g = gate_once(t, patch, t.evidence / patch.name / f"run{i}", cfg)
        if g.ok:
            runs.append(g)
        else:
            errors.append(f"gate run {i}: {g.verdict} (exit {g.exit}): {g.reason}")
    if not runs:
        t.log(f"{n}/{total} {patch.name}: NO TIMINGS: {errors[-1]}")
        return None, errors
    r = result_of(patch, runs, reference(t, patch, runs[0], cfg))
    r.errors = errors + r.errors
    t.log(
        f"{n}/{total} {patch.name}: {r.verdict}, slice {r.slice_size}/{r.suite_size}, wall "
        f"{r.wall:.2f} s, run {bench_slice._num(r.slice_run, '{:.2f}')} s, overhead "
        f"{r.overhead:.2f} s, property x{bench_slice._num(r.ratio_once, '{:.1f}')}"
    )
    return r, []


def warm_up(t: trial.ProjectTrial, cfg: Config) -> list[FirstUse]:
    """Gate the first patch of each base once, untimed for the figures: it records the base's
    map and fills patchlane's caches. Returns what each warm-up cost."""
    firsts: list[FirstUse] = []
    seen: set[str] = set()
    for patch in t.patches:
        base = t.commits[patch.base]
        if base in seen:
            continue
        seen.add(base)
        t.log(f"warm-up gate on base {patch.base} ({patch.name})")
        g = gate_once(t, patch, t.evidence / patch.name / "warm-up", cfg)
        firsts.append(
            FirstUse(
                project=t.p.name, base=patch.base, patch=patch.name, verdict=g.verdict,
                wall=round(g.wall, 3), map_s=_r(g.timings.get(MAP_STEP)),
                steps={k: round(v, 3) for k, v in g.steps.items()},
                dependency_map=g.dependency_map, ok=g.ok,
            )
        )  # fmt: skip
        t.log(f"warm-up on {patch.base}: {g.verdict} in {g.wall:.1f} s ({g.dependency_map})")
    return firsts


def venv_versions(python: Path) -> str:
    """Return the venv's Python, pytest and coverage.py versions, one line."""
    code = (
        "import platform, pytest, coverage; "
        "print(f'Python {platform.python_version()}, pytest {pytest.__version__}, "
        "coverage.py {coverage.__version__}')"
    )
    proc = trial.run([python, "-c", code])
    return proc.stdout.strip() or f"(versions unknown: {proc.stderr.strip()[-200:]})"


def bench_project(
    name: str, opts: trial.Options, cfg: Config
) -> tuple[list[OverheadResult], list[FirstUse], list[str], list[str]]:
    """Build ``name``'s trial repository and patches and measure each; return (results,
    first uses, notes, errors). Raises ``trial.TrialError`` when it cannot be set up."""
    t = trial.ProjectTrial(trial.PROJECTS[name], opts)
    python = trial.ensure_venv(t.p, opts.cache, opts.pl_src)
    bench_slice.ensure_coverage(python, opts.pl_src)
    t.build()
    t.add_mutants()
    t.notes.append(f"venv {python.parent.parent}: {venv_versions(python)}")
    firsts = warm_up(t, cfg)
    results: list[OverheadResult] = []
    errors: list[str] = []
    for n, patch in enumerate(t.patches, 1):
        r, errs = measure_patch(t, patch, n, len(t.patches), cfg)
        errors += [f"{name}:{patch.name}: {e}" for e in errs]
        if r is not None:
            results.append(r)
    return results, firsts, t.notes, errors


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------


def step_names(seen: Sequence[dict[str, float]]) -> list[str]:
    """Return every step of the ``seen`` timings, in the gate's order, the pseudo-steps last."""
    names: dict[str, None] = {}
    for steps in seen:
        names.update(dict.fromkeys(k for k in steps if k not in (GAPS_STEP, START_STEP)))
    return [*names, GAPS_STEP, START_STEP]


def summarise(results: Sequence[OverheadResult], firsts: Sequence[FirstUse]) -> dict[str, Any]:
    """Return the figures of ``results``: median overhead (replay ran), per-step medians,
    property ratios, and the first uses' costs."""
    ran = [r for r in results if r.replay_ran]
    steps = {
        name: {
            "median_s": _r(_median([r.steps.get(name) for r in ran])),
            "gates": sum(name in r.steps for r in ran),
        }
        for name in step_names([r.steps for r in ran])
    }
    return {
        "patches": len(results),
        "replay_ran": len(ran),
        "median_wall_s": _r(_median([r.wall for r in ran])),
        "median_slice_run_s": _r(_median([r.slice_run for r in ran])),
        "median_overhead_s": _r(_median([r.overhead for r in ran])),
        "max_overhead_s": _r(max((r.overhead for r in ran if r.overhead is not None), default=None)),
        "median_plain_slice_s": _r(_median([r.plain_slice for r in ran])),
        "median_overhead_vs_plain_s": _r(_median([r.overhead_vs_plain for r in ran])),
        "median_slice_fraction": _r(
            _median([r.slice_size / r.suite_size for r in ran if r.suite_size and r.slice_size is not None])
        ),
        "steps": steps,
        "median_property_gate_s": _r(_median([r.property_gate for r in results])),
        "median_property_runs_s": _r(_median([r.property_runs for r in results])),
        "median_property_audit_s": _r(_median([r.property_audit for r in results])),
        "median_property_once_s": _r(_median([r.property_once for r in results])),
        "median_property_bare_s": _r(_median([r.property_bare for r in results])),
        "median_ratio_once": _r(_median([r.ratio_once for r in results]), 2),
        "median_ratio_bare": _r(_median([r.ratio_bare for r in results]), 2),
        "first_uses": len(firsts),
        "median_first_use_wall_s": _r(_median([f.wall for f in firsts]), 2),
        "median_map_record_s": _r(_median([f.map_s for f in firsts]), 2),
    }  # fmt: skip


def render_table(results: Sequence[OverheadResult]) -> str:
    """Return the per-patch table: verdict, sizes, wall, slice run, overhead, property."""
    f2 = "{:.2f}"
    rows = [
        ["patch", "kind", "verdict", "slice", "suite", "wall s", "run s", "overhead s",
         "plain s", "ovh vs plain", "prop s", "cached", "once s", "bare s", "x once", "x bare",
         "load"],
    ]  # fmt: skip
    for r in results:
        rows.append(
            [
                f"{r.project}:{r.name}", r.kind, r.verdict,
                bench_slice._num(r.slice_size, "{}"), bench_slice._num(r.suite_size, "{}"),
                f"{r.wall:.2f}", bench_slice._num(r.slice_run, f2),
                bench_slice._num(r.overhead, f2) + ("" if r.replay_ran else " (no replay)"),
                bench_slice._num(r.plain_slice, f2), bench_slice._num(r.overhead_vs_plain, f2),
                f"{r.property_gate:.2f}", bench_slice._num(r.property_cached, "{}"),
                bench_slice._num(r.property_once, f2),
                bench_slice._num(r.property_bare, f2), bench_slice._num(r.ratio_once, "{:.1f}"),
                bench_slice._num(r.ratio_bare, "{:.1f}"), f"{r.load1:.2f}",
            ]
        )  # fmt: skip
    return bench_slice._grid(rows, 3)


def render_steps(results: Sequence[OverheadResult], firsts: Sequence[FirstUse]) -> str:
    """Return the seconds of each step per patch (the gate's timings and the pseudo-steps),
    then each first use (warm-up gate) the same way."""
    names = step_names([*(r.steps for r in results), *(f.steps for f in firsts)])
    rows = [["gate", *(SHORT.get(n, n) for n in names), "wall"]]
    for r in results:
        rows.append(
            [f"{r.project}:{r.name}", *(bench_slice._num(r.steps.get(n), "{:.2f}") for n in names), f"{r.wall:.2f}"]
        )  # fmt: skip
    for f in firsts:
        rows.append(
            [f"first use {f.project}:{f.base}", *(bench_slice._num(f.steps.get(n), "{:.2f}") for n in names), f"{f.wall:.2f}"]
        )  # fmt: skip
    return bench_slice._grid(rows, 1)


def render_summary(s: dict[str, Any], title: str) -> str:
    """Return one summary: the headline figures next to their targets, then the per-step
    medians of the gates where replay ran."""
    num = bench_slice._num
    ovh = s["median_overhead_s"]
    ratio = s["median_ratio_once"]
    met = "-" if ovh is None else ("met" if ovh <= TARGET_OVERHEAD_S else "MISSED")
    rmet = "-" if ratio is None else ("met" if ratio <= TARGET_PROPERTY_RATIO else "MISSED")
    lines = [
        f"{title}: {s['patches']} patches, replay ran on {s['replay_ran']}; median slice "
        f"{num(s['median_slice_fraction'], '{:.0%}')} of the suite",
        f"  median overhead (wall - replay: run)  {num(ovh, '{:.2f}')} s   target <= "
        f"{TARGET_OVERHEAD_S} s: {met}  (max {num(s['max_overhead_s'], '{:.2f}')} s; median wall "
        f"{num(s['median_wall_s'], '{:.2f}')} s, run {num(s['median_slice_run_s'], '{:.2f}')} s)",
        f"  median overhead vs plain pytest       {num(s['median_overhead_vs_plain_s'], '{:.2f}')} s"
        f"   (plain pytest over the slice {num(s['median_plain_slice_s'], '{:.2f}')} s)",
        f"  property lane / once at head          {num(ratio, '{:.1f}')}x   target <= "
        f"{TARGET_PROPERTY_RATIO:.0f}x: {rmet}  (gate {num(s['median_property_gate_s'], '{:.2f}')} s, "
        f"patchlane property --head {num(s['median_property_once_s'], '{:.2f}')} s)",
        f"  property lane / bare module run       {num(s['median_ratio_bare'], '{:.1f}')}x   "
        f"(bare {num(s['median_property_bare_s'], '{:.2f}')} s)",
        f"  in the gate's property lane: its base and head runs {num(s['median_property_runs_s'], '{:.2f}')} s "
        f"(children), its oracle audit {num(s['median_property_audit_s'], '{:.2f}')} s (a child, "
        "concurrent with replay, not waited for)",
        f"  first use: {s['first_uses']} warm-up gate(s), median {num(s['median_first_use_wall_s'], '{:.1f}')} s, "
        f"map recording {num(s['median_map_record_s'], '{:.1f}')} s",
        "  per step, median seconds (gates where replay ran):",
    ]  # fmt: skip
    for name, v in sorted(s["steps"].items(), key=lambda kv: -(kv[1]["median_s"] or 0.0)):
        share = (
            v["median_s"] / ovh if ovh and v["median_s"] is not None and name != RUN_STEP else None
        )
        lines.append(
            f"    {name:<44} {num(v['median_s'], '{:.3f}'):>7} s  in {v['gates']:>2} gate(s)"
            + (f"  ~{share:.0%} of the median overhead" if share is not None else "")
        )  # fmt: skip
    return "\n".join(lines)


def render_findings(
    results: Sequence[OverheadResult], firsts: Sequence[FirstUse], errors: Sequence[str]
) -> str:
    """Return the lines to read closely: gates without replay (no slice run to subtract),
    warm-ups that failed, maps not used, and every error."""
    out: list[str] = []
    for r in results:
        if not r.replay_ran:
            out.append(f"  {r.project}:{r.name}: replay did not run ({r.verdict}: {r.reason})")
        elif not r.dependency_map or r.dependency_map.startswith(("none", "off")):
            out.append(f"  {r.project}:{r.name}: no dependency map used: {r.dependency_map}")
    for f in firsts:
        if not f.ok:
            out.append(f"  first use {f.project}:{f.base}: no timings ({f.verdict})")
    found = [*errors, *(f"{r.project}:{r.name}: {e}" for r in results for e in r.errors)]
    out += [f"  ERROR {e}" for e in found]
    return "\n".join(["findings:", *out] if out else ["findings: none"])


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--project", {"action": "append", "choices": sorted(trial.PROJECTS), "metavar": "NAME",
                   "help": f"run this project (repeatable; default: {', '.join(DEFAULT_PROJECTS)})"}),
    ("--mutants", {"type": int, "default": 6, "metavar": "N",
                   "help": "seeded bugs per project (default 6)"}),
    ("--history", {"type": int, "default": 2, "metavar": "N",
                   "help": "history patches per project (default 2)"}),
    ("--seed", {"type": int, "default": 1, "metavar": "S", "help": "picks the mutants (default 1)"}),
    ("--repeat", {"type": int, "default": 1, "metavar": "R",
                  "help": "measured gates (and references) per patch; the median is kept (default 1)"}),
    ("--dep-map", {"choices": ("auto", "off"), "default": "auto",
                   "help": "the gate's --dep-map (default auto)"}),
    ("--audit-mutants", {"type": int, "metavar": "N",
                         "help": "pass --mutants N to the gate (its oracle audit; 0 turns it off; "
                         "default: the gate's)"}),
    ("--json", {"action": "store_true", "help": "print the results as JSON on stdout"}),
    ("--work", {"type": Path, "metavar": "DIR",
                "help": "keep the repositories, evidence, caches and results.json here "
                "(default: a temp dir, removed)"}),
    ("--cache", {"type": Path, "metavar": "DIR",
                 "default": Path(tempfile.gettempdir()) / "patchlane-trial-cache",
                 "help": "sdists and venvs, shared with trial.py (default: %(default)s)"}),
    ("--patchlane-rev", {"metavar": "REV",
                         "help": "install this commit of patchlane instead of its work tree"}),
    ("--suite-timeout", {"type": float, "default": 600, "metavar": "S",
                         "help": "per plain pytest run of a slice (default 600)"}),
    ("--gate-timeout", {"type": float, "default": 1800, "metavar": "S",
                        "help": "per gate, map recording included (default 1800)"}),
)  # fmt: skip


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Return the parsed command line (the options are ``OPTIONS``)."""
    parser = argparse.ArgumentParser(
        prog="python bench/bench_overhead.py",
        description=(
            "Measure what 'patchlane gate --replay local --dep-map auto' costs on top of the "
            "slice's own pytest run, per step, on real projects' patches (bench/trial.py's), "
            "and its property lane next to running the properties once at the head. Targets "
            "are reported, not enforced; exits 2 when a project or a gate could not run."
        ),
    )
    for flag, kwargs in OPTIONS:
        parser.add_argument(flag, **kwargs)
    args = parser.parse_args(argv)
    if args.mutants < 0 or args.history < 0 or args.repeat < 1:
        parser.error("--mutants and --history take a number >= 0, --repeat one >= 1")
    return args


def run_all(
    args: argparse.Namespace, work: Path, pl_src: Path
) -> tuple[list[OverheadResult], list[FirstUse], dict[str, list[str]], list[str]]:
    """Run every project, one process at a time; return (results, first uses, notes per
    project, errors)."""
    for stale in ("depcache", "plcache", "pycache"):
        shutil.rmtree(work / stale, ignore_errors=True)  # every first use starts cold
    cfg = Config(
        dep_map=args.dep_map, depcache=work / "depcache", env=bench_env(work),
        repeat=args.repeat, gate_timeout=args.gate_timeout, suite_timeout=args.suite_timeout,
        audit_mutants=args.audit_mutants,
    )  # fmt: skip
    opts = trial.Options(
        mutants=args.mutants, seed=args.seed, history=args.history, hostile=0, git_dirs={},
        suite_timeout=args.suite_timeout, gate_timeout=args.gate_timeout, map_style="smoke",
        cache=args.cache.resolve(), work=work, pl_src=pl_src,
    )  # fmt: skip
    results: list[OverheadResult] = []
    firsts: list[FirstUse] = []
    notes: dict[str, list[str]] = {}
    errors: list[str] = []
    for name in args.project or DEFAULT_PROJECTS:
        t0 = time.monotonic()
        try:
            found, warm, notes[name], errs = bench_project(name, opts, cfg)
            results, firsts, errors = results + found, firsts + warm, errors + errs
        except trial.TrialError as e:
            say(f"[{name}] SETUP ERROR: {e}")
            notes[name] = [f"setup error: {e}"]
            errors.append(f"{name}: setup error: {e}")
        notes[name].insert(0, f"{time.monotonic() - t0:.0f} s for the project")
    return results, firsts, notes, errors


def machine() -> str:
    """Return the machine in one line: system, CPU model and count."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip() + ", "
                break
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {model}{os.cpu_count()} CPUs"


def report(payload: dict[str, Any], projects: Sequence[str], as_json: bool) -> None:
    """Print the results: JSON, or the tables, summaries and findings; returns nothing."""
    if as_json:
        print(json.dumps(payload, indent=2))
        return
    results = [OverheadResult(**r) for r in payload["results"]]
    firsts = [FirstUse(**f) for f in payload["first_uses"]]
    meta = payload["meta"]
    print(render_table(results), render_steps(results, firsts), sep="\n\n")
    for name in [*projects, "TOTAL"]:
        if name == "TOTAL" and len(projects) < 2:
            continue
        print("\n" + render_summary(payload["summary"][name], name))
    print("\n" + render_findings(results, firsts, payload["errors"]) + "\n")
    for name, lines in payload["notes"].items():
        print("\n".join(f"note [{name}]: {line}" for line in lines))
    print(
        f"load average (1, 5, 15 min) at start {meta['load_start']}, at end {meta['load_end']} "
        f"({meta['machine']}, shared with other jobs)"
    )
    print(f"patchlane under test: {meta['patchlane']}; {meta['seconds']:.0f} s in all")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; return the exit status (2 a project or a gate that could not run,
    else 0: the targets are reported, not enforced)."""
    args = parse_args(argv)
    started, load_start = time.monotonic(), load()
    args.cache.mkdir(parents=True, exist_ok=True)
    work = (args.work or Path(tempfile.mkdtemp(prefix="patchlane-bench-overhead-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    say(f"load average at start: {load_start}")
    try:
        pl_src, pl_label = trial.patchlane_source(args.patchlane_rev, None, args.cache.resolve())
        say(f"patchlane under test: {pl_label}")
        results, firsts, notes, errors = run_all(args, work, pl_src)
    except trial.TrialError as e:
        say(f"setup error: {e}")
        return 2
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    projects = list(args.project or DEFAULT_PROJECTS)
    meta = {
        "command": " ".join(
            ["python", "bench/bench_overhead.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "python": platform.python_version(),
        "git": trial.run(["git", "--version"]).stdout.strip(),
        "patchlane": pl_label,
        "dep_map": args.dep_map,
        "audit_mutants": args.audit_mutants,
        "repeat": args.repeat,
        "targets": {"median_overhead_s": TARGET_OVERHEAD_S, "median_ratio_once": TARGET_PROPERTY_RATIO},
        "load_start": load_start,
        "load_end": load(),
        "seconds": round(time.monotonic() - started, 1),
    }  # fmt: skip
    groups = {p: [r for r in results if r.project == p] for p in projects}
    groups["TOTAL"] = results
    payload = {
        "meta": meta,
        "summary": {
            name: summarise(rows, [f for f in firsts if name == "TOTAL" or f.project == name])
            for name, rows in groups.items()
        },
        "first_uses": [asdict(f) for f in firsts],
        "errors": errors,
        "notes": notes,
        "results": [asdict(r) for r in results],
    }
    if args.work is not None:
        (work / "results.json").write_text(json.dumps(payload, indent=2), encoding="utf-8")
    report(payload, projects, args.json)
    failed = errors or any(r.errors for r in results) or not all(f.ok for f in firsts)
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
