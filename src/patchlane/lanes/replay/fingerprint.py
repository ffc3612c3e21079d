"""What a test can cheaply observe of the process it runs in, and what the replay may differ in.

docs/architecture.md §2: the replay cannot be told apart from the project's own run.
``observe`` records, as flat ``key -> JSON value`` pairs, what a test (or code under test)
reads in one line or two: the environment (``os.environ`` and ``/proc/self/environ``), ``sys.argv``,
``/proc/self/cmdline``, ``sys.flags``, the interpreter and ``sys.path``'s shape, the process
tree (pid, parent, pid 1, how many processes are visible, session and group, what it may do
to processes outside its run), open
descriptors by kind, stdin, ``HOME`` and its listing, the temporary directory, the working
directory, git's view of the checkout (history, branch, remotes, tags), the non-stdlib
modules loaded, resource limits, umask, locale, ids, host name, network interfaces and the
process's status (capabilities, no-new-privileges, seccomp, signal masks, id maps, mounts);
the file system (``/dev``'s listing, the temporary directories, whether the working
directory is a mount point, read-only mounts, the namespaces), git's reflog and hooks, and
what patchlane could add inside the process: threads, ``sys.path_hooks``/``sys.meta_path``,
the finders and the project's loaders, functions of pytest's, pluggy's and the import
system's modules defined elsewhere, patchlane's plugin module (its names and what its
functions hold), every module loaded and, given pytest's plugin manager, its plugins.

``undeclared(plain, replay)`` names every key whose value differs and that ``DECLARED`` does
not allow, each with both values: the fingerprint test (tests/lanes/replay/test_fingerprint.py)
runs a probe test that records ``observe()`` under plain ``python -m pytest`` in a real
repository, commits it, and compares under the replay; a difference fails the probe, so the
replay's own verdict shows it. Grow the probe when a new tell is found, not ``DECLARED``;
docs/explanation/trust-model.md gives each declared difference with its reason.

Standard library only: the probe runs inside the replay's test process.
"""

# The probe asks as test code does, with ``os`` calls on strings.
# ruff: noqa: PTH100, PTH109, PTH111, PTH115, PTH118, PTH121, PTH208

from __future__ import annotations

import errno
import fnmatch
import locale
import os
import resource
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from patchlane.infra.sandbox import is_credential

# A variable the replay lacks whose name looks like a credential (``is_credential``).
CREDENTIALS = (
    "variables whose names look like credentials (TOKEN, SECRET, AWS_..., SSH_AUTH_SOCK) are "
    "removed: the patch's code runs there, and what it reads can reach a receipt's node ids"
)
# Key patterns (``fnmatch``) whose values may differ, with why (trust-model.md says the same).
DECLARED: Mapping[str, str] = {
    "process.parent.*": "the test process's parent is the sandbox's launcher (child/launch.py), "
    "which confines it and kills what it leaves behind",
    "process.others.*": "the kernel sandbox (Landlock): another process's /proc entries that "
    "need ptrace access (environ, mem, fd) are EACCES and a signal to a process outside the "
    "run is EPERM",
    "proc_environ_padding": "the drawn hash seed is in force from the interpreter's start "
    "(replay run --hash-seed reproduces it); its entry, last in the start-up block, is blanked "
    "at the plugin's import, which leaves NUL bytes at the end of /proc/self/environ",
    "fds.pipes": "patchlane's outcome pipe (and, while the gate's run collects, its answer pipe)",
    "status.*": "the kernel sandbox itself: a user namespace without capabilities, "
    "no-new-privileges, its id maps and mounts",
    "net.interfaces": "no network: loopback only",
    "home.writable": "the home directory is shown read-only (credential files empty)",
    "dev.listing": "bwrap's own /dev (null, zero, full, random, urandom, tty, pts, shm, ...): "
    "the host's devices are not the test's to reach",
    "tmp.entries": "the temporary directories are empty ones of the run's own: other programs' "
    "temporary files are not the test's to read",
    "fs.cwd_is_mount": "the tree under judgement is bound at the repository's path",
    "fs.prefix_readonly": "the whole file system is read-only but the tree and the temporary "
    "directories (bubblewrap 0.8 has no overlay to make a writable view of it)",
    "ns.user": "the kernel sandbox: a user namespace of its own",
    "ns.mnt": "the kernel sandbox: its mounts",
    "ns.net": "no network: a network namespace of its own",
    "ns.uts": "the kernel sandbox: a uts namespace of its own (the host name is the host's)",
    "ns.ipc": "the kernel sandbox: no System V IPC or POSIX message queue of the host's",
    "ns.cgroup": "the kernel sandbox: a cgroup namespace of its own",
    "pytest.plugins": "the replay's own pytest plugins (the slice it runs, the outcome stream, "
    "the Hypothesis seed, the rerun plugins' reruns taken out) are registered with pytest: "
    "they are how the run is made and reported",
    "machinery.replaced": "pytest's cached rewritten test modules below the tree are never "
    "read (its ``_read_pyc`` is patchlane's there): bytecode in the tree never runs",
}


