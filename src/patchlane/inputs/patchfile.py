"""Patches as input: a diff or a mailbox applied to the base as a commit object.

``gate --patch FILE|-`` judges a patch that was never committed (an agent's ``.diff``,
``git diff --binary`` output, ``git format-patch`` or mbox output with one or several
commits). The lanes judge commits (docs/architecture.md §1: the patch is
``merge-base(base, head)..head``), so the patch is turned into one: its diff is applied to
the base's tree in a private index file, written as a tree, and committed on the base with
``commit-tree``. Nothing the user owns is read or written on the way: not the work tree,
not ``.git/index``, no branch or other ref. The commit is an unreferenced object; git's
garbage collection keeps such objects for two weeks (``gc.pruneExpire``), far longer than
a gate runs.

The identity and dates are fixed (the mail's author where there is one, else patchlane's;
the base's committer date), so the same patch on the same base gives the same commit id.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import GitError, PatchApplyError, UsageError
from patchlane.infra import git

NAME = "patchlane"
EMAIL = "patchlane@invalid"
STDIN_LABEL = "stdin"

# git's own wording (git runs in the C locale: ``git.git_env``).
_FAILED_HUNK = re.compile(r"^error: patch failed: (.+):(\d+)$", re.MULTILINE)
_MISSING = re.compile(r"^error: (.+): does not exist in index$", re.MULTILINE)
_EXISTS = re.compile(r"^error: (.+): already exists in index$", re.MULTILINE)
_BINARY = re.compile(
    r"^error: cannot apply binary patch to '(.+)' without full index line$", re.MULTILINE
)
_CORRUPT = re.compile(r"^error: corrupt patch at line (\d+)$", re.MULTILINE)
_HUNK = re.compile(rb"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")
# A mailbox starts with an mbox ``From `` separator (``git format-patch``) or, for one
# saved message, with a mail header; a bare diff starts with neither.
_MAIL_START = re.compile(rb"^(From |From: |Subject: |Date: )")


@dataclass(frozen=True)
class Part:
    """One patch to apply: its diff, and for a mail the commit message and author
    (``None``: a bare diff, committed as patchlane)."""

    diff: bytes
    message: bytes
    subject: str | None
    author: tuple[str, str, str] | None  # name, email, date as the mail gives them


def read_source(source: str) -> tuple[bytes, str]:
    """Return the bytes of ``--patch SOURCE`` and the label that names it in messages and
    evidence (``-`` is standard input, labelled ``stdin``).

    Raises ``UsageError`` for a file that cannot be read.
    """
    if source == "-":
        return sys.stdin.buffer.read(), STDIN_LABEL
    try:
        return Path(source).read_bytes(), source
    except FileNotFoundError:
        raise UsageError(f"--patch {source}: no such file") from None
    except OSError as e:
        raise UsageError(f"--patch {source}: cannot read: {e.strerror or e}") from None


def apply_patch(repo: Path, base: str, patch: bytes, label: str) -> str:
    """Apply ``patch`` to the commit ``base`` names and return the new commit's id.

    ``patch`` is a unified diff, ``git diff --binary`` output, or a mailbox of one or more
    ``git format-patch`` mails (applied in order, one commit each, the last returned).
    ``label`` names the patch in messages. Raises ``PatchApplyError`` (its message starts
    with ``label``) for an empty patch, input that holds no patch, a binary change without
    its data, or a patch that does not apply (naming the first failing file and hunk);
    ``GitError`` for an unknown base.
    """
    if not patch.strip():
        raise PatchApplyError(label, "empty patch: nothing to apply")
    base_id = git.resolve_commit(repo, base)
    date = git.commit_date(repo, base_id)
    with tempfile.TemporaryDirectory(prefix="patchlane-patch-") as tmp:
        work = Path(tmp)
        parts = _mail_parts(repo, patch, label, work) if _is_mail(patch) else [_bare(patch)]
        index = work / "index"
        git.read_tree(repo, base_id, index)
        head = base_id
        for number, part in enumerate(parts, 1):
            where = "" if len(parts) == 1 else f"patch {number} of {len(parts)}"
            if where and part.subject:
                where += f" ({part.subject})"
            problem = git.apply_to_index(repo, part.diff, index)
            if problem is not None:
                prefix = f"{where}: " if where else ""
                raise PatchApplyError(label, prefix + _failure(problem, part.diff))
            tree = git.write_tree(repo, index)
            try:
                head = git.commit_tree(repo, tree, head, part.message, _identity(part, date))
            except GitError as e:
                raise PatchApplyError(label, f"{where or 'patch'}: cannot commit: {e}") from None
    return head


def _is_mail(patch: bytes) -> bool:
    return _MAIL_START.match(patch) is not None


def _bare(patch: bytes) -> Part:
    """A bare diff, committed with a message that names its bytes (not its file name, so
    that the same diff under another name is the same commit)."""
    digest = hashlib.sha256(patch).hexdigest()
    message = f"patchlane: patch applied to the base\n\npatch sha256: {digest}\n"
    return Part(diff=patch, message=message.encode(), subject=None, author=None)


def _identity(part: Part, base_date: str) -> dict[str, str]:
    """The commit's author (the mail's, else patchlane) and committer (patchlane, at the
    base's committer date): fixed, so the commit id depends only on the inputs."""
    name, email, when = part.author or (NAME, EMAIL, base_date)
    return {
        "GIT_AUTHOR_NAME": name or email,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_AUTHOR_DATE": when or base_date,
        "GIT_COMMITTER_NAME": NAME,
        "GIT_COMMITTER_EMAIL": EMAIL,
        "GIT_COMMITTER_DATE": base_date,
    }


def _mail_parts(repo: Path, patch: bytes, label: str, work: Path) -> list[Part]:
    """Split a mailbox into its mails (``git mailsplit``) and return each one's diff,
    message and author (``git mailinfo``, as ``git am`` reads them). A mail without a diff
    (a series' cover letter) is passed over. Raises ``PatchApplyError`` when git cannot
    read the mailbox or no mail in it carries a diff."""
    mbox, mails = work / "mbox", work / "mails"
    mbox.write_bytes(patch)
    mails.mkdir()
    # --keep-cr: a diff of a file with CRLF line ends must keep its CRs to apply.
    proc = git.run(repo, "mailsplit", "-b", "--keep-cr", f"-o{mails}", "--", os.fspath(mbox))
    if proc.returncode != 0:
        raise PatchApplyError(label, f"not a mailbox git can read: {_first_error(proc.stderr)}")
    parts = []
    for mail in sorted(mails.iterdir()):
        part = _mail_part(repo, mail, label, work)
        if part is not None:
            parts.append(part)
    if not parts:
        raise PatchApplyError(label, "not a patch: no mail in it carries a diff")
    return parts


def _mail_part(repo: Path, mail: Path, label: str, work: Path) -> Part | None:
    """Return one mail's ``Part``, or ``None`` when it carries no diff."""
    msg, body = work / "msg", work / "body"
    proc = git.run(
        repo, "mailinfo", "--no-scissors", os.fspath(msg), os.fspath(body),
        stdin=mail.read_bytes(),
    )  # fmt: skip
    if proc.returncode != 0:
        raise PatchApplyError(label, f"mail {mail.name}: {_first_error(proc.stderr)}")
    diff = body.read_bytes()
    if not diff.strip():
        return None
    info: dict[str, str] = {}
    for line in proc.stdout.decode("utf-8", "surrogateescape").splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            info[key] = value.strip()
    subject = info.get("Subject", "")
    text = msg.read_bytes().strip()
    message = subject.encode("utf-8", "surrogateescape") + (b"\n\n" + text if text else b"")
    email = info.get("Email", "")
    author = (info.get("Author", ""), email, info.get("Date", "")) if email else None
    return Part(diff=diff, message=message + b"\n", subject=subject or None, author=author)


def _failure(stderr: str, diff: bytes) -> str:
    """Return what went wrong, from git apply's error output: the first failing hunk (its
    file and ``@@`` header), a file missing or already present at the base, a binary
    change without its data, or input that holds no patch."""
    if "No valid patches in input" in stderr:
        return (
            "not a patch: git apply found no diff in it (expected a unified diff, "
            "git diff --binary or git format-patch output)"
        )
    binary = _BINARY.search(stderr)
    if binary:
        return (
            f"{binary[1]}: a binary change without its data (make the patch with "
            "git diff --binary or git format-patch)"
        )
    failed = _FAILED_HUNK.search(stderr)
    if failed:
        header = _hunk_header(diff, failed[1], int(failed[2]))
        hunk = f"hunk {header}" if header else f"hunk at line {failed[2]}"
        return f"does not apply: {failed[1]} {hunk} (patch does not apply)"
    missing = _MISSING.search(stderr)
    if missing:
        return f"does not apply: {missing[1]} does not exist at the base"
    exists = _EXISTS.search(stderr)
    if exists:
        return f"does not apply: {exists[1]} already exists at the base"
    corrupt = _CORRUPT.search(stderr)
    if corrupt:
        return f"corrupt patch at line {corrupt[1]} of its diff"
    return f"does not apply: {_first_error(stderr.encode('utf-8', 'surrogateescape'))}"


def _hunk_header(diff: bytes, path: str, old_start: int) -> str | None:
    """Return the ``@@ -A,B +C,D @@`` header of the hunk of ``path`` that starts at line
    ``old_start`` of the old file (what git apply's "patch failed: PATH:LINE" names), or
    ``None`` when the diff spells the path in a way this reading does not follow."""
    names: set[str] = set()
    for line in diff.split(b"\n"):
        if line.startswith(b"--- "):
            names = {_diff_name(line[4:])}
        elif line.startswith(b"+++ "):
            names.add(_diff_name(line[4:]))
        elif line.startswith(b"@@ ") and path in names:
            match = _HUNK.match(line)
            if match and int(match[1]) == old_start:
                return match[0].decode("ascii")
    return None


def _diff_name(raw: bytes) -> str:
    """Return the path of a ``---``/``+++`` line: without a ``diff -u`` timestamp (after a
    tab) and without git's ``a/``/``b/`` prefix (git apply's ``-p1``)."""
    name = raw.split(b"\t", 1)[0].rstrip(b"\r")
    _, slash, rest = name.partition(b"/")
    return os.fsdecode(rest if slash else name)


def _first_error(stderr: bytes) -> str:
    """Return git's first ``error:``/``fatal:`` line without its prefix (else its first)."""
    lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    for line in lines:
        for prefix in ("error: ", "fatal: "):
            if line.startswith(prefix):
                return line[len(prefix) :]
    return lines[0] if lines else "git gave no reason"
