"""A static import graph of a project's Python files (``ast``, nothing is imported).

It answers one question for the replay slice: which changed project modules does a test
file reach, directly or through other project modules? Being static, it over-approximates
on purpose (imports inside functions and ``if TYPE_CHECKING`` count, a module name that
two roots both provide counts for both files): a test selected needlessly costs host time,
a test missed costs the evidence.

Module names come from import roots: the tree root, ``src/`` when present, the map's
``property.pythonpath``, and the directory pytest itself puts on ``sys.path`` for each test
file (its first ancestor without ``__init__.py``, pytest's default ``prepend`` mode).

Besides import statements, a file's edges include *literal module references*: a string
constant that names a project module (``"calc.cli"``, as in ``[sys.executable, "-m",
"calc.cli"]`` or ``mock.patch("calc.core.mean")``) or a project ``.py`` file by path
(``"src/calc/cli.py"``, ``"calc/cli.py"``). A test that reaches the code only through a
subprocess then still reaches it. And a text file pytest collects as doctests
(``--doctest-glob``) imports what its examples (``>>> `` and ``... `` lines) import. Test files
and conftests that start processes are listed (``procstart``): selection sends every change
to a project module to them, without counting them as evidence that the module is reached.
"""

from __future__ import annotations

import ast
import doctest
import itertools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from patchlane.inputs.paths import under
from patchlane.inputs.untrusted import MAX_PYTHON_BYTES
from patchlane.project.sourcescan import ANY_MODULE as ANY_MODULE
from patchlane.project.sourcescan import ImportFrom, SourceScan, scan, scan_source


@dataclass(frozen=True)
class ImportGraph:
    """The project's modules and what each file imports.

    ``names``: module name -> files that provide it (a file may have several names, one
    per root that contains it). A ``.py`` file that has no module name under any root
    (``scripts/my-tool.py``) but that a string names by path has its path as its name.
    ``imports``: file -> the module names it may import (every dotted prefix included:
    importing ``a.b`` imports ``a``; literal module references included). ``unparsable``: files
    that patchlane cannot parse (invalid syntax, NUL bytes, nested too deeply, too large):
    nothing is known about what they import, so each is taken to import every module of
    the project, like a computed import.
    """

    roots: tuple[str, ...]
    names: dict[str, frozenset[str]]
    imports: dict[str, frozenset[str]]
    unparsable: tuple[str, ...]
    # Test files and conftests that start processes, which may run any project module.
    starts_processes: tuple[str, ...] = ()

    def module_names(self, path: str) -> tuple[str, ...]:
        """Return the names ``path`` (a ``.py`` file, existing or not) has in the graph: its
        module names, or, for a file without one that a string names, its path."""
        names = module_names(path, self.roots)
        if not names and path in self.names:
            return (path,)
        return names

    def reach(self, start: str, changed_names: frozenset[str]) -> dict[str, tuple[str, ...]]:
        """Return the changed module names reachable from file ``start``, each with one
        import chain of files (``start`` first) that reaches it.

        Walks breadth first, so each chain is a shortest one; the result is sorted by name.
        """
        found: dict[str, tuple[str, ...]] = {}
        chains: dict[str, tuple[str, ...]] = {start: (start,)}
        queue = [start]
        while queue:
            current = queue.pop(0)
            for name in sorted(self.imports.get(current, ())):
                if name in changed_names and name not in found:
                    found[name] = chains[current]
                for target in sorted(self.names.get(name, ())):
                    if target not in chains:
                        chains[target] = (*chains[current], target)
                        queue.append(target)
        return dict(sorted(found.items()))

    def files_reached(self, start: str) -> set[str]:
        """Return every project file ``start`` imports, directly or transitively (and
        ``start`` itself)."""
        seen = {start}
        stack = [start]
        while stack:
            current = stack.pop()
            for name in self.imports.get(current, ()):
                for target in self.names.get(name, ()):
                    if target not in seen:
                        seen.add(target)
                        stack.append(target)
        return seen


def module_names(path: str, roots: Iterable[str]) -> tuple[str, ...]:
    """Return the dotted names ``path`` is importable as from ``roots`` (``""`` = tree root).

    ``pkg/__init__.py`` is the package ``pkg``. A path whose parts are not identifiers
    (``my-tests/x.py``) has no name under that root.
    """
    if not path.endswith(".py"):
        return ()
    out: list[str] = []
    for root in roots:
        if root and not under(path, root + "/"):
            continue
        rel = path[len(root) + 1 :] if root else path
        parts = rel[: -len(".py")].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        if parts and all(p.isidentifier() for p in parts):
            out.append(".".join(parts))
    return tuple(dict.fromkeys(out))


