"""What the base's configuration calls a test module, and which files are the suite's.

``ModulePatterns`` (pytest's ``python_files``, read from the base: ``project.harness``),
``is_suite_path`` (a test module, a conftest, or a file under a ``replay.tests`` root that
belongs to the suite: docs/architecture.md §4, "Which file is a test") and ``conftests``
(the ``conftest.py`` files pytest loads for a test file). The classification, the harness
and what the base collects read them; the replay lane's static rules build on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from patchlane.inputs.paths import under

CONFTEST = "conftest.py"

# pytest's own default ``python_files``: what a test module is when the configuration
# sets nothing.
DEFAULT_PYTHON_FILES = ("test_*.py", "*_test.py")


@dataclass(frozen=True)
class ModulePatterns:
    """What the base's pytest configuration says a test module is (``python_files``),
    read from the base commit (``project.harness.module_patterns``), never from the patch's.
    (Where the suite lives, ``testpaths``, the collection children ask pytest itself.)"""

    python_files: tuple[str, ...] = DEFAULT_PYTHON_FILES

    def is_test_module(self, path: str) -> bool:
        """Whether pytest collects the ``.py`` file ``path`` as a test module under these
        patterns, with pytest's semantics (``fnmatch_ex``): a pattern without ``/`` matches
        the basename, one with ``/`` the path (any leading part). Never ``conftest.py``."""
        name = path.rsplit("/", 1)[-1]
        if not name.endswith(".py") or name == CONFTEST:
            return False
        for pattern in self.python_files:
            if "/" in pattern:
                if fnmatchcase("/" + path, pattern if pattern.startswith("/") else "*/" + pattern):
                    return True
            elif fnmatchcase(name, pattern):
                return True
        return False


DEFAULT_PATTERNS = ModulePatterns()


def is_test_module(path: str, patterns: ModulePatterns = DEFAULT_PATTERNS) -> bool:
    """Whether ``path`` is a test module under ``patterns`` (the base's configuration;
    pytest's defaults, ``test_*.py`` and ``*_test.py``, when it sets nothing)."""
    return patterns.is_test_module(path)


# Folder names that hold a suite's own helpers and data beside its test modules.
_SUITE_FOLDERS = ("test", "tests", "testing")


def is_suite_path(path: str, roots: tuple[str, ...], patterns: ModulePatterns) -> bool:
    """Whether ``path`` belongs to the test suite rather than to the code under test
    (docs/architecture.md §4, "Which file is a test"): a test module by the base's
    ``python_files``, a ``conftest.py``, or a file under a ``replay.tests`` root that is
    the root itself, is named ``test*`` (a text doctest by pytest's default glob), lies in
    a folder named like a suite's (``tests``, ``test*``), or under a root so named.

    Anything else under a root is source: a project whose tests live inside its package
    (``replay.tests: [networkx]``) names the package as the root, and its modules are
    code the tests judge, not tests. A helper there that holds expectations is still
    judged by the tests that import it, as any source module is."""
    name = path.rsplit("/", 1)[-1]
    if name == CONFTEST or patterns.is_test_module(path):
        return True
    for root in roots:
        if not under(path, root):
            continue
        if path == root.rstrip("/") or name.lower().startswith("test"):
            return True  # a root that is the file itself; a test* file (``test*.txt``)
        rel = path[len(root.rstrip("/")) :].lstrip("/") if root not in ("", ".", "./") else path
        folders = [p for p in root.strip("/").split("/") if p not in ("", ".")]
        folders += rel.split("/")[:-1]
        if any(f.lower().startswith(_SUITE_FOLDERS) for f in folders):
            return True
    return False


def conftests(test_file: str, sources: dict[str, bytes]) -> list[str]:
    """Return the ``conftest.py`` files pytest loads for ``test_file`` (root first)."""
    parts = test_file.split("/")[:-1]
    out = []
    for i in range(len(parts) + 1):
        candidate = "/".join([*parts[:i], CONFTEST])
        if candidate in sources:
            out.append(candidate)
    return out
