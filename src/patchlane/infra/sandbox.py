"""The kernel sandbox every child that runs the patch's code starts in (docs/architecture.md §2).

The patch's code runs in patchlane's children: the property children, collection, the replay
run, the checks at the base, map recording and a map's build command. With the user's own
rights it could write where later gates read (a cached map, the bytecode prefix, another
child's tree), reach the network, or read the user's credentials. So each such child starts
under bubblewrap (``bwrap``), the same user-namespace mechanism the Linux sandboxes of coding
agents use:

- the whole file system read-only (``--ro-bind / /``): the interpreter, its environment and
  the user's repository can be read, never written;
- the user's home, patchlane's cache directory and the cache key's directory replaced by
  empty read-only directories, with only what the child needs bound back read-only (the interpreter
  and the ``sys.path`` entries of this process that live there, the bytecode prefix, the
  repository);
- writable: the child's scratch directory (its ``HOME`` and ``TMPDIR``) and, for a test run,
  its own throwaway copy of the tree it tests; nothing written there survives the child;
- a replay's test process (``Confinement.plain``) keeps the user's ``HOME`` and ``TMPDIR``
  instead: the home shown read-only with its credential places (``HOME_SECRETS``) empty,
  the temporary directory an empty writable one of its own, as a plain run has them
  (docs/explanation/decisions/0031-plain-run.md);
- a test run's tree shown at the user's repository path, and the project's copies over
  where the environment installs them (``Presentation``, ``infra.origins``): the code under
  test is the tree under judgement;
- its own pid, ipc, uts and network namespaces (no network but a loopback), a fresh ``/dev``
  and ``/proc``, every capability dropped, killed with its parent;
- except a replay's test process (``Confinement.plain``), where the kernel has Landlock scopes
  (ABI 6: ``Isolation.host_processes``): it keeps the host's pid namespace and ``/proc``
  (read-only, through the root's bind), so that it sees the process table a plain run sees,
  and no other namespace can be made inside (``--disable-userns``). What the pid namespace
  kept from it, the launcher ``child/launch.py`` keeps instead: a Landlock domain in which
  nothing can signal or ptrace (``/proc/PID/environ``, ``mem``, ``fd``) a process outside the
  run, or reach its abstract sockets; and every process left in the run's network namespace
  is killed after the run (``infra.hostprocs``;
  docs/explanation/decisions/0032-host-process-table.md).

Where ``bwrap`` cannot run (not installed; user namespaces refused, as on Ubuntu 24.04's
AppArmor default: ``sysctl kernel.apparmor_restrict_unprivileged_userns=0``), children fall
back to the layers patchlane had before: a network namespace from ``unshare`` where one can
be made, and the in-child audit hooks. ``Isolation.kind`` says which ran, and it is written in
the property report, the receipt, ``verdict.json`` and the note; a map with ``isolation:
required`` turns a gate without the sandbox into ``undecided``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchlane.infra import hostprocs
from patchlane.infra.bytecode import process_pycache
from patchlane.infra.cache import default_cache
from patchlane.infra.cachekey import key_dir
from patchlane.infra.hostprocs import Launched

BWRAP = "bwrap"
FALLBACK_NETNS = "netns"
FALLBACK_NONE = "none"
KINDS = (BWRAP, FALLBACK_NETNS, FALLBACK_NONE)
# Which ``bwrap`` to use: a path, or ``none`` to run without it (the fallback, for a machine
# that has it but where the user wants the old layers, and for the fallback's own tests).
BWRAP_ENV = "PATCHLANE_BWRAP"
# Names of variables a child never inherits: credentials have no business in a test run
# whose code is the patch's. A pattern list can only *remove* variables, so a spelling it
# misses leaves the child no worse off than the user's own shell, and the sandbox has no
# network to send one anywhere.
_CREDENTIAL = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|OAUTH|COOKIE"
    r"|(^|_)AUTH($|_)",
    re.IGNORECASE,
)
_CREDENTIAL_NAMES = frozenset({"SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS"})
_CREDENTIAL_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "GCP_", "ACTIONS_", "PATCHLANE_SIGNING")


# The repositories this process works on (``show``): read-only in every sandbox, also where
# they lie in the user's home (a head checkout's objects, an editable install's paths).
_REPOSITORIES: set[Path] = set()
# Secret files this process holds (``hide_file``: a signing key), and the system's own,
# each replaced by an empty file in every sandbox: what a test can read, it can leak
# through its node ids into a receipt.
_SECRET_FILES: set[Path] = set()
_SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh")
# Shared places a child must not reach: other processes' temporary files and the sockets of
# the machine's services (a unix socket is a file: a network namespace does not stop it).
# ``/dev/shm`` is the fresh ``/dev``'s own.
_SHARED_PLACES = ("/tmp", "/var/tmp", "/run", "/var/run")  # noqa: S108
_WRITABLE_TEMP = ("/tmp", "/var/tmp")  # noqa: S108 - private tmpfs mounts, never the host's
# What a plain test run sees of the user's home is its listing and files, read-only; these,
# where they exist, read as empty (a directory) or as an empty file: the credentials a
# developer's home holds. Not a boundary (the sandbox has no network to send anything over,
# and the home is read-only), a courtesy: what a test reads can reach a receipt's node ids.
HOME_SECRETS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials",
    ".pypirc", ".npmrc", ".config/gh", ".config/gcloud", ".config/hub",
    ".local/share/keyrings", ".password-store", ".vault-token", ".cargo/credentials.toml",
    ".cargo/credentials",
)  # fmt: skip


def hide_file(path: Path) -> None:
    """Hide the secret file ``path`` (its contents) from every sandboxed child this process
    starts from now on."""
    _SECRET_FILES.add(_real(path))


def show(repo: Path) -> None:
    """Make the repository ``repo`` visible, read-only, to every sandboxed child this
    process starts from now on (the command line calls it once it knows the repository)."""
    _REPOSITORIES.add(_real(repo))


def judged(tree: Path, repo: Path) -> None:
    """Record that ``tree`` (a checkout this process made) holds a commit of the user's
    repository ``repo``: a test run in it is shown the tree at ``repo``'s path
    (``Presentation``)."""
    _TREES[_real(tree)] = _real(repo)


def repository_of(tree: Path) -> Path | None:
    """The user's repository ``tree`` was checked out from (``judged``), or ``None``."""
    return _TREES.get(_real(tree))


