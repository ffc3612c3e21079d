"""Find property modules and their ``prop_*`` names without running anything.

The parent process never imports a property module: the code it would import with it is
the patch's. It parses each module version's source with ``ast`` instead, so that the list
of properties a child must report on is fixed before any patched code runs (code under
test could delete a property at import time, or exit before reporting it).
"""

from __future__ import annotations

import ast
import importlib.machinery
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.inputs.untrusted import parse_python
from patchlane.project.config import PropertyLane

PREFIX = "prop_"


@dataclass(frozen=True)
class ModuleVersion:
    """One version (base or head) of a property module, as found on disk.

    ``names`` are its properties in source order; ``error`` says why the source could not
    be read or parsed (then ``names`` is empty); ``uses_hypothesis`` asks the child to
    import Hypothesis from patchlane's own environment before the repository is on the path.
    """

    module: str
    source: str  # "base" | "head"
    file: Path
    names: tuple[str, ...]
    uses_hypothesis: bool
    error: str | None
    # Where ``error`` is: the repository path of the file and the line, when known.
    error_file: str | None = None
    error_line: int | None = None


def search_roots(root: Path, lane: PropertyLane) -> tuple[Path, ...]:
    """Return the import roots of a tree, in ``sys.path`` order: the tree's root, ``src/``
    (when present) and the map's ``pythonpath`` entries (when present)."""
    roots = [root]
    for rel in ("src", *lane.pythonpath):
        candidate = root.joinpath(*rel.rstrip("/").split("/"))
        if candidate.is_dir() and candidate not in roots:
            roots.append(candidate)
    return tuple(roots)


def find_module_file(module: str, roots: Sequence[Path]) -> Path | None:
    """Return the file ``import module`` would load with ``roots`` as ``sys.path``.

    Follows Python's path finder for source files: in each directory searched, a regular
    package (``name/__init__.py``) wins over a module (``name.py``), which wins over a
    namespace directory; a namespace portion is remembered and the search goes on (a later
    regular package or module still wins). A regular package's submodules are looked up
    inside it only, a namespace package's in all its portions. Returns ``None`` when
    nothing matches (or the name is a namespace package, which has no file).
    """
    search: Sequence[Path] = roots
    parts = module.split(".")
    for i, part in enumerate(parts):
        found = _find(part, search)
        last = i == len(parts) - 1
        if found is None:
            return None
        kind, where = found
        if kind == "module":
            return where[0] if last else None
        if kind == "package":
            if last:
                return where[0] / "__init__.py"
            search = where
        else:  # namespace
            if last:
                return None
            search = where
    return None  # pragma: no cover - the loop returns on the last part


def top_level_places(module: str, roots: Sequence[Path]) -> tuple[Path, ...]:
    """Return where ``module``'s top-level package (or module) resolves with ``roots`` as
    ``sys.path``, by the same rules as ``find_module_file``: a regular package's directory,
    a module's file, or every portion of a namespace package (its submodules may come from
    any of them). Empty when nothing of that name is found in ``roots``."""
    found = _find(module.split(".")[0], roots)
    return () if found is None else found[1]


def _find(name: str, directories: Sequence[Path]) -> tuple[str, tuple[Path, ...]] | None:
    namespace: list[Path] = []
    for directory in directories:
        package = directory / name
        if (package / "__init__.py").is_file():
            return "package", (package,)
        if (directory / f"{name}.py").is_file():
            return "module", (directory / f"{name}.py",)
        if package.is_dir():
            namespace.append(package)
    return ("namespace", tuple(namespace)) if namespace else None


def provides(name: str, roots: Sequence[Path]) -> bool:
    """Return whether a tree holds a top-level module or package ``name`` in one of its
    import ``roots``: a directory (regular or namespace package) or a file ``name`` plus
    any suffix the import system loads (``.py``, ``.pyc``, extension modules)."""
    suffixes = importlib.machinery.all_suffixes()
    return any(
        (root / name).is_dir() or any((root / f"{name}{s}").is_file() for s in suffixes)
        for root in roots
    )