def observe(pluginmanager: Any = None) -> dict[str, Any]:
    """Return what this process looks like to a test (see the module docstring), as flat
    ``key -> value`` pairs whose values are JSON (str, int, bool, lists, ``None``); given
    pytest's ``pluginmanager`` (``request.config.pluginmanager``), its plugins by kind too.
    Raises nothing: a fact that cannot be read is recorded as ``None``."""
    seen: dict[str, Any] = {}
    cwd = os.getcwd()
    for name, value in os.environ.items():
        seen[f"env.{name}"] = _shape(value, cwd)
    for name, value in _proc_environ().items():
        seen[f"proc_environ.{name}"] = _shape(value, cwd)
    raw = _read("/proc/self/environ")
    seen["proc_environ_padding"] = len(raw) - len(raw.rstrip("\0")) - 1 if raw else 0
    seen["argv"] = [_shape(a, cwd) for a in sys.argv]
    seen["cmdline"] = [_shape(a, cwd) for a in _read("/proc/self/cmdline").split("\0") if a]
    for field in (f for f in dir(sys.flags) if not f.startswith("_")):
        value = getattr(sys.flags, field)
        if isinstance(value, int | bool | str):
            seen[f"flags.{field}"] = value
    seen["executable"] = sys.executable
    seen["prefix"] = [sys.prefix, sys.base_prefix]
    seen["sys_path"] = [_shape(p, cwd) for p in sys.path]
    seen.update(_process())
    seen.update(_fds())
    home = os.path.expanduser("~")
    seen["home.path"] = home
    seen["home.listing"] = _listing(home)
    seen["home.writable"] = os.access(home, os.W_OK)
    seen["temp.gettempdir"] = tempfile.gettempdir()
    seen["temp.writable"] = os.access(tempfile.gettempdir(), os.W_OK)
    seen["cwd"] = cwd
    seen.update(_git(cwd))
    seen["modules"] = sorted(_loaded_outside_stdlib())
    for name in sorted(n for n in dir(resource) if n.startswith("RLIMIT_")):
        try:
            seen[f"rlimit.{name}"] = list(resource.getrlimit(getattr(resource, name)))
        except (OSError, ValueError):
            seen[f"rlimit.{name}"] = None
    mask = os.umask(0)
    os.umask(mask)
    seen["umask"] = mask
    seen["locale"] = [
        locale.setlocale(locale.LC_ALL, None),
        locale.getpreferredencoding(False),
        sys.getfilesystemencoding(),
    ]
    seen["ids"] = [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())]
    seen["hostname"] = socket.gethostname()
    seen["net.interfaces"] = sorted(name for _, name in socket.if_nameindex())
    seen.update(_status())
    seen.update(_file_system(cwd))
    seen.update(_in_process())
    if pluginmanager is not None:
        seen["pytest.plugins"] = _plugins(pluginmanager)
    return seen


