"""Committed bytecode never runs (docs/architecture.md §2: committed bytecode is a control file).

A patch can commit bytecode that Python runs instead of the source beside it: a
``__pycache__/mod.cpython-311.pyc`` compiled with ``PycInvalidationMode.UNCHECKED_HASH`` is
loaded whatever ``mod.py`` says, and a sourceless ``mod.pyc`` (no ``mod.py``) is imported
directly. Three layers keep it from running:

- ``is_bytecode``: ``tree.materialise`` never writes such a path, so a tree made from a
  commit holds no bytecode at all;
- every child that imports the repository's code gets ``PYTHONPYCACHEPREFIX`` pointing at a
  private, fresh, empty directory (``lanes.property.process.private_pycache``), so no
  ``__pycache__`` in the tree is ever read (``-B`` alone stops writing, not reading);
- ``refuse_sourceless_imports``: a child that may run in a work tree (``patchlane replay
  run`` on a host) finds modules below the tree only as source (or extension modules), so a
  sourceless ``.pyc`` there is not importable either.
"""

from __future__ import annotations

import os
import sys
from importlib.abc import PathEntryFinder
from importlib.machinery import (
    EXTENSION_SUFFIXES,
    SOURCE_SUFFIXES,
    ExtensionFileLoader,
    FileFinder,
    SourceFileLoader,
)
from pathlib import Path

PYCACHE = "__pycache__"
# Lower-cased: a case-insensitive file system (macOS, Windows) imports ``MOD.PYC`` as well.
BYTECODE_SUFFIXES = (".pyc", ".pyo")
NEVER_MATERIALISED = "bytecode: never materialised"


def is_bytecode(path: str) -> bool:
    """Return whether the repository path ``path`` is bytecode Python could load: any path
    with a ``__pycache__`` component, or a name ending ``.pyc``/``.pyo`` (any case)."""
    lowered = path.lower()
    return lowered.endswith(BYTECODE_SUFFIXES) or PYCACHE in lowered.split("/")


def refuse_sourceless_imports(root: Path) -> None:
    """Make every directory at or below ``root`` importable from source only, from now on.

    A path hook is put first on ``sys.path_hooks``: for a directory inside ``root`` (after
    resolving links) it returns a ``FileFinder`` that knows source and extension modules but
    not sourceless bytecode; anything else falls through to the default hooks, so the
    installed packages import as usual. ``sys.path_importer_cache`` is cleared, so that no
    finder made before this call is used again. Call it before ``root`` goes on
    ``sys.path``. Returns ``None``; raises nothing.
    """
    real = os.path.realpath(root)
    inside = real.rstrip(os.sep) + os.sep
    source_only = FileFinder.path_hook(
        (ExtensionFileLoader, EXTENSION_SUFFIXES), (SourceFileLoader, SOURCE_SUFFIXES)
    )

    def hook(path: str) -> PathEntryFinder:
        # "" on sys.path is the working directory, as FileFinder reads it (and realpath).
        where = os.path.realpath(path)
        if where != real and not where.startswith(inside):
            raise ImportError("not below the tree: left to the default finders")
        return source_only(path)

    sys.path_hooks.insert(0, hook)
    sys.path_importer_cache.clear()
