"""Local against Ray (issue 32): one tasks run of real projects, on each engine, and the model.

One command. For ``--projects`` (default tomli and boltons), honest_history.py's machinery
builds a trial repository of the project's two newest code commits (``b/01``..``h/02``: the
same review map on every commit, the tree from the fetched mirror under /work/.mirror) and a
venv of its own (``NAME@engines`` in ``--cache``: the project's test dependencies and this
checkout's patchlane, editable). Each commit's parent is a base; against each base, 8
candidates:

- ``commit``: the commit itself (an honest patch from the project's history);
- ``commit-bug``: the commit with a bug planted in it (trial.py's ``ast`` mutants);
- ``mutant-1`` .. ``mutant-6``: a bug planted in the base (red heads, when the suite sees them).

It writes ``tasks.jsonl`` (one task per base: the trial repository, the base commit, the
venv's python) and ``predictions.jsonl`` (SWE-bench's format), then runs ``patchlane triage
--tasks`` once per engine of ``--engines`` (default ``local,ray``), each with a fresh work
directory and cache (every base prepared cold), and prints:

- per engine: wall seconds, throughput (pairs per minute), verdicts, infrastructure rows;
- whether both engines gave every pair the same verdict;
- the cost of a Ray start (``ray.init`` of a local cluster and its shutdown, in a process of
  its own, less an interpreter's start);
- per-base preparation (``patchlane.triage.work.prepare`` on a fresh work directory, timed
  per base) and per-pair gate cost (the rows' seconds);
- the model (bench/scaling_model.py) fed with those costs: predicted makespan and throughput
  on N = 1, 2, 4, 8 nodes of ``--cpus`` CPUs with ``-j``.

It is a tool, not a test: minutes of real gates. ``--setup-only`` builds the inputs and prints
the commands it would run. Exit 1 when the engines disagree on a verdict, 2 when the trial
could not be set up or a run failed, else 0. Run:

    python3 bench/triage_engines.py [--engines local,ray] [-j 2] [--work DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import honest_history as hh  # noqa: E402  (bench/, next to this file)
import trial  # noqa: E402
from scaling_model import Base, Cluster, Workload, predict, scaling_table  # noqa: E402

PROJECTS = ("tomli", "boltons")
BASES = 2  # per project: the parents of its two newest code commits
MUTANTS = 6  # per base; with the commit and the commit with a bug: 8 candidates
SUFFIX = "@engines"  # the bench's venvs, apart from the other trials' (their patchlane differs)
GATE_ARGS = ("--seed", str(trial.GATE_SEED), "--cases", "50", "--today", "2026-12-01")
GATE_ARGS += ("--replay", "local", "--dep-map", "auto")
NODES = (1, 2, 4, 8)
RAY_START = """\
import time
t = time.perf_counter()
import ray
ray.init(num_cpus={cpus}, include_dashboard=False, log_to_driver=False)
ray.get(ray.remote(lambda: 1).remote())
ray.shutdown()
print(time.perf_counter() - t)
"""


@dataclass(frozen=True)
class Task:
    """One base of the run and its candidates (model name -> the diff)."""

    instance_id: str
    project: str
    repo: Path
    base_commit: str
    python: Path
    patches: dict[str, str]


@dataclass
class EngineRun:
    """One ``patchlane triage --tasks`` run: exit code, wall, rows by pair."""

    engine: str
    exit_code: int | None
    seconds: float
    rows: dict[tuple[str, str], dict[str, Any]]
    stderr_tail: str

    @property
    def pairs_per_minute(self) -> float:
        return 60.0 * len(self.rows) / self.seconds if self.seconds else 0.0


class Project(hh.HonestTrial):
    """honest_history's trial repository of one project, and the candidates of its bases."""

    def __init__(self, spec: hh.Spec, args: argparse.Namespace, pl_src: Path, work: Path):
        spec = dataclasses.replace(
            spec, project=dataclasses.replace(spec.project, name=spec.project.name + SUFFIX)
        )
        super().__init__(spec, args, pl_src, work)
        self.overlay: trial.Overlay | None = None

    def _commit(self, tree: Path, overlay: trial.Overlay, parent: str | None, msg: str) -> str:
        self.overlay = overlay  # build()'s, kept for the candidates' commits
        return super()._commit(tree, overlay, parent, msg)

    def planted(self, rev: str, parent: str, count: int, seed: int) -> list[tuple[str, str]]:
        """Return ``[(label, commit)]``: up to ``count`` bugs planted in the tree of ``rev``
        (a commit of the upstream history), each committed on ``parent``."""
        tree = hh.export(self.spec, self.git_dir, rev, self.cache)
        out = []
        for i, m in enumerate(trial.pick_mutants(self.spec.project, tree, count, seed), 1):
            dest = self.root / "scratch" / f"{rev[:9]}-{i}"
            shutil.rmtree(dest, ignore_errors=True)
            trial.copy_tree(tree, dest)
            (dest / m.path).write_text(m.text, encoding="utf-8")
            assert self.overlay is not None
            out.append((m.label, self._commit(dest, self.overlay, parent, f"bug {i} in {rev[:9]}")))
            shutil.rmtree(dest)
        return out

    def tasks(self, seed: int) -> list[Task]:
        """Return the project's tasks: per base, the commit, the commit with a bug, and
        ``MUTANTS`` bugs in the base. Raises ``TrialError`` when a base gets too few."""
        name = self.spec.project.name.removesuffix(SUFFIX)
        out = []
        for i, (base_rev, head_rev) in enumerate(self.pairs, 1):
            base, head = self.commits[f"b/{i:02d}"], self.commits[f"h/{i:02d}"]
            heads = {"commit": head}
            bug = self.planted(head_rev, base, 1, seed + i)
            if bug:
                heads["commit-bug"] = bug[0][1]
            bugs = self.planted(base_rev, base, MUTANTS, seed + 100 + i)
            heads.update({f"mutant-{k}": c for k, (_, c) in enumerate(bugs, 1)})
            patches = {
                model: trial.git(self.repo, "diff", "--binary", "--full-index", base, h)
                for model, h in heads.items()
            }
            if len(patches) < 2 + MUTANTS or not all(patches.values()):
                raise trial.TrialError(f"{name} base {i}: only {len(patches)} candidates")
            out.append(Task(f"{name}__{i}", name, self.repo, base, self.python, patches))
        return out


