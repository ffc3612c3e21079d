"""Committed bytecode never runs (docs/architecture.md §2: committed bytecode is a control file).

A patch can commit bytecode that Python runs instead of the source beside it: a
``__pycache__/mod.cpython-311.pyc`` compiled with ``PycInvalidationMode.UNCHECKED_HASH`` is
loaded whatever ``mod.py`` says, and a sourceless ``mod.pyc`` (no ``mod.py``) is imported
directly. Three layers keep it from running:

- ``is_bytecode``: ``tree.materialise`` never writes such a path, so a tree made from a
  commit holds no bytecode at all;
- every child that imports the repository's code gets ``PYTHONPYCACHEPREFIX`` pointing at
  ``process_pycache``, a directory this patchlane process made, so no ``__pycache__`` in the
  tree is ever read (``-B`` alone stops writing, not reading);
- ``import_tree_from_source``: below the tree, modules are found only as source (or
  extension modules) and compiled from it every time, so a sourceless ``.pyc`` is not
  importable and no bytecode of the tree is read from, or written to, any cache (pytest's
  rewritten test modules included).

The prefix is kept in patchlane's cache directory and shared by every child, so that the
installed modules every child imports (pytest, its plugins, Hypothesis) are compiled once,
not once per child. It never holds the tree's code: where it would mirror the tree, it holds
an empty file, so nothing can be cached below it, or, when installed code lies inside the
tree (a project's ``.venv``), a directory that blocks every entry but the way to it
(``block_below``; docs/explanation/decisions/0016-caches.md).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from importlib.abc import PathEntryFinder
from importlib.machinery import (
    EXTENSION_SUFFIXES,
    SOURCE_SUFFIXES,
    ExtensionFileLoader,
    FileFinder,
    SourceFileLoader,
    SourcelessFileLoader,
)
from pathlib import Path
from types import CodeType
from typing import Any, ClassVar, NoReturn

import patchlane

PYCACHE = "__pycache__"
# Lower-cased: a case-insensitive file system (macOS, Windows) imports ``MOD.PYC`` as well.
BYTECODE_SUFFIXES = (".pyc", ".pyo")
NEVER_MATERIALISED = "bytecode: never materialised"


def is_bytecode(path: str) -> bool:
    """Return whether the repository path ``path`` is bytecode Python could load: any path
    with a ``__pycache__`` component, or a name ending ``.pyc``/``.pyo`` (any case)."""
    lowered = path.lower()
    return lowered.endswith(BYTECODE_SUFFIXES) or PYCACHE in lowered.split("/")


class SourceOnlyLoader(SourceFileLoader):
    """Loads a module from its source, every time: no bytecode is read or written for it.

    ``SourceLoader.get_code`` looks for bytecode only when it has the source's stat; with
    none it compiles the source and, for want of a modification time, writes nothing.
    """

    # Files (real paths) compiled by a function of the caller's instead of ``compile``:
    # the property child's one module, whose asserts it rewrites (``child.asserts``).
    compilers: ClassVar[dict[str, Callable[[bytes, str], CodeType]]] = {}

    def path_stats(self, path: str) -> NoReturn:
        """Raise ``OSError`` always, so that no cache is consulted (see the class)."""
        raise OSError("patchlane: modules of the tree are compiled from source")

    def source_to_code(  # type: ignore[override]
        self, data: bytes, path: str, *, _optimize: int = -1
    ) -> CodeType:
        """Compile ``data`` with the compiler registered for ``path``, if any."""
        compilers = SourceOnlyLoader.compilers
        compiler = compilers.get(os.path.realpath(path)) if compilers else None
        if compiler is not None:
            return compiler(data, path)
        return super().source_to_code(data, path, _optimize=_optimize)


def import_tree_from_source(root: Path) -> None:
    """Make every directory at or below ``root`` importable from source only, from now on.

    A path hook is put first on ``sys.path_hooks``: for a directory inside ``root`` (after
    resolving links) it returns a ``FileFinder`` that knows source modules, loaded with
    ``SourceOnlyLoader``, and extension modules, but not sourceless bytecode; anything else
    falls through to the default hooks, so the installed packages import as usual.
    ``sys.path_importer_cache`` is cleared, so that no finder made before this call is used
    again. Call it before ``root`` goes on ``sys.path``. Returns ``None``; raises nothing.
    """
    real = os.path.realpath(root)
    inside = real.rstrip(os.sep) + os.sep
    source_only = FileFinder.path_hook(
        (ExtensionFileLoader, EXTENSION_SUFFIXES), (SourceOnlyLoader, SOURCE_SUFFIXES)
    )

    def hook(path: str) -> PathEntryFinder:
        # "" on sys.path is the working directory, as FileFinder reads it (and realpath).
        where = os.path.realpath(path)
        if where != real and not where.startswith(inside):
            raise ImportError("not below the tree: left to the default finders")
        return source_only(path)

    sys.path_hooks.insert(0, hook)
    sys.path_importer_cache.clear()
    _no_cache_below(Path(real))
    _no_cache_below(Path(os.path.abspath(root)))  # noqa: PTH100 - lexical: as sys.path has it


def source_only_below(root: Path) -> None:
    """Make every directory at or below ``root`` importable from source only, from now on,
    as ``import_tree_from_source`` does, but leaving ``sys.path_hooks`` as a plain run has
    it (the replay's test process: docs/architecture.md §2, the replay cannot be told apart).

    The default path hook (``FileFinder.path_hook``'s, last on ``sys.path_hooks``) stays in
    its place, the same function object; the class its closure makes finders with is
    replaced by one that makes plain ``FileFinder`` objects: for a directory inside ``root``
    (after resolving links) with no sourceless loader, and with source loaders that never
    read or write bytecode (``SourceFileLoader`` objects, their ``path_stats`` raising);
    elsewhere with the hook's own loaders. Modules below the tree are then ``FileFinder``-found
    and ``SourceFileLoader``-loaded as in a plain run. When no such hook is there (an
    interpreter that builds it otherwise), falls back to ``import_tree_from_source``.
    ``sys.path_importer_cache`` is cleared. Returns ``None``; raises nothing."""
    real = os.path.realpath(root)
    for hook in sys.path_hooks:
        code = getattr(hook, "__code__", None)
        cells: tuple[Any, ...] = getattr(hook, "__closure__", None) or ()
        if code is None or code.co_freevars != ("cls", "loader_details") or len(cells) != 2:
            continue
        if cells[0].cell_contents is not FileFinder:
            continue
        details = tuple(cells[1].cell_contents)
        below = tuple(
            (_source_only if issubclass(loader, SourceFileLoader) else loader, suffixes)
            for loader, suffixes in details
            if not issubclass(loader, SourcelessFileLoader)
        )

        cells[0].cell_contents = _per_directory(real, below)
        sys.path_importer_cache.clear()
        _no_cache_below(Path(real))
        _no_cache_below(Path(os.path.abspath(root)))  # noqa: PTH100 - lexical: as sys.path has it
        return
    import_tree_from_source(root)


def _per_directory(real: str, below: tuple[tuple[Any, list[str]], ...]) -> type[FileFinder]:
    """The class ``source_only_below`` puts in the default path hook's closure: calling it
    makes a plain ``FileFinder``, with the loaders ``below`` for a directory at or below
    ``real`` and with the hook's own elsewhere."""
    inside = real.rstrip(os.sep) + os.sep

    class _PerDirectory(FileFinder):
        def __new__(cls, path: str, *given: Any) -> FileFinder:  # type: ignore[misc]
            where = os.path.realpath(path or os.curdir)
            if where == real or where.startswith(inside):
                return FileFinder(path, *below)
            return FileFinder(path, *given)

    return _PerDirectory


def _source_only(fullname: str, path: str) -> SourceFileLoader:
    """A ``SourceFileLoader`` that compiles ``path`` every time: its ``path_stats`` raises,
    so no bytecode is looked for or written (``SourceOnlyLoader``'s behaviour, on an object
    of the loader type a plain run has)."""
    loader = SourceFileLoader(fullname, path)
    loader.path_stats = _no_stats  # type: ignore[method-assign]
    return loader


def _no_stats(path: str) -> NoReturn:
    raise OSError("patchlane: modules of the tree are compiled from source")


def _no_cache_below(root: Path) -> None:
    """Block the bytecode cache where the prefix mirrors ``root`` (``block_below``), so that
    no cache below it can be made or found: pytest's assertion rewriter, which caches the
    test modules and conftests it compiles under the prefix, then neither reads nor writes
    one. A block the parent made (``prepare_prefix``: the prefix is read-only in the
    sandbox) is kept; anything else an earlier child left there is replaced. If that fails,
    this process falls back to a fresh prefix of its own."""
    prefix = sys.pycache_prefix
    if not prefix:
        return
    try:
        block_below(prefix, root)
    except OSError:
        sys.pycache_prefix = tempfile.mkdtemp(prefix="patchlane-pycache-")


# In a mirror directory that blocks a tree with installed code inside it: names that block.
SKELETON = "__patchlane_blocked__"


@functools.cache
def _installed() -> tuple[Path, ...]:
    """The directories of installed code this interpreter imports: its environment
    (``sys.prefix`` and the rest) and patchlane's own package root. Trusted, and the same
    bytes in every child: their bytecode may be cached even when they lie inside a tree
    (a project's ``.venv``)."""
    found = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    found.add(os.fspath(Path(patchlane.__file__).parent))
    return tuple(sorted({Path(os.path.realpath(p)) for p in found if p}))


def block_below(prefix: str, root: Path) -> None:
    """Make sure no bytecode can be cached or found below the prefix's mirror of ``root``
    (an absolute path), but for the installed code inside it (``_installed``: a project's
    ``.venv``, which every child imports and is compiled once).

    Where nothing installed lies inside ``root``, the mirror is one empty file: nothing can
    be made below a file. Otherwise the mirror is a directory marked ``SKELETON``: each
    entry of ``root`` gets an empty file at its mirror (a directory, or the bytecode names
    of a module at that level: a directory stands there, which no write can replace), and
    the entry that leads to installed code is blocked the same way one level down. A block
    already in place is kept (the sandboxed child sees the prefix read-only and only finds
    it). Raises ``OSError`` when the block cannot be made."""
    mirror = Path(prefix, *root.parts[1:])
    inside = [d for d in _installed() if root != d and root in d.parents]
    if any(root == d or d in root.parents for d in _installed()):
        return  # installed code itself: cached as it should be
    if not inside:
        if not _is_blocker(mirror):
            _replace(mirror, directory=False)
        return
    if not (mirror / SKELETON).is_file():
        _replace(mirror, directory=True)  # marked last: a half-made one is redone
    for entry in _entries(root):
        below = root / entry
        if any(below == d or below in d.parents for d in inside):
            block_below(prefix, below)
            continue
        if entry.endswith(".py"):
            for name in _bytecode_names(entry[:-3]):
                target = mirror / name
                if not (target.is_dir() and not target.is_symlink()):
                    _replace(target, directory=True)
        elif not _is_blocker(mirror / entry):
            _replace(mirror / entry, directory=False)
    if not (mirror / SKELETON).is_file():
        (mirror / SKELETON).touch()


def _entries(root: Path) -> list[str]:
    try:
        return sorted(p.name for p in root.iterdir())
    except OSError:
        return []


def _bytecode_names(stem: str) -> tuple[str, ...]:
    """The names a module ``stem``'s bytecode takes in a prefix mirror: Python's, and
    pytest's rewritten test module (``<stem>.<tag>-pytest-<version>.pyc``)."""
    tag = sys.implementation.cache_tag
    names = [f"{stem}.{tag}.pyc", f"{stem}.{tag}.opt-1.pyc", f"{stem}.{tag}.opt-2.pyc"]
    pytest_version = _pytest_version()
    if pytest_version:
        names.append(f"{stem}.{tag}-pytest-{pytest_version}.pyc")
    return tuple(names)


@functools.cache
def _pytest_version() -> str:
    """The installed pytest's version, or "" (none: no rewritten module either)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest")
    except PackageNotFoundError:
        return ""


def _replace(path: Path, *, directory: bool) -> None:
    """Put an empty file (or, with ``directory``, an empty directory) at ``path`` in place
    of whatever is there. Raises ``OSError``."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if directory:
        path.mkdir()
    else:
        with contextlib.suppress(FileExistsError):  # made by another child in between
            path.touch(exist_ok=False)


def _is_blocker(mirror: Path) -> bool:
    """Whether ``mirror`` is already an empty regular file (no link, nothing below it)."""
    try:
        st = mirror.lstat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


def prepare_prefix(prefix: str | None, *places: Any) -> None:
    """Before a sandboxed child starts, block the bytecode cache below the trees it will
    import from (as ``import_tree_from_source`` would in the child), since the child sees
    the prefix read-only; and compile the installed modules every child imports into it
    once (``warm_prefix``), since no sandboxed child can. ``places`` are paths, or objects
    with ``scratch``, ``writable`` and ``readable`` paths. Never raises: a child that finds
    no blocker makes a prefix of its own."""
    if not prefix:
        return
    warm_prefix(prefix)
    paths: list[Path] = []
    for place in places:
        if isinstance(place, str | os.PathLike):
            paths.append(Path(place))
        else:
            paths += [*place.writable, *place.readable]
    for path in paths:
        for root in {Path(os.path.realpath(path)), Path(os.path.abspath(path))}:  # noqa: PTH100
            try:
                block_below(prefix, root)
            except OSError:
                continue


# Imported, in a child of patchlane's own code, to fill the prefix: what every property,
# collection and run child imports before any code of the tree (pytest and its own modules,
# pluggy, Hypothesis, coverage.py, patchlane's child modules). The pytest plugins installed
# beside them are compiled, not imported: their import is the child's business.
_WARM = """
import importlib, importlib.metadata as md, importlib.util, compileall, pkgutil, sys
for name in sys.argv[1:]:
    try:
        module = importlib.import_module(name)
    except Exception:
        continue
    for info in pkgutil.walk_packages(getattr(module, "__path__", []), name + "."):
        if info.name.startswith(("_pytest.", "pluggy.")):
            try:
                importlib.import_module(info.name)
            except Exception:
                pass
for ep in md.entry_points(group="pytest11"):
    try:
        spec = importlib.util.find_spec(ep.value.split(":")[0].split(".")[0])
    except Exception:
        continue
    where = spec and (spec.submodule_search_locations or [spec.origin])
    for place in where or ():
        if place and place.endswith(".py"):
            compileall.compile_file(place, quiet=2)
        elif place:
            compileall.compile_dir(place, quiet=2)
try:
    import pytest
    print(importlib.util.cache_from_source(pytest.__file__))
except Exception:
    pass
"""
_WARM_MODULES = (
    "pytest", "_pytest", "pluggy", "hypothesis", "hypothesis.strategies", "coverage",
    "patchlane.child.properties", "patchlane.child.replay_run",
    "patchlane.child.replay_collect", "patchlane.pytest_plugin",
)  # fmt: skip


@functools.cache
def warm_prefix(prefix: str) -> None:
    """Compile what every child imports into ``prefix`` once per installed set (a marker
    file named by the interpreter, patchlane and the files of ``sys.path`` records it), in a
    child that runs only installed code (``_WARM``). Never raises."""
    import hashlib
    import subprocess

    stamp = hashlib.sha256(repr((sys.version, patchlane.__version__, _site_stamp())).encode())
    marker = Path(prefix, f"warm-{stamp.hexdigest()[:16]}")
    if _still_warm(marker):
        return
    env = {"PATH": os.defpath, "LC_ALL": "C.UTF-8", "PYTHONPYCACHEPREFIX": prefix}
    here = os.fspath(Path(patchlane.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = here
    try:
        proc = subprocess.run(
            [sys.executable, "-s", "-P", "-X", "utf8", "-c", _WARM, *_WARM_MODULES],
            env=env, cwd="/", capture_output=True, timeout=300, check=False,
        )  # fmt: skip
        # The marker names a file the warm child compiled (pytest's own bytecode): a prefix
        # whose contents went (a cleaner, a removed temporary directory) is warmed again.
        lines = proc.stdout.strip().splitlines()
        marker.write_bytes(b"pyc " + (lines[-1] if lines else b""))
    except (OSError, subprocess.TimeoutExpired):
        return


def _still_warm(marker: Path) -> bool:
    """Whether ``marker`` exists and the bytecode file it names (``pyc PATH``; ``pyc `` when
    no pytest is installed) is still there. An empty marker (an older patchlane's) is not."""
    try:
        kind, _, named = marker.read_bytes().decode("utf-8").partition(" ")
    except (OSError, UnicodeDecodeError):
        return False
    return kind == "pyc" and (not named or Path(named).is_file())


def _site_stamp() -> tuple[tuple[str, int], ...]:
    """The environment's library directories and their modification times (an install or
    removal changes them); not ``sys.path``, which differs from process to process."""
    import sysconfig

    paths = sysconfig.get_paths()
    seen = []
    for entry in sorted({paths["stdlib"], paths["purelib"], paths["platlib"]}):
        try:
            seen.append((entry, Path(entry).stat().st_mtime_ns))
        except OSError:
            continue
    return tuple(seen)


@functools.cache
def process_pycache() -> str:
    """Return the bytecode prefix for this process's children, creating it on first use.

    ``pycache/<cache tag>`` in patchlane's cache directory (``patchlane.infra.cache``), kept
    between runs, so that a gate's first child does not compile pytest, its plugins and
    Hypothesis again; when that cannot be made, a private ``mkdtemp`` directory removed
    at exit. Either way, the mirrors of the temporary trees this process's children
    blocked (``import_tree_from_source``) are removed at exit. Raises ``OSError`` only when
    no temporary directory can be made either.
    """
    # Here, not at the top: every child imports this module, and only the parent asks.
    from patchlane.infra.cache import default_cache

    try:
        path = default_cache() / "pycache" / sys.implementation.cache_tag
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError(f"{path}: not writable")
    except OSError:
        made = tempfile.mkdtemp(prefix="patchlane-pycache-")
        atexit.register(shutil.rmtree, made, ignore_errors=True)
        return made
    temp = Path(tempfile.gettempdir()).resolve()
    atexit.register(_prune, Path(path, *temp.parts[1:]), temp)
    return os.fspath(path)


def _prune(mirror: Path, real: Path) -> None:
    """Remove what the prefix holds below ``mirror`` (the mirror of the directory ``real``:
    the temporary directory, where this process's trees were), but for the bytecode of
    installed code that lives there (``_installed``: an environment made in a temporary
    directory is compiled once, not once per gate). Never raises."""
    keep = [d for d in _installed() if d == real or real in d.parents]
    if any(d == real for d in keep):
        return
    for entry in _entries(mirror):
        below = real / entry
        if any(d == below or below in d.parents for d in keep):
            _prune(mirror / entry, below)
            continue
        target = mirror / entry
        try:
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink()
        except OSError:
            continue
