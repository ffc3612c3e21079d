"""The run child's tripwire: is the machinery that makes the outcome stream still the one it
captured? (docs/architecture.md §2, "Replay outcomes are the parent's record".)

The code under test runs in the run child's interpreter, so it can rebind what turns a test
into a report (``_pytest.reports.TestReport.from_item_and_call``, ``_pytest.runner
.call_and_report``, ``Function.runtest.__code__``, pluggy's ``_multicall``) or register a
hookwrapper of ``pytest_runtest_makereport`` that rewrites failures as passes. ``take``
snapshots, before pytest starts (no conftest and no test module has run), every module of
``MODULES`` that is loaded: its callables, classes and modules; the ``__dict__`` of each
class it defines; the ``__code__``, ``__defaults__`` and ``__kwdefaults__`` of the Python
functions found there (capturing and comparing are the snapshot engine's, ``child.snapshot``,
shared with the property child's ``integrity``; this module says what is watched, when, and
how a change is reported). ``arm``'s ``hooks`` adds, once pytest's own plugins are configured
(``pytest_sessionstart``), the hook implementations of ``HOOKS``. Its ``check``
compares all of it by identity and returns what changed, one phrase each: in full at the run
child's boundaries (session start, after collection, each test file's first test, every
``replay_run.FULL_EVERY`` tests, the end), and before the other records only what is cheap
(the hooks, the own dicts of the plugin manager, its hook callers and patchlane's objects)
unless ``writes`` counted an event that can rewrite a function since the last full look.

What is not a change: module state that is not callable (``_pytest.assertion.util
._reprcompare`` while a test runs); a class entry that was plain data (``pytestPDB._config``, not captured);
a class entry under a fresh name that no base class defines (pytest's own ``legacypath`` adds
``Node.fspath`` and ``Session.startdir`` at configure time): it shadows nothing the captured
code calls; a hook implementation of a conftest pytest loads during collection (harness,
judged by classify). Modules pytest and its installed plugins legitimately change at
configure time (``_pytest.config``, ``_pytest.fixtures``) are not watched: they configure,
they do not make outcomes.

The check runs on what this module and the engine captured when they were imported (default
arguments) and reads no global of either (the engine is itself in ``MODULES``); the record it sends goes through ``sender``, which holds the
descriptor, the token, ``os.write`` and the C JSON encoder captured before pytest started.
It is a tripwire, not a sandbox: code that puts everything back before the check runs is not
seen.
"""

from __future__ import annotations

import functools
import itertools
import operator
import os
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from patchlane.child import boundary, writes
from patchlane.child import snapshot as engine
from patchlane.child.channel import encode
from patchlane.child.snapshot import NO_FUNCTIONS, Functions, Space, unchanged