def _plugins(pluginmanager: Any) -> list[str]:
    """pytest's registered plugins by kind: a module by its name, any other object by its
    type (the names pluggy gives unnamed plugins are addresses)."""
    kinds = []
    for plugin in list(pluginmanager.get_plugins()):
        if isinstance(plugin, types.ModuleType):
            kinds.append(_shape_path(plugin.__name__))
        else:
            kinds.append(_describe(plugin))
    return sorted(kinds)


def _shape_path(name: str) -> str:
    """A conftest module's name is its path: the checkout's differs between two places."""
    return _shape(name, os.getcwd())


def undeclared(plain: Mapping[str, Any], replay: Mapping[str, Any]) -> list[str]:
    """Return one line per key whose value differs between ``plain`` and ``replay`` (or that
    one lacks) and that no ``DECLARED`` pattern allows, sorted; empty when they agree."""
    found = []
    for key in sorted(set(plain) | set(replay)):
        if plain.get(key, _ABSENT) == replay.get(key, _ABSENT):
            continue
        if any(fnmatch.fnmatchcase(key, pattern) for pattern in DECLARED):
            continue
        kind, _, name = key.partition(".")
        if kind in ("env", "proc_environ") and key not in replay and is_credential(name):
            continue  # CREDENTIALS: removed by name
        found.append(f"{key}: plain {_short(plain.get(key))} != replay {_short(replay.get(key))}")
    return found


_ABSENT = "<absent>"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def _read(path: str) -> str:
    try:
        return Path(path).read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def _shape(text: str, cwd: str) -> str:
    """``text`` with the working directory written ``<cwd>`` (the checkout's path is one
    declared difference, not one per place it shows)."""
    return text.replace(cwd, "<cwd>") if cwd != os.sep else text


def _proc_environ() -> dict[str, str]:
    pairs = (entry.partition("=") for entry in _read("/proc/self/environ").split("\0") if entry)
    return {name: value for name, _, value in pairs}


def _process() -> dict[str, Any]:
    """The process tree as a test sees it: its pid and parent, pid 1, how many processes
    are visible (in coarse steps: the count moves with the machine), its session and group;
    its parent's name and command line; what it may do to processes outside its run."""
    pid, ppid = os.getpid(), os.getppid()
    visible = len([e for e in os.listdir("/proc") if e.isdigit()])
    grandparent = _parent_of(ppid)
    return {
        "process.pid_is_1": pid == 1,
        "process.pid_below_100": pid < 100,
        "process.ppid_is_1": ppid == 1,
        "process.pid1_comm": _read("/proc/1/comm").strip(),
        "process.pid1_cmdline": _read("/proc/1/cmdline").split("\0")[:3],
        "process.visible": "under 10" if visible < 10 else "10-29" if visible < 30 else "30+",
        "process.session_leader": os.getsid(0) == pid,
        "process.group_leader": os.getpgrp() == pid,
        "process.parent.comm": _read(f"/proc/{ppid}/comm").strip(),
        "process.parent.cmdline": _read(f"/proc/{ppid}/cmdline").split("\0")[1:3],
        "process.others.pid1_environ": _outcome(lambda: Path("/proc/1/environ").read_bytes()),
        "process.others.signal_pid1": _outcome(lambda: os.kill(1, 0)),
        "process.others.signal_grandparent": _outcome(lambda: os.kill(grandparent, 0))
        if grandparent > 0
        else None,
    }


def _parent_of(pid: int) -> int:
    stat = _read(f"/proc/{pid}/stat")
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0


def _outcome(act: Callable[[], object]) -> str:
    """``ok``, or the name of the error ``act()`` raised."""
    try:
        act()
    except OSError as e:
        return errno.errorcode.get(e.errno or 0, "error")
    return "ok"


