"""Repository-relative POSIX paths: validation, prefix matching and safe resolution."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def path_problem(path: str, *, directory_ok: bool = True) -> str | None:
    """Return why ``path`` is not a safe repository-relative POSIX path, or ``None``.

    Refused: empty, absolute, ``..`` or ``.`` components, empty components (``a//b``),
    backslashes (a Windows path would silently mean something else here) and NUL bytes.
    A trailing ``/`` (a directory prefix) is refused when ``directory_ok`` is false.
    """
    if not path:
        return "empty path"
    if "\x00" in path:
        return "path contains a NUL byte"
    if path.startswith("/"):
        return f"absolute path {path!r}: paths are relative to the repository root"
    if "\\" in path:
        return f"backslash in {path!r}: use POSIX '/' separators"
    body = path[:-1] if path.endswith("/") else path
    if path.endswith("/") and not directory_ok:
        return f"{path!r} names a directory; a file path is required"
    for part in body.split("/"):
        if part == "..":
            return f"'..' in {path!r}: paths may not leave the repository"
        if part in ("", "."):
            return f"empty or '.' component in {path!r}"
    return None


def under(path: str, prefix: str) -> bool:
    """Return whether repository path ``path`` is ``prefix`` or lies below it.

    ``prefix`` ending in ``/`` is a directory; otherwise it matches the exact path or any
    path below it as a directory (``src/billing`` covers ``src/billing/x.py`` but not
    ``src/billing_v2.py``).
    """
    if prefix.endswith("/"):
        return path.startswith(prefix)
    return path == prefix or path.startswith(prefix + "/")


def under_any(path: str, prefixes: tuple[str, ...]) -> bool:
    """Return whether ``path`` lies under any of ``prefixes`` (see ``under``)."""
    return any(under(path, p) for p in prefixes)


def to_fs(repo: Path, rel: str) -> Path:
    """Return the filesystem path of a repository path whose syntax was already validated."""
    return repo.joinpath(*rel.rstrip("/").split("/"))


def symlink_on_way(repo: Path, rel: str) -> str | None:
    """Return the first component of ``rel`` (repo-relative) that is a symlink, or ``None``.

    A missing component, or a regular file where a directory would be, ends the walk:
    nothing can lie below it.
    """
    parts = rel.rstrip("/").split("/")
    current = repo
    for i, part in enumerate(parts):
        current = current / part
        try:
            st = os.lstat(current)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(st.st_mode):
            return "/".join(parts[: i + 1])
    return None