# The modules the outcome stream depends on: collection and the run protocol, the reports
# and their outcomes, the skip/xfail and assertion helpers, pluggy's hook calls, and
# patchlane's own plugin, run child and channel (``__main__`` is the run child).
MODULES: Final = (
    "pytest",
    "_pytest.reports",
    "_pytest.runner",
    "_pytest.python",
    "_pytest.main",
    "_pytest.nodes",
    "_pytest.skipping",
    "_pytest.outcomes",
    "_pytest.unittest",
    "_pytest.doctest",
    "_pytest.subtests",
    "_pytest.python_api",
    "_pytest.raises",
    "_pytest.recwarn",
    "_pytest.warnings",
    "_pytest.assertion",
    "_pytest.assertion.rewrite",
    "_pytest.assertion.util",
    "pluggy",
    "pluggy._callers",
    "pluggy._hooks",
    "pluggy._manager",
    "pluggy._result",
    "patchlane.pytest_plugin",
    "patchlane.child.channel",
    "patchlane.child.replay_collect",
    "patchlane.child.replay_run",
    "patchlane.child.replay_plugins",
    "patchlane.child.tripwire",
    "patchlane.child.snapshot",
    "patchlane.child.boundary",
    "patchlane.child.leftover",
    "patchlane.child.writes",
    "patchlane.child.importstate",
    "patchlane.child.processstate",
    "__main__",
)
# The hooks whose implementations make or carry a test's reports.
HOOKS: Final = (
    "pytest_runtest_protocol",
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_runtest_call",
    "pytest_runtest_setup",
    "pytest_runtest_teardown",
    "pytest_pyfunc_call",
    "pytest_report_teststatus",
)
# The judging machinery beyond the outcome stream (DESIGN §2, "watched at its boundary"): the
# import system (builtins' ``__import__`` and ``compile``, importlib's finders and loaders),
# unittest's asserts and results, and the comparisons a test's verdict rests on: pytest's
# ``approx`` and ``raises`` (its public names and ``_pytest.python_api``'s classes) and
# ``math.isclose``. ``pytest`` is in ``MODULES`` too, but that snapshot is taken again once
# the root conftests are loaded; this one is taken before, so a tolerance loosened by the
# package a conftest imports is a change. Compared only where no test runs (after collection,
# after each test's teardown, at the end), so that a test's own ``monkeypatch`` or
# ``mock.patch`` of ``builtins.open`` is undone before it is looked at. The frozen names
# come first: their classes say ``_frozen_importlib_external`` as their module.
MACHINERY: Final = (
    "builtins",
    "_frozen_importlib",
    "_frozen_importlib_external",
    "importlib",
    "importlib._bootstrap",
    "importlib._bootstrap_external",
    "importlib.machinery",
    "importlib.util",
    "importlib.abc",
    "unittest",
    "unittest.case",
    "unittest.result",
    "unittest.util",
    "unittest.suite",
    "unittest.loader",
    "pytest",
    "_pytest.python_api",
    "_pytest.raises",
    "math",
    "cmath",
)
SHOWN: Final = 3
# The rule-6 reason of a run whose machinery changed (DESIGN §1).
REBOUND: Final = "judging machinery rebound by the code under test"
_OWNERS: Final = {
    "_pytest": "pytest",
    "pytest": "pytest",
    "pluggy": "pluggy",
    "unittest": "unittest",
    "math": "the standard library",
    "cmath": "the standard library",
    "builtins": "the import system",
    "importlib": "the import system",
    "_frozen_importlib": "the import system",
    "_frozen_importlib_external": "the import system",
}

# (label, the hook caller, its implementations' list, (impl, function, plugin, wrapper,
# hookwrapper) of each).
Hook = tuple[str, Any, list[Any], tuple[tuple[Any, Any, Any, Any, Any], ...]]


def _owner(key: str) -> str:
    """Return whose machinery the module ``key`` is, for the reason: pytest's, pluggy's, ..."""
    return _OWNERS.get(key.split(".")[0], "patchlane")


def take(
    modules: Iterable[str] = MODULES, held: Mapping[str, types.ModuleType] | None = None
) -> tuple[tuple[Space, ...], Functions]:
    """Return the snapshot of the loaded ``modules`` (see the module docstring): their
    spaces and functions (``child.snapshot``); a name in ``held`` is that module, whatever
    ``sys.modules`` holds (patchlane's own modules, which the replay takes off
    ``sys.modules``: ``replay_run.unlist``)."""
    spaces: list[Space] = []
    seen: set[int] = set()
    for key in modules:
        module = (held or {}).get(key) or sys.modules.get(key)
        if not isinstance(module, types.ModuleType) or id(module) in seen:
            continue
        seen.add(id(module))
        owner = _owner(getattr(module.__spec__, "name", key) if key == "__main__" else key)
        classes = (f"{owner}'s ", "shadow", (module.__name__, key))
        engine.capture_module(spaces, seen, module, f"{owner}'s {key}", _kept, classes)
    return tuple(spaces), engine.functions(spaces, properties=True)


def _kept(value: Any) -> bool:
    """Return whether a module's entry ``value`` is captured: what is called or imported
    through the module (its state is not)."""
    return callable(value) or isinstance(value, types.ModuleType)