def _fds() -> dict[str, Any]:
    """Open descriptors by kind (numbers vary between two plain runs; kinds do not)."""
    kinds: dict[str, int] = {"pipes": 0, "sockets": 0, "ttys": 0, "files": 0, "other": 0}
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        fds = []
    for fd in fds:
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue  # the listing's own descriptor, closed by now
        kind = (
            "pipes" if stat.S_ISFIFO(mode)
            else "sockets" if stat.S_ISSOCK(mode)
            else "ttys" if stat.S_ISCHR(mode) and os.isatty(fd)
            else "files" if stat.S_ISREG(mode) or stat.S_ISCHR(mode)
            else "other"
        )  # fmt: skip
        kinds[kind] += 1
    stdin = _read_link("/proc/self/fd/0")
    return {
        **{f"fds.{k}": v for k, v in kinds.items()},
        "stdin": stdin if stdin.startswith("/") else stdin.split(":")[0],
    }


def _read_link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _listing(path: str) -> list[str] | None:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def _git(cwd: str) -> dict[str, Any]:
    def ask(*args: str) -> str | None:
        try:
            proc = subprocess.run(
                ["git", *args], cwd=cwd, capture_output=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else None

    toplevel = ask("rev-parse", "--show-toplevel")
    hooks = ask("rev-parse", "--git-path", "hooks")
    return {
        "git.commits": ask("rev-list", "--count", "HEAD"),
        "git.branch": ask("rev-parse", "--abbrev-ref", "HEAD"),
        "git.remotes": ask("remote", "-v"),
        "git.tags": ask("tag", "--list"),
        "git.describe": ask("describe", "--tags", "--always"),
        "git.toplevel": toplevel,
        "git.toplevel_is_cwd": toplevel is not None and os.path.samefile(toplevel, cwd),
        "git.shallow": ask("rev-parse", "--is-shallow-repository"),
        "git.reflog": _count_lines(ask("reflog")),
        "git.hooks": _listing(os.path.join(cwd, hooks)) if hooks else None,
    }


def _count_lines(text: str | None) -> int | None:
    return None if text is None else len(text.splitlines())


def _loaded_outside_stdlib() -> set[str]:
    stdlib = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    tops = {name.partition(".")[0] for name in list(sys.modules)}
    return {t for t in tops if t not in stdlib and not t.startswith("_")}


def _file_system(cwd: str) -> dict[str, Any]:
    """The file system as a test sees it: ``/dev``'s listing, whether the temporary
    directories are empty, whether the working directory is a mount point, which places
    are read-only (the interpreter's install, the working directory), the namespaces."""
    seen: dict[str, Any] = {
        "dev.listing": _listing("/dev"),
        "tmp.entries": [_coarse(_listing(p)) for p in ("/tmp", tempfile.gettempdir())],  # noqa: S108
        "fs.cwd_is_mount": os.path.ismount(cwd),
        "fs.prefix_readonly": _readonly(sys.prefix),
        "fs.cwd_readonly": _readonly(cwd),
    }
    for name in ("user", "mnt", "net", "uts", "ipc", "cgroup", "pid", "time"):
        seen[f"ns.{name}"] = _read_link(f"/proc/self/ns/{name}") or None
    return seen


def _coarse(listing: list[str] | None) -> str | None:
    """How many entries, in steps (the count moves with what else runs on the machine)."""
    if listing is None:
        return None
    return "none" if not listing else "1-4" if len(listing) < 5 else "5+"


def _readonly(path: str) -> bool | None:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return None


def _in_process() -> dict[str, Any]:
    """What patchlane could add inside the test process: the threads, the import system's
    hooks, patchlane's pytest plugin module (loaded in every run: its names and what they
    hold) and every module loaded (by name)."""
    seen: dict[str, Any] = {
        "threads.count": threading.active_count(),
        "threads.names": sorted(t.name for t in threading.enumerate()),
        "import.path_hooks": [_describe(h) for h in sys.path_hooks],
        "import.meta_path": [_describe(f) for f in sys.meta_path],
        "import.finder_types": sorted(
            {_describe(f) for f in list(sys.path_importer_cache.values())}
        ),
        "import.tree_loaders": sorted(
            {_describe(getattr(m, "__loader__", None)) for m in _modules_below(os.getcwd())}
        ),
        "machinery.replaced": _replaced(),
        "modules.count": len(sys.modules),
        "modules.loaded": sorted(sys.modules),
    }
    plugin = sys.modules.get("patchlane.pytest_plugin")
    seen["plugin_module"] = None if plugin is None else _module_shape(plugin)
    return seen


def _modules_below(top: str) -> list[types.ModuleType]:
    """The loaded modules whose file is below ``top`` (the project's and its tests')."""
    inside = top.rstrip(os.sep) + os.sep
    found = []
    for module in list(sys.modules.values()):
        where = getattr(module, "__file__", None)
        if isinstance(where, str) and os.path.abspath(where).startswith(inside):
            found.append(module)
    return found


# The judging machinery a run's harness could patch: pytest's, pluggy's and the import system's.
_MACHINERY = ("pytest", "_pytest", "pluggy", "importlib", "unittest")


def _replaced() -> list[str]:
    """``module.name: where`` for each function in a machinery module (``_MACHINERY``) that
    was defined in a module of another package that is not the standard library's: one
    the harness put in place of the module's own."""
    stdlib = set(sys.stdlib_module_names)
    found = []
    for name, module in list(sys.modules.items()):
        family = name.partition(".")[0]
        if family not in _MACHINERY:
            continue
        for attr, value in list(getattr(module, "__dict__", {}).items()):
            if not isinstance(value, types.FunctionType):
                continue
            where = str(value.__module__)
            top = where.partition(".")[0]
            if top.lstrip("_") == family.lstrip("_") or top in stdlib or where == name:
                continue
            found.append(f"{name}.{attr}: {where}")
    return sorted(found)


def _describe(thing: object) -> str:
    """A hook, finder or loader by kind: a function's module and qualified name, else its
    type's (never an address: those differ between two plain runs)."""
    if isinstance(thing, types.FunctionType | types.BuiltinFunctionType | types.MethodType):
        return f"{thing.__module__}.{thing.__qualname__}"
    kind = type(thing) if not isinstance(thing, type) else thing
    return f"{kind.__module__}.{kind.__qualname__}"


def _module_shape(module: types.ModuleType) -> dict[str, Any]:
    """Each name of ``module``'s own dict with what it holds: the value's type, and for a
    function what its closure cells and defaults hold (by type): state kept there is as
    visible to a test as a module global."""
    shape: dict[str, Any] = {}
    for name, value in sorted(vars(module).items()):
        if name in ("__builtins__", "__cached__", "__file__", "__loader__", "__spec__"):
            continue
        held = [type(value).__name__]
        if isinstance(value, types.FunctionType):
            cells = [c.cell_contents for c in value.__closure__ or () if _filled(c)]
            held += [type(v).__name__ for v in (*cells, *(value.__defaults__ or ()))]
        elif value is None or isinstance(value, bool | int | str | bytes):
            held.append(repr(value))
        shape[name] = held
    return shape


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _status() -> dict[str, Any]:
    wanted: tuple[str, ...] = ("NoNewPrivs", "Seccomp", "CapInh", "CapPrm", "CapEff")
    wanted += ("CapBnd", "CapAmb", "SigBlk", "SigIgn")
    seen: dict[str, Any] = {}
    for line in _read("/proc/self/status").splitlines():
        name, _, value = line.partition(":")
        if name in wanted:
            key = "signals" if name.startswith("Sig") else "status"
            seen[f"{key}.{name}"] = value.strip()
    seen["status.uid_map"] = _read("/proc/self/uid_map").split()
    seen["status.gid_map"] = _read("/proc/self/gid_map").split()
    seen["status.mounts"] = len(_read("/proc/self/mountinfo").splitlines())
    return seen
