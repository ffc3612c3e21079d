"""Materialise a commit's files into a directory, byte for byte, straight from git objects.

Not ``git archive`` (the patch's own ``.gitattributes`` could drop files with
``export-ignore`` or rewrite them with ``export-subst``) and not ``git checkout`` (which
applies eol and filter attributes): ``ls-tree`` and one ``cat-file --batch`` give the exact
blobs. Regular files are written first, never through a link (``O_NOFOLLOW|O_EXCL``); then
the symlinks whose target stays inside the tree are created, so that nothing materialised
can point outside the directory. Submodules and links that escape, loop, dangle or cannot
be read as a path are listed as skipped, and so is committed bytecode (a ``__pycache__``
path, a ``.pyc`` or ``.pyo`` file): a child importing the tree would run it instead of the
source beside it (``patchlane.infra.bytecode``), so a materialised tree never holds any. The
real checkout has what is skipped: the replay makes each such entry pytest may collect a
review event (``project.unmaterialised``, docs/architecture.md §2).

How a symlink is judged: git stores its target text as the blob. The target is resolved
lexically against the commit's own tree, from the link's directory, following every link
it meets on the way (each one's target from its own directory, as the kernel would) for at
most ``MAX_LINK_HOPS`` links. It is kept when it ends at a regular file or a directory that
is materialised; it is dropped when it is absolute, climbs above the root, loops, ends
anywhere not materialised (a dangling link would make every walker of the tree handle a
file that cannot be opened), or links to a directory that contains the link itself (a
walker that follows directory links would never end). A kept link points straight at what
it resolves to (a relative path from its directory; usually the very text git stores),
so it never depends on another link being kept.
"""

from __future__ import annotations

import bisect
import os
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.infra import git
from patchlane.infra.bytecode import NEVER_MATERIALISED, is_bytecode
from patchlane.infra.ui import show
from patchlane.inputs.paths import path_problem, symlink_on_way, under_any

# The kernel's own bound (Linux MAXSYMLINKS): a kept link is one that ``open`` can follow.
MAX_LINK_HOPS = 40
# PATH_MAX less the terminating NUL: ``symlink(2)`` refuses anything longer.
MAX_TARGET_BYTES = 4095


@dataclass(frozen=True)
class Materialised:
    """What ``materialise`` wrote: ``files`` regular files (copies of a link's target
    included), ``links`` the symlinks kept (repository paths, sorted), ``skipped`` every
    entry not materialised as ``(path, why)``."""

    root: Path
    files: int
    skipped: tuple[tuple[str, str], ...]  # (path, why)
    links: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Resolved:
    """Where a link ends (a symlink-free repository path, ``""`` for the root), or why it
    cannot be followed (``path`` is then ``None``)."""

    path: str | None
    why: str = ""


