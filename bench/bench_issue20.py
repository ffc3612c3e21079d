"""Issue 20's figures on real libraries: suite, map recording, slices, gate, pytest-testmon.

For each project (``trial.PROJECTS``: by default pyrsistent, jinja2, packaging, networkx and
attrs; sdists that ship their tests, venvs with their test dependencies and patchlane, trial
repositories and patches all built by ``trial``), one at a time, in the project's venv:

1. **suite**: the full suite with plain pytest at the base (``trial.ProjectTrial.truth``), wall
   seconds and tests;
2. **recording**: ``patchlane replay map --base main`` (the base's dependency map, recorded
   afresh), wall seconds, and its ratio to (1); the map's tests and the tests it marks blind
   (started a process, themselves or through a fixture; all of them when one started at import);
3. **slices**: ``bench_slice.Bench`` for every patch (``history``, ``mutant``): the slice of
   ``replay select`` with ``--dep-map off`` and ``auto`` (the map of 2, cached), and recall of
   the full suite's failing tests at the head;
4. **gate** (``--gate NAME``): ``patchlane gate --replay local --dep-map auto`` (warm map) on
   the first ``--gates`` mutants, wall seconds against the full suite at the head;
5. **testmon** (``--testmon NAME``): for the same mutants, the tests ``pytest --testmon``
   selects after a testmon baseline at the base, next to patchlane's with-map slice.

Exit 1 when a red head has a failing test outside the with-map slice, 2 when a project could
not be set up, else 0. Targets are reported, not enforced. Standard library only, plus
``trial`` and ``bench_slice``; needs ``git`` and PyPI. See bench/README.md, "Issue 20".
"""

from __future__ import annotations

import argparse
import datetime
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
import bench_slice  # noqa: E402  (bench/bench_slice.py, next to this file)
import trial  # noqa: E402

DEFAULT_PROJECTS = ("pyrsistent", "jinja2", "packaging", "networkx", "attrs")
TARGET_RECORD = 1.5  # recording <= 1.5x a plain run of the suite
TARGET_GATE = 0.5  # gate <= 0.5x the suite, for suites of 60 s or more
TARGET_SLICE = 0.20  # median slice <= 20%


def say(message: str) -> None:
    """Write one progress line to stderr; returns nothing."""
    print(f"bench_issue20: {message}", file=sys.stderr, flush=True)


def load() -> float:
    """Return the 1-minute load average."""
    return round(os.getloadavg()[0], 2)


# --------------------------------------------------------------------------------------------
# The map: recording it, reading its blind tests
# --------------------------------------------------------------------------------------------


@dataclass
class Recording:
    """One ``replay map`` call and what the map says."""

    seconds: float
    ok: bool
    path: str
    tests: int
    blind: int  # tests the map does not decide for (a process started)
    blind_at_import: bool  # every test: a process started outside every test
    error: str = ""


def blind_tests(data: dict[str, Any]) -> set[int]:
    """Return the indices of the tests behind the map's ``blind`` contexts: a test's own
    context, and every user of a fixture's (as ``depmap.DependencyMap.blind_tests``)."""
    count = len(data.get("tests", []))
    users: dict[int, set[int]] = {}
    for test, contexts in enumerate(data.get("uses", [])):
        for context in contexts:
            users.setdefault(context, set()).add(test)
    found: set[int] = set()
    for context in data.get("blind", []):
        if context < count:
            found.add(context)
        found |= users.get(context, set())
    return found


def record_map(t: trial.ProjectTrial, depcache: Path, ref: str, timeout: float) -> Recording:
    """Record ``ref``'s dependency map afresh into ``depcache`` with ``replay map --force``;
    return the ``Recording`` (wall seconds, the map's test and blind counts)."""
    argv: list[str | Path] = [
        t.python, "-m", "patchlane", "replay", "map", "--repo", t.repo, "--base", ref,
        "--dep-cache", depcache, "--force", "--timeout", str(int(timeout)),
    ]  # fmt: skip
    env = trial.clean_env()
    env.pop("PATCHLANE_DEP_MAP", None)
    env.pop("PATCHLANE_CACHE_DIR", None)
    proc = trial.run(argv, cwd=t.repo, env=env, timeout=timeout + 60)
    # The map of the base commit: ``maps/<commit>/<sha256>.json`` (``depmap.DependencyMap.write``).
    found = sorted(
        (depcache / "maps" / t.commits[ref]).glob("*.json"), key=lambda f: f.stat().st_mtime
    )
    path = found[-1] if found else Path()
    if proc.returncode != 0 or not path.is_file():
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-4:])
        return Recording(proc.seconds, False, "", 0, 0, False, f"exit {proc.returncode}: {tail}")
    data = json.loads(path.read_text(encoding="ascii"))
    count = len(data.get("tests", []))
    blind = blind_tests(data)
    return Recording(
        proc.seconds, True, os.fspath(path), count, len(blind), bool(count and len(blind) == count)
    )


