"""Compiled code: what a patch changes of it, and the map's build command (docs/architecture.md §2).

A tree materialised from git holds the sources of an extension, never its build: the ``.so``
a test imports is whatever an earlier build left (in place in the user's tree, or installed).
A patch to the C source would then be replayed against the base's binary. So:

- ``compiled_changes``: the changed paths that are compiled sources (C, C++, Cython, Rust,
  Fortran, SWIG, CUDA, assembly), committed extension binaries, or build configuration. A
  build configuration file (``setup.py``, ``pyproject.toml``, ``meson.build``, ...) counts
  whatever part of it changed, but only in a project that has compiled code at the base or
  the head (a pure-Python project's ``pyproject.toml`` builds nothing the tests import).
- ``run_build``: the map's ``lanes.replay.build`` command, run by ``/bin/sh`` inside the
  sandbox in a materialised tree (writable: the tree and a scratch directory; no network),
  before pytest collects. At the head, every file the build adds or changes that is not a
  build product is listed (``wrote``): the tests would load it, and the diff never showed it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from patchlane.errors import PatchlaneError
from patchlane.infra import children, sandbox
from patchlane.infra.sandbox import Confinement
from patchlane.infra.ui import one_line
from patchlane.project.config import DEFAULT_BUILD_TIMEOUT_S, ReplayLane

# Sources a compiler reads (C, C++, Objective-C, Cython, SWIG, Rust, Fortran, CUDA, assembly).
SOURCE_SUFFIXES = frozenset(
    {
        ".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".inc",
        ".m", ".mm", ".pyx", ".pxd", ".pxi", ".i", ".swg", ".rs", ".f", ".for", ".f77",
        ".f90", ".f95", ".f03", ".f08", ".pyf", ".cu", ".cuh", ".s", ".asm",
    }
)  # fmt: skip
# Committed binaries the interpreter or an extension loads.
BINARY_SUFFIXES = frozenset({".so", ".pyd", ".dylib", ".dll", ".a", ".lib", ".o", ".obj"})
# Files that say what is built and how. Counted whole (a widening rule: a change outside
# the build sections of a ``pyproject.toml`` is counted too).
CONFIG_NAMES = frozenset(
    {
        "setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in", "meson.build",
        "meson_options.txt", "meson.options", "CMakeLists.txt", "Cargo.toml", "Cargo.lock",
        "Makefile", "GNUmakefile", "makefile", "configure", "configure.ac", "build.rs",
    }
)  # fmt: skip
CONFIG_SUFFIXES = frozenset({".cmake"})
# What a build writes into the tree that the tests need not be shown: compiled objects and
# libraries, generated compiled sources (Cython's ``.c``), and setuptools' own directories.
_PRODUCT_SUFFIXES = BINARY_SUFFIXES | SOURCE_SUFFIXES | {".exp", ".d", ".pdb", ".def"}
_PRODUCT_DIRS = ("build",)
# The selection rule that runs every test for a compiled change (``compiled_paths``).
COMPILED_RULE = "compiled code"
_TAIL_LINES = 12
_TAIL_BYTES = 64 * 1024


def is_source(path: str) -> bool:
    """Whether ``path`` is a compiled source file (by its suffix, any case)."""
    return PurePosixPath(path).suffix.lower() in SOURCE_SUFFIXES


def is_binary(path: str) -> bool:
    """Whether ``path`` is a compiled binary (``foo.so``, ``foo.so.1``, ``foo.pyd``, ...)."""
    name = PurePosixPath(path).name.lower()
    return PurePosixPath(name).suffix in BINARY_SUFFIXES or ".so." in name


def is_config(path: str) -> bool:
    """Whether ``path`` is a build configuration file."""
    p = PurePosixPath(path)
    return p.name in CONFIG_NAMES or p.suffix.lower() in CONFIG_SUFFIXES


@dataclass(frozen=True)
class CompiledChanges:
    """The changed paths that are compiled code: ``sources`` (compiled sources and build
    configuration) and ``binaries`` (committed binaries)."""

    sources: tuple[str, ...]
    binaries: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.sources or self.binaries)


def compiled_changes(
    changed: Iterable[str], tracked: Callable[[], Iterable[str]]
) -> CompiledChanges:
    """Return the paths of ``changed`` (every path the patch touches, both sides of renames)
    that are compiled code. ``tracked`` lists the paths of the base and the head; it is asked
    only when a build configuration file changed, to tell whether the project has compiled
    code at all."""
    paths = sorted(set(changed))
    sources = [p for p in paths if is_source(p)]
    binaries = [p for p in paths if is_binary(p)]
    config = [p for p in paths if is_config(p)]
    if config and (sources or binaries or any(is_source(p) or is_binary(p) for p in tracked())):
        sources = sorted({*sources, *config})
    return CompiledChanges(tuple(sources), tuple(binaries))


def compiled_paths(changed: Iterable[str], build: Build | None) -> list[str]:
    """The paths of ``changed`` whose effect on the tests no import graph can follow:
    compiled sources and binaries, and (with a build command, which turns it into a
    binary) build configuration. Selection runs every test for them."""
    return sorted(
        p for p in changed if is_source(p) or is_binary(p) or (build is not None and is_config(p))
    )


@dataclass(frozen=True)
class BuildResult:
    """One run of the build command in one tree: ``where`` (``base`` or ``head``), whether
    it succeeded, its exit status (``None``: it timed out), the seconds it took, the tail of
    its output, and (at the head) the files it wrote that are not build products."""

    where: str
    ok: bool
    returncode: int | None
    seconds: float
    tail: str
    wrote: tuple[str, ...] = ()

    def failure(self) -> str:
        """One line on how the build failed, for a reason or an error message."""
        how = "did not finish in time" if self.returncode is None else f"exited {self.returncode}"
        last = self.tail.strip().splitlines()[-1:] if self.tail.strip() else []
        said = f": {one_line(last[0])[:300]}" if last else ""
        return f"the build command {how} at the {self.where}{said}"


class BuildFailed(PatchlaneError):
    """The build command failed in a tree (``result`` says where and how). The replay
    lane judges it (``lanes.replay.compiled``); elsewhere (``replay select``) it is exit 2."""

    def __init__(self, result: BuildResult) -> None:
        super().__init__(result.failure())
        self.result = result


@dataclass(frozen=True)
class Build:
    """The map's build command and its timeout."""

    command: str
    timeout_s: float = DEFAULT_BUILD_TIMEOUT_S

    @classmethod
    def of(cls, lane: ReplayLane) -> Build | None:
        """The build the map's replay lane names, or ``None``."""
        return None if lane.build is None else cls(lane.build, lane.build_timeout_s)


