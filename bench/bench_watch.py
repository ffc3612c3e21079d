"""What the judging-machinery watch and the state watch add per test (issue 29).

Runs one real project's whole suite three ways, ``--repeat`` times each, one at a time, and
prints the median wall times and the cost per test:

- ``plain``: ``python -m pytest -q -p no:cacheprovider TESTS`` in the tree;
- ``before``: patchlane's replay run child (``run.run_tests`` on every test file) with the
  code of ``--before`` (a ``src`` directory of patchlane without the watch, e.g. main's);
- ``watched``: the same with this checkout's code (the tripwire's judging machinery checked
  after every test, and ``child.leftover``'s state watch).

It also prints what the watched run saw: tamper phrases (an honest suite must have none) and
what the suite left behind (``TestRun.left``), which decides whether a gate would compare with
the base. Usage::

    python3 bench/bench_watch.py TREE --tests tests --before /work/main/src [--path src] [--repeat 3]

Standard library only (and patchlane, imported in the children). Exit 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

_DRIVER = """
import json, sys, time
from pathlib import Path
from patchlane.lanes.replay.run import run_tests, FAILED
tree, files = Path(sys.argv[1]), sys.argv[2:]
t = time.perf_counter()
run = run_tests(tree, files=files, hash_seed=1, timeout_s=1800)
wall = time.perf_counter() - t
print(json.dumps({
    "wall": wall, "tests": len(run.results),
    "failed": sorted(n for n, r in run.results.items() if r.outcome == FAILED)[:5],
    "problems": list(run.problems)[:3], "left": dict(list(getattr(run, "left", {}).items())[:10]),
}))
"""


def _files(tree: Path, tests: str) -> list[str]:
    root = tree / tests
    return sorted(p.relative_to(tree).as_posix() for p in root.rglob("test_*.py"))


def _child(tree: Path, files: list[str], src: Path, path: list[str]) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.fspath(src), *path])}
    out = subprocess.run(
        [sys.executable, "-c", _DRIVER, os.fspath(tree), *files],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    data: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def _plain(tree: Path, files: list[str], path: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
        cwd=tree, capture_output=True, check=False, env=env,
    )  # fmt: skip
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Run the bench; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--tests", default="tests")
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--path", action="append", default=[], help="a tree dir for PYTHONPATH")
    args = parser.parse_args(argv)
    path = [os.fspath((args.tree / p).resolve()) for p in args.path]
    files = _files(args.tree, args.tests)
    if not files or not (args.before / "patchlane").is_dir():
        print("bench_watch: no test files, or --before is not a patchlane src", file=sys.stderr)
        return 2
    walls: dict[str, list[float]] = {"plain": [], "before": [], "watched": []}
    last: dict[str, dict[str, object]] = {}
    for _ in range(args.repeat):
        walls["plain"].append(_plain(args.tree, files, path))
        for name, src in (("before", args.before), ("watched", SRC)):
            last[name] = _child(args.tree, files, src, path)
            walls[name].append(float(str(last[name]["wall"])))
    n = int(str(last["watched"]["tests"])) or 1
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(f"{args.tree.name}: {n} tests, {len(files)} files, median of {args.repeat}")
    for name in ("plain", "before", "watched"):
        print(f"  {name:8s} {med[name]:7.2f} s")
    extra = med["watched"] - med["before"]
    print(f"  watch adds {extra:+.2f} s = {1000 * extra / n:+.2f} ms/test "
          f"({100 * extra / med['before']:+.1f}% of the run child)")  # fmt: skip
    for name in ("before", "watched"):
        print(f"  {name}: failed {last[name]['failed']} problems {last[name]['problems']}")
    print(f"  left behind (watched): {last['watched']['left']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
