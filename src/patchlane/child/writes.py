"""The run child's latch on writes to functions: has any code rewritten a function's parts,
or reached past Python's attribute rules, since a check last looked?

CPython raises the audit event ``object.__setattr__`` (``object.__delattr__``) for every write
of a function's ``__code__``, ``__defaults__`` and ``__kwdefaults__`` made through Python, and
its own events for the ways around that: the object graph (``gc.get_objects``,
``gc.get_referrers``, ``gc.get_referents``) and raw memory (every ``ctypes.*`` event:
``ctypes.cdata``, ``ctypes.addressof``, a foreign call). ``install`` adds an audit hook that
counts those events; the checks that compare every captured function's parts by identity
(``tripwire``, ``leftover.StateWatch``) compare them only when the count moved since they last
looked, and in full at their boundaries whatever it says. A write that is put back before the
next check is still not seen (as before: a tripwire, not a sandbox); one that stays is.

What the hook does not see, and so what is still compared at every check: a module's or a
class's namespace (writes there raise no event in CPython 3.11) and the state of an object's
own dict.

An audit hook cannot be removed or listed from Python. The hook and the count's reader are
this module's functions, which the tripwire holds (``tripwire.MODULES``): rewriting their
parts is itself an event the hook counts first (it is called before the write), and the
tripwire's next full check names it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Final

# The events that can change a function's parts or reach past Python's attribute rules.
EVENTS: Final = frozenset(
    {
        "object.__setattr__",
        "object.__delattr__",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
    }
)
_COUNT: Final[list[int]] = [0]
_installed: list[bool] = []


def _hook(
    event: str,
    _args: tuple[Any, ...],
    _events: frozenset[str] = EVENTS,
    _count: list[int] = _COUNT,
) -> None:
    """The audit hook: count ``event`` when it is one of ``EVENTS`` or a ``ctypes.*`` one."""
    if event in _events or event[:7] == "ctypes.":
        _count[0] += 1


def count(_count: list[int] = _COUNT) -> int:
    """Return how many of the hook's events were raised since ``install`` (0 before)."""
    return _count[0]


def install(_add: Callable[..., None] = sys.addaudithook) -> Callable[[], int]:
    """Add the audit hook (once per process); return ``count``. Never raises."""
    if not _installed:
        _add(_hook)
        _installed.append(True)
    return count


def always() -> int:
    """Return a new value at every call: the reader of a check that has no latch (each
    look compares everything)."""
    _ticks[0] += 1
    return _ticks[0]


_ticks = [0]
