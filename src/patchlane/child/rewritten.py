"""pytest's rewritten test modules, made by patchlane and read by the test process.

pytest rewrites the ``assert`` statements of every test module and ``conftest.py`` it
imports. The replay's test process never reads pytest's own cache of them below the tree
(``replay_run._no_rewritten_bytecode_below``: one planted there would run instead of the
test), so every run rewrote every test module again: a fifth of a gate's processor time,
and more than a quarter of a dependency map's recording, on boltons.

The gate's own process, which runs no code of the tree (parsing and rewriting a module's
syntax tree runs none of it), writes the rewritten code into a store in patchlane's cache
(``lanes.replay.rewritten``), one file per ``key``: the module's bytes and the path the test
process sees it at. The test process is given the store read-only and takes a module's code
from it only under the key of the bytes it reads itself; any other module, or a key not
there, is rewritten by pytest as before. Standard library only.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import types
from pathlib import Path

# Bumped when what a stored file holds changes.
FORMAT = "1"


def key(shown: str, source: bytes) -> str:
    """The store's file name for the module at ``shown`` (the path the test process sees)
    with the bytes ``source``."""
    digest = hashlib.sha256()
    digest.update(FORMAT.encode() + b"\0" + os.fsencode(shown) + b"\0")
    digest.update(source)
    return digest.hexdigest() + ".code"


def stored(store: str, source: Path) -> types.CodeType | None:
    """The rewritten code of the module at ``source`` (as this process sees it) from
    ``store``, under the key of the bytes read now, or ``None``. Never raises."""
    try:
        data = source.read_bytes()
        with open(os.path.join(store, key(os.fspath(source), data)), "rb") as f:  # noqa: PTH118, PTH123
            code = marshal.load(f)  # noqa: S302 - written by patchlane alone, read-only here
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None