def write_inputs(tasks: Sequence[Task], folder: Path) -> tuple[Path, Path]:
    """Write ``tasks.jsonl`` and ``predictions.jsonl`` into ``folder``; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    tasks_file, predictions = folder / "tasks.jsonl", folder / "predictions.jsonl"
    with tasks_file.open("w", encoding="utf-8") as fh:
        for t in tasks:
            line = {"instance_id": t.instance_id, "repo": os.fspath(t.repo)}
            line |= {"base_commit": t.base_commit, "python": os.fspath(t.python)}
            fh.write(json.dumps(line) + "\n")
    with predictions.open("w", encoding="utf-8") as fh:
        for t in tasks:
            for model, diff in t.patches.items():
                line = {"instance_id": t.instance_id, "model_name_or_path": model}
                fh.write(json.dumps(line | {"model_patch": diff}) + "\n")
    return tasks_file, predictions


def driver_env(pl_src: Path, cache: Path) -> dict[str, str]:
    """The driver's environment: this checkout's patchlane first, a cache of its own."""
    env = hh.bench_env(cache.parent)
    env["PATCHLANE_CACHE_DIR"] = os.fspath(cache)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.fspath(pl_src / "src")]))
    return env


def triage_argv(engine: str, inputs: tuple[Path, Path], out: Path, jobs: int) -> list[str]:
    """Return the command line of one engine's run."""
    tasks_file, predictions = inputs
    return [
        sys.executable,
        "-m",
        "patchlane",
        "triage",
        "--tasks",
        os.fspath(tasks_file),
        os.fspath(predictions),
        "--engine",
        engine,
        "-j",
        str(jobs),
        "--out-dir",
        os.fspath(out / "out"),
        "--work-dir",
        os.fspath(out / "work"),
        *GATE_ARGS,
    ]


def run_engine(engine: str, argv: list[str], out: Path, env: dict[str, str]) -> EngineRun:
    """Run one engine's triage (fresh ``out``); return its rows by (instance, model)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    trial.say(f"[{engine}] {' '.join(argv[1:])}")
    proc = trial.run(argv, env=env, timeout=7200)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    jsonl = out / "out" / "triage.jsonl"
    if jsonl.is_file():
        for line in jsonl.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            rows[(row.get("instance_id", ""), row.get("model_name_or_path", ""))] = row
    (out / "stderr.txt").write_text(proc.stderr, encoding="utf-8")
    trial.say(f"[{engine}] exit {proc.returncode} in {proc.seconds:.1f} s, {len(rows)} rows")
    return EngineRun(engine, proc.returncode, proc.seconds, rows, proc.stderr[-1500:])


def ray_start_cost(cpus: int, env: dict[str, str]) -> float | None:
    """Return the seconds of a local Ray cluster's start and shutdown (one trivial task run
    on it), less a bare interpreter's start; ``None`` when Ray is not importable."""
    bare = trial.run([sys.executable, "-c", "pass"], env=env, timeout=60)
    proc = trial.run([sys.executable, "-c", RAY_START.format(cpus=cpus)], env=env, timeout=600)
    if proc.returncode != 0 or not proc.stdout.strip():
        trial.say(f"ray start failed: {proc.stderr.strip()[-300:]}")
        return None
    return max(0.0, float(proc.stdout.split()[-1]) - bare.seconds)