def materialise(repo: Path, commit: str, dest: Path, paths: Sequence[str] = ()) -> Materialised:
    """Write the regular files and in-tree symlinks of ``commit`` (below ``paths``;
    everything if empty) to ``dest``.

    With ``paths``, a kept link whose target is a regular file outside them is written as a
    copy of that file (the tree holds only ``paths``, so a link would dangle); one whose
    target is a directory outside them is skipped. Links are always resolved against the
    whole commit. Returns what was written and what was skipped (escaping, looping,
    dangling or unreadable symlinks, submodules, unsafe names, bytecode), each with why. Raises
    ``GitError`` when git cannot read the commit, ``OSError`` when ``dest`` cannot be
    written.
    """
    entries = git.ls_tree(repo, commit, paths)
    wanted: list[git.TreeEntry] = []
    links: list[git.TreeEntry] = []
    skipped: list[tuple[str, str]] = []
    for entry in entries:
        problem = path_problem(entry.path, directory_ok=False)
        if problem:
            skipped.append((entry.path, problem))
        elif is_bytecode(entry.path):
            # Links too: a link named like bytecode is imported as bytecode.
            skipped.append((entry.path, NEVER_MATERIALISED))
        elif entry.mode == git.MODE_SYMLINK:
            links.append(entry)
        elif entry.mode == git.MODE_GITLINK or entry.kind != "blob":
            skipped.append((entry.path, "submodule (not materialised)"))
        else:
            wanted.append(entry)
    kept: dict[str, str] = {}  # link path -> the target it resolves to
    if links:
        # Resolution needs every link of the commit, not only those below ``paths``.
        tree = _Tree(repo, git.ls_tree(repo, commit, ()) if paths else entries)
        written = _ancestors(e.path for e in wanted)
        copies: list[git.TreeEntry] = []
        for link in links:
            why, target = tree.judge(link.path, written, tuple(paths))
            if why is not None:
                skipped.append((link.path, why))
            elif target in tree.files and not _inside(target, paths):
                found = tree.files[target]
                copies.append(git.TreeEntry(found.mode, "blob", found.oid, link.path))
            else:
                kept[link.path] = target
        directories = {rel: t for rel, t in kept.items() if t not in tree.files}
        for rel in sorted(_on_a_loop(directories)):
            del kept[rel]
            why = f"symlink to the directory {show(directories[rel] or '.')}: following it"
            skipped.append((rel, why + " leads back to it (a directory loop)"))
        wanted.extend(copies)
    dest.mkdir(parents=True, exist_ok=True)
    for entry, data in zip(wanted, git.read_blobs(repo, [e.oid for e in wanted]), strict=True):
        _write_file(dest, entry, data)
    created = _create_links(dest, kept, skipped)
    return Materialised(root=dest, files=len(wanted), skipped=tuple(skipped), links=created)


def _inside(path: str, paths: Sequence[str]) -> bool:
    return not paths or under_any(path, tuple(paths))


def _ancestors(files: Iterable[str]) -> set[str]:
    """Return every directory that holds one of ``files`` (``""``, the root, included)."""
    out = {""}
    for path in files:
        parts = path.split("/")[:-1]
        out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return out


def _on_a_loop(directories: dict[str, str]) -> set[str]:
    """Return the directory links (link -> target directory) that a walk following links
    would meet again: those on a cycle of "the target holds that link" (Tarjan's strongly
    connected components, iteratively). Dropping them leaves no cycle."""
    order = sorted(directories)

    def successors(link: str) -> list[str]:
        target = directories[link]
        if target == "":
            return order
        prefix = target + "/"
        # Paths that start with ``prefix`` are one contiguous run of the sorted list.
        start = bisect.bisect_left(order, prefix)
        end = start
        while end < len(order) and order[end].startswith(prefix):
            end += 1
        return order[start:end]

    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    looping: set[str] = set()
    for root in order:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(successors(root)))]
        while work:
            node, pending = work[-1]
            for nxt in pending:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(successors(nxt))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in successors(node):
                        looping.update(component)
    return looping


