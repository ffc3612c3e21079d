"""Record the calls the tests make to the changed functions (the witness, child side).

In the vacuity check's own pytest process (never the judged slice's run), ``CallRecorder``
watches the functions the job names (by the file the child sees them in and their
``co_qualname``) with ``sys.setprofile`` while the tests run, and keeps up to ``PER_FUNCTION``
calls of each: the module, the qualified name, the arguments as the function received them
(frame locals at ``call``, pickled) and the value it returned (pickled at ``return``). At the
end of the session it sends them on the run's result stream, with the run's ``sys.path``.

The witness (``child.witness``) then makes the same calls in an interpreter that is not a
test run, and the parent compares the bytes; it never unpickles anything. Pickles are made in
``fast`` mode (no memo): their bytes do not depend on which equal objects happened to be
shared. A call is skipped when its arguments or its result do not pickle, when it returned
``None`` (a profiler sees an exception as a ``None`` return too), for generators and
coroutines (their ``return`` is not the call's value) and for functions defined inside another
(``<locals>``: not reachable by name). Standard library and pytest only.
"""

from __future__ import annotations

import base64
import inspect
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from patchlane.child.witness import dumped

# At most this many calls of each watched function are kept (the first ones the tests make).
PER_FUNCTION = 5
# And at most this many bytes of pickles in all (a patch that adds hundreds of functions
# keeps the record small: the rest are not recorded).
TOTAL_LIMIT = 2 * 1024 * 1024
_NOT_PLAIN = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def arguments(frame: types.FrameType) -> tuple[tuple[object, ...], dict[str, object]]:
    """The arguments a frame's function received, at its ``call`` event: positional ones
    (with ``*args`` spread) and keyword-only ones (with ``**kwargs`` merged)."""
    code = frame.f_code
    local = frame.f_locals
    names = code.co_varnames
    n_pos = code.co_argcount
    n_kw = code.co_kwonlyargcount
    positional = [local[n] for n in names[:n_pos]]
    keywords = {n: local[n] for n in names[n_pos : n_pos + n_kw]}
    at = n_pos + n_kw
    if code.co_flags & inspect.CO_VARARGS:
        positional += list(local[names[at]])
        at += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        keywords.update(local[names[at]])
    return tuple(positional), keywords


class CallRecorder:
    """pytest plugin: record the watched functions' calls while the tests run (see the module
    docstring); ``send`` is the run's result writer's ``emit``."""

    def __init__(
        self,
        root: str,
        watched: Mapping[str, Sequence[str]],
        send: Callable[[dict[str, object]], None],
    ) -> None:
        self.root = root
        # child-visible file -> qualified names
        self.watched = {f: frozenset(q) for f, q in watched.items()}
        self.send = send
        self.kept: dict[tuple[str, str], int] = {}
        self.calls: list[list[str]] = []
        # id(frame) -> (module, qualname, pickled arguments) of a call whose return is awaited
        self.pending: dict[int, tuple[str, str, bytes]] = {}
        self.codes: dict[types.CodeType, tuple[str, str] | None] = {}
        self.size = 0

    def _key(self, frame: types.FrameType) -> tuple[str, str] | None:
        code = frame.f_code
        try:
            return self.codes[code]
        except KeyError:
            pass
        key: tuple[str, str] | None = None
        names = self.watched.get(code.co_filename)
        qualname = getattr(code, "co_qualname", code.co_name)
        if names is not None and qualname in names and "<locals>" not in qualname:
            module = frame.f_globals.get("__name__")
            if isinstance(module, str) and module != "__main__" and not code.co_flags & _NOT_PLAIN:
                key = (module, qualname)
        self.codes[code] = key
        return key

    def _profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call":
            key = self._key(frame)
            if key is None or self.kept.get(key, 0) >= PER_FUNCTION or self.size > TOTAL_LIMIT:
                return
            data = dumped(arguments(frame))
            if data is not None:
                self.pending[id(frame)] = (*key, data)
        elif event == "return" and self.pending:
            taken = self.pending.pop(id(frame), None)
            if taken is None or arg is None:
                return
            module, qualname, args = taken
            if self.kept.get((module, qualname), 0) >= PER_FUNCTION:
                return
            result = dumped(arg)
            if result is None:
                return
            self.kept[(module, qualname)] = self.kept.get((module, qualname), 0) + 1
            self.size += len(args) + len(result)
            self.calls.append([module, qualname, _text(args), _text(result)])

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        # Only while a test runs (its fixtures included): not the collection, not the plugin.
        sys.setprofile(self._profile)
        try:
            return (yield)
        finally:
            sys.setprofile(None)
            self.pending.clear()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        sys.setprofile(None)
        where = [p for p in sys.path if isinstance(p, str)]
        self.send({"calls": self.calls, "sys_path": where, "root": self.root})


def _text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