PREPARE = """\
import json, sys, time
from pathlib import Path
from patchlane.triage.tasks import read_tasks
from patchlane.triage.units import RunPlan
from patchlane.triage.work import prepare
plan = RunPlan(gate_argv=(), work_dir=sys.argv[2], jobs=1, pair_timeout_s=600.0)
for task in read_tasks(Path(sys.argv[1])):
    t = time.perf_counter()
    prepare(task.base, plan)
    print(json.dumps({"instance_id": task.instance_id, "seconds": time.perf_counter() - t}))
"""


def preparation_costs(tasks_file: Path, work: Path, env: dict[str, str]) -> dict[str, float]:
    """Return each base's cold preparation (``triage.work.prepare`` on a fresh work dir),
    seconds by instance id; empty (and said) when the worker side is not there yet."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    proc = trial.run(
        [sys.executable, "-c", PREPARE, os.fspath(tasks_file), os.fspath(work)],
        env=env,
        timeout=3600,
    )
    if proc.returncode != 0:
        trial.say(f"timing the preparations failed: {proc.stderr.strip()[-400:]}")
        return {}
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            item = json.loads(line)
            out[item["instance_id"]] = float(item["seconds"])
    return out


def gate_costs(run: EngineRun) -> dict[str, list[float]]:
    """Return each base's gate seconds (by instance id) from a run's judged rows."""
    out: dict[str, list[float]] = {}
    for (instance, _), row in run.rows.items():
        if not row.get("infra") and isinstance(row.get("seconds"), int | float):
            out.setdefault(instance, []).append(float(row["seconds"]))
    return out


def evidence_bytes(run: EngineRun, out: Path) -> float:
    """Return the mean size of a pair's evidence folder (what crosses to the driver)."""
    sizes = []
    for row in run.rows.values():
        folder = out / "out" / str(row.get("evidence") or row.get("name") or "")
        if folder.is_dir() and folder != out / "out":
            sizes.append(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()))
    return statistics.fmean(sizes) if sizes else 0.0


def verdict_counts(run: EngineRun) -> str:
    counts = Counter(str(r.get("verdict")) for r in run.rows.values())
    infra = sum(bool(r.get("infra")) for r in run.rows.values())
    text = ", ".join(f"{v} {n}" for v, n in sorted(counts.items()))
    return f"{text}; infrastructure {infra}"


def disagreements(runs: Sequence[EngineRun]) -> list[str]:
    """Return one line per pair whose verdict differs between the runs (or is missing)."""
    if len(runs) < 2:
        return []
    keys = sorted(set().union(*(r.rows for r in runs)))
    out = []
    for key in keys:
        verdicts = [str(r.rows.get(key, {}).get("verdict", "(missing)")) for r in runs]
        if len(set(verdicts)) > 1:
            pairs = ", ".join(f"{r.engine} {v}" for r, v in zip(runs, verdicts, strict=True))
            out.append(f"{key[0]}/{key[1]}: {pairs}")
    return out