def _prefixes(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def imported_names(tree: ast.AST, own_names: tuple[str, ...], is_package: bool) -> set[str]:
    """Return every module name the parsed file may import, with all dotted prefixes
    (``resolve_imports`` of its ``sourcescan.scan``)."""
    return resolve_imports(scan(tree), own_names, is_package)


def resolve_imports(found: SourceScan, own_names: tuple[str, ...], is_package: bool) -> set[str]:
    """Return every module name a scanned file may import, with all dotted prefixes.

    ``from a import b`` yields ``a`` and ``a.b`` (``b`` may be a submodule; when it is an
    attribute, ``a.b`` names no file and is harmless). Relative imports are resolved
    against each of the file's own names (``own_names``). A computed literal import gives
    ``ANY_MODULE``.
    """
    out: set[str] = set()
    for literal in found.literal_imports:
        if literal == ANY_MODULE:
            out.add(ANY_MODULE)
        else:
            out.update(_prefixes(literal))
    for name in found.imports:
        out.update(_prefixes(name))
    for node in found.from_imports:
        for base in _from_bases(node, own_names, is_package):
            out.update(_prefixes(base))
            out.update(f"{base}.{alias}" for alias in node.names if alias != "*")
    return out


def _from_bases(node: ImportFrom, own_names: tuple[str, ...], is_package: bool) -> list[str]:
    if node.level == 0:
        return [node.module] if node.module else []
    bases: list[str] = []
    for own in own_names:
        parts = own.split(".")
        # A package's ``from . import x`` is relative to itself; a module's to its package.
        # Each further level strips one more part.
        keep = len(parts) - (node.level - 1) - (0 if is_package else 1)
        if keep < 0 or (keep == 0 and not node.module):
            continue  # beyond the top-level package: an ImportError at run time
        base = ".".join(parts[:keep])
        if node.module:
            base = f"{base}.{node.module}" if base else node.module
        bases.append(base)
    return bases


# What separates the words of a string that may hold a command line or an entry point
# ("python -m calc.cli", "calc.cli:main").
_WORD_SEPARATORS = re.compile(r"[\s'\"`=,;:()\[\]{}<>|&]+")
# A string longer than this is data, not a reference; its words are still looked at.
_MAX_REFERENCE_CHARS = 4096


def _dotted(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def reference_candidates(text: str) -> tuple[set[str], set[str], set[str]]:
    """Return the dotted names, the ``.py`` paths, and the names run with ``-m`` that a
    string constant may refer to.

    The whole string counts when it is a dotted name (a plain ``"calc"`` too) or ends in
    ``.py``; so does each word of it (split at white space, quotes, ``:``, ``=`` and
    brackets) that holds a dot: ``"calc.cli:main"``, ``"python -m calc.cli"``,
    ``"python src/calc/cli.py"``, and the word after ``-m`` (``"python -m calc"``). A
    single word without a dot inside a longer string (prose) does not. Paths lose a
    leading ``./``; Windows separators become ``/``.
    """
    names: set[str] = set()
    paths: set[str] = set()
    words = _WORD_SEPARATORS.split(text) if len(text) > 1 else []
    wanted = {w for w in words if "." in w}
    mains = {w for previous, w in itertools.pairwise(words) if previous == "-m" and _dotted(w)}
    wanted |= mains
    if len(text) <= _MAX_REFERENCE_CHARS:
        wanted.add(text)
    for word in wanted:
        if not word:
            continue
        if word.endswith(".py"):
            path = word.replace("\\", "/")
            while path.startswith("./"):
                path = path[2:]
            paths.add(path)
        elif _dotted(word):
            names.add(word)
    return names, paths, mains


def _referenced(
    found: SourceScan,
    names: dict[str, set[str]],
    by_path: dict[str, set[str]],
    all_roots: tuple[str, ...],
) -> set[str]:
    """Return the graph names the literal references of a parsed file make edges to.

    A dotted name gives each of its prefixes that is a project module (``mock.patch``'s
    ``"calc.core.mean"`` imports ``calc.core``; a plain ``"calc"`` only the package), and a
    package run with ``-m`` its ``__main__``. A ``.py`` path that is a project file, or its
    part after an import root, gives that file's names (its path when it has none; ``names``
    then gains it)."""
    out: set[str] = set()
    mains = set(found.mains)
    for text in found.strings:
        dotted, paths, run = reference_candidates(text)
        mains |= run
        for name in dotted:
            out.update(prefix for prefix in _prefixes(name) if prefix in names)
        for path in paths:
            for target in sorted(by_path.get(path, ())):
                own = module_names(target, all_roots)
                if own:
                    out.update(prefix for n in own for prefix in _prefixes(n))
                else:
                    names.setdefault(target, set()).add(target)
                    out.add(target)
    out.update(f"{m}.__main__" for m in mains if m in names and f"{m}.__main__" in names)
    return out


def doctest_source(data: bytes, path: str) -> str:
    """Return the Python source of a text file's doctest examples (``>>> `` lines and their
    ``... `` continuations, prompts and indentation removed), one example after another.

    Raises ``SyntaxError`` when the file is larger than ``parse_python`` allows, or when
    doctest's own parser refuses it (inconsistent indentation, a prompt without a blank
    after it): pytest would then not run it either, yet nothing is known about it.
    """
    if len(data) > MAX_PYTHON_BYTES:
        limit = MAX_PYTHON_BYTES // (1024 * 1024)
        raise SyntaxError(f"larger than {limit} MiB: not parsed", (path, None, None, None))
    text = data.decode("utf-8", "replace")
    try:
        examples = doctest.DocTestParser().get_examples(text, path)
    except ValueError as e:
        raise SyntaxError(f"doctest examples not parsable: {e}", (path, None, None, None)) from None
    return "".join(example.source for example in examples)


def pytest_sys_path_dirs(test_files: Iterable[str], existing: frozenset[str]) -> set[str]:
    """Return the directory pytest prepends to ``sys.path`` for each test file: the first
    ancestor directory that holds no ``__init__.py`` (``""`` for the tree root)."""
    roots: set[str] = set()
    for path in test_files:
        parts = path.split("/")[:-1]
        while parts and "/".join([*parts, "__init__.py"]) in existing:
            parts.pop()
        roots.add("/".join(parts))
    return roots


def build(
    sources: dict[str, bytes], roots: Iterable[str], test_files: Iterable[str] = ()
) -> ImportGraph:
    """Build the graph of ``sources`` (repository path -> bytes of every ``.py`` file, and
    of each text file pytest collects as doctests: any path not ending in ``.py`` is one,
    read through ``doctest_source``).

    ``roots`` are import roots relative to the tree (``""`` for the root itself);
    ``test_files`` add pytest's own roots for them; those of them (and the conftests) that
    start processes are listed in ``starts_processes``. Returns the ``ImportGraph``. Never
    raises for a file's content: a file that does not parse (``untrusted.parse_python``:
    syntax, NUL bytes, nesting, size; ``doctest_source`` for a text file) is listed in
    ``unparsable`` and imports every module of the project. That widens the slice rather
    than narrowing it: the host's interpreter may parse what this one refuses (a newer
    syntax, a larger limit), and then the file could import anything.
    """
    existing = frozenset(sources)
    test_files = tuple(test_files)
    test_side = frozenset(test_files) | {
        p for p in sources if p.rsplit("/", 1)[-1] == "conftest.py"
    }
    all_roots = tuple(
        sorted({r.rstrip("/") for r in roots} | pytest_sys_path_dirs(test_files, existing))
    )
    names: dict[str, set[str]] = {}
    for path in sources:
        for name in module_names(path, all_roots):
            names.setdefault(name, set()).add(path)
    # A .py file's path, and its part after each import root: what a string may name it by.
    by_path: dict[str, set[str]] = {}
    for path in sources:
        if path.endswith(".py"):
            for root in all_roots:
                if not root:
                    by_path.setdefault(path, set()).add(path)
                elif under(path, root + "/"):
                    by_path.setdefault(path[len(root) + 1 :], set()).add(path)
    imports: dict[str, frozenset[str]] = {}
    unparsable: list[str] = []
    # Each tree is dropped as soon as its names are known; "every module" (for computed
    # imports and unparsable files) is taken after the loop, which may add a path-named
    # file to ``names``.
    found_by_path: dict[str, set[str]] = {}
    starters: list[str] = []
    for path, data in sources.items():
        try:
            text = data if path.endswith(".py") else doctest_source(data, path)
        except SyntaxError:
            text = None
        scanned = None if text is None else scan_source(text, path)
        if scanned is None:
            unparsable.append(path)
            continue
        own = module_names(path, all_roots)
        is_package = path.endswith("/__init__.py") or path == "__init__.py"
        found = resolve_imports(scanned, own, is_package)
        found |= _referenced(scanned, names, by_path, all_roots)
        if path in test_side and path.endswith(".py") and scanned.starts_processes:
            starters.append(path)  # what its processes run is neither imported nor traced
        found_by_path[path] = found
    every_module = frozenset(names)
    for path in sources:
        maybe = found_by_path.get(path)
        if maybe is None:
            imports[path] = every_module
        elif ANY_MODULE in maybe:
            imports[path] = (frozenset(maybe) - {ANY_MODULE}) | every_module
        else:
            imports[path] = frozenset(maybe)
    return ImportGraph(
        roots=all_roots,
        names={k: frozenset(v) for k, v in names.items()},
        imports=imports,
        unparsable=tuple(sorted(unparsable)),
        starts_processes=tuple(sorted(starters)),
    )


def python_sources(root: Path) -> dict[str, bytes]:
    """Return every ``.py`` file of the materialised tree ``root`` (repository path ->
    bytes), in a stable order: what the graph is built from."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        for name in sorted(filenames):
            if name.endswith(".py"):
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                out[rel] = (Path(dirpath) / name).read_bytes()
    return out


def tree_roots(root: Path, pythonpath: Iterable[str] = ()) -> list[str]:
    """Return the directories of the tree ``root`` project modules import from: the tree
    itself (``""``), ``src`` when there is one, and the property lane's ``pythonpath``."""
    roots = [""]
    if (root / "src").is_dir():
        roots.append("src")
    roots.extend(p.rstrip("/") for p in pythonpath)
    return roots