# Checkouts this process made, and the repository each holds a commit of (``judged``).
_TREES: dict[Path, Path] = {}


@dataclass(frozen=True)
class Presentation:
    """How a test child sees the tree under judgement (docs/architecture.md §2, "The code
    under test is the tree under judgement").

    ``tree`` (a path of this process) is mounted at ``at`` (the user's repository path, or
    ``tree`` itself), writable or not, and the child starts there: its working directory,
    ``__file__`` paths and an editable install that points into the user's work tree show
    the tree's files. A place below ``at`` the child needs from the host (an interpreter or
    ``sys.path`` entry: a virtual environment inside the repository) is shown again only
    where the tree has nothing of that name at its top. ``over`` pairs a project module's
    copy in the tree with a place the environment imports that name from (a regular
    install in site-packages, another clone's editable install): the copy is bound over it,
    read-only. ``names`` are the project's importable names (``infra.origins``)."""

    tree: Path
    at: Path
    writable: bool = True
    over: tuple[tuple[Path, Path], ...] = ()
    names: tuple[str, ...] = ()

    def child_path(self, path: Path) -> Path:
        """Where the child sees the host's ``path`` (below the tree: below ``at``)."""
        real = _real(path)
        tree = _real(self.tree)
        if _below(real, tree):
            return _real(self.at) / real.relative_to(tree)
        return real

    def from_tree(self, child_path: str) -> bool:
        """Whether the file the child names ``child_path`` (absolute, as the child sees it)
        is the tree's: below ``at`` under a name the tree has at its top, below a place
        the tree's copy is bound over, or below the tree itself."""
        path = Path(os.path.normpath(child_path))
        at, tree = _real(self.at), _real(self.tree)
        if _below(path, at) and at != tree:
            rel = path.relative_to(at).parts
            return not rel or os.path.lexists(tree / rel[0])
        if any(_below(path, _real(dest)) for _, dest in self.over):
            return True
        return _below(path, tree) or _below(_real(path), tree)


@dataclass(frozen=True)
class Confinement:
    """What one child may write: its ``scratch`` directory (also its ``HOME`` and
    ``TMPDIR``) and ``writable`` (a test run's own tree). ``readable`` names extra places to
    show read-only where the sandbox would otherwise hide them (the repository, when it
    lies in the user's home). ``presented``: the tree under judgement, as the child sees it
    (``Presentation``; a tree there is shown only as it says)."""

    scratch: Path
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    # A replay's test process (docs/explanation/decisions/0031-plain-run.md): ``HOME`` and
    # ``TMPDIR`` as the user has them, the home shown read-only with its credential files
    # (``HOME_SECRETS``) empty, patchlane's cache and key directories hidden, the temporary
    # directory an empty one of its own.
    plain: bool = False
    presented: Presentation | None = None


