"""The files a commit's test run loads besides the tests: the harness, and what shadows.

pytest loads hooks from every ``conftest.py``, from each module a ``pytest_plugins``
variable names, and (through ``from helper import *`` or an imported ``pytest_*`` name)
from whatever a conftest pulls into its namespace. A hook can rewrite outcomes, so a patch
that changes any of these cannot earn ``accept_for_review`` from its own replay
(docs/explanation/decisions/0009-harness-found.md). This module finds them statically,
from the commit's blobs (nothing is imported), and the same for a new module that pytest's
``sys.path`` would put in front of a project package, a standard-library module or an
installed distribution.

The closure stops at the code under test (the property lane's paths): a conftest that
imports the package it tests loads it early, which any test does anyway -- the code under
test always runs in the test process, a stated limit of the replay. A star import or a
``pytest_*`` name taken from the code under test is followed all the same: that is a hook.
"""

from __future__ import annotations

import ast
import functools
import importlib.machinery
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from patchlane.infra import git
from patchlane.inputs import untrusted
from patchlane.inputs.paths import under, under_any
from patchlane.project import importgraph
from patchlane.project.config import ReviewMap
from patchlane.project.testmodules import (
    DEFAULT_PATTERNS,
    DEFAULT_PYTHON_FILES,
    ModulePatterns,
)

# Suffixes an import can load a module from (source, bytecode, extension modules).
IMPORT_SUFFIXES = tuple(importlib.machinery.all_suffixes())


def is_gitattributes(path: str) -> bool:
    """Return whether ``path`` is a ``.gitattributes`` file (it changes what a checkout
    holds: line endings, encodings, filters, ``ident``, export rules)."""
    return path.rsplit("/", 1)[-1] == ".gitattributes"


def _is_test_file(path: str, patterns: ModulePatterns) -> bool:
    """A test module under the commit's ``python_files``, or a conftest."""
    return path.rsplit("/", 1)[-1] == "conftest.py" or patterns.is_test_module(path)


@dataclass(frozen=True)
class Snapshot:
    """One commit's regular files and symlinks (``path -> entry``), read once."""

    commit: str
    files: dict[str, git.TreeEntry]

    @property
    def python(self) -> dict[str, git.TreeEntry]:
        return {p: e for p, e in self.files.items() if p.endswith(".py")}


def snapshot(repo: Path, commit: str) -> Snapshot:
    """Return the blobs of ``commit`` (one ``git ls-tree``). Raises ``GitError``."""
    entries = git.ls_tree(repo, commit, ())
    return Snapshot(commit, {e.path: e for e in entries if e.kind == "blob"})


def _parse(data: bytes, path: str) -> ast.Module | None:
    # Patch content: whatever it holds is a finding, never a crash (an unparsable harness
    # file is still a harness file; what it imports is then unknown, and pytest will fail
    # to load it at the head anyway).
    try:
        return untrusted.parse_python(data, path)
    except SyntaxError:
        return None


def _parse_files(repo: Path, snap: Snapshot, paths: list[str]) -> dict[str, ast.Module]:
    regular = [p for p in paths if snap.files[p].mode in git.REGULAR_MODES]
    out: dict[str, ast.Module] = {}
    oids = [snap.files[p].oid for p in regular]
    for path, data in zip(regular, git.read_blobs(repo, oids), strict=True):
        tree = _parse(data, path)
        if tree is not None:
            out[path] = tree
    return out


def plugin_names(tree: ast.Module) -> list[str]:
    """Return the module names a module-level ``pytest_plugins`` assignment names."""
    names: list[str] = []
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign | ast.AugAssign)
            else []
        )
        if not any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in targets):
            continue
        value = getattr(node, "value", None)
        items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
        names.extend(
            i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)
        )
    return [n for n in names if n and n.isprintable()]


def hook_sources(tree: ast.Module, own: tuple[str, ...], is_package: bool) -> set[str]:
    """Return the module names from which ``tree`` takes ``*`` or a ``pytest_*`` name:
    what they define becomes part of this module's namespace, hooks included."""
    picked: list[ast.stmt] = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and any(a.name == "*" or a.name.startswith("pytest_") for a in node.names)
    ]
    if not picked:
        return set()
    return importgraph.imported_names(ast.Module(body=picked, type_ignores=[]), own, is_package)


@dataclass(frozen=True)
class PytestSettings:
    """What the commit's pytest configuration adds to a run: modules it loads as plugins
    (``-p NAME`` in ``addopts``, ``pytest11`` entry points) and ``pythonpath`` entries."""

    plugins: tuple[str, ...]
    pythonpath: tuple[str, ...]
    # What a test module is under the configuration pytest uses (``module_patterns``).
    modules: ModulePatterns = DEFAULT_PATTERNS


