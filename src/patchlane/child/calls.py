"""Record the calls the tests make to the changed functions (the witness, child side).

In the vacuity check's own pytest process (never the judged slice's run), ``CallRecorder``
watches the functions the job names (by the file the child sees them in and their
``co_qualname``) while each test's setup, call and teardown run (``sys.monitoring`` on Python
3.12+, ``sys.setprofile`` before), and keeps up to ``PER_FUNCTION``
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
from collections.abc import Callable, Generator, Mapping, Sequence
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


# ``CallRecorder.codes``: a code object not decided yet.
_UNSEEN: Any = object()


class CallRecorder:
    """pytest plugin: record the watched functions' calls while the tests run (see the module
    docstring); ``send`` is the run's result writer's ``emit``.

    Only while a test's setup, call or teardown runs (``pytest_runtest_setup``, ``_call``,
    ``_teardown``): the code the tests and their fixtures run, not pytest's reports of it
    nor the run's own checks between them, which would otherwise pay for every call they
    make. Whether a code object is watched is decided once (``codes``): on Python 3.12+
    ``sys.monitoring`` (``_Monitor``) then stops calling back for every code object that is
    not, so an unwatched call costs nothing; on 3.11 ``sys.setprofile`` costs one
    dictionary look-up a call."""

    def __init__(
        self,
        root: str,
        watched: Mapping[str, Sequence[str]],
        send: Callable[[dict[str, object]], None],
        *,
        monitoring: bool = True,
    ) -> None:
        self.root = root
        # child-visible file -> qualified names
        self.watched = {f: frozenset(q) for f, q in watched.items()}
        self.send = send
        self.kept: dict[tuple[str, str], int] = {}
        self.calls: list[list[str]] = []
        # id(frame) -> (code, module, qualname, pickled arguments) of a call whose return is
        # awaited. With ``sys.monitoring`` a call that raises leaves its entry (no return is
        # reported): the code object tells it from a later frame under the same id.
        self.pending: dict[int, tuple[types.CodeType, str, str, bytes]] = {}
        # code object -> its (module, qualname) when watched, ``None`` when not: decided once.
        self.codes: dict[types.CodeType, tuple[str, str] | None] = {}
        self.size = 0
        self._monitor = _Monitor.claim(self) if monitoring else None
        self._profile = self._profiler()

    def _key(self, frame: types.FrameType) -> tuple[str, str] | None:
        """Decide (once, ``codes``) whether the code ``frame`` runs is watched; return its
        (module, qualname) when it is."""
        code = frame.f_code
        key: tuple[str, str] | None = None
        names = self.watched.get(code.co_filename)
        qualname = getattr(code, "co_qualname", code.co_name)
        if names is not None and qualname in names and "<locals>" not in qualname:
            module = frame.f_globals.get("__name__")
            if isinstance(module, str) and module != "__main__" and not code.co_flags & _NOT_PLAIN:
                key = (module, qualname)
        self.codes[code] = key
        return key

    def called(self, frame: types.FrameType) -> bool:
        """At a call of ``frame``'s code: keep its arguments if it is watched and may still
        be recorded. Returns whether its code may still be recorded (``False``: never
        again, the monitor stops calling back for it)."""
        key = self.codes.get(frame.f_code, _UNSEEN)
        if key is _UNSEEN:
            key = self._key(frame)
        if key is None or self.kept.get(key, 0) >= PER_FUNCTION:
            return False
        if self.size > TOTAL_LIMIT:
            return False
        data = dumped(arguments(frame))
        if data is not None:
            self.pending[id(frame)] = (frame.f_code, *key, data)
        return True

    def returned(self, frame: types.FrameType, value: object) -> None:
        """At the return of ``frame``: record the call with ``value`` if its arguments were
        kept and ``value`` is one to compare."""
        taken = self.pending.pop(id(frame), None)
        if taken is None or value is None or taken[0] is not frame.f_code:
            return
        _, module, qualname, args = taken
        if self.kept.get((module, qualname), 0) >= PER_FUNCTION:
            return
        result = dumped(value)
        if result is None:
            return
        self.kept[(module, qualname)] = self.kept.get((module, qualname), 0) + 1
        self.size += len(args) + len(result)
        self.calls.append([module, qualname, _text(args), _text(result)])

    def _profiler(self) -> Callable[[types.FrameType, str, Any], None]:
        """The ``sys.setprofile`` function (Python 3.11, or no monitoring tool free): an
        unwatched call costs one look-up of its code object (``codes``)."""
        codes, pending, unseen = self.codes, self.pending, _UNSEEN
        called, returned = self.called, self.returned

        def profile(frame: types.FrameType, event: str, arg: Any) -> None:
            if event == "call":
                if codes.get(frame.f_code, unseen) is not None:
                    called(frame)
            elif event == "return" and pending:
                returned(frame, arg)

        return profile

    def _on(self) -> None:
        if self._monitor is not None:
            self._monitor.on()
        else:
            sys.setprofile(self._profile)

    def _off(self) -> None:
        if self._monitor is not None:
            self._monitor.off()
        else:
            sys.setprofile(None)
        self.pending.clear()

    def _watching(self) -> Generator[None, object, object]:
        self._on()
        try:
            return (yield)
        finally:
            self._off()

    # Outermost (``tryfirst``): every other plugin's part of the phase, conftests' included.
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, object]:
        return (yield from self._watching())

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        return (yield from self._watching())

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        return (yield from self._watching())

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self._off()
        if self._monitor is not None:
            self._monitor.release()
        where = [p for p in sys.path if isinstance(p, str)]
        self.send({"calls": self.calls, "sys_path": where, "root": self.root})


class _Monitor:
    """``sys.monitoring`` (Python 3.12+) for a ``CallRecorder``: ``PY_START`` everywhere while
    a phase runs, answered with ``DISABLE`` for a code object that is not watched (or has
    all its calls), so that it is never reported again; ``PY_RETURN`` only on the watched
    code objects (local events)."""

    def __init__(self, recorder: CallRecorder, tool: int, monitoring: Any) -> None:
        self.recorder = recorder
        self.tool = tool
        # ``sys.monitoring`` (typed ``Any``: the module exists from Python 3.12 only).
        self.monitoring = monitoring
        self.local: list[types.CodeType] = []

    @classmethod
    def claim(cls, recorder: CallRecorder) -> _Monitor | None:
        """A monitor on the first free tool id, registered; ``None`` before Python 3.12 or
        when no tool id is free (the recorder then profiles)."""
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is None:
            return None
        # Not a named tool's id: a test that starts cProfile (``PROFILER_ID``) or coverage
        # must start as it does in the slice's run.
        for tool in (4, 3):
            try:
                monitoring.use_tool_id(tool, "patchlane calls")
            except ValueError:
                continue  # taken by another tool of the process
            monitor = cls(recorder, tool, monitoring)
            events = monitoring.events
            monitoring.register_callback(tool, events.PY_START, monitor.started)
            monitoring.register_callback(tool, events.PY_RETURN, monitor.returned)
            return monitor
        return None

    def started(self, code: types.CodeType, offset: int) -> Any:
        recorder = self.recorder
        frame = sys._getframe(1)  # the function starting
        if frame.f_code is not code:
            return None  # not the frame this event is about: never guessed at
        first = code not in recorder.codes
        if not recorder.called(frame):
            return self.monitoring.DISABLE
        if first:
            self.monitoring.set_local_events(self.tool, code, self.monitoring.events.PY_RETURN)
            self.local.append(code)
        return None

    def returned(self, code: types.CodeType, offset: int, value: object) -> Any:
        if self.recorder.pending:
            frame = sys._getframe(1)
            if frame.f_code is code:
                self.recorder.returned(frame, value)
        return None

    def on(self) -> None:
        self.monitoring.set_events(self.tool, self.monitoring.events.PY_START)

    def off(self) -> None:
        self.monitoring.set_events(self.tool, self.monitoring.events.NO_EVENTS)

    def release(self) -> None:
        """Give the tool id back (no event of it is reported again)."""
        monitoring = self.monitoring
        monitoring.set_events(self.tool, monitoring.events.NO_EVENTS)
        for code in self.local:
            monitoring.set_local_events(self.tool, code, monitoring.events.NO_EVENTS)
        monitoring.register_callback(self.tool, monitoring.events.PY_START, None)
        monitoring.register_callback(self.tool, monitoring.events.PY_RETURN, None)
        monitoring.free_tool_id(self.tool)


def _text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
