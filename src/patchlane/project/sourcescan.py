"""One walk over a parsed Python source: everything selection reads from its syntax tree.

The import graph wants a file's imports, its literal module references (string constants,
the word after a ``"-m"``) and whether it starts processes; the static rules want the
string constants a test file or module could name a data file by. Each used to walk the
tree itself, and the data-file rule parsed test files a second time. ``scan`` walks once,
and ``scan_source`` keeps the result per content for the life of the process, so a file
the graph already parsed is not parsed again (selection's hot path: a few hundred files
per gate).
"""

from __future__ import annotations

import ast
import hashlib
import itertools
from dataclasses import dataclass

from patchlane.inputs.untrusted import parse_python
from patchlane.project.procstart import starts_process_here

# Calls whose first argument, when a string literal, names a module they import.
_IMPORT_CALLS = frozenset({"__import__", "import_module", "importorskip"})
# What a file "imports" when it imports a computed name: every module of the project.
ANY_MODULE = "*"
_MEMO_LIMIT = 8192


@dataclass(frozen=True)
class ImportFrom:
    """One ``from … import …``: its level (0 = absolute), module and imported names."""

    level: int
    module: str | None
    names: tuple[str, ...]


@dataclass(frozen=True)
class SourceScan:
    """What one walk of a source found (``scan``); nothing here depends on the file's path.

    ``imports``: names of plain ``import`` statements; ``from_imports``: the ``from``
    imports, resolved against a file's own names later; ``literal_imports``: modules named
    by ``__import__("x")``, ``import_module``, ``importorskip`` or ``pytest_plugins``
    (``ANY_MODULE`` for a computed name); ``strings``: every string constant, f-string parts
    and docstrings included; ``mains``: strings that follow a ``"-m"`` in a list, tuple or
    call; ``starts_processes``: ``procstart``'s answer.
    """

    imports: tuple[str, ...]
    from_imports: tuple[ImportFrom, ...]
    literal_imports: tuple[str, ...]
    strings: tuple[str, ...]
    mains: frozenset[str]
    starts_processes: bool


def scan(tree: ast.AST) -> SourceScan:
    """Return what one walk of ``tree`` finds (see ``SourceScan``). Raises nothing: the walk
    is iterative, so a deep tree that parsed is no danger."""
    imports: list[str] = []
    from_imports: list[ImportFrom] = []
    literal: list[str] = []
    strings: list[str] = []
    mains: set[str] = set()
    starts = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                strings.append(node.value)
            continue
        starts = starts or starts_process_here(node)
        if isinstance(node, ast.Import):
            imports.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            from_imports.append(ImportFrom(node.level, node.module, names))
        elif isinstance(node, ast.Call | ast.Assign | ast.AnnAssign):
            literal.extend(literal_import(node))
        if isinstance(node, ast.List | ast.Tuple | ast.Call):
            mains.update(_after_dash_m(node.args if isinstance(node, ast.Call) else node.elts))
    return SourceScan(
        tuple(imports), tuple(from_imports), tuple(literal), tuple(strings), frozenset(mains),
        starts,
    )  # fmt: skip


_MEMO: dict[bytes, SourceScan | None] = {}


def scan_source(data: bytes | str, label: str) -> SourceScan | None:
    """Return the scan of a Python source, or ``None`` when ``parse_python`` refuses it
    (syntax, NUL bytes, nesting, size). Kept per content (SHA-256) for the process's life.
    Raises nothing."""
    # A first byte that says which: bytes honour an encoding cookie, a str does not.
    raw = b"b" + data if isinstance(data, bytes) else b"s" + data.encode("utf-8", "surrogatepass")
    key = hashlib.sha256(raw).digest()
    if key in _MEMO:
        return _MEMO[key]
    try:
        found: SourceScan | None = scan(parse_python(data, label))
    except SyntaxError:
        found = None
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    _MEMO[key] = found
    return found


def _after_dash_m(items: list[ast.expr]) -> set[str]:
    return {
        item.value
        for flag, item in itertools.pairwise(items)
        if isinstance(flag, ast.Constant)
        and flag.value == "-m"
        and isinstance(item, ast.Constant)
        and isinstance(item.value, str)
    }


def literal_import(node: ast.AST) -> list[str]:
    """Return the module names a node imports by a literal string: ``__import__("x")``,
    ``importlib.import_module("x")`` (and ``import_module(".x", "pkg")``),
    ``pytest.importorskip("x")`` (however the callee is reached), and
    ``pytest_plugins = ["x", …]``. A computed name gives ``ANY_MODULE``: the file may import
    any module of the project (a lazy ``__getattr__``, a plugin loader)."""
    names: list[str] = []
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        callee = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if callee not in _IMPORT_CALLS:
            return []
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            return [ANY_MODULE]
        name = first.value
        if name.startswith(".") and callee == "import_module":
            package = node.args[1] if len(node.args) > 1 else None
            for kw in node.keywords:
                if kw.arg == "package":
                    package = kw.value
            if not (isinstance(package, ast.Constant) and isinstance(package.value, str)):
                return [ANY_MODULE]
            name = resolve_relative(name, package.value)
        names.append(name)
    elif isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in targets):
            value = node.value
            items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
            names.extend(
                i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)
            )
    return [n for n in names if n and not n.startswith(".") and n.isprintable()]


def resolve_relative(name: str, package: str) -> str:
    """``importlib.import_module(".x", "pkg")``'s absolute name (``""`` past the top)."""
    level = len(name) - len(name.lstrip("."))
    parts = package.split(".")
    if level - 1 > len(parts) - 1:
        return ""
    base = ".".join(parts[: len(parts) - (level - 1)])
    rest = name[level:]
    return f"{base}.{rest}" if rest else base
