"""Hashing fixture bytes safely and fast: open without following or blocking, hash
in-process, and spread the files over a few threads.

Nothing here decides pass or fail; ``lanes.fixture`` compares the hashes with the locks.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from patchlane.jsonio import loads_strict
from patchlane.ui import Output
from patchlane.untrusted import DEPTH_FAILURES, failure_reason

# Never follow a symlink, never wait on a FIFO's writer, never acquire a controlling tty.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

# Files up to this size are read with one read() call; larger ones stream through a
# per-thread buffer so that memory stays flat whatever the fixture size.
SMALL_FILE = 1 << 20
CHUNK = 1 << 20


SYMLINK_PROBLEM = "symlink (never followed)"

FileStat = tuple[int, int, int, int, int, int]  # dev, ino, size, mtime_ns, ctime_ns, mode
T = TypeVar("T")
R = TypeVar("R")


class NotCanonical(ValueError):
    """A ``*.json`` file under a ``canonical_json`` root that cannot be canonicalised."""


def file_kind(mode: int) -> str:
    """Return a short name for the file type in ``mode`` (``FIFO``, ``socket``, ...)."""
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISDIR(mode):
        return "directory"
    return f"file of unknown type (mode {mode:o})"


def unsafe_kind_problem(mode: int) -> str:
    """Return the report's problem text for a non-regular file with ``mode``."""
    if stat.S_ISLNK(mode):
        return SYMLINK_PROBLEM
    return f"{file_kind(mode)}: not a regular file, never opened"


def stat_key(st: os.stat_result) -> FileStat:
    """Return the fields of ``st`` that the stat cache compares."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def canonical_digest(data: bytes) -> str:
    """Return the SHA-256 of the RFC 8785 canonical form of the JSON document ``data``.

    Raises ``NotCanonical`` (with a one-line reason) when ``data`` is not UTF-8, not strict
    JSON (syntax, duplicate keys, NaN/Infinity, an integer too long to convert), nested too
    deeply, or holds a value RFC 8785 cannot represent (an integer beyond 2**53, a lone
    surrogate in a string or a key). The bytes are the patch's: nothing else escapes.
    """
    import rfc8785  # only canonical roots pay for the import

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotCanonical(f"not UTF-8 (byte {e.start})") from e
    try:
        value = loads_strict(text)
    except json.JSONDecodeError as e:
        raise NotCanonical(f"invalid JSON: {e.msg} (line {e.lineno} column {e.colno})") from e
    except ValueError as e:  # duplicate key, NaN, an integer too long to parse
        raise NotCanonical(str(e)) from e
    except DEPTH_FAILURES as e:
        raise NotCanonical("nested too deeply") from e
    try:
        canonical = rfc8785.dumps(value)
    except ValueError as e:
        # CanonicalizationError is a ValueError; so is the UnicodeEncodeError rfc8785 lets
        # through when it sorts a key holding a lone surrogate ("\ud800" in the JSON).
        raise NotCanonical(f"RFC 8785 cannot represent it: {failure_reason(e)}") from e
    except DEPTH_FAILURES as e:
        raise NotCanonical("nested too deeply") from e
    return hashlib.sha256(canonical).hexdigest()


def content_digest(data: bytes, canonical: bool) -> str:
    """Return the lock hash of ``data``: raw SHA-256, or canonical (``canonical_digest``)."""
    if canonical:
        return canonical_digest(data)
    return hashlib.sha256(data).hexdigest()


def canonical_problem(reason: str) -> str:
    """Return the report's problem text for a file ``canonical_digest`` refused."""
    return f"not canonical JSON (canonical_json is on): {reason}"


class Hashed(NamedTuple):
    """What hashing one file gave: a digest and its stat, a problem, or ``gone``.

    A named tuple rather than a dataclass: one is made per file, and tuples are cheaper.
    """

    sha256: str | None = None
    stat: FileStat | None = None
    problem: str | None = None
    gone: bool = False


GONE = Hashed(gone=True)


def read_all(fd: int, size: int) -> bytes:
    """Return the whole content of the open regular file ``fd`` whose fstat size is ``size``."""
    # One read() for the common case; a short read of a regular file only happens at EOF,
    # and a file that grew since fstat() is read on to its end.
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data
    parts = [data]
    while chunk := os.read(fd, CHUNK):
        parts.append(chunk)
    return b"".join(parts)