# --------------------------------------------------------------------------------------------
# pytest-testmon on the same patches
# --------------------------------------------------------------------------------------------


@dataclass
class Testmon:
    """What ``pytest --testmon`` selected for one patch after a baseline at its base."""

    patch: str
    selected: int | None  # tests run (not deselected)
    deselected: int | None
    failing: list[str]
    recall: float | None  # of the full suite's failing tests at the head
    seconds: float
    error: str = ""


def _testmon_run(python: Path, tree: Path, timeout: float) -> tuple[trial.Proc, dict[str, int]]:
    """Run ``pytest --testmon`` in ``tree``; return the process and pytest's summary counts."""
    # Not trial.pytest_argv: testmon needs pytest's cacheprovider (its ``--lf`` option).
    argv = [os.fspath(python), "-m", "pytest", "-q", "-rfE", "--testmon", "--tb=no"]
    proc = trial.run(argv, cwd=tree, env=trial.clean_env({"PYTHONHASHSEED": "0"}), timeout=timeout)
    counts, _, _ = trial.parse_pytest_output(proc.stdout + proc.stderr)
    return proc, counts


class TestmonBench:
    """pytest-testmon for one project's mutants: one baseline at the base, copied per patch."""

    def __init__(self, t: trial.ProjectTrial, timeout: float) -> None:
        """Prepare for ``t``'s patches, each pytest run within ``timeout``."""
        self.t = t
        self.timeout = timeout
        self.root = t.root / "testmon"
        self.baseline = self.root / "baseline"
        self.baseline_seconds: float | None = None
        self.error = ""

    def prepare(self) -> None:
        """Run the testmon baseline at ``main`` (records ``.testmondata``); returns nothing."""
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
        trial.export_commit(self.t.repo / ".git", self.t.commits["main"], self.baseline)
        proc, _ = _testmon_run(self.t.python, self.baseline, self.timeout)
        self.baseline_seconds = round(proc.seconds, 2)
        if proc.returncode not in (0, 1) or not (self.baseline / ".testmondata").is_file():
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            self.error = f"testmon baseline exit {proc.returncode}: {tail}"

    def measure(self, patch: trial.Patch, failing: Sequence[str]) -> Testmon:
        """Return what ``pytest --testmon`` selects for ``patch`` (its changed files copied
        from the head over a copy of the baseline)."""
        if self.error:
            return Testmon(patch.name, None, None, [], None, 0.0, self.error)
        tree = self.root / patch.name
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(self.baseline, tree, symlinks=True)
        head = self.root / "head"
        shutil.rmtree(head, ignore_errors=True)
        trial.export_commit(self.t.repo / ".git", self.t.commits[patch.head], head)
        base, tip = self.t.commits[patch.base], self.t.commits[patch.head]
        for rel in trial.changed_paths(self.t.repo, base, tip):
            target = tree / rel
            if (head / rel).is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(head / rel, target)
            elif target.exists():
                target.unlink()
        shutil.rmtree(head)
        proc, counts = _testmon_run(self.t.python, tree, self.timeout)
        _, failed, _ = trial.parse_pytest_output(proc.stdout + proc.stderr)
        shutil.rmtree(tree, ignore_errors=True)
        if proc.returncode not in (0, 1, 5):
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            return Testmon(patch.name, None, None, [], None, proc.seconds, f"exit: {tail}")
        keys = ("passed", "failed", "skipped", "error", "errors", "xfailed", "xpassed")
        selected = sum(counts.get(k, 0) for k in keys)
        caught = [f for f in failing if f in failed]
        score = 1.0 if not failing else len(caught) / len(failing)
        return Testmon(
            patch.name, selected, counts.get("deselected", 0), failed, score, proc.seconds
        )


# --------------------------------------------------------------------------------------------
# One project
# --------------------------------------------------------------------------------------------