@dataclass(frozen=True)
class Isolation:
    """The isolation children get on this machine, probed once per process.

    ``kind`` is ``bwrap`` (the kernel sandbox), ``netns`` (a network namespace only) or
    ``none`` (the in-child guards alone); ``why`` says why ``bwrap`` did not run (empty when
    it did). ``host_processes``: a replay's test process keeps the host's process table,
    under the launcher's Landlock domain (the kernel has Landlock scopes and a confined run
    of the launcher worked here; see the module docstring)."""

    kind: str
    why: str
    bwrap: str | None = None
    netns_prefix: tuple[str, ...] = ()
    hidden: tuple[Path, ...] = field(default=(), compare=False)
    shown: tuple[Path, ...] = field(default=(), compare=False)
    secrets: tuple[Path, ...] = field(default=(), compare=False)
    host_processes: bool = False

    @property
    def sandboxed(self) -> bool:
        """Whether children run in the kernel sandbox."""
        return self.kind == BWRAP

    def describe(self) -> str:
        """One line for the note and the terminal."""
        if self.sandboxed:
            return "bwrap (read-only system, own scratch, no network, no home or cache)"
        layer = "a network namespace and " if self.kind == FALLBACK_NETNS else ""
        return f"no kernel sandbox ({self.why}): {layer}the in-child guards only"

    def launches(self, confinement: Confinement) -> bool:
        """Whether a child with ``confinement`` runs under the launcher, on the host's
        process table (a replay's test process, where ``host_processes``): its ``command``
        then needs the ``Launched`` pipes."""
        return self.sandboxed and self.host_processes and confinement.plain

    def command(
        self,
        argv: Sequence[str],
        confinement: Confinement,
        cwd: Path,
        launched: Launched | None = None,
    ) -> list[str]:
        """Return ``argv`` wrapped so that it runs confined, from ``cwd``; under the
        launcher, reporting on ``launched``'s pipes, when ``launches(confinement)`` (and
        then ``launched`` is required: raises ``ValueError`` without it)."""
        if self.bwrap is None:
            return [*self.netns_prefix, *argv]
        if not self.launches(confinement):
            return [self.bwrap, *bwrap_args(self, confinement, cwd), "--", *argv]
        if launched is None:
            raise ValueError("a run on the host's process table needs its launcher's pipes")
        args = bwrap_args(self, confinement, cwd)
        inner = hostprocs.launcher_argv(sys.executable, launched.status_fd, list(argv))
        return [self.bwrap, "--info-fd", str(launched.info_fd), *args, "--", *inner]


def network_layers(isolation: Isolation) -> str:
    """The property report's name for the layers its children had (``bwrap+audit``,
    ``netns+audit`` or ``audit``: the in-child audit hooks always run)."""
    return {BWRAP: "bwrap+audit", FALLBACK_NETNS: "netns+audit"}.get(isolation.kind, "audit")


