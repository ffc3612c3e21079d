"""The code under test is the tree under judgement (docs/architecture.md §2).

A test run in a checkout of the head imports the project as the environment has it
installed: an editable install (a ``.pth`` path, or setuptools' ``__editable__`` import hook)
maps the project's packages to the user's work tree, a regular install to site-packages,
another clone's editable install to that clone. In each case ``import pkg`` would run code
that is not the tree being judged, and the replay would pass the base's code (or an old
install) off as the head's. So, before a sandboxed test child starts:

- ``project_names``: the names the tree makes importable (packages and modules at its root
  and under ``src/``; below a namespace directory of ``src/``, its children);
- ``presentation``: where the environment would import each of them from, asked of this
  interpreter in a child that runs no project code (``_PROBE``: ``site`` without
  ``sitecustomize``, then ``importlib.util.find_spec`` on top-level names; a namespace's
  portion is looked up without importing anything), and the tree's copy of each bound
  read-only over each such place that is not the tree itself (``sandbox.Presentation``).

The child records where every module of those names came from (``child.origins``), and
``foreign`` reads that record through the mounts: a project module from anywhere else makes
the run no evidence (``ForeignCode``), never a pass. Without the kernel sandbox no mount can
be made, and that record is what catches it.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from patchlane.infra.sandbox import Presentation, repository_of

# The machinery that judges: imported by the run child before any code of the tree, so a
# tree that holds one of them (pytest's own repository) is never shown in its place; its
# modules then come from outside the tree, and the run says so.
MACHINERY = frozenset({"patchlane", "pytest", "_pytest", "pluggy", "py"})
# Where a project's modules live: its root (a flat layout) and ``src/`` (a src layout).
_SRC = "src"
_PROBE_TIMEOUT_S = 60.0

# Runs in a child of this interpreter with the test run's environment: the site directories
# and their ``.pth`` files as a normal start has them (editable installs are ``.pth`` paths
# or import hooks installed by a ``.pth``), but neither ``sitecustomize`` nor
# ``usercustomize``, which a ``PYTHONPATH`` entry in a work tree could hold. ``find_spec`` of
# a top-level name imports nothing; a dotted name's parent is asked only when it is a
# namespace, and its portion found by ``PathFinder`` without importing the parent.
_PROBE = r"""
import importlib.machinery, importlib.util, json, os, site, sys
site.execsitecustomize = site.execusercustomize = lambda: None
site.main()
found = {}
for name in sys.argv[1:]:
    head, _, tail = name.partition(".")
    try:
        spec = importlib.util.find_spec(head)
        if spec is not None and tail:
            if spec.origin is None and spec.submodule_search_locations is not None:
                spec = importlib.machinery.PathFinder.find_spec(
                    name, list(spec.submodule_search_locations))
            else:
                spec = None
    except Exception:
        continue
    if spec is None or not spec.has_location or not spec.origin:
        continue
    origin = os.path.abspath(spec.origin)
    if spec.submodule_search_locations is not None:
        origin = os.path.dirname(origin)
    found[name] = origin
sys.stdout.write(json.dumps(found))
"""


class ProbeError(Exception):
    """The probe child could not say where the environment imports the project's names."""


def project_names(tree: Path) -> dict[str, Path]:
    """Return the importable names the tree provides, each with its copy in the tree (a
    package directory or a module file): the regular packages and modules directly under
    ``src/`` and at the root (``src/`` first: a src layout's package is that one), and the
    regular packages and modules directly inside a namespace directory of ``src/`` (as
    ``ns.child``). Links are left out: they are not the tree's own files. Never raises."""
    found: dict[str, Path] = {}
    for root, nested in ((tree / _SRC, True), (tree, False)):
        for entry in _entries(root):
            name = _module_name(entry)
            if name is not None:
                found.setdefault(name, entry)
            elif nested and entry.is_dir() and entry.name.isidentifier():
                for child in _entries(entry):
                    child_name = _module_name(child)
                    if child_name is not None:
                        found.setdefault(f"{entry.name}.{child_name}", child)
    return found


def _entries(directory: Path) -> list[Path]:
    if directory.is_symlink() or not directory.is_dir():
        return []
    try:
        return sorted(Path(e.path) for e in os.scandir(directory) if not e.is_symlink())
    except OSError:
        return []


