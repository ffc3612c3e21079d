"""A ``--replay COMMAND``: checked once, run from a copy of the base (docs/architecture.md §2).

The command is the user's own way to reach a runner, and it runs as a shell line; but never
in the work tree. On a checked-out agent branch that tree is the patch's, and a script there
(``sh ci/replay.sh``) is the patch's script: it could put the base's code back before the
runner signs, and the host would vouch for a red head. The command runs in a fresh copy of
the base commit's files instead (``tree.materialise``: the exact blobs, no checkout filter,
and no ``.git``, so a script that still asks git about "its" tree fails rather than learning
something from a tree the patch controls). What it needs to know comes in placeholders:
``{slice}``, ``{receipt}``, ``{head}``, ``{base}`` and ``{repo}``. A repository file the
command line names is a control file (``ReplayCommand.named_paths``): the base's copy still
runs, and a patch that changes it waits for a person.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import UsageError
from patchlane.infra import git
from patchlane.infra.tree import materialise
from patchlane.infra.ui import Output, one_line

RUN_TIMEOUT_S = 1800.0
# What each placeholder becomes (every value is shell-quoted): the slice file and where the
# receipt must go (absolute paths), the head and base commits (full ids) and the repository.
PLACEHOLDERS = ("slice", "receipt", "head", "base", "repo")
REQUIRED = ("slice", "receipt")
# ``{name}``, but not a shell's ``${name}``: a script's own variables stay its own.
_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
_REPO_PREFIX = "{repo}/"


@dataclass(frozen=True)
class ReplayCommand:
    """A checked ``--replay`` command: its text, and the paths its words name: relative
    ones (read in the base's copy), ones through ``{repo}/`` (read in the work tree), and
    absolute ones (resolved against the repository later)."""

    text: str
    relative: frozenset[str]
    through_repo: frozenset[str]
    absolute: tuple[str, ...]

    def named_paths(self, repo: Path) -> frozenset[str]:
        """Return the repository paths the command line names: its words (and the value
        of a ``--opt=value`` word, and the words of a quoted ``sh -c`` line) read as a
        path relative to the repository, ``{repo}/...``, or an absolute path inside
        ``repo``. Only the line itself: what a script it names reads runs from the base's
        copy all the same."""
        return self.relative | self.in_work_tree(repo)

    def in_work_tree(self, repo: Path) -> frozenset[str]:
        """Return the repository paths the command names in the work tree (through
        ``{repo}/`` or an absolute path inside ``repo``), not in the base's copy."""
        root = repo.resolve()
        inside = set(self.through_repo)
        for word in self.absolute:
            path = Path(posixpath.normpath(word))
            for top in (root, repo.absolute()):
                if top in path.parents:
                    inside.add(path.relative_to(top).as_posix())
        return frozenset(inside)

    def refuse_work_tree_files(self, repo: Path, commits: tuple[str, ...]) -> None:
        """Raise ``UsageError`` when the command names, in the work tree, a path that one
        of ``commits`` (the base and the head) has: on an agent's branch that copy is the
        patch's, so the command would run or read what the patch wrote there. Named
        relative, the same file is read from the base's copy. Raises ``GitError`` when git
        cannot read a commit."""
        for path in sorted(self.in_work_tree(repo)):
            if any(git.entry_at(repo, commit, path) is not None for commit in commits):
                raise UsageError(
                    f"--replay {self.text!r}: names {path} in the work tree, which the "
                    f"patch may control; name it {shlex.quote(path)} (the command runs in "
                    "a copy of the base commit, where it is the base's)"
                )

    def expand(self, values: Mapping[str, str]) -> str:
        """Return the shell line with every placeholder replaced by its quoted value, in
        one pass (a value that holds ``{slice}`` is not expanded again)."""
        return _PLACEHOLDER.sub(lambda m: shlex.quote(values[m.group(1)]), self.text)


def parse_replay(mode: str) -> ReplayCommand | None:
    """Return the command ``--replay MODE`` names (``None`` for ``none`` and ``local``).

    Raises ``UsageError`` (one line) for a command without ``{slice}`` and ``{receipt}``,
    with a placeholder patchlane does not know, or that is not a shell line (an unclosed
    quote).
    """
    if mode in ("none", "local"):
        return None
    names = set(_PLACEHOLDER.findall(mode))
    unknown = sorted(names - set(PLACEHOLDERS))
    if unknown:
        known = ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
        raise UsageError(
            f"--replay {mode!r}: unknown placeholder {{{unknown[0]}}} (known: {known}; "
            "text that needs braces of its own goes in a script)"
        )
    missing = [f"{{{p}}}" for p in REQUIRED if p not in names]
    if missing:
        raise UsageError(
            f"--replay {mode!r}: a replay command needs the placeholders {{slice}} and "
            f"{{receipt}} (missing {', '.join(missing)}); or use 'none' or 'local'"
        )
    try:
        words = shlex.split(mode)
    except ValueError as e:
        raise UsageError(f"--replay {mode!r}: not a shell line ({e})") from None
    relative: set[str] = set()
    through_repo: set[str] = set()
    absolute: list[str] = []
    for word in _words(words):
        for piece in (word, word.partition("=")[2]):
            via_repo = piece.startswith(_REPO_PREFIX)
            piece = piece.removeprefix(_REPO_PREFIX)
            if not piece or _PLACEHOLDER.search(piece):
                continue  # a file patchlane makes, or the repository itself
            if piece.startswith("/"):
                absolute.append(piece)
                continue
            path = posixpath.normpath(piece)
            if path != "." and path != ".." and not path.startswith("../"):
                (through_repo if via_repo else relative).add(path)
    return ReplayCommand(mode, frozenset(relative), frozenset(through_repo), tuple(absolute))


def _words(words: list[str]) -> Iterator[str]:
    """Each word, and the words of one that is itself a shell line (``sh -c 'a b'``)."""
    for word in words:
        yield word
        if any(c.isspace() for c in word):
            try:
                yield from shlex.split(word)
            except ValueError:
                continue  # not a line the shell would run either


def run_command(
    repo: Path,
    command: ReplayCommand,
    *,
    base: str,
    head: str,
    slice_path: Path,
    receipt_path: Path,
    out: Output,
) -> str | None:
    """Run ``command`` in a fresh copy of the ``base`` commit's files; return why it failed
    (exit status, timeout), or ``None``. Any receipt left from before is removed first.

    Raises ``GitError`` when git cannot read ``base``, ``OSError`` when the copy cannot be
    written.
    """
    receipt_path.unlink(missing_ok=True)
    line = command.expand(
        {
            # The command runs elsewhere: every path it is given is absolute.
            "slice": os.path.abspath(slice_path),  # noqa: PTH100 - lexical, like the user's
            "receipt": os.path.abspath(receipt_path),  # noqa: PTH100
            "head": head,
            "base": base,
            "repo": os.fspath(repo.resolve()),
        }
    )
    out.progress(f"replay: {line}")
    with tempfile.TemporaryDirectory(prefix="patchlane-replay-base-") as tmp:
        tree = Path(tmp) / "base"
        materialise(repo, base, tree)
        try:
            # The command is the user's own (how they reach their runner): a shell line.
            proc = subprocess.run(  # noqa: S602
                line, shell=True, cwd=tree, capture_output=True, timeout=RUN_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            return f"the replay command did not finish within {RUN_TIMEOUT_S:.0f} s"
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip().splitlines()
        last = one_line(tail[-1]) if tail else "no output"
        return f"the replay command exited {proc.returncode}: {last}"
    return None