def bwrap_args(isolation: Isolation, confinement: Confinement, cwd: Path) -> list[str]:
    """Return bubblewrap's options for one child (see the module docstring).

    Mounts are made in order: the read-only root, then empty directories over the hidden
    places, then what is shown again read-only, then the writable places; bwrap makes each
    mount point it needs, so a place below a hidden one is reached again.
    """
    hosts = isolation.launches(confinement)
    args = [
        "--die-with-parent",
        *_namespaces(hosts),
        "--cap-drop", "ALL",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
    ]  # fmt: skip
    if not hosts:
        args += ["--proc", "/proc"]  # after the root's bind, which would hide it
    present = confinement.presented
    tree = _real(present.tree) if present is not None else None
    at = _real(present.at) if present is not None else None
    writable = [_real(p) for p in (confinement.scratch, *confinement.writable)]
    writable = [w for w in writable if w != tree]
    hidden = [h for h in isolation.hidden if not any(_below(h, w) for w in writable)]
    masked: list[Path] = []
    if confinement.plain:
        hidden, masked = _plain_home(hidden)
    for place in sorted(set(hidden), key=_depth):
        args += ["--tmpfs", os.fspath(place)]

    shown = {_real(p) for p in (*isolation.shown, *_REPOSITORIES, *confinement.readable)}
    if tree is not None:
        shown.discard(tree)
    inside: set[Path] = set()
    if at is not None:
        inside = {p for p in (*shown, *writable) if _below(p, at)}
    for place in sorted(shown - inside, key=_depth):
        if any(_below(place, h) and place != h for h in hidden) and place.exists():
            args += ["--ro-bind", os.fspath(place), os.fspath(place)]
    if present is not None and tree is not None and at is not None:
        # Always the host's, whatever the tree holds: the interpreter, and the files this
        # process hands the child by path (a freeze report, a record's directory).
        given = {_real(p) for p in (*confinement.readable, *writable)}
        always = given | {_real(Path(p)) for p in _interpreter_places()}
        args += _presentation_args(present, (tree, at), inside, set(writable), always)
    for place in sorted(set(writable) - inside, key=_depth):
        args += ["--bind", os.fspath(place), os.fspath(place)]
    # After every bind that could show them again: a secret file reads as empty.
    for secret in sorted(_SECRET_FILES | set(isolation.secrets)):
        if secret.is_file():
            args += ["--ro-bind", "/dev/null", os.fspath(secret)]
    # A credential file of the home reads as empty, as a file of its own would (the
    # sandbox's ``/dev/null`` cannot be opened where it is bound).
    args += _emptied(masked, confinement.scratch)
    # The launcher is this process's own file, whatever is shown at its path (a tree
    # under judgement that is patchlane's own checkout holds its own copy there).
    launcher = os.fspath(hostprocs.LAUNCHER)
    args += ["--ro-bind", launcher, launcher] if hosts else []
    # Last, once every mount point below them exists: a write into a hidden place fails
    # instead of landing in a throwaway directory, so the attempt shows. ``/tmp`` and
    # ``/var/tmp`` stay writable, each an empty tmpfs of this child's own: code that keeps
    # a cache there behaves as it does on the host, where the full suite runs.
    temporary = {_real(Path(p)) for p in _WRITABLE_TEMP if Path(p).is_dir()}
    if confinement.plain:
        # The user's own temporary directory (``TMPDIR``), as empty and writable as ``/tmp``.
        temporary.add(_real(Path(tempfile.gettempdir())))
    for place in sorted(set(hidden) - temporary, key=_depth):
        args += ["--remount-ro", os.fspath(place)]
    if present is not None and at is not None and not present.writable:
        args += ["--remount-ro", os.fspath(at)]
    where = present.child_path(cwd) if present is not None else _real(cwd)
    args += ["--chdir", os.fspath(where)]
    return args


def _namespaces(host_processes: bool) -> list[str]:
    """bwrap's namespace options: every namespace (and ``bwrap_args`` mounts a ``/proc``
    of its own); or, on the host's process table, every namespace but the pid namespace,
    the host's ``/proc`` (read-only through the root's bind: even ``/proc/sys`` cannot be
    written) and no new namespace inside, so that nothing can leave the run's network
    namespace, by which ``hostprocs.sweep`` finds what is left of the run."""
    if not host_processes:
        return ["--unshare-all"]
    return [
        "--unshare-user", "--unshare-ipc", "--unshare-net", "--unshare-uts",
        "--unshare-cgroup-try", "--disable-userns",
    ]  # fmt: skip


def _plain_home(hidden: list[Path]) -> tuple[list[Path], list[Path]]:
    """For a replay's test process: ``hidden`` without the user's home (shown read-only,
    as a plain run sees it) but with its credential directories, and the credential
    places of the home that exist (``HOME_SECRETS``), resolved."""
    home = _real(Path.home())
    masked = [_real(home / m) for m in HOME_SECRETS if (home / m).exists()]
    kept = [h for h in hidden if h != home]
    return kept + [m for m in masked if m.is_dir() and not m.is_symlink()], masked


def _emptied(masked: list[Path], scratch: Path) -> list[str]:
    """bwrap's mounts that make each credential file of ``masked`` read as empty, as a file
    of its own would (the sandbox's ``/dev/null`` cannot be opened where it is bound): an
    empty file in ``scratch`` bound over each."""
    files = sorted(m for m in masked if m.is_file())
    if not files:
        return []
    empty = scratch / ".patchlane-empty"
    empty.write_bytes(b"")
    args: list[str] = []
    for secret in files:
        args += ["--ro-bind", os.fspath(_real(empty)), os.fspath(secret)]
    return args


