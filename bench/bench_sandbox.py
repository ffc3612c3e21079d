"""Benchmark: what the kernel sandbox costs each child (docs/architecture.md §2).

Times, interleaved over ``--rounds`` rounds of ``--runs`` starts each, the same child started
three ways through ``patchlane.infra.process.run_child``, exactly as the lanes start
theirs:

- ``plain``: no confinement (what a child of patchlane's own code gets);
- ``fallback``: confined without bubblewrap (a network namespace from ``unshare`` where one
  can be made, the credential-free environment);
- ``bwrap``: confined in the kernel sandbox (read-only system, home and cache hidden, the
  tree and a scratch directory writable, own namespaces).

Two children: ``python -S -c pass`` (the floor: interpreter start-up) and a child that imports
pytest with the process's bytecode prefix (what a collection or run child pays before any
test). Reports the median milliseconds per start and the sandbox's cost over each. Standard
library and patchlane only: ``python bench/bench_sandbox.py [--runs 20] [--rounds 3] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

from patchlane.infra import process
from patchlane.infra.bytecode import process_pycache
from patchlane.infra.sandbox import Confinement, Isolation, isolation

CHILDREN = {
    "interpreter": [sys.executable, "-S", "-c", "pass"],
    "import pytest": [sys.executable, "-s", "-P", "-c", "import pytest"],
}


def _ways(found: Isolation) -> dict[str, Isolation | None]:
    fallback = Isolation(
        "netns" if found.netns_prefix else "none", "bench", None, found.netns_prefix
    )
    ways: dict[str, Isolation | None] = {"plain": None, "fallback": fallback}
    if found.sandboxed:
        ways["bwrap"] = found
    return ways


def _time_one(argv: list[str], layers: Isolation | None, tree: Path, scratch: Path) -> float:
    env = {"PATH": os.defpath, "LC_ALL": "C.UTF-8", "PYTHONPYCACHEPREFIX": process_pycache()}
    confinement = None if layers is None else Confinement(scratch, writable=(tree,))
    launch = process.Launch(
        argv, {}, token="bench", timeout_s=60, cwd=tree, env=env,  # noqa: S106
        confinement=confinement, isolation=layers,
    )  # fmt: skip
    run = process.run_child(launch)
    if run.returncode != 0:
        raise SystemExit(f"bench: the child failed ({run.returncode}): {run.stderr_tail[-300:]!r}")
    return run.seconds * 1000


def main() -> int:
    """Run the benchmark; print a table (or ``--json``). Returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    found = isolation()
    ways = _ways(found)
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="patchlane-bench-sandbox-") as tmp:
        tree, scratch = Path(tmp, "tree"), Path(tmp, "scratch")
        tree.mkdir()
        scratch.mkdir()
        for argv in CHILDREN.values():  # warm the prefix and the page cache
            for layers in ways.values():
                _time_one(argv, layers, tree, scratch)
        for _ in range(args.rounds):
            for name, argv in CHILDREN.items():
                for way, layers in ways.items():
                    for _ in range(args.runs):
                        ms = _time_one(argv, layers, tree, scratch)
                        times.setdefault((name, way), []).append(ms)
    medians = {f"{n} / {w}": statistics.median(v) for (n, w), v in times.items()}
    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "isolation": {"kind": found.kind, "why": found.why},
        "runs": args.runs * args.rounds,
        "median_ms": medians,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"isolation here: {found.describe()}; {args.runs * args.rounds} starts each")
    for name in CHILDREN:
        plain = medians[f"{name} / plain"]
        row = [f"{name:>14}: plain {plain:6.1f} ms"]
        for way in ("fallback", "bwrap"):
            if f"{name} / {way}" in medians:
                ms = medians[f"{name} / {way}"]
                row.append(f"{way} {ms:6.1f} ms (+{ms - plain:.1f})")
        print("  ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
