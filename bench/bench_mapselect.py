"""Selection with a dependency map over a large suite: read the map, decide, in well under 1 s.

Builds a synthetic map shaped like a big project's (``--tests`` tests over ``--files``
modules; each test runs a few functions of a few modules, some share a session fixture,
some start a process), writes it as ``replay map`` would, and times, over ``--rounds``:

- ``read``: ``depmap.read`` (its MAC, the file's SHA-256 against its name, strict JSON, every field
  checked);
- ``decide``: ``mapselect.decide`` for a patch that changes one function in each of
  ``--changed`` modules (the lines at the base and head are made to match the map);
- ``total``: both, as ``replay select`` pays them (collection excluded: that is pytest's).

Standard library only besides patchlane. ``--json`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from patchlane.formats import depmap
from patchlane.infra.cachekey import CacheKey
from patchlane.lanes.replay import mapselect

FUNCS_PER_FILE = 20
LINES_PER_FUNC = 8


def module_source(functions: int = FUNCS_PER_FILE) -> str:
    """A module of ``functions`` functions of ``LINES_PER_FUNC`` body lines each."""
    parts = []
    for f in range(functions):
        body = "".join(f"    x = x + {i}\n" for i in range(LINES_PER_FUNC - 1))
        parts.append(f"def f{f}(x):\n{body}    return x\n\n\n")
    return "".join(parts)


def body_lines(function: int) -> range:
    """The body lines of function ``function`` in ``module_source``."""
    first = function * (LINES_PER_FUNC + 3) + 2
    return range(first, first + LINES_PER_FUNC)


def synthetic_map(tests: int, files: int, seed: int) -> depmap.DependencyMap:
    """A map of ``tests`` tests over ``files`` modules (see the module docstring)."""
    rng = random.Random(seed)
    nodeids = tuple(f"tests/test_m{i // 50}.py::test_{i}" for i in range(tests))
    fixtures = ("db", "client")
    lines: dict[str, dict[int, set[int]]] = {}
    for t in range(tests):
        for _ in range(rng.randint(2, 6)):  # functions this test runs
            path = f"src/pkg/mod{rng.randrange(files)}.py"
            by_line = lines.setdefault(path, {})
            for n in body_lines(rng.randrange(FUNCS_PER_FILE)):
                by_line.setdefault(n, set()).add(t)
    fixture_context = len(nodeids)  # "db": its setup ran mod0.f0
    for n in body_lines(0):
        lines.setdefault("src/pkg/mod0.py", {}).setdefault(n, set()).add(fixture_context)
    uses = tuple((fixture_context,) if t % 10 == 0 else () for t in range(tests))
    return depmap.DependencyMap(
        binding=depmap.Binding("a" * 40, "3.11", "9", "7"),
        tests=nodeids,
        fixtures=fixtures,
        lines={p: {n: tuple(sorted(c)) for n, c in by.items()} for p, by in lines.items()},
        import_lines={p: frozenset({1}) for p in lines},
        opened={"src/pkg/data.json": tuple(range(0, tests, 7))},
        opened_at_import=frozenset(),
        listed={},
        listed_at_import=frozenset({""}),
        imported={},
        uses=uses,
        blind=tuple(range(0, tests, 97)),
        whole_files=(),
    )


def changes(count: int) -> list[mapselect.Change]:
    """One function changed in each of ``count`` modules."""
    base = module_source().encode()
    head = base.replace(b"    x = x + 3\n", b"    x = x + 33\n", 1)  # inside f0
    return [mapselect.Change(f"src/pkg/mod{i}.py", "M", base, head) for i in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--changed", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    built = synthetic_map(args.tests, args.files, args.seed)
    with tempfile.TemporaryDirectory(prefix="patchlane-bench-map-") as tmp:
        key = CacheKey(os.urandom(32))
        path = built.write(Path(tmp), key)
        size = path.stat().st_size
        figures: dict[str, list[float]] = {"read": [], "decide": [], "total": []}
        selected = 0
        for _ in range(args.rounds):
            start = time.perf_counter()
            loaded = depmap.read(path, key)
            read_s = time.perf_counter() - start
            decided = mapselect.decide(
                loaded,
                changes(args.changed),
                is_test_or_harness=lambda p: p.startswith("tests/"),
                module_names=lambda p: (p[4:-3].replace("/", "."),),
                static_importers=lambda p: set(),
            )
            decide_s = time.perf_counter() - start - read_s
            selected = len({n for needs in decided.needs.values() for n in needs})
            figures["read"].append(read_s)
            figures["decide"].append(decide_s)
            figures["total"].append(read_s + decide_s)
    result = {
        "tests": args.tests,
        "files": args.files,
        "map_bytes": size,
        "selected": selected,
        **{f"{k}_median_s": round(statistics.median(v), 4) for k, v in figures.items()},
        **{f"{k}_max_s": round(max(v), 4) for k, v in figures.items()},
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"map of {args.tests} tests over {args.files} modules: {size / 1e6:.1f} MB")
        for k in ("read", "decide", "total"):
            print(
                f"  {k:<7} median {result[f'{k}_median_s']:.3f} s, max {result[f'{k}_max_s']:.3f} s"
            )
        print(f"  selected {selected} of {args.tests} tests; target: total <= 1 s")
    return 0 if result["total_median_s"] <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