def hash_at(dir_fd: int | None, name: str, canonical: bool, buf: bytearray) -> Hashed:
    """Open ``name`` (relative to ``dir_fd``) without following or blocking and hash it.

    ``buf`` is a scratch buffer of at least ``CHUNK`` bytes owned by the calling thread.
    Returns ``Hashed``: the digest and the ``fstat`` of the descriptor that was read, a
    problem (symlink, not a regular file, unreadable, not canonical JSON), or ``GONE``
    when the file disappeared since it was listed. Never raises ``OSError``.
    """
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return GONE
    except OSError as e:
        if e.errno == errno.ELOOP:  # swapped for a symlink after it was listed
            return Hashed(problem=SYMLINK_PROBLEM)
        return Hashed(problem=f"cannot open: {e.strerror}")
    try:
        st = os.fstat(fd)
        # Checked on the descriptor, not the name: a file swapped for a FIFO or device
        # between listing and open is refused here and never read.
        if not stat.S_ISREG(st.st_mode):
            return Hashed(problem=unsafe_kind_problem(st.st_mode))
        if canonical:
            try:
                digest = canonical_digest(read_all(fd, st.st_size))
            except NotCanonical as e:
                return Hashed(problem=canonical_problem(str(e)))
        elif st.st_size <= SMALL_FILE:
            digest = hashlib.sha256(read_all(fd, st.st_size)).hexdigest()
        else:
            h = hashlib.sha256()
            view = memoryview(buf)
            while n := os.readv(fd, [buf]):
                h.update(view[:n])  # hashlib releases the GIL on buffers this large
            digest = h.hexdigest()
        return Hashed(sha256=digest, stat=stat_key(st))
    except OSError as e:
        return Hashed(problem=f"cannot read: {e.strerror}")
    finally:
        os.close(fd)


def default_workers() -> int:
    """Return how many hashing threads to run: the CPUs this process may use, at most 4."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


class Progress:
    """Progress lines on stderr every ``interval`` seconds of hashing (and a final one if
    any was printed). Counts updated from worker threads are approximate; that is enough."""

    def __init__(self, out: Output | None, what: str, interval: float = 2.0) -> None:
        self.out = out
        self.what = what
        self.interval = interval
        self.start = time.monotonic()
        self.last = self.start
        self.files = 0
        self.shown = False

    def add(self) -> None:
        """Count one more file hashed."""
        self.files += 1

    def poll(self) -> None:
        """Print a progress line if ``interval`` seconds passed since the last one."""
        if self.out is None:
            return
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self.shown = True
            self.out.progress(f"{self.what}: hashed {self.files} files so far...")

    def finish(self) -> None:
        """Print the closing line, only if a progress line was printed before."""
        if self.out is not None and self.shown:
            took = time.monotonic() - self.start
            self.out.progress(f"{self.what}: hashed {self.files} files in {took:.1f} s")


def run_jobs(
    jobs: Sequence[T],
    fn: Callable[[T, bytearray], R],
    *,
    workers: int,
    progress: Progress | None = None,
) -> list[R]:
    """Return ``[fn(job, buf) for job in jobs]``, computed by up to ``workers`` threads.

    Threads pull the next index from a shared counter (one small step per file, no future
    per file) and each owns one scratch buffer. The first exception any thread raises is
    re-raised here after all threads stopped.
    """
    n = len(jobs)
    results: list[R | None] = [None] * n
    if workers <= 1 or n < 4 * workers:
        buf = bytearray(CHUNK)
        for i, job in enumerate(jobs):
            results[i] = fn(job, buf)
            if progress is not None:
                progress.add()
                progress.poll()
        return _all_set(results)

    counter = itertools.count()  # next() on it is atomic under the GIL
    failures: list[BaseException] = []
    stop = threading.Event()

    def work() -> None:
        buf = bytearray(CHUNK)
        try:
            while not stop.is_set():
                i = next(counter)
                if i >= n:
                    return
                results[i] = fn(jobs[i], buf)
                if progress is not None:
                    progress.add()
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            failures.append(e)
            stop.set()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(min(workers, n))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.25)
                if progress is not None:
                    progress.poll()
    finally:
        # Even when interrupted, wait for the file in hand: the caller closes the directory
        # descriptors the jobs are relative to, and a reused descriptor must not be opened
        # through by a thread still running.
        stop.set()
        for t in threads:
            t.join()
    if failures:
        raise failures[0]
    return _all_set(results)


def _all_set(results: list[R | None]) -> list[R]:
    out: list[R] = []
    for r in results:
        if r is None:  # every index is computed unless an exception was raised
            raise RuntimeError("a hashing job produced no result")
        out.append(r)
    return out
