"""Materialise a commit's files into a directory, byte for byte, straight from git objects.

Not ``git archive`` (the patch's own ``.gitattributes`` could drop files with
``export-ignore`` or rewrite them with ``export-subst``) and not ``git checkout`` (which
applies eol and filter attributes): ``ls-tree`` and one ``cat-file --batch`` give the exact
blobs. Only regular files are written; symlinks and submodules are listed as skipped, so
nothing materialised can point outside the directory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane import git
from patchlane.paths import path_problem


@dataclass(frozen=True)
class Materialised:
    root: Path
    files: int
    skipped: tuple[tuple[str, str], ...]  # (path, why)


def materialise(repo: Path, commit: str, dest: Path, paths: Sequence[str] = ()) -> Materialised:
    """Write the regular files of ``commit`` (below ``paths``; everything if empty) to ``dest``.

    Returns what was written and what was skipped (symlinks, submodules, unsafe names).
    Raises ``GitError`` when git cannot read the commit.
    """
    entries = git.ls_tree(repo, commit, paths)
    wanted: list[git.TreeEntry] = []
    skipped: list[tuple[str, str]] = []
    for entry in entries:
        problem = path_problem(entry.path, directory_ok=False)
        if problem:
            skipped.append((entry.path, problem))
        elif entry.mode == git.MODE_SYMLINK:
            skipped.append((entry.path, "symlink (never materialised)"))
        elif entry.mode == git.MODE_GITLINK or entry.kind != "blob":
            skipped.append((entry.path, "submodule (not materialised)"))
        else:
            wanted.append(entry)
    dest.mkdir(parents=True, exist_ok=True)
    for entry, data in zip(wanted, git.read_blobs(repo, [e.oid for e in wanted]), strict=True):
        target = dest.joinpath(*entry.path.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        mode = 0o755 if entry.mode == "100755" else 0o644
        fd = os.open(target, flags, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    return Materialised(root=dest, files=len(wanted), skipped=tuple(skipped))