def instances(label: str, objects: Iterable[Any]) -> tuple[Space, ...]:
    """Return the spaces of ``objects``' own dicts (``label`` names them in a reason): the
    plugin manager's ``_inner_hookexec``, a hook caller's ``_hookexec``, the run child's
    writer and plugins; an entry that is not plain data must not change, and none may be
    added (an ``emit`` on the writer itself would shadow its class's)."""
    out: list[Space] = []
    for obj in objects:
        live = getattr(obj, "__dict__", None)
        if isinstance(live, dict):
            saved = {k: v for k, v in live.items() if not engine.is_plain(v)}
            where = f"{label}'s {type(obj).__name__}"
            out.append(engine.space(where, live, saved, engine.OBJECT, live))
    return tuple(out)


def _hooks(pluginmanager: Any) -> tuple[Hook, ...]:
    """Return the captured state of ``HOOKS`` in ``pluginmanager``."""
    out: list[Hook] = []
    for name in HOOKS:
        caller = getattr(pluginmanager.hook, name, None)
        impls = getattr(caller, "_hookimpls", None)
        if caller is None or not isinstance(impls, list):
            continue
        out.append((name, caller, impls, tuple(_impl(i) for i in impls)))
    return tuple(out)


def _impl(impl: Any, _getattr: Callable[..., Any] = getattr) -> tuple[Any, Any, Any, Any, Any]:
    return (
        impl,
        _getattr(impl, "function", None),
        _getattr(impl, "plugin", None),
        _getattr(impl, "wrapper", None),
        _getattr(impl, "hookwrapper", None),
    )


def _where(impl: Any) -> str:
    """Return the file an added hook implementation's code is in (for the reason)."""
    try:
        code = getattr(getattr(impl, "function", None), "__code__", None)
        return str(getattr(code, "co_filename", "?"))[-120:]
    except Exception:  # noqa: BLE001 - hostile attributes
        return "?"


def _hooks_changed(
    hooks: tuple[Hook, ...],
    pluginmanager: Any,
    _getattr: Callable[..., Any] = getattr,
    _type: type[type] = type,
    _tuple: type[tuple[Any, ...]] = tuple,
    _map: type[map[Any]] = map,
    _len: Callable[[Any], int] = len,
    _is: Callable[[Any, Any], bool] = operator.is_,
    _all: Callable[[Iterable[Any]], bool] = all,
    _impl: Callable[[Any], tuple[Any, ...]] = _impl,
    _where: Callable[[Any], str] = _where,
    _id: Callable[[Any], int] = id,
    _module: type = types.ModuleType,
    _flat: Callable[[Iterable[Iterable[Any]]], Iterable[Any]] = itertools.chain.from_iterable,
) -> list[str]:
    """Return one phrase per hook of ``hooks`` whose caller or implementations changed
    (a conftest pytest loaded while collecting aside). Reads no global (see ``compare``)."""
    changed: list[str] = []
    for name, caller, impls, captured in hooks:
        if _getattr(pluginmanager.hook, name, None) is not caller:
            changed.append("pytest's hook " + name + " was replaced")
            continue
        if _getattr(caller, "_hookimpls", None) is not impls:
            changed.append("pytest's hook " + name + "'s implementations were replaced")
            continue
        current = _tuple(_map(_impl, impls))
        if _len(current) == _len(captured) and _all(_map(_is, _flat(current), _flat(captured))):
            continue  # the fast path: every implementation as captured, in order
        conftests = _getattr(pluginmanager, "_conftest_plugins", ())
        olds = {_id(c[0]): c for c in captured}
        for entry in current:
            old = olds.pop(_id(entry[0]), None)
            if old is None:
                if entry[2] in conftests and _type(entry[2]) is _module:
                    continue  # a conftest pytest loaded while collecting: harness
                what = "hookwrapper" if entry[3] or entry[4] else "implementation"
                where = _where(entry[0])
                changed.append(f"a {name} {what} ({where}) was registered")
            elif not _all(_map(_is, entry, old)):
                changed.append(f"pytest's {name} implementation of {_where(entry[0])} was changed")
        if olds:
            changed.append(f"{_len(olds)} {name} implementation(s) were removed")
    return changed


