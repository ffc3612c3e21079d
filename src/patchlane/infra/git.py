"""Small functions that ask git precisely (docs/architecture.md §2).

Every call uses NUL-separated output where git offers it, literal pathspecs, no external
diff or textconv, ``core.fsmonitor`` off, and an environment without the caller's ``GIT_*``
variables (a stray ``GIT_DIR`` or ``GIT_INDEX_FILE`` would silently answer for another
repository). Paths are decoded with ``os.fsdecode`` so that any byte survives.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import GitError

_CONFIG = (
    "-c", "core.fsmonitor=false",
    "-c", "core.quotePath=false",
    "-c", "diff.external=",
    "-c", "core.untrackedCache=false",
)  # fmt: skip

MODE_SYMLINK = "120000"
MODE_GITLINK = "160000"
REGULAR_MODES = frozenset({"100644", "100755"})


def git_env() -> dict[str, str]:
    """Return the environment git runs in: the caller's, less ``GIT_*``, in the C locale."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_LITERAL_PATHSPECS="1", GIT_OPTIONAL_LOCKS="0"
    )
    return env


def run(
    repo: Path, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git -C repo args`` and return the completed process (never raises on exit code).

    ``env``: variables set on top of ``git_env`` (a temporary ``GIT_INDEX_FILE``, the
    identity of a commit patchlane writes).
    """
    try:
        return subprocess.run(
            ["git", "-C", os.fspath(repo), *_CONFIG, *args],
            input=stdin,
            capture_output=True,
            env={**git_env(), **(env or {})},
            check=False,
        )
    except FileNotFoundError as e:
        raise GitError("git is not installed or not on PATH") from e


def out(
    repo: Path, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None
) -> bytes:
    """Run git and return stdout. Raises ``GitError`` with git's message on failure."""
    proc = run(repo, *args, stdin=stdin, env=env)
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {args[0]} failed: {message[-1] if message else proc.returncode}")
    return proc.stdout


def toplevel(cwd: Path) -> Path:
    """Return the work tree root containing ``cwd``. Raises ``GitError`` outside a repository."""
    proc = run(cwd, "rev-parse", "--show-toplevel")
    if proc.returncode != 0:
        raise GitError(f"{cwd}: not inside a git repository (use --repo DIR)")
    return Path(os.fsdecode(proc.stdout.rstrip(b"\n")))


def find_toplevel(start: Path) -> Path | None:
    """Return the work tree root holding ``start`` without running git, or ``None``.

    The nearest of ``start`` (resolved) and its parents with a ``.git`` directory (holding
    ``HEAD``) or a ``.git`` file (a linked work tree or a submodule). ``None`` when there is
    none: ``toplevel`` then asks git, which says why. The caller's ``GIT_DIR`` is ignored,
    as every git call here ignores it. For commands that must start no process when all is
    well (``patchlane check`` from a pre-commit hook).
    """
    here = start.resolve()
    for candidate in (here, *here.parents):
        dot_git = candidate / ".git"
        if (dot_git / "HEAD").is_file() or dot_git.is_file():
            return candidate
    return None


def git_dir(repo: Path) -> Path:
    """Return the absolute path of the repository's git directory.

    ``REPO/.git`` when it is a directory (not a link) holding ``HEAD``, without running git;
    otherwise (a linked work tree, a submodule) git is asked.
    """
    dot_git = repo / ".git"
    if not dot_git.is_symlink() and (dot_git / "HEAD").is_file():
        return Path(os.path.abspath(dot_git))  # noqa: PTH100 - lexical, like git's answer
    raw = out(repo, "rev-parse", "--absolute-git-dir").rstrip(b"\n")
    return Path(os.fsdecode(raw))


def resolve_commit(repo: Path, ref: str) -> str:
    """Return the full commit id ``ref`` names. Raises ``GitError`` saying what to fetch."""
    proc = run(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if proc.returncode != 0:
        raise GitError(f"unknown ref {ref!r}: {_unknown_ref_hint(repo, ref)}")
    return proc.stdout.decode("ascii").strip()


def _unknown_ref_hint(repo: Path, ref: str) -> str:
    """Return what to do about a ref this clone does not have: the close branch, tag and
    remote-branch names (a typo is the likeliest cause), and ``git fetch`` only when the
    ref looks remote (``origin/...``, ``REMOTE/...``, ``refs/remotes/...``) or, with no
    close name, when the clone has remotes that may carry it. Without either, the local
    branches are listed."""
    import difflib

    remotes = _remotes(repo)
    names, branches = _ref_names(repo)
    bare = ref.removeprefix("refs/heads/").removeprefix("refs/tags/")
    bare = bare.removeprefix("refs/remotes/")
    # "origin/mian": the part after a remote's name may be the typo (main).
    remote, slash, rest = bare.partition("/")
    tries = [bare, rest] if slash and remote in (*remotes, "origin") else [bare]
    close = list(dict.fromkeys(c for t in tries for c in difflib.get_close_matches(t, names, n=3)))
    remote_like = ref.startswith("refs/remotes/") or any(
        ref.startswith(f"{r}/") for r in (*remotes, "origin")
    )
    hint = "not a branch, tag or commit in this clone"
    if close:
        hint += f"; did you mean {' or '.join(repr(name) for name in close[:3])}?"
    if remote_like or (remotes and not close):
        fetch = _fetch_hint(ref, remotes)
        if not remotes:  # "origin/main" in a clone without remotes: add one first
            fetch = f"git remote add origin URL && {fetch}"
        # After "did you mean …?" a new sentence; else a clause of the first one.
        hint += f"{' If' if close else '; if'} it is on a remote, fetch it ({fetch})"
    elif not close:
        hint += f" (branches: {', '.join(branches[:5]) or 'none'})"
    return hint


def _remotes(repo: Path) -> list[str]:
    proc = run(repo, "remote")
    return proc.stdout.decode("utf-8", "replace").split() if proc.returncode == 0 else []


def _ref_names(repo: Path) -> tuple[list[str], list[str]]:
    """Return the short names of the clone's branches, tags and remote branches, and of
    its branches alone."""
    proc = run(
        repo, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/tags", "refs/remotes"
    )
    names, branches = [], []
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        for prefix in ("refs/heads/", "refs/tags/", "refs/remotes/"):
            if line.startswith(prefix) and not line.endswith("/HEAD"):
                names.append(line[len(prefix) :])
                if prefix == "refs/heads/":
                    branches.append(line[len(prefix) :])
                break
    return names, branches


def _fetch_hint(ref: str, configured: list[str]) -> str:
    """Return the ``git fetch`` command that would bring ``ref`` into this clone.

    ``REMOTE/BRANCH`` and ``refs/remotes/REMOTE/BRANCH`` name a configured remote (or
    ``origin``, configured or not); anything else (``feature/x`` is a branch name, not
    remote ``feature``) is fetched from origin.
    """
    remotes = [*configured, "origin"]
    name = ref.removeprefix("refs/remotes/")
    for remote in sorted(remotes, key=len, reverse=True):
        if name.startswith(remote + "/"):
            return f"git fetch {remote} {name[len(remote) + 1 :]}"
    return f"git fetch origin {ref.removeprefix('refs/heads/')}"


def is_shallow(repo: Path) -> bool:
    """Return whether the clone is shallow."""
    return out(repo, "rev-parse", "--is-shallow-repository").strip() == b"true"


def merge_base(repo: Path, base: str, head: str) -> str:
    """Return the merge base of two commit ids.

    Raises ``GitError`` when there is none: for a shallow clone the message says how to
    fetch more history. There is deliberately no fallback to a two-dot diff, which would
    count the base branch's own later commits as part of the patch.
    """
    proc = run(repo, "merge-base", base, head)
    if proc.returncode == 0:
        return proc.stdout.decode("ascii").strip()
    if is_shallow(repo):
        raise GitError(
            f"no merge base between {base[:12]} and {head[:12]}: this clone is shallow; "
            "fetch the history (git fetch --unshallow, or git fetch --deepen=N origin)"
        )
    raise GitError(f"no merge base between {base[:12]} and {head[:12]}: unrelated histories")


@dataclass(frozen=True)
class Change:
    """One entry of ``git diff --name-status``: git's status letter, path and rename source."""

    status: str
    path: str
    old_path: str | None


def diff_changes(repo: Path, base: str, head: str) -> list[Change]:
    """Return the changes from commit ``base`` to commit ``head`` (renames detected).

    Status letters are git's (A, C, D, M, R, T, U, X); scores are dropped.
    """
    raw = out(
        repo, "diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-relative",
        "--ignore-submodules=none", "--name-status", "-z", "--find-renames", base, head, "--",
    )  # fmt: skip
    fields = raw.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    changes: list[Change] = []
    i = 0
    while i < len(fields):
        status = fields[i].decode("ascii")[:1]
        if status in ("R", "C"):
            old, new = os.fsdecode(fields[i + 1]), os.fsdecode(fields[i + 2])
            changes.append(Change(status, new, old))
            i += 3
        else:
            changes.append(Change(status, os.fsdecode(fields[i + 1]), None))
            i += 2
    return changes


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    kind: str
    oid: str
    path: str


def ls_tree(repo: Path, commit: str, paths: Sequence[str]) -> list[TreeEntry]:
    """Return every entry (recursively) below ``paths`` in ``commit``; all of it if empty.

    Paths are literal (no glob magic) and relative to the repository root.
    """
    raw = out(
        repo, "ls-tree", "-r", "-z", "--full-tree", commit, "--", *(p.rstrip("/") for p in paths)
    )
    entries = []
    for record in raw.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, kind, oid = meta.decode("ascii").split(" ")
        entries.append(TreeEntry(mode, kind, oid, os.fsdecode(name)))
    return entries


def read_blobs(repo: Path, oids: Iterable[str]) -> Iterator[bytes]:
    """Yield the contents of each blob id, in order, from one ``git cat-file --batch``.

    A writer thread feeds the ids so that neither side of the pipe can fill and block.
    Raises ``GitError`` if an object is missing.
    """
    proc = subprocess.Popen(
        ["git", "-C", os.fspath(repo), *_CONFIG, "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=git_env(),
    )
    if proc.stdin is None or proc.stdout is None:  # pragma: no cover - both are PIPEs
        raise GitError("git cat-file: no pipe")
    ids = list(oids)
    stdin = proc.stdin

    def feed() -> None:
        try:
            stdin.write(b"".join(oid.encode("ascii") + b"\n" for oid in ids))
            stdin.close()
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        for oid in ids:
            header = proc.stdout.readline()
            parts = header.split()
            if len(parts) != 3 or parts[1] == b"missing":
                raise GitError(f"git cat-file: object {oid} is missing")
            size = int(parts[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)
            yield data
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()
        writer.join()


def entry_at(repo: Path, commit: str, path: str) -> TreeEntry | None:
    """Return the tree entry for exactly ``path`` in ``commit``, or ``None`` if absent."""
    raw = out(repo, "ls-tree", "-z", "--full-tree", commit, "--", path)
    for record in raw.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        if record and os.fsdecode(name) == path:
            mode, kind, oid = meta.decode("ascii").split(" ")
            return TreeEntry(mode, kind, oid, path)
    return None


def read_file_at(repo: Path, commit: str, path: str) -> tuple[TreeEntry, bytes] | None:
    """Return the entry and bytes of ``path`` in ``commit``, or ``None`` if it is absent.

    The bytes of a symlink entry are its target text; callers decide what a non-regular
    entry means (``TreeEntry.mode``).
    """
    entry = entry_at(repo, commit, path)
    if entry is None:
        return None
    if entry.kind != "blob":
        return entry, b""
    return entry, out(repo, "cat-file", "blob", entry.oid)


def files_containing(repo: Path, commit: str, needle: str) -> list[str]:
    """Return the paths of ``commit`` whose bytes contain ``needle`` (a fixed string).

    ``git grep`` reads the commit's blobs itself (no work tree, no textconv), so this costs
    one process however large the tree is.
    """
    proc = run(repo, "grep", "-l", "-z", "-F", "--no-textconv", "-e", needle, commit)
    if proc.returncode == 1:  # git grep's "nothing matched"
        return []
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git grep failed: {message[-1] if message else proc.returncode}")
    prefix = commit.encode("ascii") + b":"
    return [
        os.fsdecode(record[len(prefix) :])
        for record in proc.stdout.split(b"\0")
        if record.startswith(prefix)
    ]


# --- Commits from a patch, built in a private index (``inputs.patchfile``) -------------------
# Each takes the index file to use: ``GIT_INDEX_FILE`` points git at it, so the user's own
# index, work tree and branches are never read or written.


def commit_date(repo: Path, commit: str) -> str:
    """Return the committer date of ``commit`` in git's raw form (``SECONDS +ZZZZ``)."""
    raw = out(repo, "log", "-1", "--no-walk", "--date=raw", "--format=%cd", commit, "--")
    return raw.decode("ascii").strip()


def read_tree(repo: Path, commit: str, index: Path) -> None:
    """Fill the index file ``index`` with the tree of ``commit``. Raises ``GitError``."""
    out(repo, "read-tree", commit, env={"GIT_INDEX_FILE": os.fspath(index)})


def apply_to_index(repo: Path, patch: bytes, index: Path) -> str | None:
    """Apply ``patch`` (a diff, binary hunks included) to the index file ``index`` only.

    Returns ``None`` when it applied, else git's error output. The user's whitespace and
    ``apply.*`` settings are overridden: the same patch applies or fails the same way in
    every clone.
    """
    proc = run(
        repo, "-c", "apply.whitespace=nowarn", "-c", "apply.ignoreWhitespace=no",
        "apply", "--cached", "--binary", "-p1", "-",
        stdin=patch, env={"GIT_INDEX_FILE": os.fspath(index)},
    )  # fmt: skip
    return None if proc.returncode == 0 else proc.stderr.decode("utf-8", "surrogateescape")


def write_tree(repo: Path, index: Path) -> str:
    """Write the index file ``index`` as tree objects and return the top tree's id."""
    raw = out(repo, "write-tree", env={"GIT_INDEX_FILE": os.fspath(index)})
    return raw.decode("ascii").strip()


def commit_tree(
    repo: Path, tree: str, parent: str, message: bytes, identity: Mapping[str, str]
) -> str:
    """Write a commit object of ``tree`` on ``parent`` (no ref moves) and return its id.

    ``identity`` holds the ``GIT_AUTHOR_*`` and ``GIT_COMMITTER_*`` variables; with fixed
    values the same inputs give the same id. Never signed (``commit.gpgSign`` would make
    the id differ and could prompt). Raises ``GitError`` with git's message.
    """
    raw = out(
        repo, "commit-tree", "--no-gpg-sign", "-p", parent, "-F", "-", tree,
        stdin=message, env=identity,
    )  # fmt: skip
    return raw.decode("ascii").strip()


def worktree_changes(repo: Path, *, strict: bool = False) -> list[tuple[str, str]]:
    """Return what the work tree holds that ``HEAD`` does not: ``git status`` entries as
    (two-letter code, path), changes to tracked files (staged or not) and untracked files
    git does not ignore (``??``). Empty for a clean tree or a repository without one; with
    ``strict``, a ``git status`` that fails raises ``GitError`` instead (a caller that
    must know the tree is clean never takes a failure for it)."""
    proc = run(
        repo, "status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all",
        "--ignore-submodules=none",
    )  # fmt: skip
    if proc.returncode != 0:  # a bare repository: nothing uncommitted to speak of
        if strict:
            message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git status failed: {message[-1] if message else proc.returncode}")
        return []
    return [
        (record[:2].decode("ascii", "replace"), os.fsdecode(record[3:]))
        for record in proc.stdout.split(b"\0")
        if len(record) > 3
    ]


# --- A checkout of its own (the replay's run tree, docs/architecture.md §4) ------------------
# Hooks never run in it: ``--template=`` gives the new repository none, and
# ``core.hooksPath`` points at nothing, so neither the template nor the user's hooks do.
_NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
# The checkout itself ignores the user's and the system's configuration: no filter driver,
# ``core.autocrlf`` or ``core.eol`` of this machine rewrites what the commit holds; only the
# commit's own ``.gitattributes`` apply, as in any clone.
_NO_USER_CONFIG = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def checkout_detached(repo: Path, commit: str, dest: Path, *, branch: str | None = None) -> None:
    """Make ``dest`` (a path that does not exist yet) a repository of its own with a checkout
    of ``commit``: ``.git`` present, ``HEAD`` at ``commit`` (on ``branch``, made there, as in
    the user's own checkout; detached without one), the files as ``git checkout`` writes
    them. It carries the repository's history and tags as a plain checkout does, by sharing
    ``repo``'s objects (``objects/info/alternates``, ``repo``'s shallow boundary copied), not
    by copying them; nothing of ``repo`` is written (no worktree is registered there, no ref
    moves). Returns nothing; raises ``GitError`` with git's message when git cannot check out
    the commit (a path git refuses to write, a commit ``repo`` does not have)."""
    common = _common_dir(repo)
    dest.mkdir()
    init = run(dest, "init", "--quiet", "--template=")
    if init.returncode != 0:
        raise GitError(f"git init of {commit[:12]} failed: {_last(init)}")
    git_dir = dest / ".git"
    (git_dir / "objects/info").mkdir(parents=True, exist_ok=True)
    (git_dir / "objects/info/alternates").write_text(os.fspath(common / "objects") + "\n")
    if (common / "shallow").is_file():
        shutil.copyfile(common / "shallow", git_dir / "shallow")
    _copy_remotes(repo, git_dir)
    source = os.fspath(repo.absolute())
    place = ("-B", branch, commit) if branch else ("--detach", commit)
    steps: tuple[tuple[tuple[str, ...], Mapping[str, str] | None], ...] = (
        # Objects are shared: this moves refs only (the tags and remote branches a plain
        # checkout has).
        ((*_NO_HOOKS, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", source,
          "+refs/tags/*:refs/tags/*", "+refs/remotes/*:refs/remotes/*"), None),
        ((*_NO_HOOKS, "-c", "advice.detachedHead=false", "checkout", "--quiet", *place, "--"),
         _NO_USER_CONFIG),
    )  # fmt: skip
    for args, env in steps:
        proc = run(dest, *args, env=env)
        if proc.returncode != 0:
            verb = next(a for a in args if a in ("fetch", "checkout"))
            raise GitError(f"git {verb} of {commit[:12]} failed: {_last(proc)}")
    _copy_local_history(repo, common, git_dir, branch)


def _copy_local_history(repo: Path, common: Path, git_dir: Path, branch: str | None) -> None:
    """Give ``git_dir`` (a checkout of ``repo``, made) what a developer's clone has beside its
    objects and refs: ``repo``'s hooks directory (copied after every git command of
    patchlane's in the checkout, which run with no hooks) and its reflogs (``HEAD``'s and the
    branch's, with the checkout's own entries after them when it moved elsewhere). A
    repository's hooks and reflog are no secret: a test in the user's checkout reads them.
    Never raises: what cannot be copied stays as ``git init`` made it."""
    own = run(repo, "rev-parse", "--path-format=absolute", "--git-dir")
    here = Path(os.fsdecode(own.stdout.strip())) if own.returncode == 0 else common
    pairs = [(here / "logs" / "HEAD", git_dir / "logs" / "HEAD")]
    if branch:
        log = Path("logs", "refs", "heads", *branch.split("/"))
        pairs.append((common / log, git_dir / log))
    try:
        if (common / "hooks").is_dir() and not (git_dir / "hooks").exists():
            shutil.copytree(common / "hooks", git_dir / "hooks", symlinks=True)
        for source, target in pairs:
            if not source.is_file():
                continue
            theirs = source.read_bytes()
            mine = target.read_bytes() if target.is_file() else b""
            last = theirs.splitlines()[-1].split(b" ")[1] if theirs.strip() else b""
            ahead = [
                line for line in mine.splitlines(keepends=True) if line.split(b" ")[1:2] != [last]
            ]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(theirs + b"".join(ahead))
    except (OSError, IndexError):
        return


def _copy_remotes(repo: Path, git_dir: Path) -> None:
    """Name ``repo``'s remotes (their URLs and fetch refspecs) in ``git_dir``'s own
    configuration, as a plain checkout has them (the sandbox has no network: nothing is
    fetched from them). Raises nothing: a repository without remotes gets none."""
    proc = run(repo, "config", "--local", "--null", "--get-regexp", r"^remote\.")
    entries = [e for e in proc.stdout.split(b"\0") if e] if proc.returncode == 0 else []
    for entry in entries:
        key, _, value = entry.partition(b"\n")
        name = os.fsdecode(key)
        if name.endswith((".url", ".fetch", ".pushurl")):
            run(git_dir.parent, "config", "--add", name, os.fsdecode(value))


def current_branch(repo: Path) -> str | None:
    """The branch ``repo``'s work tree is on (``main``), or ``None`` when detached or not
    known. Never raises."""
    proc = run(repo, "symbolic-ref", "--quiet", "--short", "HEAD")
    name = proc.stdout.decode("utf-8", "replace").strip()
    return name if proc.returncode == 0 and name and not name.startswith("-") else None


def branch_for(repo: Path, commit: str) -> str | None:
    """The branch a plain checkout of ``commit`` would be on: ``repo``'s current branch when
    its tip is ``commit`` or no local branch's is (a patch applied where the user stands),
    else the first local branch whose tip is ``commit``; ``None`` when ``repo`` is detached
    and no branch points there. Never raises."""
    current = current_branch(repo)
    proc = run(repo, "for-each-ref", "--format=%(refname:short)", "--points-at", commit,
               "refs/heads/")  # fmt: skip
    names = proc.stdout.decode("utf-8", "replace").split() if proc.returncode == 0 else []
    if current in names or not names:
        return current
    return names[0] if not names[0].startswith("-") else current


def _common_dir(repo: Path) -> Path:
    """``repo``'s git directory shared by all its worktrees, absolute and resolved. Raises
    ``GitError`` when ``repo`` is no repository."""
    proc = run(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if proc.returncode != 0:
        raise GitError(f"{repo} is not a git repository: {_last(proc)}")
    return Path(os.path.realpath(os.fsdecode(proc.stdout.strip())))


def _last(proc: subprocess.CompletedProcess[bytes]) -> str:
    said = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    return said[-1] if said else str(proc.returncode)
