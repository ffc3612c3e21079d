"""The process-wide state that no module's namespace holds, as ``importstate`` compares it
before and after a watched module's code runs (see that module's docstring): the environment,
the working directory, the umask, the threads, the trace and profile functions, the garbage
collector, the signal handlers, ``random``'s and ``decimal``'s shared state, the locale, ...

Standard library only (docs/architecture.md §6).
"""

from __future__ import annotations

import abc
import gc
import os
import signal
import sys
import threading

from patchlane.child.leftover import _cwd, _environ_data


def process() -> dict[str, object]:
    """Return the process-wide state that no module's namespace holds, by kind."""
    state: dict[str, object] = {
        "os.environ": dict(_environ_data()),
        "cwd": _cwd(),
        "umask": _umask(),
        "threads": _threads(),
        "sys.gettrace": id(sys.gettrace()),
        "sys.getprofile": id(sys.getprofile()),
        "sys.getrecursionlimit": sys.getrecursionlimit(),
        "sys.getswitchinterval": sys.getswitchinterval(),
        "threading.gettrace": id(getattr(threading, "_trace_hook", None)),
    }
    # Not loaded when the run child starts: loaded only when the state is first read.
    import faulthandler

    state["gc"] = (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count())
    # Any class registered with any ABC moves this token (the registries are compiled code's).
    state["abc registrations"] = abc.get_cache_token()
    state["faulthandler"] = faulthandler.is_enabled()
    state["threading.stack_size"] = threading.stack_size()
    state["sys.get_int_max_str_digits"] = sys.get_int_max_str_digits()
    state["sys.getdlopenflags"] = sys.getdlopenflags()
    state["sys.get_asyncgen_hooks"] = tuple(map(id, sys.get_asyncgen_hooks()))
    state["sys.get_coroutine_origin_tracking_depth"] = sys.get_coroutine_origin_tracking_depth()
    state["signal handlers"] = _signals()
    atexit = sys.modules.get("atexit")
    count = getattr(atexit, "_ncallbacks", None)
    state["atexit"] = count() if callable(count) else None
    random = sys.modules.get("random")
    inst = getattr(random, "_inst", None)
    state["random state"] = inst.getstate() if inst is not None else None
    decimal = sys.modules.get("decimal")
    context = getattr(decimal, "getcontext", None)
    state["decimal context"] = repr(context()) if callable(context) else None
    socket = sys.modules.get("socket")
    timeout = getattr(socket, "getdefaulttimeout", None)
    state["socket default timeout"] = timeout() if callable(timeout) else None
    locale = sys.modules.get("locale")
    setlocale = getattr(locale, "setlocale", None)
    state["locale"] = setlocale(getattr(locale, "LC_ALL", 6)) if callable(setlocale) else None
    return state


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def _threads() -> tuple[object, ...]:
    """The process's threads: its OS tasks (every thread, ``_thread``'s too) and
    ``threading``'s list."""
    try:
        # Every OS thread, ``_thread``'s too; a plain listing (no ``pathlib`` import here).
        tasks: tuple[str, ...] = tuple(sorted(os.listdir("/proc/self/task")))  # noqa: PTH208
    except OSError:
        tasks = ()
    return (tasks, tuple(id(t) for t in threading.enumerate()))


def _signals() -> tuple[object, ...]:
    found: list[object] = []
    for number in sorted(signal.valid_signals()):
        try:
            found.append((number, id(signal.getsignal(number))))
        except (ValueError, OSError):
            continue
    return tuple(found)