def property_names(source: str, filename: str) -> tuple[str, ...]:
    """Return the ``prop_*`` names a module's source defines at top level, in source order.

    Top level includes ``def``/``async def``, plain and annotated assignments
    (``prop_y = check(gen)(impl)``) and the bodies of top-level ``if``/``try``/``with``
    blocks (a property guarded by a version check is still a property). Raises
    ``SyntaxError`` when the source cannot be parsed, whatever the reason: invalid syntax,
    NUL bytes, nesting too deep, too large (``untrusted.parse_python``).
    """
    tree = parse_python(source, filename)
    names: dict[str, None] = {}
    for node in top_level_statements(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found = [node.name]
        elif isinstance(node, ast.Assign):
            found = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found = [node.target.id]
        else:
            found = []
        for name in found:
            if name.startswith(PREFIX):
                names.setdefault(name)
    return tuple(names)


def top_level_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Yield the statements of ``body`` and of its ``if``/``try``/``with`` blocks, each
    block right after the statement that holds it (pre-order)."""
    # An explicit stack, not recursion: a patch's chain of two thousand ``elif``s parses
    # (ast nests each in the one before) and would overflow a recursive walk.
    stack: list[Iterator[ast.stmt]] = [iter(body)]
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            continue
        yield node
        blocks: list[list[ast.stmt]] = []
        if isinstance(node, ast.If):
            blocks = [node.body, node.orelse]
        elif isinstance(node, ast.Try | ast.TryStar):
            blocks = [node.body, node.orelse, node.finalbody]
            blocks.extend(handler.body for handler in node.handlers)
        elif isinstance(node, ast.With):
            blocks = [node.body]
        if blocks:
            stack.append(itertools.chain.from_iterable(blocks))


def read_version(module: str, source: str, file: Path, label: str) -> ModuleVersion:
    """Parse one module version found at ``file``; ``label`` names it in messages (a
    repository-relative path). Returns the ``ModuleVersion``. Never raises: an unreadable
    or unparsable file (not UTF-8, invalid syntax, NUL bytes, nested too deeply, too
    large) comes back with ``error`` set, which the lane counts as a failed property."""
    try:
        text = file.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        error = f"{label}: cannot read: {e}"
        return ModuleVersion(module, source, file, (), False, error, label)
    try:
        names = property_names(text, label)
    except SyntaxError as e:
        where = f"{label}:{e.lineno}" if e.lineno else label
        return ModuleVersion(module, source, file, (), False, f"{where}: {e.msg}", label, e.lineno)
    return ModuleVersion(module, source, file, names, "hypothesis" in text, None)


def overlapping_prefixes(lane: PropertyLane, prefixes: Sequence[str]) -> list[str]:
    """Return the property-package prefixes that also hold code under test (lane paths).

    Base oracles are run with the base's property packages first on ``sys.path``; a package
    that also holds the code under test would then test the base's code, not the patch's.
    ``""`` (the whole tree) overlaps every path.
    """
    out = []
    for prefix in prefixes:
        a = prefix.rstrip("/")
        for path in lane.paths:
            b = path.rstrip("/")
            if not a or a == b or a.startswith(b + "/") or b.startswith(a + "/"):
                out.append(prefix)
                break
    return out


def module_paths(lane: PropertyLane, module: str) -> frozenset[str]:
    """Return every repository path that can hold ``module`` or a package on its way,
    under the repository root, ``src/`` and each ``pythonpath`` entry: ``a``, ``a.py`` and
    ``a/__init__.py`` for each prefix ``a`` of the dotted name (``checks``, then
    ``checks/props``...)."""
    parts = module.split(".")
    roots = ("", "src/", *(p if p.endswith("/") else p + "/" for p in lane.pythonpath))
    out: set[str] = set()
    for root in roots:
        for i in range(1, len(parts) + 1):
            stem = root + "/".join(parts[:i])
            out.update((stem, f"{stem}.py", f"{stem}/__init__.py"))
    return frozenset(out)
