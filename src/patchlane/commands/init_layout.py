"""What ``patchlane init`` finds in a repository: the code's paths and the default branch.

The code is what a property lane's ``paths`` cover: the packages and modules under ``src/``
(the src layout) or, without them, the top-level packages and single modules (the flat
layout: ``pkg/__init__.py`` or ``mymod.py`` next to ``tests/``). Tests, the property
module's package, build scripts and documentation folders are not code under test.

The default branch (``default_base``) is what every command's ``--base`` defaults to:
``origin/HEAD``'s branch (the local one of that name when it exists), else a local
``main``, else ``master``; a repository with only ``master`` is never told ``origin/main``.
The printed ``next:`` command names the branch the user is on, where the scaffold is
committed, and spells ``--base`` out only when that is not the default.
"""

from __future__ import annotations

import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane.infra import git
from patchlane.infra.ui import show

if TYPE_CHECKING:
    from patchlane.infra.ui import Output

# Top-level folders that hold a package's helpers, not the code under test.
NOT_CODE_DIRS = frozenset(
    {
        "tests", "test", "testing", "checks", "docs", "doc", "examples", "example",
        "benchmarks", "bench", "scripts", "tools", "build", "dist", "site-packages",
    }
)  # fmt: skip
# Top-level modules that configure, build or run a project rather than being its code.
NOT_CODE_MODULES = frozenset(
    {
        "setup", "conftest", "noxfile", "tasks", "fabfile", "manage", "sitecustomize",
        "usercustomize", "__init__", "__main__",
    }
)  # fmt: skip

# How many namespace folders deep (``src/a/b/pkg/``) init looks for packages.
NAMESPACE_DEPTH = 3

DEFAULT_SEED = 20260924
DEFAULT_CASES = 200


@dataclass(frozen=True)
class Base:
    """The branch ``--base`` names and how it was found (for the note)."""

    ref: str
    how: str
    found: bool


def _kind(path: Path) -> str:
    # lstat: a symlinked folder or file could point out of the repository.
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return ""
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else ""


def _is_test_module(stem: str) -> bool:
    return stem.startswith("test_") or stem.endswith("_test")


def _code_in(folder: Path, prefix: str, skip: frozenset[str], *, in_src: bool) -> list[str]:
    """Return ``PREFIX NAME/`` for each package and ``PREFIX NAME.py`` for each module, and
    the packages inside each namespace package (a folder without ``__init__.py``:
    ``_namespace``)."""
    if _kind(folder) != "dir":
        return []
    found = []
    for child in sorted(folder.iterdir(), key=lambda p: p.name):
        kind = _kind(child)
        name = child.name
        if kind == "dir" and name.isidentifier() and name not in skip:
            if _kind(child / "__init__.py") == "file":
                found.append(f"{prefix}{name}/")
            elif in_src:
                found.extend(_namespace(child, f"{prefix}{name}/", NAMESPACE_DEPTH))
        elif kind == "file" and name.endswith(".py"):
            stem = name[:-3]
            if stem.isidentifier() and stem not in NOT_CODE_MODULES and not _is_test_module(stem):
                found.append(f"{prefix}{name}")
    return found


def _namespace(folder: Path, prefix: str, depth: int) -> list[str]:
    """The code in a folder of ``src/`` without ``__init__.py`` (a PEP 420 namespace
    package such as ``src/ns/`` holding ``src/ns/pkg/``): the folder itself when it holds
    modules of its own; else every regular package below it (``PREFIX pkg/``), through at
    most ``depth`` namespace levels. Only under ``src/``: at the top level a folder without
    ``__init__.py`` is as often scripts or data as a namespace."""
    if depth <= 0:
        return []
    children = sorted(folder.iterdir(), key=lambda p: p.name)
    if any(
        _kind(c) == "file"
        and c.name.endswith(".py")
        and c.name[:-3].isidentifier()
        and not _is_test_module(c.name[:-3])
        for c in children
    ):
        return [prefix]
    found = []
    for child in children:
        name = child.name
        if _kind(child) != "dir" or not name.isidentifier() or name in NOT_CODE_DIRS:
            continue
        if _kind(child / "__init__.py") == "file":
            found.append(f"{prefix}{name}/")
        else:
            found.extend(_namespace(child, f"{prefix}{name}/", depth - 1))
    return found


