"""Run-child benchmark: what the replay's test process costs per test next to plain pytest.

Issue 31's target: the replay's run child within 10% of plain ``python -m pytest`` per test.
In a temporary directory it writes a suite of ``--tests`` trivial tests (``--per-file`` to a
file, a small package of code under test they import), and times, interleaved, ``--rounds``
times each:

- ``plain``: ``python -m pytest -q -p no:cacheprovider`` in the suite, as a user runs it;
- ``replay``: the replay's run of every test file (``lanes.replay.run.run_tests``: the
  sandboxed ``python -m pytest`` with patchlane's run child, its outcome stream folded), in
  a fresh copy of the suite each round.

Each row is a separate process (the replay's from a small driver), so the figures include
start-up; ``--tests 0`` style fixed costs are printed too (a run of one file of one test), so
that the per-test figure is ``(T(N) - T(1)) / (N - 1)`` for each. Wall and CPU (user + system
of the process and its children) are given; the CPU column is the steadier one on a shared
machine. Figures are reported, never enforced.

Usage::

    PYTHONPATH=src python3 bench/bench_runchild.py --tests 20000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.10  # replay / plain, per test

_DRIVER = r"""
import json, sys
from pathlib import Path
from patchlane.lanes.replay import run
tree = Path(sys.argv[1])
files = sorted(p.relative_to(tree).as_posix() for p in tree.glob("tests/test_*.py"))
got = run.run_tests(tree, files=files, hash_seed=1, timeout_s=3600)
bad = [n for n, r in got.results.items() if r.outcome != "passed"]
print(json.dumps({"n": len(got.results), "bad": len(bad), "problems": list(got.problems)}))
"""


def write_suite(root: Path, tests: int, per_file: int) -> None:
    """Write a project of ``tests`` trivial tests under ``root`` (a git repository)."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    files = max(1, (tests + per_file - 1) // per_file)
    left = tests
    for f in range(files):
        n = min(per_file, left)
        left -= n
        body = ["from pkg import add", ""]
        for t in range(n):
            body += [f"def test_{t}():", f"    assert add({t}, 1) == {t + 1}", ""]
        (root / "tests" / f"test_{f:04d}.py").write_text("\n".join(body))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "s"],
        check=True,
    )


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Run ``argv``; return (wall s, CPU s of it and its children, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(f"{argv[:4]} exited {done.returncode}")
    return wall, cpu, done.stdout


def main(argv: list[str] | None = None) -> int:
    """Print the table; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=20000)
    parser.add_argument("--per-file", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    results: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-runchild-") as tmp:
        base = Path(tmp)
        suites = {"big": args.tests, "one": 1}
        for name, n in suites.items():
            write_suite(base / name, n, args.per_file)
        driver = base / "driver.py"
        driver.write_text(_DRIVER)
        for _round in range(args.rounds):
            for name, n in suites.items():
                wall, cpu, _ = timed(
                    [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                    base / name,
                    env,
                )
                results.setdefault(f"plain/{name}", []).append((wall, cpu))
                copy = base / f"copy-{name}"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(base / name, copy, symlinks=True)
                wall, cpu, out = timed([args.python, str(driver), str(copy)], base, env)
                got = json.loads(out.strip().splitlines()[-1])
                if got["n"] != n or got["bad"] or got["problems"]:
                    raise SystemExit(f"replay run of {n} tests: {got}")
                results.setdefault(f"replay/{name}", []).append((wall, cpu))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in results.items()}  # fmt: skip
    n = args.tests
    per = {
        kind: tuple((med[f"{kind}/big"][i] - med[f"{kind}/one"][i]) / (n - 1) * 1e6 for i in (0, 1))
        for kind in ("plain", "replay")
    }
    ratio = (per["replay"][0] / per["plain"][0], per["replay"][1] / per["plain"][1])
    if args.json:
        print(json.dumps({"median": med, "per_test_us": per, "ratio": ratio, "tests": n}))
        return 0
    print(f"{n} trivial tests, {args.rounds} round(s), median (wall s / CPU s):")
    for key, (wall, cpu) in sorted(med.items()):
        print(f"  {key:14} {wall:7.2f} {cpu:7.2f}")
    print(f"per test (us, wall / CPU): plain {per['plain'][0]:.0f} / {per['plain'][1]:.0f}, "
          f"replay {per['replay'][0]:.0f} / {per['replay'][1]:.0f}")  # fmt: skip
    print(f"replay / plain per test: wall {ratio[0]:.2f}x, CPU {ratio[1]:.2f}x "
          f"(target <= {TARGET:.2f}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
