"""What the project's own pytest collects, by the base's configuration (docs/architecture.md §2).

The full suite is what ``pytest`` collects at the tree root: inside its ``testpaths`` (the
whole tree when there are none), every test module by its ``python_files`` and every text
doctest by its ``--doctest-glob`` patterns (pytest's default ``test*.txt`` besides). A file
the suite collects is a test file, whatever the review map says of it: an ``ignore`` entry
("prose only") never covers one, since a patch that edits a doctest's expected output with
the bug that output shows would otherwise change its own judge unseen.

The base decides, as everywhere: its configuration, read from the commit (nothing runs).
Where the rules cannot be read exactly (a glob in ``testpaths``, configuration files pytest
might not pick) they widen: more files are test files, never fewer.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from patchlane.infra import git
from patchlane.inputs.paths import under
from patchlane.project import harness
from patchlane.project.testmodules import DEFAULT_PATTERNS, ModulePatterns
from patchlane.project.unmaterialised import (
    DEFAULT_DOCTEST_GLOB,
    doctest_glob_of,
    doctest_globs_of,
)

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Collects:
    """The base's answer to "does the project's pytest collect this file?".

    ``modules``: its ``python_files``; ``doctest_globs``: its text doctest patterns;
    ``testpaths``: where collection starts (``()``: the whole tree).
    """

    modules: ModulePatterns = DEFAULT_PATTERNS
    doctest_globs: tuple[str, ...] = (DEFAULT_DOCTEST_GLOB,)
    testpaths: tuple[str, ...] = ()

    def why(self, path: str) -> str | None:
        """Return why pytest collects the repository file ``path`` (one phrase), or
        ``None`` when it does not."""
        if not self.inside(path):
            return None
        if self.modules.is_test_module(path):
            return f"a test module by python_files ({' '.join(self.modules.python_files)})"
        glob = doctest_glob_of(path, self.doctest_globs)
        if glob is not None:
            return f"a text doctest by --doctest-glob {glob}"
        return None

    def is_test_file(self, path: str) -> bool:
        """Whether pytest collects ``path`` (``why`` is not ``None``)."""
        return self.why(path) is not None

    def inside(self, path: str) -> bool:
        """Whether ``path`` lies where collection reaches (under a ``testpaths`` entry)."""
        if not self.testpaths:
            return True
        for entry in self.testpaths:
            if _GLOB_CHARS & set(entry):
                # pytest expands a glob entry; ``*`` here also crosses ``/``: wider.
                if fnmatch.fnmatchcase(path, entry) or fnmatch.fnmatchcase(path, entry + "/*"):
                    return True
            elif under(path, entry):
                return True
        return False


def collects(repo: Path, snap: harness.Snapshot) -> Collects:
    """Return what pytest collects in the commit ``snap`` by that commit's configuration
    (the file pytest would use for ``python_files`` and ``testpaths``; every root file's
    ``addopts`` for ``--doctest-glob``). Raises ``GitError``."""
    options = harness.chosen_options(repo, snap)

    def read(name: str) -> bytes | None:
        entry = snap.files.get(name)
        if entry is None or entry.mode not in git.REGULAR_MODES:
            return None
        (data,) = git.read_blobs(repo, [entry.oid])
        return data

    paths = [_normal(p) for p in harness.option_words(options, "testpaths")]
    if "" in paths or not any(_reaches(snap, p) for p in paths):
        paths = []  # the root itself, or nothing there: pytest collects from the root
    return Collects(
        modules=harness.module_patterns(repo, snap),
        doctest_globs=doctest_globs_of(read),
        testpaths=tuple(paths),
    )


def collects_at(repo: Path, commit: str) -> Collects:
    """``collects`` of ``commit`` (one ``git ls-tree``). Raises ``GitError``."""
    return collects(repo, harness.snapshot(repo, commit))


def _normal(entry: str) -> str:
    """A ``testpaths`` entry as a repository path (``./tests/`` -> ``tests``; ``.`` -> "")."""
    while entry.startswith("./"):
        entry = entry[2:]
    entry = entry.rstrip("/")
    return "" if entry in (".", "") else entry


def _reaches(snap: harness.Snapshot, entry: str) -> bool:
    """Whether a ``testpaths`` entry names anything the commit holds."""
    if _GLOB_CHARS & set(entry):
        return any(
            fnmatch.fnmatchcase(p, entry) or fnmatch.fnmatchcase(p, entry + "/*")
            for p in snap.files
        )
    return any(under(p, entry) for p in snap.files)