_CONFIG_FILES = {
    # file at the tree root -> the section that holds pytest's ini options
    "pytest.ini": "pytest",
    ".pytest.ini": "pytest",
    "tox.ini": "pytest",
    "setup.cfg": "tool:pytest",
}


def _ini_values(data: bytes, section: str, *, entry_points: bool = True) -> dict[str, str]:
    import configparser

    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(data.decode("utf-8"))
    except (UnicodeError, configparser.Error, RecursionError, MemoryError, ValueError):
        return {}
    found = {k: v for k, v in parser.items(section)} if parser.has_section(section) else {}
    if entry_points and parser.has_section("options.entry_points"):
        found["pytest11"] = parser.get("options.entry_points", "pytest11", fallback="")
    return found


def _toml_values(data: bytes) -> dict[str, str]:
    try:
        doc = untrusted.load_toml(data)
    except untrusted.Unreadable:
        return {}
    found: dict[str, str] = {}
    tool = doc.get("tool")
    options = tool.get("pytest", {}).get("ini_options") if isinstance(tool, dict) else None
    if isinstance(options, dict):
        for key in ("addopts", "pythonpath"):
            value = options.get(key)
            if isinstance(value, list):
                value = " ".join(v for v in value if isinstance(v, str))
            if isinstance(value, str):
                found[key] = value
    project = doc.get("project")
    entry_points = project.get("entry-points") if isinstance(project, dict) else None
    plugins = entry_points.get("pytest11") if isinstance(entry_points, dict) else None
    if isinstance(plugins, dict):
        found["pytest11"] = "\n".join(f"x = {v}" for v in plugins.values() if isinstance(v, str))
    return found


def pytest_settings(repo: Path, snap: Snapshot) -> PytestSettings:
    """Return the plugins and ``pythonpath`` entries the commit's pytest configuration files
    at the tree root name (all of them, whichever pytest would pick: an over-approximation).
    Unreadable files add nothing here (classify already counts them as harness changes).
    Raises ``GitError``."""
    import shlex

    values: list[dict[str, str]] = []
    for name in (*_CONFIG_FILES, "pyproject.toml"):
        entry = snap.files.get(name)
        if entry is None or entry.mode not in git.REGULAR_MODES:
            continue
        (data,) = git.read_blobs(repo, [entry.oid])
        if name == "pyproject.toml":
            values.append(_toml_values(data))
        else:
            values.append(_ini_values(data, _CONFIG_FILES[name]))
    plugins: list[str] = []
    paths: list[str] = []
    for found in values:
        try:
            words = shlex.split(found.get("addopts", ""))
        except ValueError:
            words = found.get("addopts", "").split()
        for i, word in enumerate(words):
            plugin = words[i + 1] if word == "-p" and i + 1 < len(words) else None
            if word.startswith("-p") and len(word) > 2:
                plugin = word[2:].lstrip("=")
            if plugin and not plugin.startswith("no:"):
                plugins.append(plugin)
        for line in found.get("pytest11", "").splitlines():
            target = line.partition("=")[2].strip().partition(":")[0].strip()
            if target:
                plugins.append(target)
        paths.extend(p.strip("/") for p in found.get("pythonpath", "").split() if p != ".")
    return PytestSettings(
        tuple(dict.fromkeys(plugins)), tuple(dict.fromkeys(paths)), module_patterns(repo, snap)
    )


# pytest's order for the file whose options it uses (``_pytest.config.findpaths``): the first
# that configures pytest wins. A ``pytest.ini`` wins even empty.
_CHOSEN_ORDER = (
    "pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini",
    "setup.cfg",
)  # fmt: skip


def _toml_options(data: bytes, name: str) -> dict[str, object] | None:
    """The pytest options table of a TOML file (``[pytest]`` in ``pytest.toml``;
    ``[tool.pytest.ini_options]``, or pytest 9's ``[tool.pytest]``, in ``pyproject.toml``),
    or ``None`` when it has none (or cannot be read)."""
    try:
        doc = untrusted.load_toml(data)
    except untrusted.Unreadable:
        return None
    if name != "pyproject.toml":
        table = doc.get("pytest")
        return table if isinstance(table, dict) else None
    tool = doc.get("tool")
    pytest_table = tool.get("pytest") if isinstance(tool, dict) else None
    if not isinstance(pytest_table, dict):
        return None
    options = pytest_table.get("ini_options")
    return options if isinstance(options, dict) else pytest_table