def _presentation_args(
    present: Presentation,
    tree_at: tuple[Path, Path],
    inside: set[Path],
    writable: set[Path],
    always: set[Path],
) -> list[str]:
    """bwrap's mounts of ``present``: the tree at ``at``; each place below ``at`` that the
    child needs from the host (``inside``) again, unless the tree has its top name and the
    place is none of those that are ``always`` the host's (then the tree's own entry is
    what a plain run in the user's checkout would see: ``src/`` on ``sys.path``); each
    project module's copy over where the environment imports it from."""
    tree, at = tree_at
    # Writable while bwrap makes the mount points below it; a read-only tree is remounted
    # read-only once they exist (``bwrap_args``).
    args = ["--bind", os.fspath(tree), os.fspath(at)]
    for place in sorted(inside, key=_depth):
        if place == at:
            continue
        hosts = any(_below(place, a) for a in always if _below(a, at))
        if not hosts and os.path.lexists(tree / place.relative_to(at).parts[0]):
            continue
        if place.exists():
            verb = "--bind" if place in writable else "--ro-bind"
            args += [verb, os.fspath(place), os.fspath(place)]
    for source, dest in present.over:
        args += ["--ro-bind", os.fspath(_real(source)), os.fspath(_real(dest))]
    # A checkout that shares the repository's objects (``objects/info/alternates`` naming
    # the repository's own object directory) would find, at that path, its own: the
    # repository's are shown there again, read-only, so that its history reads as on the
    # host.
    for shared in _alternates(tree):
        if _below(shared, at) and shared != at and shared.is_dir():
            args += ["--ro-bind", os.fspath(shared), os.fspath(shared)]
    return args


def _alternates(tree: Path) -> list[Path]:
    """The object directories a checkout's ``.git`` borrows from (resolved), if any."""
    listing = tree / ".git" / "objects" / "info" / "alternates"
    try:
        lines = listing.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    return [_real(Path(line)) for line in lines if line.startswith("/")]


def confined_env(env: Mapping[str, str], scratch: Path, *, plain: bool = False) -> dict[str, str]:
    """Return ``env`` for a confined child: no credentials (see ``_CREDENTIAL``), and its
    scratch directory as ``HOME`` and ``TMPDIR``; with ``plain`` (``Confinement.plain``),
    ``HOME`` and ``TMPDIR`` as ``env`` has them."""
    kept = {k: v for k, v in env.items() if not is_credential(k)}
    if not plain:
        kept["HOME"] = os.fspath(scratch)
        kept["TMPDIR"] = os.fspath(scratch)
    return kept


def is_credential(name: str) -> bool:
    """Whether the variable ``name`` looks like it carries a credential."""
    upper = name.upper()
    return (
        upper in _CREDENTIAL_NAMES
        or upper.startswith(_CREDENTIAL_PREFIXES)
        or _CREDENTIAL.search(upper) is not None
    )


@functools.cache
def isolation() -> Isolation:
    """Return the isolation children get here, probed once per process: ``bwrap`` when a
    real sandboxed child starts, else a network namespace from ``unshare``, else none."""
    hidden, shown, secrets = _hidden_and_shown()
    wanted = os.environ.get(BWRAP_ENV, "")
    if wanted.lower() == "none":
        why = f"{BWRAP_ENV}=none"
    else:
        found = wanted or shutil.which(BWRAP) or shutil.which(BWRAP, path=os.defpath)
        if found is None:
            why = "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
        else:
            probe = Isolation(BWRAP, "", found, (), hidden, shown, secrets)
            why = _probe(probe)
            if not why:
                hosts = dataclasses.replace(probe, host_processes=True)
                if hostprocs.landlock_abi() >= hostprocs.SCOPES_ABI and not _probe(hosts):
                    return hosts
                return probe
    prefix = _netns_prefix()
    kind = FALLBACK_NETNS if prefix else FALLBACK_NONE
    return Isolation(kind, why, None, prefix, hidden, shown, secrets)


def _probe(candidate: Isolation) -> str:
    """Start one confined interpreter (with ``host_processes``: a replay's test process,
    under the launcher, which must confine itself); return why it failed, or ``""``."""
    if candidate.host_processes:
        # A plain run's confinement writes into its scratch (``_emptied``): its own.
        with tempfile.TemporaryDirectory(prefix="patchlane-probe-") as own:
            return _run_probe(candidate, Confinement(Path(own), plain=True))
    scratch = Path(os.environ.get("TMPDIR") or "/tmp")  # noqa: S108 - only read here
    return _run_probe(candidate, Confinement(scratch))