def model_table(
    tasks: Sequence[Task],
    prep: dict[str, float],
    gates: dict[str, list[float]],
    cluster: Cluster,
    evidence: float,
) -> list[str]:
    """Return the model's lines for N = 1, 2, 4, 8 nodes fed with the measured costs."""
    all_gates = [s for v in gates.values() for s in v]
    if not all_gates:
        return ["model: no gate was timed"]
    mean_gate = statistics.fmean(all_gates)
    mean_prep = statistics.fmean(prep.values()) if prep else 0.0
    bases = tuple(
        Base(
            prep.get(t.instance_id, mean_prep),
            tuple(gates.get(t.instance_id) or [mean_gate] * len(t.patches)),
        )
        for t in tasks
    )
    workload = Workload(bases=bases, evidence_bytes=evidence)
    here = predict(workload, dataclasses.replace(cluster, nodes=1, start_s=0.0))
    lines = [
        f"model of this machine (1 node, no cluster start): {here.estimate:.0f} s "
        f"({here.lower:.0f}-{here.upper:.0f}), {here.pairs_per_minute:.1f} pairs/min",
        f"model ({len(bases)} bases, {workload.pairs} pairs, {cluster.cpus} CPUs/node, "
        f"-j {cluster.jobs}, start {cluster.start_s:.1f} s):",
        "  N | makespan s (lower-upper) | pairs/min | bound",
    ]
    for n, p in scaling_table(workload, cluster, NODES):
        lines.append(
            f"  {n} | {p.estimate:.0f} ({p.lower:.0f}-{p.upper:.0f}) | "
            f"{p.pairs_per_minute:.1f} | {p.bottleneck}"
        )
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python3 bench/triage_engines.py",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("--projects", default=",".join(PROJECTS), help="default: %(default)s")
    parser.add_argument("--engines", default="local,ray", help="default: %(default)s")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="gates at a time (default 2)")
    parser.add_argument(
        "--cpus", type=int, default=os.cpu_count() or 1, help="a node's CPUs, for the model"
    )
    parser.add_argument("--seed", type=int, default=32, help="the planted bugs' seed")
    parser.add_argument("--setup-only", action="store_true", help="build inputs, print commands")
    hh.add_run_arguments(
        parser, work_help="trial repositories, inputs and runs (default: a fresh temporary one)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # The venvs' probe (trial.ensure_venv) must see what the venv itself imports, not this
    # checkout through PYTHONPATH; the driver gets its PYTHONPATH from driver_env.
    os.environ.pop("PYTHONPATH", None)
    args.cache = args.cache.resolve()
    args.cache.mkdir(parents=True, exist_ok=True)
    args.git_dirs, args.from_run, args.commits, args.map_style = {}, None, BASES, "smoke"
    pl_src, pl_label = trial.patchlane_source(args.patchlane_rev, args.patchlane_src, args.cache)
    work = (args.work or Path(tempfile.mkdtemp(prefix="triage-engines-"))).resolve()
    trial.say(f"patchlane: {pl_label}; work: {work}")
    tasks: list[Task] = []
    try:
        for name in args.projects.split(","):
            project = Project(hh.SPECS[name], args, pl_src, work)
            project.build()
            tasks += project.tasks(args.seed)
    except (trial.TrialError, subprocess.CalledProcessError, KeyError) as exc:
        print(f"triage_engines: set-up failed: {exc}", file=sys.stderr)
        return 2
    inputs = write_inputs(tasks, work / "inputs")
    pairs = sum(len(t.patches) for t in tasks)
    print(f"{len(tasks)} bases, {pairs} pairs: {inputs[0]}, {inputs[1]}")
    engines = [e for e in args.engines.split(",") if e]
    commands = {e: triage_argv(e, inputs, work / "runs" / e, args.jobs) for e in engines}
    if args.setup_only:
        for argv in commands.values():
            print(f"PYTHONPATH={pl_src / 'src'} {' '.join(argv)}")
        return 0

    runs = []
    for e, argv in commands.items():
        env = driver_env(pl_src, work / "runs" / f"{e}-cache")
        runs.append(run_engine(e, argv, work / "runs" / e, env))
    env = driver_env(pl_src, work / "prep-cache")
    ray_s = ray_start_cost(args.cpus, env) if "ray" in engines else None
    prep = preparation_costs(inputs[0], work / "prep-work", env)

    failed = [r for r in runs if r.exit_code not in (0, 1, 3) or not r.rows]
    for r in runs:
        print(
            f"{r.engine}: exit {r.exit_code}, {r.seconds:.1f} s, {len(r.rows)} rows, "
            f"{r.pairs_per_minute:.1f} pairs/min; {verdict_counts(r)}"
        )
    for r in failed:
        print(f"{r.engine} failed; its stderr ends:\n{r.stderr_tail}")
    diff = disagreements(runs)
    if len(runs) > 1:
        print("same verdicts on every pair" if not diff else "verdicts differ:")
        for line in diff:
            print(f"  {line}")
    if ray_s is not None:
        print(
            f"Ray start (local cluster, {args.cpus} CPUs, start + one task + shutdown): {ray_s:.1f} s"
        )
    for t in tasks:
        print(
            f"prepare {t.instance_id}: {prep[t.instance_id]:.1f} s"
            if t.instance_id in prep
            else f"prepare {t.instance_id}: not timed"
        )
    base_run = next((r for r in runs if r.rows), None)
    if base_run is not None:
        gates = gate_costs(base_run)
        every = [s for v in gates.values() for s in v]
        if every:
            print(
                f"gate per pair ({base_run.engine}): median {statistics.median(every):.1f} s, "
                f"mean {statistics.fmean(every):.1f} s, max {max(every):.1f} s"
            )
        evidence = evidence_bytes(base_run, work / "runs" / base_run.engine)
        cluster = Cluster(1, args.cpus, args.jobs, start_s=ray_s or 0.0)
        print("\n".join(model_table(tasks, prep, gates, cluster, evidence)))
    if args.json is not None:
        payload = {
            "patchlane": pl_label,
            "runs": [
                {
                    "engine": r.engine,
                    "exit": r.exit_code,
                    "seconds": r.seconds,
                    "pairs_per_minute": r.pairs_per_minute,
                    "rows": list(r.rows.values()),
                }
                for r in runs
            ],
            "ray_start_s": ray_s,
            "prepare_s": prep,
            "disagreements": diff,
        }
        args.json.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    if failed:
        return 2
    return 1 if diff else 0


if __name__ == "__main__":
    raise SystemExit(main())
