"""The trees a property lane run reads: the head's code (built), the base's property
packages and the base's test files, materialised once before the plan; and the error for a
base file that cannot be read (the user's, never the patch's: docs/architecture.md §2).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from patchlane.errors import InputError
from patchlane.infra import git
from patchlane.infra.tree import materialise
from patchlane.inputs.paths import to_fs
from patchlane.lanes.property import discover, testplan
from patchlane.project.build import Build, run_build
from patchlane.project.classify import property_module_prefixes
from patchlane.project.config import PropertyLane, ReviewMap


@dataclass(frozen=True)
class Trees:
    """Where the code under test (head) and the base's property packages are on disk, what
    of the base's property packages could not be materialised (``(path, why)``), and where
    each module's top-level package really resolves at base (``base_places``, repository
    paths such as ``checks/``; see ``places``)."""

    repo: Path
    head_root: Path
    base_root: Path | None
    base: str | None
    head: str | None
    where: str
    base_skipped: tuple[tuple[str, str], ...] = ()
    base_places: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The base's versions of the test files the map names (``testplan``), if any.
    base_tests: Path | None = None


def materialise_trees(
    repo: Path, review_map: ReviewMap, base: str | None, head: str | None, scratch: Path
) -> Trees:
    """Materialise what the lane runs under ``scratch`` (nothing for the work tree, both
    ``None``) and return where it is. Raises ``GitError`` for an unknown revision."""
    if base is None and head is None:
        where = "no base, oracles from the work tree"
        return Trees(repo, repo.resolve(), None, None, None, where)
    head_commit = git.resolve_commit(repo, head or "HEAD")
    base_commit = git.resolve_commit(repo, base) if base is not None else None
    head_root = scratch / "head"
    materialise(repo, head_commit, head_root)
    _build_head(review_map, head_root)
    if base_commit is None:
        where = f"no base, oracles from head {head_commit[:12]}"
        return Trees(repo, head_root, None, None, head_commit, where)
    base_root, skipped, found = _materialise_base(repo, review_map, base_commit, scratch)
    base_tests = None
    if review_map.property is not None and review_map.property.tests:
        base_tests = base_root / testplan.BASE_DIR
        materialise(repo, base_commit, base_tests, testplan.base_paths(review_map.property))
    where = f"oracles from base {base_commit[:12]} and head {head_commit[:12]}"
    return Trees(
        repo, head_root, base_root, base_commit, head_commit, where, skipped, found, base_tests
    )


def _build_head(review_map: ReviewMap, root: Path) -> None:
    """Build the head's compiled code in ``root`` with the map's ``lanes.replay.build``, so
    that properties call the patch's extension, never a stale build (docs/architecture.md
    §2, "Compiled code"). A build that fails leaves the tree unbuilt: the replay lane
    judges that failure (against the base's build too), and a property that imports the
    extension errors meanwhile, which is never a pass. Raises nothing for what it does."""
    build = Build.of(review_map.replay)
    if build is not None:
        run_build(build, root, "head")


def _materialise_base(
    repo: Path, review_map: ReviewMap, commit: str, scratch: Path
) -> tuple[Path, tuple[tuple[str, str], ...], dict[str, tuple[str, ...]]]:
    """Write the base's property packages to ``scratch/base``. Return that root, what was
    not materialised (``(path, why)``) and, per module, the places where its top-level
    package really resolves at base (``places``; none for a module the base lacks).

    Where a module lives is only known by looking: first every candidate built from the
    module names is written (each name under every import root), and each module is
    located there in the child's ``sys.path`` order of roots. The base tree must hold
    nothing else: its roots go on ``sys.path`` ahead of the head's, so a candidate that is
    not where the module resolves (``src/checks/`` beside the property package
    ``checks/``) or a package refused for holding code under test would put the base's
    code where the head's belongs. When the candidates hold more than the places of the
    modules that may run from the base, the tree is written again with only those.
    """
    lane = review_map.property
    assert lane is not None  # noqa: S101 - the lane runs only with a property lane
    candidates = property_module_prefixes(review_map)
    if not candidates:  # no property module (only tests the map names): an empty tree
        (scratch / "base").mkdir()
        return scratch / "base", (), {}
    probe_root = scratch / "base-candidates"
    probe = materialise(repo, commit, probe_root, candidates)
    # A module the base does not hold has no base version to refuse (nor to run): the
    # checks for a missing base module apply to it instead.
    roots = discover.search_roots(probe_root, lane)
    found = {
        module: places(probe_root, lane, module)
        if discover.find_module_file(module, roots) is not None
        else ()
        for module in lane.modules
    }
    keep = sorted(
        {
            place
            for at in found.values()
            if not discover.overlapping_prefixes(lane, at)
            for place in at
        }
    )
    present = {c for c in candidates if os.path.lexists(to_fs(probe_root, c))}
    base_root = scratch / "base"
    if present <= set(keep):
        probe_root.rename(base_root)  # in-tree links are relative: they survive the move
        return base_root, probe.skipped, found
    if not keep:
        base_root.mkdir()
        return base_root, probe.skipped, found
    narrow = materialise(repo, commit, base_root, keep)
    skipped = tuple(dict.fromkeys((*probe.skipped, *narrow.skipped)))
    return base_root, skipped, found


def places(root: Path, lane: PropertyLane, module: str) -> tuple[str, ...]:
    """Return the repository paths where ``module``'s top-level package (or module)
    resolves in the tree at ``root``, its import roots searched in the child's ``sys.path``
    order (``discover.top_level_places``): ``checks/`` for a package directory,
    ``props.py`` for a module, each portion of a namespace package, and for an in-tree
    symlink also the path it resolves to (its bytes are what runs). ``""`` stands for the
    whole tree. Empty when the tree holds nothing of that name."""
    real_root = Path(os.path.realpath(root))
    out: dict[str, None] = {}
    for place in discover.top_level_places(module, discover.search_roots(root, lane)):
        suffix = "/" if place.is_dir() else ""
        for path, within in ((place, root), (Path(os.path.realpath(place)), real_root)):
            if path.is_relative_to(within):
                rel = path.relative_to(within).as_posix()
                out.setdefault("" if rel == "." else rel + suffix)
    return tuple(out)


def base_broken(trees: Trees, file: str, what: str, error: str, line: int | None) -> InputError:
    """Return the error for the base's version of a property module or test file (``what``)
    that cannot be read, parsed or imported (``error``, at ``file``:``line``): the base is
    the user's, not the patch's (docs/architecture.md §2), and no patch can be judged by an
    oracle that does not parse (exit 2, the file and line named)."""
    where = f"{file}:{line}" if line else file
    detail = error.removeprefix(f"{where}: ").removeprefix(f"{file}: ")
    base = (trees.base or "")[:12]
    return InputError(
        file,
        f"{detail} ({what} at the base {base}, as the base's review map names it: fix "
        "it there; every patch is judged by it)",
        line,
    )
