"""Bugs from an outside generator: Cosmic Ray's mutation operators, planted one per file.

Run with the interpreter of a venv that has ``cosmic-ray`` installed (``bench/day_one.py``
makes one in its cache and calls this script with it); it imports nothing of patchlane::

    VENV/bin/python bench/outside_mutants.py --root TREE --count N --seed S FILE...

``FILE`` paths are relative to ``TREE``. The files are shuffled with ``--seed``; in each, in
turn, Cosmic Ray's operators (shuffled too) are tried until one has a mutation site, and one
of its occurrences, chosen with the seed, is applied with ``cosmic_ray.mutating.mutate_code``
(Cosmic Ray's own code, unchanged). Prints a JSON list, at most ``N`` long, of
``{"path", "operator", "occurrence", "line", "text"}`` (``text``: the whole mutated file);
a mutant that does not compile, or changes nothing, is skipped. Exit 2 when Cosmic Ray is
not importable.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import sys
from pathlib import Path
from typing import Any


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    try:
        import cosmic_ray.plugins as plugins
        from cosmic_ray.ast import ast_nodes, get_ast
        from cosmic_ray.mutating import mutate_code
    except ImportError as e:
        print(f"cosmic-ray is not importable here ({sys.executable}): {e}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    names = sorted(plugins.operator_names())
    files = sorted(args.files)
    rng.shuffle(files)
    out: list[dict[str, Any]] = []
    for rel in files:
        if len(out) >= args.count:
            break
        code = (args.root / rel).read_text(encoding="utf-8")
        nodes = list(ast_nodes(get_ast(code)))
        order = names[:]
        rng.shuffle(order)
        for name in order:
            cls = plugins.get_operator(name)
            if cls.arguments():  # operators that need arguments of the user's: not ours to pick
                continue
            operator = cls()
            sites = sum(len(list(operator.mutation_positions(n))) for n in nodes)
            if not sites:
                continue
            occurrence = rng.randrange(sites)
            mutated = mutate_code(code, operator, occurrence)
            if not mutated or mutated == code:
                continue
            try:
                compile(mutated, rel, "exec")
            except SyntaxError:
                continue
            line = next(
                (
                    i
                    for i, (a, b) in enumerate(
                        zip(code.splitlines(), mutated.splitlines(), strict=False), 1
                    )
                    if a != b
                ),
                0,
            )
            diff = difflib.unified_diff(code.splitlines(), mutated.splitlines(), lineterm="", n=0)
            changed = [d for d in diff if d[:1] in "+-" and d[:3] not in ("+++", "---")]
            item = {"path": rel, "operator": name, "occurrence": occurrence, "line": line}
            out.append(item | {"change": " / ".join(changed)[:160], "text": mutated})
            break
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
