"""Triage benchmark: N candidates gated by one ``patchlane triage`` against N single gates.

Issue 12's measure: N candidates cost <= base work + N x per-candidate work. On the bundled
example (``patchlane demo``'s project, committed as ``main``) it makes N candidate diffs,
repeated variations of three agent patches (a refactor that keeps behaviour, a patch that
breaks a property, a silent fixture edit), each with its own comment line so that no two
candidates are the same bytes, and measures, each run in a fresh patchlane cache
(``PATCHLANE_CACHE_DIR``) and with ``--replay local --dep-map auto``:

- the base's work: ``patchlane replay map --base main`` (the dependency map, recorded once
  per base; the base's whole suite under coverage.py);
- one single gate, cold (``patchlane gate --patch``, fresh cache: it records the map too) and
  warm (the map already cached: the per-candidate work), per kind of candidate;
- ``patchlane triage`` over N candidates for each N of ``--sizes`` (default 1, 8, 32),
  sequential (``-j 1``) and with ``-j 2``, fresh cache each time.

It prints, per N and jobs: wall time, the bound ``base + N x warm gate``, whether triage
stays within it, and ratio = triage time / (N x cold single-gate time). Standard library
only; needs ``git`` and an installed patchlane. Exit 1 when a triage run exceeds its bound
or a run fails, else 0. Run: ``python3 bench/bench_triage.py [--sizes 1,8,32] [--jobs 1,2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SEED = "20260924"
COMMON = ("--seed", SEED, "--cases", "200", "--today", "2026-09-24", "--replay", "local")
KINDS = ("refactor-billing", "refund-over-charge", "silent-fixture-edit")


def patchlane(*args: str | Path, cache: Path, check: bool = True) -> tuple[float, int]:
    """Run ``python -m patchlane ARGS`` with ``cache`` as its cache dir; return (seconds, rc)."""
    env = {**os.environ, "PATCHLANE_CACHE_DIR": str(cache), "PATCHLANE_DEP_MAP": "auto"}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "patchlane", *map(str, args)],
        env=env,
        capture_output=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    if check and proc.returncode not in (0, 1, 3):
        raise SystemExit(f"patchlane {' '.join(map(str, args))}: {proc.stderr.decode()[-800:]}")
    return seconds, proc.returncode


def make_example(root: Path) -> Path:
    """Build the demo's repository (main and one branch per scenario) in ``root``."""
    patchlane("demo", "--keep", root, cache=root / "demo-cache", check=False)
    return root / "repo"


def make_candidates(repo: Path, folder: Path, n: int) -> list[Path]:
    """Write ``n`` diffs into ``folder``: the three kinds in turn, each with a comment line
    ``# candidate i`` added at the end of src/quota/__init__.py."""
    folder.mkdir(parents=True)
    out = []
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        diff = subprocess.run(
            ["git", "-C", str(repo), "diff", "--binary", f"main..{kind}"],
            capture_output=True,
            check=True,
        ).stdout
        quota = (repo / "src/quota/__init__.py").read_bytes()
        lines = quota.count(b"\n")
        extra = (
            b"diff --git a/src/quota/__init__.py b/src/quota/__init__.py\n"
            b"--- a/src/quota/__init__.py\n+++ b/src/quota/__init__.py\n"
            + f"@@ -{lines},1 +{lines},2 @@\n".encode()
            + b" "
            + quota.splitlines(keepends=True)[-1]
            + f"+# candidate {i}\n".encode()
        )
        path = folder / f"c{i:02d}-{kind}.diff"
        path.write_bytes(diff + extra)
        out.append(path)
    return out


def single_gates(repo: Path, work: Path, diffs: list[Path]) -> tuple[float, float, float]:
    """Return (base work, cold single gate, warm single gate) in seconds, medians over the
    first candidate of each kind."""
    base, cold, warm = [], [], []
    for i, diff in enumerate(diffs[: len(KINDS)]):
        cache = work / f"single-{i}"
        base.append(
            patchlane(
                "--repo",
                repo,
                "replay",
                "map",
                "--base",
                "main",
                "--seed",
                SEED,
                "--dep-cache",
                cache / "maps-only",
                cache=cache,
            )[0]
        )
        fresh = work / f"cold-{i}"
        gate = ("--repo", repo, "gate", "--base", "main", "--patch", diff, *COMMON)
        cold.append(patchlane(*gate, "--out-dir", work / f"ev-cold-{i}", cache=fresh)[0])
        warm.append(patchlane(*gate, "--out-dir", work / f"ev-warm-{i}", cache=fresh)[0])
    return statistics.median(base), statistics.median(cold), statistics.median(warm)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,8,32", help="numbers of candidates")
    parser.add_argument("--jobs", default="1,2", help="values of -j")
    parser.add_argument("--keep", type=Path, help="work here instead of a temporary directory")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    jobs = [int(j) for j in args.jobs.split(",")]
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-triage-"))
    repo = make_example(work / "demo")
    diffs = make_candidates(repo, work / "candidates", max(sizes))
    base, cold, warm = single_gates(repo, work, diffs)
    print(
        f"cpus {os.cpu_count()}; base work (replay map) {base:.2f} s; single gate cold "
        f"{cold:.2f} s, warm {warm:.2f} s (medians over {len(KINDS)} kinds)"
    )
    print(f"{'N':>3} {'-j':>3} {'triage s':>9} {'bound s':>8} {'within':>6} {'ratio':>6}  verdicts")
    failed = False
    for n in sizes:
        for j in jobs:
            folder = work / f"set-{n}-{j}"
            folder.mkdir()
            for d in diffs[:n]:
                (folder / d.name).symlink_to(d)
            out = work / f"triage-{n}-{j}"
            seconds, _ = patchlane(
                "--repo",
                repo,
                "triage",
                "--base",
                "main",
                folder,
                *COMMON,
                "-j",
                str(j),
                "--out-dir",
                out,
                cache=work / f"cache-{n}-{j}",
            )
            rows = [json.loads(x) for x in (out / "triage.jsonl").read_text().splitlines()]
            counts: dict[str, int] = {}
            for r in rows:
                counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
            bound = base + n * warm
            within = seconds <= bound
            failed |= not within or len(rows) != n
            shown = ", ".join(f"{v} {c}" for v, c in sorted(counts.items()))
            print(
                f"{n:>3} {j:>3} {seconds:>9.2f} {bound:>8.2f} {'yes' if within else 'NO':>6} "
                f"{seconds / (n * cold):>6.2f}  {shown}"
            )
    print(f"work: {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