def _words(value: object) -> tuple[str, ...]:
    """An ini ``args``/``linelist`` value (whitespace-separated, or a TOML list)."""
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str) and v)
    return tuple(value.split()) if isinstance(value, str) else ()


def chosen_options(repo: Path, snap: Snapshot) -> dict[str, object] | None:
    """Return the pytest options of the file at the tree root that pytest would use
    (``_CHOSEN_ORDER``: the first that configures pytest), or ``None`` when none does. A
    file that cannot be read counts as setting nothing. Raises ``GitError``."""
    for name in _CHOSEN_ORDER:
        entry = snap.files.get(name)
        if entry is None or entry.mode not in git.REGULAR_MODES:
            continue
        (data,) = git.read_blobs(repo, [entry.oid])
        options: dict[str, object] | None
        if name.endswith(".toml"):
            options = _toml_options(data, name)
        else:
            section = _CONFIG_FILES[name]
            options = dict(_ini_values(data, section, entry_points=False))
            header = re.compile(rb"^\s*\[\s*" + re.escape(section.encode()) + rb"\s*\]", re.M)
            if name not in ("pytest.ini", ".pytest.ini") and not header.search(data):
                options = None  # no pytest section here: pytest looks further
        if options is not None:
            return options
    return None


def option_words(options: dict[str, object] | None, key: str) -> tuple[str, ...]:
    """The words of one ``args``/``linelist`` option of ``chosen_options`` (none: ``()``)."""
    return _words(options.get(key)) if options is not None else ()


def module_patterns(repo: Path, snap: Snapshot) -> ModulePatterns:
    """Return what the commit's pytest configuration says a test module is
    (``python_files``), from the file at the tree
    root that pytest would use (``_CHOSEN_ORDER``); pytest's defaults where it sets nothing
    or cannot be read (docs/architecture.md §2). Raises ``GitError``."""
    options = chosen_options(repo, snap)
    if options is None:
        return ModulePatterns()
    return ModulePatterns(option_words(options, "python_files") or DEFAULT_PYTHON_FILES)


def module_patterns_at(repo: Path, commit: str) -> ModulePatterns:
    """``module_patterns`` of ``commit`` (one ``git ls-tree``). Raises ``GitError``."""
    return module_patterns(repo, snapshot(repo, commit))


def import_roots(
    snap: Snapshot, review_map: ReviewMap, settings: PytestSettings | None = None
) -> tuple[str, ...]:
    """Return the directories a test run imports project modules from: the tree root,
    ``src/``, the property lane's and pytest's ``pythonpath`` and pytest's own root for each
    test file and conftest (its first ancestor without ``__init__.py``)."""
    roots = {"", "src", *(settings.pythonpath if settings else ())}
    if review_map.property is not None:
        roots.update(p.rstrip("/") for p in review_map.property.pythonpath)
    patterns = settings.modules if settings is not None else ModulePatterns()
    tests = [p for p in snap.files if _is_test_file(p, patterns)]
    roots |= importgraph.pytest_sys_path_dirs(tests, frozenset(snap.files))
    return tuple(sorted(roots))


def harness_files(repo: Path, snap: Snapshot, review_map: ReviewMap) -> dict[str, str]:
    """Return every harness file of ``snap`` with why it is one: each ``conftest.py``, each
    module a ``pytest_plugins`` names (in any module), and every project module these import,
    transitively, short of the code under test (see the module docstring).

    A harness file that changes ``sys.path`` makes every directory of the tree a root its
    imports (and those of every harness file after it) may resolve under: the closure is then
    taken again with every directory as a root, so a module is harness only when an import
    in the harness names it from some directory -- never merely because it exists. A computed
    import (``importlib.import_module(name)``) may load any support module, and says so.

    Raises ``GitError`` when git cannot read the commit.
    """
    settings = pytest_settings(repo, snap)
    roots = import_roots(snap, review_map, settings)
    found, widened = _closure(repo, snap, review_map, settings, roots)
    if widened:
        every = {""} | {p.rsplit("/", 1)[0] for p in snap.files if "/" in p}
        dirs = {d for p in every for d in _ancestors(p)}
        found, _ = _closure(repo, snap, review_map, settings, tuple(sorted(dirs | set(roots))))
    return found


def _ancestors(directory: str) -> list[str]:
    """``a/b/c`` -> ``a``, ``a/b``, ``a/b/c`` (``""`` -> ``""``)."""
    parts = directory.split("/") if directory else []
    return [""] + ["/".join(parts[: i + 1]) for i in range(len(parts))]