def _write_file(dest: Path, entry: git.TreeEntry, data: bytes) -> None:
    target = dest.joinpath(*entry.path.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    mode = 0o755 if entry.mode == "100755" else 0o644
    fd = os.open(target, flags, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _create_links(
    dest: Path, kept: dict[str, str], skipped: list[tuple[str, str]]
) -> tuple[str, ...]:
    """Create each kept link (after every regular file); return the paths created.

    The tree model already proved each target inside; the checks here hold even for a
    crafted tree that lists a path twice (a link and a directory of the same name): no
    link is created through another link or over an existing entry, and one that does not
    resolve strictly inside ``dest`` on disk is removed again.
    """
    root = os.path.realpath(dest)
    created: list[str] = []
    for rel, target in sorted(kept.items()):
        parent = posixpath.dirname(rel)
        path = dest.joinpath(*rel.split("/"))
        if (parent and symlink_on_way(dest, parent)) or os.path.lexists(path):
            skipped.append(
                (rel, "symlink where the commit also has another entry (not materialised)")
            )
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(_relative(target, parent))
        try:
            real = os.path.realpath(path, strict=True)
        except OSError:
            real = None
        if real is None or not (real == root or real.startswith(root + os.sep)):
            path.unlink()
            skipped.append((rel, "symlink that does not resolve inside the tree on disk"))
            continue
        created.append(rel)
    return tuple(created)


def _relative(target: str, start: str) -> str:
    """Return the POSIX path from directory ``start`` to ``target`` (both repository paths,
    ``""`` the root). Not ``posixpath.relpath``, which asks for the current directory."""
    to = target.split("/") if target else []
    at = start.split("/") if start else []
    common = 0
    while common < min(len(to), len(at)) and to[common] == at[common]:
        common += 1
    return "/".join([".."] * (len(at) - common) + to[common:]) or "."


def _target_text(raw: bytes) -> tuple[str | None, str]:
    """Return a link's target text, or ``None`` and why it cannot be a path here."""
    if not raw:
        return None, "empty symlink target"
    if b"\0" in raw:
        return None, "symlink target contains a NUL byte"
    if len(raw) > MAX_TARGET_BYTES:
        return None, f"symlink target longer than {MAX_TARGET_BYTES} bytes"
    try:
        return raw.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "symlink target is not UTF-8"


class _Tree:
    """The commit's tree as far as links need it: regular files, directories, link targets."""

    def __init__(self, repo: Path, entries: Sequence[git.TreeEntry]) -> None:
        safe = [e for e in entries if path_problem(e.path, directory_ok=False) is None]
        # What ``materialise`` writes as a regular file: every blob that is not a link and
        # not bytecode (a link to bytecode then dangles, and is dropped, never copied).
        self.files = {
            e.path: e
            for e in safe
            if e.kind == "blob" and e.mode != git.MODE_SYMLINK and not is_bytecode(e.path)
        }
        link_entries = [e for e in safe if e.mode == git.MODE_SYMLINK]
        raw = git.read_blobs(repo, [e.oid for e in link_entries])
        self.targets: dict[str, bytes] = {
            e.path: data for e, data in zip(link_entries, raw, strict=True)
        }
        self.dirs: set[str] = set()
        for e in safe:
            parts = e.path.split("/")[:-1]
            self.dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))

    def resolve(self, link: str) -> _Resolved:
        """Follow ``link`` (a symlink of the tree) to a symlink-free repository path."""
        done: list[str] = []
        todo = link.split("/")[::-1]  # a stack: the next component is last
        hops = 0
        via = ""
        while todo:
            part = todo.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not done:
                    return _Resolved(None, "symlink target leaves the repository" + via)
                done.pop()
                continue
            done.append(part)
            here = "/".join(done)
            raw = self.targets.get(here)
            if raw is None:
                continue
            hops += 1
            if hops > MAX_LINK_HOPS:
                return _Resolved(None, f"symlink loop (more than {MAX_LINK_HOPS} links to follow)")
            if here != link:
                via = f" (through {show(here)})"
            text, why = _target_text(raw)
            if text is None:
                return _Resolved(None, why + via)
            if text.startswith("/"):
                return _Resolved(None, f"symlink to an absolute path leaves the repository{via}")
            done.pop()  # the link's target is read from the link's own directory
            todo.extend(text.split("/")[::-1])
        return _Resolved("/".join(done))

    def judge(self, link: str, written: set[str], paths: tuple[str, ...]) -> tuple[str | None, str]:
        """Return ``(why it is dropped, "")`` or ``(None, the path it resolves to)``.

        ``written`` are the directories that hold a materialised regular file; ``paths``
        the selection (empty: everything). A directory loop is judged later, over every
        kept directory link (``_on_a_loop``).
        """
        resolved = self.resolve(link)
        target = resolved.path
        if target is None:
            return resolved.why, ""
        if target in self.files:
            return None, target
        if target == "" or target in self.dirs:
            if target in written:
                return None, target
            if paths and not _inside(target, paths):
                return (
                    f"symlink to the directory {show(target)}, outside the materialised paths",
                    "",
                )
            return f"symlink to the directory {show(target)}, which holds no materialised file", ""
        return f"symlink to {show(target)}, which is not in the materialised tree", ""
