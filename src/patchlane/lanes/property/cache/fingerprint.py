"""What a path looks like now, for the result cache's manifests (``cache.results``).

One function, ``fingerprint``, used both when a run is stored and when an entry is checked,
so that the two can only agree when the path gives the same answer. Paths stay text, not
``Path``: a trailing slash or ``.`` is the run's own spelling and can change what the
kernel answers (``link/`` follows the link, ``link`` does not).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat


def fingerprint(kind: str, path: str, inside: bool) -> str | None:
    """Return what ``path`` looks like now, for a manifest of ``kind`` (``open``: its
    content inside a tree, its metadata outside; ``list``: its entries; ``probe``: its
    kind, size and link target), or ``None`` when it cannot be told (a read error).

    ``inside``: the path is in a materialised tree, where times and inodes are those of
    this materialisation and only content counts."""
    if kind == "open":
        return _content(path) if inside else _meta(path, follow=True, inside=False)
    if kind == "list":
        return _listing(path)
    first = _meta(path, follow=False, inside=inside)
    if first is None or not first.startswith("link:"):
        return first
    target = _meta(path, follow=True, inside=inside)
    return None if target is None else f"{first}|{target}"


def _content(path: str) -> str | None:
    """Return ``sha256:HEX`` of a regular file's bytes, its kind for anything else, or
    ``missing``; ``None`` on another error."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO must not block the parent
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return _kind(st, inside=True)
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return "sha256:" + digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def _meta(path: str, *, follow: bool, inside: bool) -> str | None:
    """Return ``link:TARGET`` (not following), the kind of what is there (``_kind``), or
    ``missing``; ``None`` on another error."""
    try:
        st = os.stat(path) if follow else os.lstat(path)  # noqa: PTH116
        if stat.S_ISLNK(st.st_mode):
            return "link:" + os.readlink(path)  # noqa: PTH115
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError:
        return None
    return _kind(st, inside)


def _kind(st: os.stat_result, inside: bool) -> str:
    """Return a file's size (outside a tree also its times and inode), ``dir``, a device's
    number, or the file type of anything else."""
    mode = st.st_mode
    if stat.S_ISREG(mode):
        if inside:
            return f"file:{st.st_size}"
        return f"file:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
    if stat.S_ISDIR(mode):
        return "dir" if inside else f"dir:{st.st_mtime_ns}:{st.st_ino}"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return f"device:{st.st_rdev}"
    return f"other:{stat.S_IFMT(mode)}"


def _listing(path: str) -> str | None:
    """Return ``names:HEX`` of a directory's sorted (name, kind) pairs, ``missing`` or
    ``not a directory``; ``None`` on another error."""
    try:
        with os.scandir(path) as it:
            entries = sorted((e.name, _entry_kind(e)) for e in it)
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "not a directory"
    except OSError:
        return None
    text = json.dumps(entries, ensure_ascii=True, separators=(",", ":"))
    return "names:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def _entry_kind(entry: os.DirEntry[str]) -> str:
    """One listing entry: ``l`` link, ``d`` directory, ``f`` file, ``o`` anything else.
    Not its size: every run lists the repository's root, and a listing that changed with
    any edit of a file there would make every patch that edits the README a miss."""
    if entry.is_symlink():
        return "l"
    if entry.is_dir(follow_symlinks=False):
        return "d"
    if entry.is_file(follow_symlinks=False):
        return "f"
    return "o"
