"""Benchmark: ``patchlane fixture check`` side by side with ``sha256sum`` and ``git status``.

Builds, in a temporary directory, a git repository with a fixture tree of ``--files`` files
(about ``--megabytes`` MB in all, sizes and bytes drawn from ``random.Random(--seed)``), a
review map with one fixture root, commits it and writes the lock with ``patchlane fixture
lock``. Then, interleaved over ``--rounds`` rounds, it times:

- ``patchlane fixture check --no-cache`` (every file opened, read and hashed),
- ``patchlane fixture check`` (stat cache warm: nothing changed, nothing hashed),
- ``patchlane fixture check --rev HEAD`` (what the gate runs: blobs from git),
- ``sha256sum`` over exactly the same files, in one process,
- ``git status --porcelain``,
- ``patchlane --version`` (interpreter start-up, the floor of every patchlane command).

Every command runs as a separate process, as a user would run it. Standard library only:
``python bench/bench_fixture.py [--files 10000] [--rounds 5] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = "fixtures/data/"
LOCK = "fixtures/data/LOCK.json"
MAP = f"""\
version: 1
lanes:
  fixture:
    paths: ["{ROOT}"]
    lock: "{LOCK}"
"""
# Set by main() to a directory inside the benchmark's temp dir (removed with it).
PYCACHE = {"dir": ""}
PAGE_CACHE_NOTE = (
    "The page cache is warm for every tool (each command ran once before timing and we "
    "cannot drop the cache): these figures measure CPU and system calls, not the disk."
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    # Byte-code is cached (in a temp dir, never the source tree) as for any installed
    # package; PYTHONDONTWRITEBYTECODE would otherwise recompile every module every run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if PYCACHE["dir"]:
        env["PYTHONPYCACHEPREFIX"] = PYCACHE["dir"]
    env.update(
        GIT_AUTHOR_NAME="bench",
        GIT_AUTHOR_EMAIL="bench@example.invalid",
        GIT_COMMITTER_NAME="bench",
        GIT_COMMITTER_EMAIL="bench@example.invalid",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        LC_ALL="C",
    )
    return env


def _run(
    argv: Sequence[str], cwd: Path, ok: Sequence[int] = (0,)
) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(list(argv), cwd=cwd, env=_env(), capture_output=True, check=False)
    if proc.returncode not in ok:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise SystemExit(f"bench: {' '.join(argv[:4])} ... exited {proc.returncode}: {err}")
    return proc


def _sizes(rng: random.Random, files: int, total: int) -> list[int]:
    # Log-normal: mostly small files and a tail of large ones, like real fixture trees;
    # scaled so that the total is close to the target.
    raw = [rng.lognormvariate(0.0, 1.2) for _ in range(files)]
    scale = total / sum(raw)
    return [max(1, int(x * scale)) for x in raw]


def build(base: Path, files: int, megabytes: int, seed: int) -> tuple[Path, list[str], int]:
    """Create the repository; return it, the fixture paths (sorted) and their total bytes."""
    repo = base / "repo"
    repo.mkdir()
    _run(["git", "init", "-q", "-b", "main"], repo)
    rng = random.Random(seed)
    paths: list[str] = []
    total = 0
    for i, size in enumerate(_sizes(rng, files, megabytes * 1_000_000)):
        rel = f"{ROOT}d{i % 8}/s{i % 3}/f{i:05d}.bin"
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(size))
        paths.append(rel)
        total += size
    (repo / "review-map.yml").write_text(MAP)
    patchlane = [sys.executable, "-m", "patchlane"]
    _run([*patchlane, "fixture", "lock", "--reason", "benchmark fixture tree"], repo)
    _run(["git", "add", "-A"], repo)
    _run(["git", "commit", "-q", "-m", "fixtures"], repo)
    return repo, sorted(paths), total


def commands(paths: list[str]) -> dict[str, list[str]]:
    """Return the timed commands by name (run in the repository)."""
    patchlane = [sys.executable, "-m", "patchlane"]
    return {
        "patchlane fixture check --no-cache": [*patchlane, "fixture", "check", "--no-cache"],
        "patchlane fixture check (warm stat cache)": [*patchlane, "fixture", "check"],
        "patchlane fixture check --rev HEAD": [*patchlane, "fixture", "check", "--rev", "HEAD"],
        "sha256sum (same files, one process)": ["sha256sum", "--", *paths],
        "git status --porcelain": ["git", "status", "--porcelain"],
        "patchlane --version (start-up)": [*patchlane, "--version"],
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(
    repo: Path, cmds: dict[str, list[str]], rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run every command once untimed (warms the page cache and the stat cache), then
    ``rounds`` interleaved timed rounds. Returns wall-clock and CPU (user + system) seconds
    per command; CPU time is the steadier figure on a shared machine."""
    for argv in cmds.values():
        _run(argv, repo)
    wall: dict[str, list[float]] = {name: [] for name in cmds}
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(rounds):
        for name, argv in cmds.items():
            cpu0 = _children_cpu()
            start = time.perf_counter()
            _run(argv, repo)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(_children_cpu() - cpu0)
    return wall, cpu