def _module_name(entry: Path) -> str | None:
    """The module name ``entry`` is importable as (a regular package, a ``.py`` module), or
    ``None``."""
    if entry.is_dir():
        ok = entry.name.isidentifier() and (entry / "__init__.py").is_file()
        return entry.name if ok else None
    return entry.stem if entry.suffix == ".py" and entry.stem.isidentifier() else None


def presentation(
    tree: Path, env: Mapping[str, str], *, sandboxed: bool, writable: bool = True
) -> Presentation:
    """Return how a test child in ``tree`` sees it (``sandbox.Presentation``): at the user's
    repository path when ``tree`` is a checkout of it (``sandbox.judged``), else in place;
    with each project name's copy bound over where the environment ``env`` would import it
    from. Without the sandbox (``sandboxed`` false) nothing can be mounted: the tree stays
    where it is, and only the names are given, for the check. Raises ``ProbeError`` when
    the environment cannot be asked."""
    names = project_names(tree)
    if not sandboxed:
        return Presentation(tree, tree, writable, (), tuple(sorted(names)))
    at = repository_of(tree) or tree
    shown = Presentation(tree, at, writable, (), tuple(sorted(names)))
    wanted = tuple(sorted(n for n in names if n.split(".", 1)[0] not in MACHINERY))
    # From the tree only when a relative ``PYTHONPATH`` entry makes the answer depend on
    # it: else one probe serves every tree of a gate.
    relative = any(
        p and not Path(p).is_absolute() for p in env.get("PYTHONPATH", "").split(os.pathsep)
    )
    cwd = os.fspath(tree) if relative else os.sep
    places = installed_at(wanted, _probe_env(env), cwd) if wanted else {}
    over: list[tuple[Path, Path]] = []
    for name, place in sorted(places.items()):
        copy = names[name]
        dest = Path(place)
        if shown.from_tree(place) or copy.is_dir() != dest.is_dir():
            # The tree's already (below ``at``), or of another kind (an extension module
            # where the tree has source): no mount can stand for it; the record tells.
            continue
        over.append((copy, dest))
    return Presentation(tree, at, writable, tuple(over), shown.names)


# Set per run and read by no finder: left out, so that one probe serves a whole gate.
_PER_RUN = frozenset({"PYTHONHASHSEED", "PATCHLANE_SEED"})


def _probe_env(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in env.items() if k not in _PER_RUN))


@functools.cache
def installed_at(
    names: tuple[str, ...], env: tuple[tuple[str, str], ...], cwd: str
) -> dict[str, str]:
    """Where this interpreter, started with ``env`` from ``cwd``, would import each of
    ``names`` from (a package's directory, a module's file; absent: not importable, or a
    namespace), asked once per process (``_PROBE``). Raises ``ProbeError``."""
    try:
        proc = subprocess.run(
            [sys.executable, "-S", "-P", "-c", _PROBE, *names],
            env=dict(env), cwd=cwd, capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ProbeError(f"cannot ask where the project is installed: {e}") from e
    try:
        found = json.loads(proc.stdout.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        found = None
    if proc.returncode != 0 or not isinstance(found, dict):
        said = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        last = said[-1] if said else f"exit {proc.returncode}"
        raise ProbeError(f"cannot ask where the project is installed: {last[:200]}")
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def foreign(origins: Mapping[str, object], shown: Presentation) -> list[str]:
    """Return, for each module of a project name whose recorded origin (``child.origins``:
    a file, or a namespace's directories, as the child sees them) is not the tree's
    (``Presentation.from_tree``), one line naming it and where it came from; sorted, empty
    when every project module is the tree's."""
    names = shown.names
    found: list[str] = []
    for module, where in sorted(origins.items()):
        if not any(module == n or module.startswith(n + ".") for n in names):
            continue
        paths = [where] if isinstance(where, str) else where if isinstance(where, list) else []
        for path in paths:
            if isinstance(path, str) and Path(path).is_absolute() and not shown.from_tree(path):
                found.append(f"{module} from {path}")
                break
    return found


def describe(found: list[str]) -> str:
    """One line for the report: which project modules came from outside the tree."""
    shown = "; ".join(found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
    return (
        f"the tests imported the project from outside the tree under judgement ({shown}): "
        "the run says nothing about the tree's code"
    )
