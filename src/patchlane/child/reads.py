"""In the property child: what one run reads, so that its result can be reused
(``lanes.property.cache.results``).

The parent reuses a run's result only while everything the run read is unchanged, so the
child records, from the moment ``Recorder.install`` is called: every file opened for reading
(the audit event ``open``, which ``open``, ``io.open_code`` -- every import -- and
``os.open`` raise), every directory listed (``os.listdir``, ``os.scandir``), every path whose
existence or kind was asked (``os.stat``, ``os.lstat``, ``os.access``, and through them
``os.path.exists`` and friends, which raise no audit event: the recorder wraps them), every
path written, and at the end the files of every module in ``sys.modules``. Paths are made
absolute against the working directory of the moment; the parent turns them into
fingerprints after the child has exited.

Some things leave a record that cannot be completed: a process started, ``ctypes`` used,
a directory listed or a file opened through a
descriptor (``os.open`` with a relative path may be relative to one), a SQLite database
opened (by C code, without an ``open`` event), a sub-interpreter started (it has no audit
hook). Each is noted as a reason the run is ``blind``, and the parent then never stores
its result. This is a record of what honest code reads, not a wall: code under test runs in
this interpreter and can reach the recorder's state (docs/explanation/decisions/0016-caches.md).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

# Past this many characters of distinct paths the record stops growing and the run is
# blind: the result channel has a size limit (``process.RESULT_LIMIT``) that the record
# must never bring a run near, and such a run would rarely be reused anyway.
LIMIT = 2_000_000
_LISTS = frozenset({"os.listdir", "os.scandir"})
# Write events: the positions of their path arguments and of their directory descriptors
# (``open`` writes when its flags say so: ``WRITE_FLAGS``).
WRITE_EVENTS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "os.mkdir": ((0,), (2,)),
    "os.rmdir": ((0,), (1,)),
    "os.remove": ((0,), (1,)),
    "os.rename": ((0, 1), (2, 3)),
    "os.link": ((0, 1), (2, 3)),
    "os.symlink": ((1,), (2,)),
    "os.truncate": ((0,), ()),
    "os.chmod": ((0,), (2,)),
    "os.chown": ((0,), (3,)),
    "os.utime": ((0,), (3,)),
    "os.setxattr": ((0,), ()),
    "os.removexattr": ((0,), ()),
    "os.chflags": ((0,), ()),
}
# Events after which the record cannot be complete (see the module docstring). Process
# starts are blocked by the sandbox as well; they are listed here so that the record does
# not depend on the order of the hooks.
# (``gc.get_referrers`` and friends, with which code could find the recorder, are not
# among them: Hypothesis calls them in ordinary runs.)
_BLIND = frozenset(
    {
        "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
        "os.fork", "os.forkpty", "sqlite3.connect", "cpython.PyInterpreterState_New",
    }
)  # fmt: skip
_BLIND_PREFIX = "ctypes."
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# The functions that answer "does it exist, what is it" without an audit event.
_PROBED = ("stat", "lstat", "access")


class Recorder:
    """The paths one run read, listed, probed and wrote, and why its record is incomplete.

    What the hook calls neither opens a file nor raises.
    """

    def __init__(self) -> None:
        self.opened: set[str] = set()
        self.listed: set[str] = set()
        self.probed: set[str] = set()
        self.written: set[str] = set()
        self.blind: list[str] = []
        self.size = 0
        # Bound now: code under test may rebind the module attributes later.
        self._getcwd = os.getcwd
        self._fspath = os.fspath
        self._fsdecode = os.fsdecode
        self._join = os.path.join

    def install(self) -> None:
        """Add the audit hook (for the rest of the process) and wrap ``os.stat``,
        ``os.lstat`` and ``os.access``. Call it before ``integrity`` takes its snapshot,
        so that the wrappers are what it protects. Returns nothing."""
        # A closure that returns at once for the events it does not watch: the hook runs on
        # every audit event of the run (``id()``, attribute reads of frames, ...).
        watched = frozenset({"open", *_LISTS, *WRITE_EVENTS, *_BLIND})
        handle = self._hook

        def hook(event: str, args: tuple[Any, ...]) -> None:
            if event in watched or event[:7] == _BLIND_PREFIX:
                handle(event, args)

        sys.addaudithook(hook)
        for name in _PROBED:
            original = getattr(os, name)
            wrapper = self._wrap(original)
            setattr(os, name, wrapper)
            # ``shutil`` and others ask whether a function takes ``dir_fd`` by identity.
            for support in (os.supports_dir_fd, os.supports_fd, os.supports_follow_symlinks):
                if original in support:
                    support.add(wrapper)
            if original in os.supports_effective_ids:
                os.supports_effective_ids.add(wrapper)

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Return ``original`` (``os.stat`` and the like) wrapped to record its path."""

        def probe(path: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(path, int):
                try:
                    # Once: the original gets the text, so a path object's ``__fspath__``
                    # runs as often as it would without the recorder.
                    path = self._fspath(path)
                except TypeError:
                    return original(path, *args, **kwargs)  # the original says what is wrong
                try:
                    self._path(self.probed, path, kwargs.get("dir_fd"))
                except BaseException as e:  # noqa: BLE001 - never change what the call does
                    self._blind(f"os.{original.__name__}: the recorder failed ({type(e).__name__})")
            return original(path, *args, **kwargs)

        probe.__name__ = original.__name__
        probe.__qualname__ = original.__qualname__
        probe.__doc__ = original.__doc__
        return probe

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        """Record one watched audit event; never raises (a failure makes the run blind)."""
        try:
            if event == "open":
                self._open(args)
            elif event in _LISTS:
                path = args[0] if args else None
                if isinstance(path, int):
                    self._blind(f"{event} of a directory descriptor")
                else:
                    self._path(self.listed, "." if path is None else path, None)
            elif event in WRITE_EVENTS:
                paths, fds = WRITE_EVENTS[event]
                dir_fd = next((args[i] for i in fds if i < len(args) and args[i] != -1), None)
                for i in paths:
                    if i < len(args):
                        self._path(self.written, args[i], dir_fd)
            elif event in _BLIND or event.startswith(_BLIND_PREFIX):
                self._blind(event)
        except BaseException as e:  # noqa: BLE001 - the hook must never change what runs
            self._blind(f"{event}: the recorder failed ({type(e).__name__})")

    def _open(self, args: tuple[Any, ...]) -> None:
        """Record an ``open`` event (path, mode, flags) as a read, a write, or both."""
        path, mode, flags = (*args, None, None, None)[:3]
        if isinstance(path, int):
            return  # a descriptor opened earlier, whose path was recorded then
        text = self._fsdecode(self._fspath(path))
        if mode is None and not text.startswith("/"):
            # ``os.open``: its event does not carry ``dir_fd``, so the file is unknown.
            self._blind("os.open of a relative path")
            return
        if not isinstance(flags, int):
            flags = os.O_RDWR  # unknown: count it as both
        if (flags & os.O_ACCMODE) in (os.O_RDONLY, os.O_RDWR):
            self._path(self.opened, text, None)
        if flags & WRITE_FLAGS:
            self._path(self.written, text, None)

    def _path(self, into: set[str], path: Any, dir_fd: Any) -> None:
        """Add ``path`` (made absolute) to ``into``; a descriptor, or a relative path with
        a directory descriptor, makes the record blind instead."""
        if isinstance(path, int):
            self._blind("a file reached through a descriptor")
            return
        text = self._fsdecode(self._fspath(path))
        if not text.startswith("/"):
            if dir_fd is not None:
                self._blind("a path relative to a directory descriptor")
                return
            text = self._join(self._getcwd(), text)
        if text in into:
            return
        # As written on the result channel: JSON escapes a non-ASCII character in six.
        self.size += (len(text) if text.isascii() else 6 * len(text)) + 4
        if self.size > LIMIT:
            self._blind(f"more than {LIMIT} characters of paths")
            return
        into.add(text)

    def _blind(self, why: str) -> None:
        """Note a reason the record is incomplete (the first 20 distinct ones)."""
        if len(self.blind) < 20 and why not in self.blind:
            self.blind.append(why)

    def result(self) -> dict[str, list[str]]:
        """Return the record as JSON-ready data: ``open``, ``list``, ``probe`` and
        ``write`` (sorted absolute paths; ``open`` also holds the file of every module in
        ``sys.modules``) and ``blind`` (reasons the record is incomplete). Never raises."""
        try:
            for module in list(sys.modules.values()):
                try:
                    file = getattr(module, "__file__", None)
                except Exception:  # noqa: BLE001 - a module object of the code under test
                    self._blind("a module without a readable __file__")
                    continue
                if isinstance(file, str):
                    self._path(self.opened, file, None)
            if self.blind:  # the parent stores nothing of a blind run: no need for paths
                return {"open": [], "list": [], "probe": [], "write": [], "blind": self.blind}
            return {
                "open": sorted(self.opened),
                "list": sorted(self.listed),
                "probe": sorted(self.probed),
                "write": sorted(self.written),
                "blind": list(self.blind),
            }
        except BaseException as e:  # noqa: BLE001 - a failed record only costs reuse
            return {"open": [], "list": [], "probe": [], "write": [], "blind": [repr(e)[:200]]}