def compare(
    spaces: tuple[Space, ...],
    functions: Functions,
    hooks: tuple[Hook, ...],
    pluginmanager: Any,
    _same: Callable[[tuple[Space, ...]], bool] | None = None,
    _changed_entries: Callable[
        [tuple[Space, ...], engine.Verbs, list[str]], None
    ] = engine.changed_entries,
    _changed_functions: Callable[
        [Functions, engine.Verbs, list[str]], None
    ] = engine.changed_functions,
    _hooks_changed: Callable[[tuple[Hook, ...], Any], list[str]] = _hooks_changed,
    _verbs: engine.Verbs = engine.PHRASES,
) -> list[str]:
    """Return one phrase per watched object that changed (``[]`` when none did): the
    entries of ``spaces``, the ``functions`` (``child.snapshot``), then the ``hooks``.
    Reads no global of this module and no builtin by name: what it needs are default
    arguments. ``_same``: ``unchanged(spaces)``, the check of every space at once, in C;
    when it holds, the entries are not looked at one by one."""
    changed: list[str] = []
    if _same is None or not _same(spaces):
        _changed_entries(spaces, _verbs, changed)
    _changed_functions(functions, _verbs, changed)
    changed += _hooks_changed(hooks, pluginmanager)
    return changed


def describe(phrases: list[str]) -> str:
    """Return the reason a tampered run gives every node: ``judging machinery rebound by the
    code under test: <what changed> during the run: outcomes cannot be believed`` (the
    first ``SHOWN`` phrases, then how many more)."""
    shown = "; ".join(phrases[:SHOWN])
    more = f" (and {len(phrases) - SHOWN} more)" if len(phrases) > SHOWN else ""
    return f"{REBOUND}: {shown}{more} during the run: outcomes cannot be believed"


def sender(
    fd: int,
    token: str,
    _write: Callable[[int, bytes], int] = os.write,
    _encode: Callable[[Any], str] = encode,
) -> Callable[[dict[str, object]], None]:
    """Return a function that writes one record (with ``token``) to ``fd`` through what was
    captured at import (``channel.encode``, ``os.write``), so that rebinding ``json``,
    ``os`` or the channel's writer cannot drop or alter the line."""

    def send(record: dict[str, object]) -> None:
        data = (_encode({**record, "token": token}) + "\n").encode("ascii")
        while data:
            data = data[_write(fd, data) :]

    return send


