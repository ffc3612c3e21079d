"""The house issues' before/after table (22, 33), read off the source with ``ast`` (no import
of patchlane).

Run from the repository root: ``python3 bench/house_plan.py [--json]``. It prints the source
lines and modules of ``src/patchlane``, the modules ``patchlane gate`` reaches (the import
closure of ``patchlane.main`` and ``patchlane.commands.gate``, imports inside functions
included), the package crossings among them (a lane importing the gate, the command line or
another lane), ``dict[str, Any]`` spellings, the longest functions and those with more than
five parameters, and ``patchlane --help`` start-up (best of five, wall clock). Issue 33
added: modules over 600 lines, import cycles among the package's modules (any import,
one inside a function included), imports inside functions (``--inside`` lists them), the
functions of ``lanes/replay`` with more than five parameters, and the modules of ``gate/``
that use a thread.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = SRC / "patchlane"
EXAMPLE = PACKAGE / "demo" / "example"


CHILD_ENTRIES = [
    "patchlane.child.properties",
    "patchlane.child.oracle_audit.audit",
    "patchlane.child.replay_collect",
    "patchlane.child.replay_run",
    "patchlane.child.recorder",
    "patchlane.pytest_plugin",
]
OLD_CHILD_ENTRIES = [
    "patchlane.lanes.property.child",
    "patchlane.lanes.property.oracle",
    "patchlane.lanes.replay.collect_child",
    "patchlane.lanes.replay.run_child",
    "patchlane.lanes.replay.recorder",
    "patchlane.pytest_plugin",
]


def modules() -> dict[str, Path]:
    """Every module of the package (the bundled example project left out), by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if EXAMPLE in path.parents:
            continue
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its body."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    return _targets(name, path, nodes, known)


def _targets(
    name: str, path: Path, nodes: list[ast.Import | ast.ImportFrom], known: dict[str, Path]
) -> set[str]:
    """The package's modules that the import statements ``nodes`` of ``name`` name."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in nodes:
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted.
    A submodule importing its own package's ``__init__`` is not counted: the package is
    already being imported."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def edges(v: str) -> list[str]:
        return [w for w in graph.get(v, ()) if not v.startswith(w + ".")]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def inside_imports(path: Path) -> list[tuple[int, str]]:
    """(line, function) of every import statement inside a function of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    out.append((inner.lineno, node.name))
    return sorted(set(out))


def uses_thread(path: Path) -> bool:
    text = path.read_text(encoding="utf-8")
    return any(
        w in text for w in ("threading", "ThreadPoolExecutor", "concurrent.futures", "_thread")
    )


def closure(start: list[str], graph: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        # A module's import runs its package's __init__ first.
        parent = name.rpartition(".")[0]
        todo += [*graph.get(name, ()), *([parent] if parent else [])]
    return seen


def area(name: str) -> str:
    """The part of the tree a module belongs to: a lane, the gate, the command line, else
    the top-level module or folder."""
    parts = name.split(".")
    if parts[1:2] == ["lanes"] and len(parts) > 2:
        return "lanes." + parts[2]
    return parts[1] if len(parts) > 1 else "patchlane"


def functions(path: Path) -> list[tuple[int, int, str]]:
    """(lines, parameters, name) of every function in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # A method's first parameter (self, cls) is not counted; a function's ``cls`` (a
    # classification, say) is.
    methods = {
        id(item)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
        and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in item.decorator_list)
    }
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
            count = len(params) - (id(node) in methods and bool(params))
            count += bool(a.vararg) + bool(a.kwarg)
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            out.append((length, count, node.name))
    return out


def help_startup() -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "patchlane", "--help"], capture_output=True, check=True
        )
        best = min(best, time.perf_counter() - start)
    return best


def table() -> dict[str, object]:
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    reached = closure(["patchlane.main", "patchlane.commands.gate"], graph)
    lines = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in known.items()
    }
    crossings = sorted(
        f"{a} -> {b}"
        for a in reached
        for b in graph[a]
        if area(a).startswith("lanes.")
        and area(b) != area(a)
        and (area(b).startswith("lanes.") or area(b) in ("gate", "commands"))
    )
    # What runs inside a child: the entry modules' closure (at fb8c374 they were
    # lanes.property.child and .oracle, lanes.replay.run_child, .collect_child and .recorder).
    entries = [e for e in CHILD_ENTRIES if e in known] or [
        e for e in OLD_CHILD_ENTRIES if e in known
    ]
    in_child = closure(entries, graph)
    funcs = [(n, p, f"{name}.{f}") for name, path in known.items() for n, p, f in functions(path)]
    any_dicts = sum(
        path.read_text(encoding="utf-8").count("dict[str, Any]") for path in known.values()
    )
    return {
        "source lines": sum(lines.values()),
        "modules": len(known),
        "modules the gate reaches": len(reached),
        "lines the gate reaches": sum(lines[n] for n in reached),
        "lane imports of the gate, the command line or another lane": len(crossings),
        "dict[str, Any] in src": any_dicts,
        "modules a child interpreter imports (static closure)": len(in_child),
        "of them outside child/": len([m for m in in_child if not m.startswith("patchlane.child")]),
        "functions over 60 lines": sum(1 for n, _, _ in funcs if n > 60),
        "functions with more than five parameters": sum(1 for _, p, _ in funcs if p > 5),
        "longest functions": [f"{f} ({n})" for n, _, f in sorted(funcs, reverse=True)[:5]],
        "longest modules": [
            f"{m} ({n})" for m, n in sorted(lines.items(), key=lambda kv: -kv[1])[:5]
        ],
        "modules over 600 lines": [
            f"{m} ({n})" for m, n in sorted(lines.items(), key=lambda kv: -kv[1]) if n > 600
        ],
        # Any import counts: a cycle broken only by an import inside a function is still
        # two modules that need each other.
        "import cycles": cycles(graph),
        "imports inside functions": sum(len(inside_imports(p)) for p in known.values()),
        "lanes/replay functions with more than five parameters": sum(
            1
            for name, path in known.items()
            if name.startswith("patchlane.lanes.replay")
            for _, p, _ in functions(path)
            if p > 5
        ),
        "modules the gate reaches that use a thread": sorted(
            n for n in reached if uses_thread(known[n])
        ),
        "gate/ modules that use a thread": sorted(
            n for n, p in known.items() if n.startswith("patchlane.gate") and uses_thread(p)
        ),
        "patchlane --help start-up, best of 5 (s)": round(help_startup(), 3),
        "crossings": crossings,
    }


def main() -> int:
    if "--inside" in sys.argv:
        known = modules()
        for path in known.values():
            for line, func in inside_imports(path):
                print(f"{path.relative_to(ROOT)}:{line}: in {func}")
        return 0
    result = table()
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
        return 0
    for key, value in result.items():
        if key == "crossings":
            continue
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