@dataclass(frozen=True)
class _Index:
    """What the closure resolves a harness file's imports with: the ``roots``, the files
    each module name resolves to under them (``names``), the commit's Python files, its
    ``python_files`` and the code under test (where the closure stops)."""

    roots: tuple[str, ...]
    names: dict[str, list[str]]
    python: dict[str, git.TreeEntry]
    patterns: ModulePatterns
    code: tuple[str, ...]

    def support_modules(self) -> list[str]:
        """Return the Python files that are neither tests nor the code under test."""
        return [
            p
            for p in self.python
            if not _is_test_file(p, self.patterns) and not under_any(p, self.code)
        ]


def _closure(
    repo: Path,
    snap: Snapshot,
    review_map: ReviewMap,
    settings: PytestSettings,
    roots: tuple[str, ...],
) -> tuple[dict[str, str], bool]:
    """Return the harness files found with imports resolved under ``roots`` (see
    ``harness_files``), and whether one of them changes ``sys.path``."""
    python = snap.python
    names: dict[str, list[str]] = {}
    for path in python:
        for name in importgraph.module_names(path, roots):
            names.setdefault(name, []).append(path)
    code = review_map.property.paths if review_map.property is not None else ()
    index = _Index(roots, names, python, settings.modules, tuple(code))
    found: dict[str, str] = {}
    queue: list[str] = []
    widened = False

    def add(path: str, why: str) -> None:
        if path not in found:
            found[path] = why
            queue.append(path)

    for path, why in _seeds(repo, snap, settings, index):
        add(path, why)
    while queue:
        batch, queue = queue, []
        for path, tree in _parse_files(repo, snap, batch).items():
            widened = widened or _edits_sys_path(tree)
            targets, why, followed = _loaded_by(path, tree, index)
            # An import that names no file under these roots, nor the standard library or
            # an installed distribution, is found at run time where the graph did not look
            # (a search path it cannot see being changed): widen the roots.
            widened = widened or any(
                not names.get(name) and not _known_elsewhere(name) for name in followed
            )
            for target in targets:
                add(target, why)
    return found, widened


def _seeds(
    repo: Path, snap: Snapshot, settings: PytestSettings, index: _Index
) -> Iterator[tuple[str, str]]:
    """Yield the files the closure starts from, each with why it is harness: every
    ``conftest.py``, the plugins the pytest configuration loads, and those a
    ``pytest_plugins`` names. Raises ``GitError`` when git cannot read the commit."""
    for path in sorted(index.python):
        if path.rsplit("/", 1)[-1] == "conftest.py":
            yield path, "a conftest.py"
    for name in settings.plugins:
        for target in index.names.get(name, ()):
            yield target, "loaded as a plugin by the pytest configuration"
    holders = sorted(p for p in git.files_containing(repo, snap.commit, "pytest_plugins"))
    holder_trees = _parse_files(repo, snap, [p for p in holders if p in index.python])
    for holder, tree in holder_trees.items():
        for name in plugin_names(tree):
            for target in index.names.get(name, ()):
                yield target, f"named by pytest_plugins in {holder}"


def _loaded_by(
    path: str, tree: ast.Module, index: _Index
) -> tuple[list[str], str, tuple[str, ...]]:
    """Return the files the harness file ``path`` (parsed: ``tree``) loads, why, and the
    module names that led to them (none when it may load any support module). The code
    under test is not followed, unless a hook comes from it."""
    own = importgraph.module_names(path, index.roots)
    is_package = path.rsplit("/", 1)[-1] == "__init__.py"
    hooks = hook_sources(tree, own, is_package)
    imported = importgraph.imported_names(tree, own, is_package)
    by_path = _loads_by_path(tree)
    if importgraph.ANY_MODULE in imported or by_path:
        # A computed import, or code loaded from a file path (no module name the graph
        # could follow), may load any support module; test modules and the code under
        # test are judged as what they are.
        how = "it runs code by file path" if by_path else "an import's name is computed"
        return index.support_modules(), f"may be imported by {path} ({how})", ()
    targets = [t for name in sorted(imported) for t in index.names.get(name, ())]
    targets += [t for name in sorted(hooks) for t in index.names.get(name, ())]
    hooked = {t for name in hooks for t in index.names.get(name, ())}
    loaded = [t for t in targets if t in hooked or not under_any(t, index.code)]
    return loaded, f"imported by {path}", (*imported, *hooks)