def build_env(env: Mapping[str, str]) -> dict[str, str]:
    """Return the build's environment: ``env``, with the gate's own interpreter first on
    ``PATH`` (so ``python`` builds for the interpreter the tests run under, and a version
    manager's shims, hidden in the sandbox, are not needed) and no bytecode written."""
    kept = dict(env)
    interpreter = os.fspath(Path(sys.executable).parent)
    kept["PATH"] = os.pathsep.join(p for p in (interpreter, kept.get("PATH", os.defpath)) if p)
    kept["PYTHON"] = sys.executable
    kept["PYTHONDONTWRITEBYTECODE"] = "1"
    return kept


def run_build(build: Build, tree: Path, where: str, *, audit: bool = False) -> BuildResult:
    """Run ``build.command`` with ``/bin/sh -c`` in ``tree``, confined (writable: ``tree``
    and a scratch directory of its own, its ``HOME`` and ``TMPDIR``; no network).

    With ``audit``, the files the build adds or changes that are not build products are
    listed in the result. Returns the ``BuildResult``; raises nothing for anything the
    command does, ``OSError`` only when it cannot be started at all."""
    before = _digests(tree) if audit else {}
    with tempfile.TemporaryDirectory(prefix="patchlane-build-") as scratch:
        confinement = Confinement(Path(scratch), writable=(tree,))
        argv = sandbox.isolation().command(["/bin/sh", "-c", build.command], confinement, tree)
        env = sandbox.confined_env(build_env(os.environ), Path(scratch))
        start = time.monotonic()
        code, output = _run(argv, tree, env, build.timeout_s)
        seconds = time.monotonic() - start
    wrote = _wrote(before, _digests(tree)) if audit and code == 0 else ()
    return BuildResult(where, code == 0, code, seconds, _tail(output), wrote)


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float
) -> tuple[int | None, bytes]:
    """Run ``argv`` in its own process group; return its exit status (``None`` when it ran
    past ``timeout_s``: its whole group, a compiler's children included, is killed) and
    its output, stdout and stderr together."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        with children.watched(proc.pid):  # Ctrl-C kills its group (patchlane.infra.children)
            output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return None, output
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return proc.returncode, output


def built(
    build: Build | None, tree: Path, where: str, *, audit: bool = False
) -> BuildResult | None:
    """Run the build (when there is one) in ``tree`` (``where`` names it in messages); return
    its result, ``None`` without a build. Raises ``BuildFailed`` when it fails."""
    if build is None:
        return None
    result = run_build(build, tree, where, audit=audit)
    if not result.ok:
        raise BuildFailed(result)
    return result


def _tail(output: bytes) -> str:
    text = output[-_TAIL_BYTES:].decode("utf-8", "replace")
    return "\n".join(text.strip().splitlines()[-_TAIL_LINES:])


def _digests(tree: Path) -> dict[str, str]:
    """Every file and link below ``tree`` (POSIX paths) and a digest of its bytes or target."""
    found: dict[str, str] = {}
    for top, dirs, files in os.walk(tree):
        here = Path(top)
        for full in [here / f for f in files] + [here / d for d in dirs if (here / d).is_symlink()]:
            rel = full.relative_to(tree).as_posix()
            if full.is_symlink():
                found[rel] = f"link:{full.readlink()}"
                continue
            found[rel] = _digest(full)
    return found


def _digest(path: Path) -> str:
    """The SHA-256 of the regular file ``path``; for anything else the build may have left
    (a FIFO, a socket, a device: opening or reading one could block for ever), its kind.
    Only what the open descriptor itself proves a regular file is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "unreadable"
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return f"special:{stat.S_IFMT(mode):o}"
        try:
            return hashlib.file_digest(f, "sha256").hexdigest()
        except OSError:
            return "unreadable"


def _wrote(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[str, ...]:
    """The paths the build added, changed or removed that the tests would see although the
    diff never showed them."""
    # A committed file the build changes or removes counts whatever it is (but a binary:
    # rebuilding an extension that is committed is what a build does); a new file counts
    # unless it is a product.
    touched = {p for p, d in before.items() if after.get(p) != d and not is_binary(p)}
    added = {p for p in after if p not in before and not _product(p)}
    return tuple(sorted(touched | added))


def _product(path: str) -> bool:
    p = PurePosixPath(path)
    if p.parts and p.parts[0] in _PRODUCT_DIRS:
        return True
    if any(part.endswith(".egg-info") for part in p.parts[:-1]):
        return True
    return is_binary(path) or p.suffix.lower() in _PRODUCT_SUFFIXES