def _check_warm_cache(repo: Path, files: int) -> int:
    """Return how many files the warm run took from the stat cache (should be all)."""
    proc = _run([sys.executable, "-m", "patchlane", "--json", "fixture", "check"], repo)
    report = json.loads(proc.stdout)
    if report["status"] != "pass" or report["roots"][0]["files"] != files:
        raise SystemExit(f"bench: unexpected report: {report['reason']}")
    return int(report["timings"]["cached"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000, help="number of fixture files")
    parser.add_argument("--megabytes", type=int, default=120, help="total size in MB (10^6 bytes)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (interleaved)")
    parser.add_argument("--seed", type=int, default=20260924, help="seed for sizes and bytes")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="patchlane-bench-") as tmp:
        PYCACHE["dir"] = os.fspath(Path(tmp) / "pycache")
        t0 = time.perf_counter()
        repo, paths, total = build(Path(tmp), args.files, args.megabytes, args.seed)
        setup = time.perf_counter() - t0
        # The stat cache trusts only files whose mtime/ctime is 2 s older than the run that
        # wrote the cache (the racy-git rule); let the tree age past that before warming.
        time.sleep(2.5)
        cmds = commands(paths)
        times, cpu = measure(repo, cmds, args.rounds)
        cached = _check_warm_cache(repo, len(paths))

    med = {name: statistics.median(ts) for name, ts in times.items()}
    med_cpu = {name: statistics.median(ts) for name, ts in cpu.items()}
    cold = med["patchlane fixture check --no-cache"]
    warm = med["patchlane fixture check (warm stat cache)"]
    sha = med["sha256sum (same files, one process)"]
    status = med["git status --porcelain"]
    ratios = {
        "cold / sha256sum": cold / sha,
        "warm / sha256sum": warm / sha,
        "cold / git status": cold / status,
        "warm / git status": warm / status,
    }
    result = {
        "files": len(paths),
        "bytes": total,
        "rounds": args.rounds,
        "seed": args.seed,
        "setup_seconds": round(setup, 2),
        "warm_run_files_from_cache": cached,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "median_seconds": {k: round(v, 4) for k, v in med.items()},
        "median_cpu_seconds": {k: round(v, 4) for k, v in med_cpu.items()},
        "all_seconds": {k: [round(t, 4) for t in ts] for k, ts in times.items()},
        "ratios": {k: round(v, 3) for k, v in ratios.items()},
        "target_met": cold <= sha,
        "note": PAGE_CACHE_NOTE,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"fixture tree: {len(paths)} files, {total / 1e6:.1f} MB; {args.rounds} rounds; "
        f"python {result['python']}; {result['machine']}"
    )
    print(f"warm run took {cached} of {len(paths)} files from the stat cache")
    print()
    width = max(len(k) for k in med)
    print(f"{'command':<{width}}  {'median s':>9}  {'min s':>7}  {'max s':>7}  {'cpu s':>7}")
    for name, ts in times.items():
        print(
            f"{name:<{width}}  {med[name]:>9.3f}  {min(ts):>7.3f}  {max(ts):>7.3f}"
            f"  {med_cpu[name]:>7.3f}"
        )
    print()
    for name, value in ratios.items():
        print(f"{name:<20} {value:6.2f}x")
    verdict = "met" if result["target_met"] else "NOT met"
    print(f"target (cold check no slower than sha256sum): {verdict}")
    print("(wall-clock medians; 'cpu s' is the median user + system time of the process)")
    print()
    print(PAGE_CACHE_NOTE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