def _run_probe(candidate: Isolation, confinement: Confinement) -> str:
    launched = Launched.open() if candidate.launches(confinement) else None
    argv = candidate.command([sys.executable, "-S", "-c", "pass"], confinement, Path("/"), launched)
    try:
        proc = subprocess.run(
            argv, env={"PATH": os.defpath, "LC_ALL": "C.UTF-8"}, capture_output=True,
            timeout=30, check=False, pass_fds=launched.pass_fds if launched else (),
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bwrap could not start: {e}"
    finally:
        if launched is not None:
            launched.started()
    if launched is not None:
        refused = launched.refused()
        launched.close()
        if refused is not None:
            return f"the launcher could not confine itself: {refused}"
    if proc.returncode == 0:
        return ""
    said = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    last = said[-1] if said else f"exit {proc.returncode}"
    hint = (
        "; user namespaces are refused (Ubuntu 24.04: sysctl "
        "kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for bwrap)"
        if "namespace" in last.lower() or "permission" in last.lower()
        else ""
    )
    return f"bwrap failed: {last[:200]}{hint}"


def _netns_prefix() -> tuple[str, ...]:
    """``unshare --net`` as root, else ``unshare -rn`` in a user namespace, when one can
    really be created; else ``()``."""
    unshare = shutil.which("unshare") or shutil.which("unshare", path=os.defpath)
    candidates: list[tuple[str, ...]] = []
    if unshare is not None:
        if os.geteuid() == 0:
            candidates.append((unshare, "--net", "--"))
        candidates.append((unshare, "-rn", "--"))
    for prefix in candidates:
        try:
            proc = subprocess.run(
                [*prefix, sys.executable, "-S", "-c", "pass"],
                env={"PATH": os.defpath, "LC_ALL": "C.UTF-8"},
                capture_output=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0:
            return prefix
    return ()


def _hidden_and_shown() -> tuple[tuple[Path, ...], tuple[Path, ...], tuple[Path, ...]]:
    """The places a sandboxed child must not see (the user's home, patchlane's cache and
    key directories, the shared temporary and run-time directories), those it needs from
    inside them (the interpreter, this process's ``sys.path``, the bytecode prefix), and
    the secret files to empty (a signing key named by the environment, the system's
    password and host-key files), all resolved."""

    places = [Path.home(), default_cache(), key_dir(), Path(tempfile.gettempdir())]
    places += [Path(p) for p in _SHARED_PLACES if not Path(p).is_symlink()]
    hidden = {_real(p) for p in places if p.is_dir() and _real(p) != Path("/")}
    shown = {_real(Path(p)) for p in _interpreter_places()}
    path_dirs = [Path(p) for p in sys.path if p and Path(p).is_dir()]
    shown |= {_real(p) for p in path_dirs}
    shown |= _linked_entries(path_dirs)
    named = [os.environ[k] for k in ("PATCHLANE_SIGNING_KEY",) if os.environ.get(k)]
    secrets: set[Path] = set()
    for entry in (*_SYSTEM_SECRETS, *named):
        path = Path(entry)
        found = sorted(path.glob("ssh_host_*key")) if path.is_dir() else [path]
        secrets |= {_real(p) for p in found}
    return (
        tuple(sorted(hidden, key=_depth)),
        tuple(sorted(p for p in shown if p != Path("/"))),
        tuple(sorted(secrets)),
    )


def _linked_entries(directories: Iterable[Path]) -> set[Path]:
    """The resolved targets of the symbolic links directly inside ``directories`` (a
    site-packages whose packages are links into another environment, as some installers
    and tools build): a child that sees the directory but not what its links point to
    cannot import them."""
    found: set[Path] = set()
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink() and os.path.exists(entry.path):  # noqa: PTH110 - a str
                found.add(_real(Path(entry.path)))
    return found


def _interpreter_places() -> Iterable[str]:
    yield sys.prefix
    yield sys.base_prefix
    yield sys.exec_prefix
    yield os.fspath(Path(sys.executable).resolve().parent)
    yield os.fspath(Path(sys.executable).parent)

    yield process_pycache()


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _below(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


def _depth(path: Path) -> tuple[int, str]:
    return len(path.parts), os.fspath(path)