@dataclass
class Gate:
    """One warm-map gate: its wall against the full suite at the head."""

    patch: str
    verdict: str
    truth: str
    slice_size: int | None
    seconds: float
    suite_seconds: float
    load: float
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class ProjectFigures:
    """Everything measured for one project."""

    project: str
    version: str
    suite_tests: int
    suite_seconds: float
    suite_detail: str
    recording: Recording | None
    slices: list[bench_slice.SliceResult]
    gates: list[Gate]
    testmon: list[Testmon]
    testmon_baseline_seconds: float | None
    load_start: float
    load_end: float
    seconds: float
    notes: list[str]

    @property
    def record_ratio(self) -> float | None:
        """Recording wall / plain suite wall, or ``None``."""
        if self.recording is None or not self.recording.ok or not self.suite_seconds:
            return None
        return self.recording.seconds / self.suite_seconds


def _timings(out_dir: Path) -> dict[str, float]:
    """Return verdict.json's per-step seconds (``{}`` when there are none)."""
    try:
        data = json.loads((out_dir / "verdict.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = data.get("timings", {})
    return {str(k): float(v) for k, v in found.items()} if isinstance(found, dict) else {}


def run_project(name: str, args: argparse.Namespace, opts: trial.Options) -> ProjectFigures:
    """Measure one project (1-5 of the module docstring); return its figures. Raises
    ``trial.TrialError`` when it cannot be set up."""
    started, load_start = time.monotonic(), load()
    depcache = opts.work / name / "depcache"
    t = trial.ProjectTrial(trial.PROJECTS[name], opts)
    bench_slice.ensure_coverage(trial.ensure_venv(t.p, opts.cache, opts.pl_src), opts.pl_src)
    t.build()  # empties WORK/NAME, the depcache with it
    base = t.truth("main")
    t.log(f"suite at {t.p.mutant_base}: {base.brief()} in {base.seconds:.1f} s")
    if not base.green:
        t.notes.append(f"the suite is not green at {t.p.mutant_base}: {base.brief()}")
    t.log(f"replay map --base main (load {load()})")
    rec = record_map(t, depcache, "main", args.select_timeout)
    t.log(
        f"map: {rec.seconds:.1f} s, {rec.tests} tests, {rec.blind} blind"
        + (f"; {rec.error}" if rec.error else "")
    )
    mutants = t.add_mutants()
    for patch in t.patches:
        if patch.kind == "mutant":
            run_ = t.truth(patch.head)
            t.log(f"{patch.name}: suite at head {run_.brief()} [{patch.detail}]")
    bench = bench_slice.Bench(t, depcache, args.select_timeout)
    slices = [bench.measure(p, n, len(t.patches)) for n, p in enumerate(t.patches, 1)]
    mutant_patches = [p for p in t.patches if p.kind == "mutant"]
    gates: list[Gate] = []
    if name in args.gate:
        for patch in mutant_patches[: args.gates]:
            gates.append(gate_one(t, patch, depcache, opts.gate_timeout))
    marks: list[Testmon] = []
    baseline_seconds = None
    if name in args.testmon:
        tm = TestmonBench(t, opts.suite_timeout)
        t.log("testmon baseline at main")
        tm.prepare()
        baseline_seconds = tm.baseline_seconds
        for patch in mutant_patches:
            suite = t.truth(patch.head)
            marks.append(tm.measure(patch, list(dict.fromkeys(suite.failed + suite.subfailed))))
            t.log(f"{patch.name}: testmon ran {marks[-1].selected} {marks[-1].error}")
    del mutants
    return ProjectFigures(
        project=name,
        version=t.p.mutant_base,
        suite_tests=base.tests,
        suite_seconds=round(base.seconds, 2),
        suite_detail=base.brief(),
        recording=rec,
        slices=slices,
        gates=gates,
        testmon=marks,
        testmon_baseline_seconds=baseline_seconds,
        load_start=load_start,
        load_end=load(),
        seconds=round(time.monotonic() - started, 1),
        notes=t.notes,
    )


def gate_one(t: trial.ProjectTrial, patch: trial.Patch, depcache: Path, timeout: float) -> Gate:
    """Gate ``patch`` with the warm map in ``depcache``; return the ``Gate``."""
    suite = t.truth(patch.head)
    truth = "green" if suite.green else "red"
    out_dir = t.evidence / patch.name
    at = load()
    t.log(f"{patch.name}: gate --replay local --dep-map auto (load {at})")
    extra = ["--dep-map", "auto", "--dep-cache", os.fspath(depcache)]
    g = trial.gate(t.python, t.repo, patch, out_dir, timeout, extra=extra)
    t.log(f"{patch.name}: {g['verdict']} in {g['seconds']:.1f} s (suite {suite.seconds:.1f} s)")
    return Gate(
        patch.name, g["verdict"], truth, g["slice_size"], round(g["seconds"], 2),
        round(suite.seconds, 2), at, _timings(out_dir),
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------


def _median(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def summary(f: ProjectFigures) -> dict[str, Any]:
    """Return one project's figures for the summary table."""
    s = bench_slice.summarise(f.slices)
    narrowed = [
        r
        for r in f.slices
        if r.slice_map is not None and r.suite_size and r.slice_map < r.suite_size
    ]
    gate_ratios = [g.seconds / g.suite_seconds for g in f.gates if g.suite_seconds]
    rec = f.recording
    return {
        "suite_tests": f.suite_tests,
        "suite_seconds": f.suite_seconds,
        "record_seconds": round(rec.seconds, 1) if rec and rec.ok else None,
        "record_ratio": None if f.record_ratio is None else round(f.record_ratio, 2),
        "map_tests": rec.tests if rec else None,
        "blind_tests": rec.blind if rec else None,
        "blind_at_import": rec.blind_at_import if rec else None,
        "median_slice_off": s["median_slice_fraction_off"],
        "median_slice_map": s["median_slice_fraction_map"],
        "narrowed": f"{len(narrowed)}/{len(f.slices)}",
        "min_recall_map": s["min_recall_map"],
        "red_missed_map": s["red_missed_map"],
        "gate_vs_suite": [round(r, 2) for r in gate_ratios],
        "testmon_selected": [m.selected for m in f.testmon],
        "load": f"{f.load_start}-{f.load_end}",
    }


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0%}"


def render(figures: Sequence[ProjectFigures]) -> str:
    """Return the per-project summary, the gates, the testmon comparison and the notes."""
    rows = [["project", "tests", "suite s", "map rec s", "rec/suite", "blind", "slice off",
             "slice map", "narrowed", "recall map", "red missed", "gate/suite", "load"]]  # fmt: skip
    for f in figures:
        s = summary(f)
        rows.append([
            f"{f.project} {f.version}", str(s["suite_tests"]), f"{s['suite_seconds']:.1f}",
            "-" if s["record_seconds"] is None else f"{s['record_seconds']:.1f}",
            "-" if s["record_ratio"] is None else f"{s['record_ratio']:.2f}x",
            f"{s['blind_tests']}/{s['map_tests']}", _pct(s["median_slice_off"]),
            _pct(s["median_slice_map"]), s["narrowed"], _pct(s["min_recall_map"]),
            str(s["red_missed_map"]),
            ", ".join(f"{r:.2f}x" for r in s["gate_vs_suite"]) or "-", s["load"],
        ])  # fmt: skip
    out = [bench_slice._grid(rows, 1), ""]
    out.append(bench_slice.render_table([r for f in figures for r in f.slices]))
    for f in figures:
        for g in f.gates:
            steps = ", ".join(f"{k} {v:.1f}" for k, v in sorted(g.timings.items()) if v >= 1.0)
            out.append(
                f"gate {f.project}:{g.patch} (head {g.truth}): {g.verdict}, slice {g.slice_size}, "
                f"{g.seconds:.1f} s vs suite {g.suite_seconds:.1f} s "
                f"({g.seconds / g.suite_seconds:.2f}x; load {g.load}); steps >= 1 s: {steps}"
            )
        if f.testmon:
            out.append(f"testmon {f.project}: baseline {f.testmon_baseline_seconds} s")
            by_name = {r.name: r for r in f.slices}
            for m in f.testmon:
                r = by_name.get(m.patch)
                out.append(
                    f"  {m.patch}: testmon {m.selected} (recall {_pct(m.recall)}, {m.seconds:.1f} s)"
                    f" | patchlane map {r.slice_map if r else '-'} off {r.slice_off if r else '-'}"
                    f" of {r.suite_size if r else '-'} (recall {_pct(r.recall_map if r else None)})"
                    + (f" ERROR {m.error}" if m.error else "")
                )
    out.append("")
    out.append(bench_slice.render_findings([r for f in figures for r in f.slices]))
    for f in figures:
        rec = f.recording
        if rec and not rec.ok:
            out.append(f"note [{f.project}]: replay map failed: {rec.error}")
        out += [f"note [{f.project}]: {n}" for n in f.notes]
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Return the parsed command line."""
    parser = argparse.ArgumentParser(
        prog="python bench/bench_issue20.py",
        description="Issue 20's figures on real libraries: suite, map recording, slices, "
        "warm-map gates, pytest-testmon (see bench/README.md).",
    )
    parser.add_argument(
        "--project", action="append", choices=sorted(trial.PROJECTS), metavar="NAME",
        help=f"run this project (repeatable; default: {', '.join(DEFAULT_PROJECTS)})",
    )  # fmt: skip
    parser.add_argument("--mutants", type=int, default=4, metavar="N", help="default 4")
    parser.add_argument("--history", type=int, default=1, metavar="N", help="default 1")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="default 1")
    parser.add_argument(
        "--gate", action="append", metavar="NAME",
        help="gate --gates mutants of NAME with the warm map (repeatable; default networkx)",
    )  # fmt: skip
    parser.add_argument("--gates", type=int, default=2, metavar="N", help="default 2")
    parser.add_argument(
        "--testmon", action="append", metavar="NAME",
        help="compare with pytest --testmon on NAME's mutants (repeatable; default attrs; "
        "the venv needs pytest-testmon)",
    )  # fmt: skip
    parser.add_argument("--work", type=Path, metavar="DIR", help="keep everything here")
    parser.add_argument(
        "--cache", type=Path, metavar="DIR",
        default=Path(tempfile.gettempdir()) / "patchlane-trial-cache",
        help="sdists and venvs, shared with trial.py (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument("--patchlane-rev", metavar="REV", help="install this commit of patchlane")
    parser.add_argument(
        "--patchlane-src", type=Path, metavar="DIR",
        help="the patchlane checkout to install (default: this one; e.g. /work/main)",
    )  # fmt: skip
    parser.add_argument("--suite-timeout", type=float, default=900, metavar="S")
    parser.add_argument("--select-timeout", type=float, default=1800, metavar="S")
    parser.add_argument("--gate-timeout", type=float, default=1800, metavar="S")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    args.gate = args.gate if args.gate is not None else ["networkx"]
    args.testmon = args.testmon if args.testmon is not None else ["attrs"]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; return the exit status (1 a recall miss with the map, 2 a project
    that could not be set up, else 0)."""
    args = parse_args(argv)
    started, load_start = time.monotonic(), load()
    args.cache.mkdir(parents=True, exist_ok=True)
    work = (args.work or Path(tempfile.mkdtemp(prefix="patchlane-issue20-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    pl_src, pl_label = trial.patchlane_source(
        args.patchlane_rev, args.patchlane_src, args.cache.resolve()
    )
    say(f"patchlane under test: {pl_label}; load {load_start}")
    opts = trial.Options(
        mutants=args.mutants, seed=args.seed, history=args.history, hostile=0, git_dirs={},
        suite_timeout=args.suite_timeout, gate_timeout=args.gate_timeout, map_style="smoke",
        cache=args.cache.resolve(), work=work, pl_src=pl_src,
    )  # fmt: skip
    figures: list[ProjectFigures] = []
    failed: dict[str, str] = {}
    for name in args.project or DEFAULT_PROJECTS:
        try:
            figures.append(run_project(name, args, opts))
        except trial.TrialError as e:
            say(f"[{name}] SETUP ERROR: {e}")
            failed[name] = str(e)
    meta = {
        "command": " ".join(
            ["python", "bench/bench_issue20.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "patchlane": pl_label,
        "load": [load_start, load()],
        "seconds": round(time.monotonic() - started, 1),
    }
    payload = {
        "meta": meta,
        "summary": {f.project: summary(f) for f in figures},
        "setup_failed": failed,
        "projects": [asdict(f) for f in figures],
    }
    (work / "results.json").write_text(json.dumps(payload, indent=2), encoding="utf-8")
    if args.json:
        print(json.dumps(payload, indent=2))
    else:
        print(render(figures))
        for name, why in failed.items():
            print(f"SETUP ERROR [{name}]: {why}")
        print(f"patchlane under test: {pl_label}; {meta['seconds']:.0f} s; load {meta['load']}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    if any(r.red and r.missed_map for f in figures for r in f.slices):
        return 1
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