def find_code_paths(repo: Path, property_package: str = "checks") -> tuple[str, ...]:
    """Return the repo-relative paths of the code a property lane covers.

    ``src/NAME/`` and ``src/NAME.py`` when ``src/`` holds any (the packages of a namespace
    package ``src/ns/`` as ``src/ns/pkg/``); otherwise the top-level packages (``NAME/``
    with an ``__init__.py``) and modules (``NAME.py``), leaving out tests, ``property_package`` (the property module's
    own package), build scripts and documentation folders. Directories end in ``/``.
    """
    in_src = _code_in(repo / "src", "src/", NOT_CODE_DIRS, in_src=True)
    if in_src:
        return tuple(in_src)
    return tuple(_code_in(repo, "", NOT_CODE_DIRS | {property_package}, in_src=False))


def _exists(repo: Path, ref: str) -> bool:
    return git.run(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode == 0


def default_base(repo: Path) -> Base:
    """Return the branch patches are judged against when no ``--base`` is given, the one
    function ``init``'s ``next:`` line and every command's ``--base`` default share.

    ``origin/HEAD``'s branch, as the local branch of that name when there is one (the
    scaffold, and every fix, is committed there before it is pushed; ``origin/X`` lacks it
    until then), else ``origin/X`` itself; else a local ``main``, else ``master``; else
    the current branch with ``found`` false (no default: a command asks for ``--base``)."""
    proc = git.run(repo, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    target = proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""
    if target and _exists(repo, f"refs/remotes/{target}"):
        local = target.split("/", 1)[1] if "/" in target else ""
        if local and _exists(repo, f"refs/heads/{local}"):
            return Base(local, f"the local branch of origin/HEAD ({target})", True)
        return Base(target, "origin/HEAD points at it", True)
    for name in ("main", "master"):
        if _exists(repo, f"refs/heads/{name}"):
            return Base(name, f"the local branch {name}", True)
    current = current_branch(repo)
    return Base(current or "HEAD", "the current branch", False)


def current_branch(repo: Path) -> str | None:
    """Return the short name of the branch HEAD is on, ``None`` on a detached HEAD."""
    proc = git.run(repo, "symbolic-ref", "--quiet", "--short", "HEAD")
    current = proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""
    return current or None


def scaffold_base(repo: Path) -> Base:
    """Return the branch ``init``'s ``next:`` line names: the branch the user is on (where
    the scaffold gets committed), else (a detached HEAD) ``default_base``."""
    current = current_branch(repo)
    if current is None:
        return default_base(repo)
    default = default_base(repo)
    if default.found and default.ref == current:
        return default
    return Base(current, "the current branch", default.found)


def gate_command(base: str | None) -> str:
    """Return the ``patchlane gate`` command line the ``next:`` line prints, quoted for a
    POSIX shell: ``--base`` only when ``base`` is not the default the gate finds itself
    (``None``), and ``--replay local`` so that it can reach a verdict on its own. No
    ``--seed``: the map ``init`` writes always holds one (``lanes.property.seed``, else
    ``lanes.replay.seed``)."""
    argv = ["patchlane", "gate", *(["--base", base] if base is not None else [])]
    return shlex.join([*argv, "--replay", "local"])


def next_command(repo: Path) -> tuple[Base, str]:
    """Return the base branch and the gate command ``init`` proposes for ``repo``."""
    base = scaffold_base(repo)
    default = default_base(repo)
    given = None if default.found and default.ref == base.ref else base.ref
    return base, gate_command(given)


def say_next(out: Output, repo: Path, map_label: str) -> None:
    """Print the ``next:`` line: everything after ``run:`` is a command that works as
    printed once the scaffold is committed on the branch it names and a patch is committed
    on a branch of its own."""

    base, command = next_command(repo)
    if not base.found:
        out.say(
            "note: no origin/HEAD, main or master branch: --base below is the current "
            f"branch {show(base.ref)}; give the branch patches are judged against"
        )
    out.say(
        f"next: review {show(map_label)} and commit the scaffold to {show(base.ref)}; then, "
        f"with a patch committed on a branch, run: {command}"
    )
