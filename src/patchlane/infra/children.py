"""The process groups patchlane has started and not yet reaped, so that Ctrl-C stops them.

Every child that runs the project's code (property modules, the replay's pytest, a build
command) starts in its own session (``start_new_session``), so that a timeout can kill its
whole group; for the same reason a Ctrl-C at the terminal, sent to patchlane's foreground
group, never reaches it. The spawners register each group here, and the SIGINT handler that
``main`` installs kills every registered group before the interrupt unwinds the command
(docs/architecture.md §3: exit 130). A child started after that is killed at once and its
spawner gets ``KeyboardInterrupt``, so that a thread pool winding down starts nothing that
runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

# Reentrant: the SIGINT handler runs in the main thread, possibly while that very thread
# holds the lock in ``started`` or ``ended``.
_lock = threading.RLock()
_groups: set[int] = set()
_stopping = False


def _kill(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def started(pgid: int) -> None:
    """Register the process group ``pgid`` (a child started with ``start_new_session``).

    Raises ``KeyboardInterrupt`` (after killing the group) once ``stop_all`` has run: the
    command is being interrupted and nothing new may run."""
    with _lock:
        if not _stopping:
            _groups.add(pgid)
            return
    _kill(pgid)
    raise KeyboardInterrupt


def ended(pgid: int) -> None:
    """Forget ``pgid``: its leader has been reaped (call before its id can be reused)."""
    with _lock:
        _groups.discard(pgid)


@contextlib.contextmanager
def watched(pgid: int) -> Iterator[None]:
    """Register ``pgid`` for the block (``started``, then ``ended``); raises what
    ``started`` raises."""
    started(pgid)
    try:
        yield
    finally:
        ended(pgid)


def stop_all() -> None:
    """Kill every registered group (SIGKILL) and refuse new ones from now on."""
    global _stopping  # one flag for the whole process
    with _lock:
        _stopping = True
        groups = list(_groups)
    for pgid in groups:
        _kill(pgid)


def on_sigint(signum: int, frame: FrameType | None) -> None:
    """SIGINT handler: stop every child group, then interrupt the main thread as Python's
    default handler does. Raises ``KeyboardInterrupt``."""
    stop_all()
    raise KeyboardInterrupt