def arm(
    send: Callable[[dict[str, object]], None],
) -> tuple[Callable[..., None], Callable[..., bool]]:
    """Take the snapshot now, the judging machinery's too (``MACHINERY`` and the import
    system's lists: ``boundary``); return ``(hooks, check)``. ``hooks(pluginmanager,
    objects)`` captures the implementations of ``HOOKS``, the own dicts of the plugin
    manager, of their hook callers and of ``objects``, and the plugins (whose hooks must be
    defined where their code says), the first call only.
    ``check(quiet=False, full=True)`` compares the outcome stream's machinery and, with
    ``quiet`` (no test is running: after collection, after a test's teardown, at the end),
    the judging machinery too; on the first change it sends ``{"tamper": [phrases]}``
    through ``send``; it returns whether the run has been tampered with (now or before) and
    never raises. Without ``full`` (a test's report and end: the run child's boundaries,
    docs/explanation/trust-model.md), it compares what is cheap to compare (the hook
    implementations of ``HOOKS``, the plugin manager's, hook callers' and ``objects``' own
    dicts, the import system's lists) and the rest only when ``writes`` counted an event
    since the last full look. Their state is in their closure, not in an object the code
    under test could find and reset."""
    count = writes.install()
    spaces, functions = take()
    # patchlane's own modules as loaded now: the replay takes them off ``sys.modules``
    # before any code of the tree runs, and the second snapshot still holds them.
    held = {
        k: m
        for k in MODULES
        if k.startswith("patchlane.") and isinstance(m := sys.modules.get(k), types.ModuleType)
    }
    # The judging machinery as it is before pytest starts, so that what a root conftest's
    # import of the package does to it is a change too (pytest's own assertion rewriter,
    # put first on ``sys.meta_path`` when it configures, aside).
    machinery, machinery_functions = take(MACHINERY)
    rewriter = getattr(sys.modules.get("_pytest.assertion.rewrite"), "AssertionRewritingHook", None)
    imports = boundary.take_imports([rewriter] if isinstance(rewriter, type) else [])
    full = functools.partial(compare, spaces, functions, (), None, _same=unchanged)
    # [plugin manager, the outcome stream's full check, tampered, the judging machinery's
    # full check, the outcome stream's cheap check, the machinery's cheap check, the write
    # count at the last full look of each]
    state: list[Any] = [None, full, False, _nothing_changed, full, _nothing_changed, -1, -1]

    def hooks(
        pluginmanager: Any,
        objects: Iterable[Any] = (),
        _hooks: Callable[[Any], tuple[Hook, ...]] = _hooks,
        _instances: Callable[[str, Iterable[Any]], tuple[Space, ...]] = instances,
        _take: Callable[..., tuple[tuple[Space, ...], Functions]] = take,
        _boundary: Any = boundary,
        _modules: tuple[str, ...] = tuple(MODULES),
    ) -> None:
        if state[0] is None:
            state[0] = pluginmanager
            # Again, now that pytest is configured: installed plugins patch pytest while it
            # configures (pytest-subtests replaces TestCaseFunction.addSkip on pytest 8), and
            # so may the root conftests and what they import, which are the test harness (a
            # patch that changes them is undecided whatever the replay says). No test
            # module has run yet.
            now, now_functions = _take(_modules, held)
            hooked = _hooks(pluginmanager)
            more = (
                *_instances("pluggy", [pluginmanager, *(h[1] for h in hooked)]),
                *_instances("patchlane", objects),
            )
            state[1] = functools.partial(
                compare, (*now, *more), now_functions, hooked, pluginmanager, _same=unchanged
            )
            state[4] = functools.partial(
                compare, more, NO_FUNCTIONS, hooked, pluginmanager, _same=unchanged
            )
            # A plugin registered before now (from a package a root conftest imports) is
            # judged by where its code is; one registered later, by what it is.
            early = _boundary.misplaced(pluginmanager)
            imports_changed = functools.partial(_boundary.imports_changed, imports)
            plugins_changed = functools.partial(
                _boundary.plugins_changed, _boundary.take_plugins(pluginmanager)
            )
            state[3] = functools.partial(
                _machinery_changed,
                functools.partial(
                    compare, machinery, machinery_functions, (), None, _same=unchanged
                ),
                imports_changed,
                plugins_changed,
                functools.partial(list, early),
            )
            # The plugins registered while the tests run are looked at in full only: one that
            # implements a hook that makes or carries a report is among ``HOOKS``' entries.
            state[5] = functools.partial(
                _machinery_changed, imports_changed, functools.partial(list, early)
            )

    def check(
        quiet: bool = False,
        full: bool = True,
        _count: Callable[[], int] = count,
        _str: type[str] = str,
        _type: Callable[[Any], type] = type,
        _error: type[Exception] = Exception,
    ) -> bool:
        try:
            now = _count()
            if full or now != state[6]:
                state[6] = now
                changed = state[1]()
            else:
                changed = state[4]()
            if quiet and (full or now != state[7]):
                state[7] = now
                changed += state[3]()
            elif quiet:
                changed += state[5]()
        except _error as e:  # the check itself was broken: that is tampering too
            changed = ["the tripwire could not check (" + _type(e).__name__ + ")"]
        if changed and not state[2]:
            state[2] = True
            send({"tamper": [_str(c)[:300] for c in changed[:20]]})
        return state[2] is True

    return hooks, check


def _nothing_changed() -> list[str]:
    """Return ``[]``: the judging machinery's check before the session started."""
    return []


def _machinery_changed(*checks: Callable[[], list[str]]) -> list[str]:
    """Return the phrases of every one of ``checks`` (the judging machinery's parts)."""
    changed: list[str] = []
    for one in checks:
        changed += one()
    return changed
