"""Where ``patchlane init`` finds a project's tests: the map's ``replay.tests`` roots.

The project's own pytest configuration says it first: the ``testpaths`` of the file pytest
would use (``harness.chosen_options``, read from the current commit), each entry that names
something in the work tree (pluggy's ``testing``). Without one, the test modules are found
where they are (its ``python_files``, pytest's ``test_*.py``/``*_test.py`` by default):
a top-level folder that holds any (``tests/``, ``testing/``, ``test/``), a test module at the
top level (``test_app.py``, named alone), and a code package holding test folders inside
it (networkx's ``networkx/algorithms/tests/``: the package is the root). Hidden folders,
virtual environments, build output, documentation, examples and benchmarks are not searched,
and links are not followed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from patchlane.commands.init_given import SKIP_DIRS
from patchlane.commands.init_layout import find_code_paths
from patchlane.errors import PatchlaneError
from patchlane.infra import git
from patchlane.project.testmodules import ModulePatterns

# Folders whose test-named files are not the suite (pytest collects them only when asked).
NOT_TEST_DIRS = frozenset({"docs", "doc", "examples", "example", "benchmarks", "bench"})
# Bounds that keep init quick on a large repository.
MAX_FILES = 20000
DEFAULT_ROOT = "tests/"


def _kind(path: Path) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return ""
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else ""


def _pytest_options(repo: Path) -> dict[str, object] | None:
    """The options of the pytest configuration file the current commit holds (``None``:
    no commit yet, or none configures pytest)."""
    from patchlane.project import harness

    try:
        head = git.resolve_commit(repo, "HEAD")
        return harness.chosen_options(repo, harness.snapshot(repo, head))
    except PatchlaneError:
        return None


def configured_roots(repo: Path, options: dict[str, object] | None) -> tuple[str, ...]:
    """The ``testpaths`` entries that name a folder (``NAME/``) or a file in the work tree,
    in their order (globs and the root itself are not roots: they are left to the walk)."""
    from patchlane.project import harness

    found: list[str] = []
    for entry in harness.option_words(options, "testpaths"):
        while entry.startswith("./"):
            entry = entry[2:]
        entry = entry.rstrip("/")
        if entry in ("", ".") or set(entry) & set("*?[") or ".." in entry.split("/"):
            continue
        kind = _kind(repo.joinpath(*entry.split("/")))
        if kind == "dir":
            found.append(entry + "/")
        elif kind == "file":
            found.append(entry)
    return tuple(dict.fromkeys(found))


def _test_files(repo: Path, patterns: ModulePatterns) -> list[str]:
    """The repository paths of the test modules in the work tree, in walk order."""
    found: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(repo):
        top = Path(dirpath) == repo
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in SKIP_DIRS
            and not (top and d in NOT_TEST_DIRS)
            and _kind(Path(dirpath, d)) == "dir"
        )
        for name in sorted(filenames):
            seen += 1
            if seen > MAX_FILES:
                return found
            rel = Path(dirpath, name).relative_to(repo).as_posix()
            if patterns.is_test_module(rel) and _kind(Path(dirpath, name)) == "file":
                found.append(rel)
    return found


def find_test_roots(repo: Path, code_paths: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Return the ``replay.tests`` roots (folders end in ``/``): the configured
    ``testpaths`` that exist, else where the test modules are (see the module's doc), else
    ``tests/``. ``code_paths`` are the code's paths (default: ``find_code_paths``); a test
    module inside one of its packages makes that package the root."""
    from patchlane.project import harness

    options = _pytest_options(repo)
    configured = configured_roots(repo, options)
    if configured:
        return configured
    code = code_paths if code_paths is not None else find_code_paths(repo)
    packages = [c for c in code if c.endswith("/")]
    words = harness.option_words(options, "python_files")
    patterns = ModulePatterns(words) if words else ModulePatterns()
    roots: dict[str, None] = {}
    for path in _test_files(repo, patterns):
        owner = next((c for c in packages if path.startswith(c)), None)
        if owner is not None:
            roots.setdefault(owner)
        elif "/" in path:
            roots.setdefault(path.split("/", 1)[0] + "/")
        else:
            roots.setdefault(path)
    return tuple(sorted(roots)) or (DEFAULT_ROOT,)


def registry_folder(roots: tuple[str, ...], code_paths: tuple[str, ...]) -> str:
    """The folder the freeze registry goes in: the first test root that is a folder of
    its own (not a code package), else ``tests/``."""
    for root in roots:
        if root.endswith("/") and root not in code_paths:
            return root
    return DEFAULT_ROOT
