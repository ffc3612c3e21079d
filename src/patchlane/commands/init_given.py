"""What ``patchlane init`` proposes for a project's existing Hypothesis tests.

A project that already has ``@given`` tests need not rewrite them as ``prop_*`` functions:
the property lane runs them (``lanes.property.tests``). ``init`` looks for them cheaply: it
walks the repository's pytest test files (``test_*.py``, ``*_test.py``; hidden folders,
virtual environments and build output skipped, links not followed), reads only those that
mention both ``hypothesis`` and ``given``, and parses those with ``ast``
(``pytests.scan``); nothing is imported. It proposes the files (not each node id): a
``@given`` test added to such a file later runs too, and the report lists the file's other
tests as skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

from patchlane.child import pytests

# Folders never searched: not the project's tests.
SKIP_DIRS = frozenset(
    {"node_modules", "site-packages", "venv", "env", "build", "dist", "__pycache__"}
)
# Bounds that keep init quick on a large repository.
MAX_FILES = 5000
MAX_BYTES = 1 << 20


def find_given_test_files(repo: Path) -> tuple[str, ...]:
    """Return the repository paths of the test files that define a ``@given`` test, in
    path order (at most ``MAX_FILES`` test files are read)."""
    found: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(repo):
        # ``os.walk`` does not follow links to folders.
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(filenames):
            if not pytests.is_test_file(name):
                continue
            seen += 1
            if seen > MAX_FILES:
                return tuple(found)
            path = Path(dirpath, name)
            rel = path.relative_to(repo).as_posix()
            if _defines_given(path, rel):
                found.append(rel)
    return tuple(sorted(found))


def _defines_given(path: Path, rel: str) -> bool:
    if path.is_symlink():
        return False
    try:
        if path.stat().st_size > MAX_BYTES:
            return False
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if not pytests.mentions_given(text):
        return False
    try:
        return bool(pytests.scan(text, rel).given)
    except SyntaxError:
        return False