# Calls that run a file's code by its path rather than by a module name (``exec(open(p)
# .read())``, ``runpy.run_path``, the ``importlib`` file loaders).
_PATH_LOADERS = frozenset(
    {"exec", "run_path", "spec_from_file_location", "SourceFileLoader",
     "SourcelessFileLoader", "ExtensionFileLoader", "load_source", "load_compiled"}
)  # fmt: skip


def _loads_by_path(tree: ast.Module) -> bool:
    """Return whether ``tree`` calls one of ``_PATH_LOADERS`` (however the callee is
    reached): what it runs has no module name the import graph could follow."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            callee = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if callee in _PATH_LOADERS:
                return True
    return False


def _edits_sys_path(tree: ast.Module) -> bool:
    """Return whether ``tree`` may change where imports look (``sys.path.insert(...)``,
    ``sys.path = [...]``, ``site.addsitedir(...)``, with ``sys`` under any name it is bound
    to, or ``from sys import path``): its imports may then resolve under any directory, so
    the static roots no longer say which files they are (``harness_files`` then resolves
    them under every directory). An import no root explains widens them too."""
    sys_names = {"sys"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            sys_names |= {a.asname for a in node.names if a.name == "sys" and a.asname}
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module == "sys"
            and any(a.name in ("path", "*") for a in node.names)
        ):
            return True
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id in sys_names
        ):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "addsitedir":
            return True
    return False


def _known_elsewhere(name: str) -> bool:
    """Whether the module ``name`` comes from outside the tree: the standard library or an
    installed distribution (by its top-level name)."""
    top = name.split(".", 1)[0]
    return top in sys.stdlib_module_names or top in installed_top_level() or top == "__future__"


@functools.cache
def installed_top_level() -> dict[str, tuple[str, ...]]:
    """Return the top-level import names of the distributions installed in this
    interpreter, each with the distributions that provide it."""
    from importlib import metadata

    return {k: tuple(v) for k, v in metadata.packages_distributions().items()}


def _provides(snap: Snapshot, root: str, name: str) -> bool:
    stem = f"{root}/{name}" if root else name
    if any(stem + suffix in snap.files for suffix in IMPORT_SUFFIXES):
        return True
    prefix = stem + "/"
    return any(p.startswith(prefix) for p in snap.files)


def _top_level(path: str, root: str, link: bool = False) -> str | None:
    if root and not under(path, root + "/"):
        return None
    rest = path[len(root) + 1 :] if root else path
    first, sep, _ = rest.partition("/")
    if not sep and not (link and "." not in first):
        # A module file directly under the root (a link without a suffix may be a package)
        if not first.endswith(IMPORT_SUFFIXES):
            return None
        first = first.split(".", 1)[0]
    return first if first.isidentifier() else None


def shadowing(
    base: Snapshot,
    head: Snapshot,
    added: Iterable[str],
    review_map: ReviewMap,
    settings: PytestSettings | None = None,
) -> dict[str, str]:
    """Return each added path that brings a new top-level module or package onto a
    directory pytest puts on ``sys.path`` (the tree root, each test file's root, the
    ``pythonpath`` entries) under a name a project package elsewhere, the standard library
    or an installed distribution already uses -- with what it shadows. ``settings``: the
    base's pytest configuration (its ``pythonpath`` entries are roots too)."""
    test_roots = import_roots(head, review_map, settings)
    project_roots = ("", "src", *(r for r in test_roots if r not in ("", "src")))
    out: dict[str, str] = {}
    for path in sorted(added):
        entry = head.files.get(path)
        link = entry is not None and entry.mode == git.MODE_SYMLINK
        patterns = settings.modules if settings is not None else ModulePatterns()
        if not (path.endswith(IMPORT_SUFFIXES) or link) or _is_test_file(path, patterns):
            continue
        for root in test_roots:
            name = _top_level(path, root, link)
            if name is None or _provides(base, root, name):
                continue  # not importable from here, or not new: the base had it already
            elsewhere = [
                r
                for r in project_roots
                if r != root and any(_provides(s, r, name) for s in (base, head))
            ]
            where = f"{root}/" if root else "the tree root"
            if elsewhere:
                other = f"{elsewhere[0]}/{name}" if elsewhere[0] else name
                out[path] = f"new {name!r} on {where} shadows the project's {other}"
            elif name in sys.stdlib_module_names:
                out[path] = f"new {name!r} on {where} shadows the standard-library module"
            elif name in installed_top_level():
                dists = ", ".join(installed_top_level()[name])
                out[path] = f"new {name!r} on {where} shadows the installed {dists}"
            if path in out:
                break
    return out
