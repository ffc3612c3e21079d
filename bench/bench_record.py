"""Map recording next to the plain suite, A/B interleaved: ``replay map`` / ``python -m pytest``.

For one repository and base commit, in one Python environment (a venv with pytest,
coverage.py, the project and patchlane's dependencies), each round runs, in turn:

- **plain**: ``python -m pytest -q -p no:cacheprovider`` in a clone checked out at the base
  (run once untimed first, so its bytecode caches are warm, as a user's are);
- **map SRC**: ``python -m patchlane replay map --base REV --force`` with
  ``PYTHONPATH=SRC`` (``src`` of a patchlane checkout; several ``--src`` compare versions),
  in a fresh dependency-map cache.

It prints, per row, the median wall seconds and the median CPU seconds (user + system of the
command and every process it waited for), and each map's ratio to plain on both. On a shared
machine the wall clock is noisy: the CPU ratio is the steadier figure. The issue's target:
recording <= 1.5x the plain suite (``bench_issue20.TARGET_RECORD``). Standard library only;
needs ``git``. ``bench_issue20`` measures recording once per trial project among its other
figures; this one repeats just that comparison, interleaved, for before/after work.

    python bench/bench_record.py --repo /tmp/prof-boltons/boltons/repo --base b/03 \\
        --python /tmp/patchlane-trial-cache/venvs/boltons/bin/python \\
        --src /work/main/src --src src --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TARGET_RECORD = 1.5


@dataclass(frozen=True)
class Timed:
    """One command's wall and CPU seconds (its children's included) and exit status."""

    wall: float
    cpu: float
    status: int


def timed(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> Timed:
    """Run ``argv``; return its ``Timed`` (CPU from the children's rusage delta)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):  # 1: a failing test in the plain suite is still a run
        tail = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()[-3:]
        print(f"bench_record: {argv[2:5]} exited {done.returncode}: {tail}", file=sys.stderr)
    return Timed(wall, cpu, done.returncode)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Return the parsed command line."""
    parser = argparse.ArgumentParser(prog="python bench/bench_record.py", description=__doc__)
    parser.add_argument("--repo", type=Path, required=True, help="the project's git repository")
    parser.add_argument("--base", required=True, help="the commit to record")
    parser.add_argument("--python", required=True, help="the environment's interpreter")
    parser.add_argument(
        "--src", action="append", type=Path, required=True,
        help="a patchlane src directory to time (repeatable)",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the rounds and print the table; return 0 (targets are reported, not enforced)."""
    args = parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PATCHLANE_DEP_MAP")}
    bindir = str(Path(args.python).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    rows: dict[str, list[Timed]] = {"plain": []}
    with tempfile.TemporaryDirectory(prefix="bench-record-") as tmp:
        clone = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", str(args.repo), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", args.base], check=True)
        plain = [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        timed(plain, clone, env)  # warm: bytecode caches, as a user's checkout has them
        for i in range(args.rounds):
            rows["plain"].append(timed(plain, clone, env))
            for src in args.src:
                cache = Path(tmp) / f"dc-{i}-{len(rows)}"
                rec = [args.python, "-m", "patchlane", "replay", "map", "--base", args.base,
                       "--force", "--dep-cache", str(cache), "-q"]  # fmt: skip
                one = timed(rec, clone, {**env, "PYTHONPATH": str(src.resolve())})
                rows.setdefault(f"map {src}", []).append(one)
            print(f"bench_record: round {i + 1} of {args.rounds} done", file=sys.stderr)
    plain_wall = statistics.median(t.wall for t in rows["plain"])
    plain_cpu = statistics.median(t.cpu for t in rows["plain"])
    result = {
        name: {
            "wall": round(statistics.median(t.wall for t in runs), 2),
            "cpu": round(statistics.median(t.cpu for t in runs), 2),
            "wall_ratio": round(statistics.median(t.wall for t in runs) / plain_wall, 2),
            "cpu_ratio": round(statistics.median(t.cpu for t in runs) / plain_cpu, 2),
            "failed": sum(t.status not in (0, 1) for t in runs),
        }
        for name, runs in rows.items()
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'row':<40} {'wall s':>7} {'cpu s':>7} {'wall/x':>7} {'cpu/x':>7}")
    for name, r in result.items():
        print(
            f"{name[-40:]:<40} {r['wall']:>7.2f} {r['cpu']:>7.2f} "
            f"{r['wall_ratio']:>6.2f}x {r['cpu_ratio']:>6.2f}x"
            + (f"  ({r['failed']} failed)" if r["failed"] else "")
        )
    print(f"target: map <= {TARGET_RECORD}x plain; load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
