"""What a test, or the code it ran, leaves behind in the run child's process for later tests
to see (DESIGN §2: "state left behind widens the slice").

pytest runs a suite in one process, so a test that sets a variable, changes directory, puts
a path on ``sys.path``, plants or drops a ``sys.modules`` entry or rebinds a module's
attribute changes what every later test sees, including tests outside the slice. The static
rules (``lanes.replay.sharedstate``) read spellings; this watch reads the process itself,
whatever name the change went through (``settings = os.environ``, ``vars(sys.modules.get(
"quota"))["LIMIT"] = 3``).

``StateWatch.start`` takes the state when the tests start (after collection: what test
modules do at import is the suite's set-up); ``after`` (each test's end, after its teardown,
so a ``monkeypatch`` is undone) returns what is new since the last look, one phrase per item,
each reported once:

- ``env NAME`` (added, changed or removed), ``cwd``, ``sys.path``;
- ``sys.modules[NAME]``: an entry removed or replaced, or a new entry that is not a module
  the import system made (no spec, or a spec of another name);
- ``MODULE.NAME``: an entry of a watched module's namespace rebound or deleted, by identity.
  Watched: every module of the tree (by its file), the modules those import (a bounded
  number), and a fixed set of shared standard-library modules (their public names only:
  private names there are the library's own caches, ``tempfile.tempdir`` aside);
- ``MODULE.NAME (in place)``: for the tree's modules, one step further in, since a change
  there keeps every binding: the items of a dict, list or set (``fmt.OPTIONS.update(...)``
  through a local name), a function's ``__code__``, ``__defaults__`` and ``__kwdefaults__``
  (``number.__defaults__ = (3,)``), and a class's own entries (``Formatter.places = 3``),
  of the functions and classes the module defines. A container of more than
  ``CONTENTS_LIMIT`` items is not read item by item.

A test module's own entries and inner state (``start``'s ``tests``) are looked at at the end
of its own tests, and every test module's when ``after`` is asked for ``everything`` (the run
child does at each test file's first test and every ``FULL_EVERY`` tests): a look per test
then costs the same however many test modules the suite has.

Cost: one identity comparison per watched entry per test, in C (``operator.itemgetter``),
the functions' parts only when ``child.writes`` counted an event that can write them since the
last look (the run child's ``StateWatch`` is given its count; without one, every look),
and a look at ``sys.modules``' new keys only when its size changed; the tree's inner state is
read and compared in C too (a tuple of each container's items, compared by identity first):
about 0.6 ms a test on patchlane's own tree (240 modules; 1,321 functions, 341 classes and
containers), against about as much for the rest of the watch.
"""

from __future__ import annotations

import functools
import importlib
import operator
import os
import sys
import types
from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any, Final

from patchlane.child.writes import always

# Shared standard-library modules whose public names every test sees.
STDLIB: Final = (
    "os", "os.path", "json", "re", "datetime", "time", "random", "math", "decimal",
    "logging", "warnings", "locale", "functools", "collections", "itertools", "pathlib",
    "shutil", "subprocess", "socket", "tempfile", "io", "string", "typing", "copy",
    "pickle", "hashlib", "base64", "uuid", "inspect", "types", "operator", "platform",
    "urllib.parse", "textwrap", "fractions", "statistics", "enum", "dataclasses",
    "contextlib", "calendar", "struct", "codecs", "getpass", "glob", "fnmatch", "csv",
)  # fmt: skip
# How many modules the tree's modules import are watched besides the tree's own.
IMPORTED_LIMIT: Final = 300
_MISSING: Final = object()
# Rebound for every test by pytest itself: its warnings plugin gives each test's protocol (in
# which a test's end is seen) a fresh copy of the filter list.
_PYTESTS_OWN: Final = frozenset({"warnings.filters"})
# (label, live namespace, names, getter of those names, their values then)
_Watched = tuple[str, dict[str, Any], tuple[str, ...], Callable[[Any], Any], tuple[Any, ...]]
# The most items of one container of the tree's modules compared one by one at each test's end.
CONTENTS_LIMIT: Final = 5000
# The parts of a function that a later call runs with, each read for every function at once.
_FUNCTION_PARTS: Final = tuple(
    operator.attrgetter(a) for a in ("__code__", "__defaults__", "__kwdefaults__")
)


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """Return a function of a mapping that gives the values of ``names`` as a tuple."""
    if not names:
        return lambda _d: ()
    if len(names) == 1:
        one = operator.itemgetter(names[0])
        return lambda d: (one(d),)
    return operator.itemgetter(*names)


def _below(path: object, root: str) -> bool:
    """Return whether the file ``path`` is under the directory ``root``."""
    if not isinstance(path, str):
        return False
    full = os.path.abspath(path)  # noqa: PTH100 - lexical: the import system's own path
    return full.startswith(root)


class StateWatch:
    """The process state later tests can see (see the module docstring)."""

    def __init__(self, root: str, count: Callable[[], int] = always) -> None:
        self.root = os.path.abspath(root) + os.sep  # noqa: PTH100
        # ``writes.install()``'s count: the functions' parts are compared only when it moved
        # since the last look (``always``: at every look).
        self.count = count
        self.count_seen = -1
        self.env: dict[str, str] = {}
        self.cwd = ""
        self.path: tuple[str, ...] = ()
        self.modules: dict[str, Any] = {}
        self.modules_getter: Callable[[Any], Any] = _getter(())
        self.modules_values: tuple[Any, ...] = ()
        self.seen_modules: set[int] = set()
        # The watched modules' entries and the tree's containers and classes: the test
        # modules' each in a group of its own (``start``'s ``tests``), the rest in ``shared``.
        self.shared = _Group()
        self.tests: dict[int, _Group] = {}
        # The tree's functions, and each of their ``_FUNCTION_PARTS`` at the last look.
        self.function_labels: list[str] = []
        self.functions: list[types.FunctionType] = []
        self.function_parts: list[list[Any]] = [[] for _ in _FUNCTION_PARTS]

    def start(self, tests: Iterable[types.ModuleType] = ()) -> None:
        """Take the state now. ``tests``: the test modules, whose own entries and inner
        state ``after`` compares only when asked (their own test's end, or ``everything``)."""
        self.tests = {id(m): _Group() for m in tests}
        self.count_seen = self.count()
        self.env = dict(_environ_data())
        self.cwd = _cwd()
        self.path = tuple(sys.path)
        self._take_modules()
        tree = [m for m in list(sys.modules.values()) if self._in_tree(m)]
        imported: list[types.ModuleType] = []
        for module in tree:
            self._watch(module, private=True)
            for value in list(vars(module).values()):
                source = value if isinstance(value, types.ModuleType) else None
                if source is None:
                    name = getattr(value, "__module__", None)
                    source = sys.modules.get(name) if isinstance(name, str) else None
                if isinstance(source, types.ModuleType) and not self._in_tree(source):
                    imported.append(source)
        for module in imported[:IMPORTED_LIMIT]:
            self._watch(module, private=False)
        for name in STDLIB:
            shared = sys.modules.get(name)
            if isinstance(shared, types.ModuleType):
                self._watch(shared, private=False)

    def _in_tree(self, module: object) -> bool:
        return isinstance(module, types.ModuleType) and _below(
            getattr(module, "__file__", None), self.root
        )

    def _take_modules(self) -> None:
        self.modules = dict(sys.modules)
        names = tuple(self.modules)
        self.modules_getter = _getter(names)
        self.modules_values = tuple(self.modules.values())

    def _watch(self, module: types.ModuleType, *, private: bool) -> None:
        if id(module) in self.seen_modules:
            return
        self.seen_modules.add(id(module))
        namespace = vars(module)
        names = tuple(
            k
            for k in list(namespace)
            if isinstance(k, str)
            and not (k.startswith("__") and k.endswith("__"))
            and (private or not k.startswith("_") or k == "tempdir")
        )
        label = str(getattr(module, "__name__", "?"))
        names = tuple(n for n in names if f"{label}.{n}" not in _PYTESTS_OWN)
        getter = _getter(names)
        group = self.tests.get(id(module), self.shared)
        group.watched.append((label, namespace, names, getter, getter(namespace)))
        if private:
            for name in names:
                value = namespace.get(name)
                if isinstance(value, types.FunctionType) and value.__module__ == label:
                    self.function_labels.append(f"{label}.{name} (in place)")
                    self.functions.append(value)
                    for saved, part in zip(self.function_parts, _FUNCTION_PARTS, strict=True):
                        saved.append(part(value))
                    continue
                reader = _reader(value, label)
                if reader is not None:
                    group.inner_labels.append(f"{label}.{name} (in place)")
                    group.inner_readers.append(reader)
                    group.inner_values.append(reader())

    def after(self, current: object = None, *, everything: bool = True) -> list[str]:
        """Return what is new since the last look (one phrase each; ``[]``: nothing), and
        take it as the state from now on. Without ``everything``, of the test modules only
        ``current``'s (the module of the test that just ended) is looked at: the others
        are looked at the next time ``everything`` is asked for. Never raises."""
        try:
            groups = (
                [self.shared, *self.tests.values()]
                if everything
                else [
                    self.shared,
                    *([self.tests[id(current)]] if id(current) in self.tests else []),
                ]
            )
            return self._after(groups)
        except Exception as e:  # noqa: BLE001 - the process is the patch's
            return [f"the state could not be read ({type(e).__name__})"]

    def _after(self, groups: list[_Group]) -> list[str]:
        found: list[str] = []
        env = _environ_data()
        if env != self.env:  # two dicts of bytes (or str): compared in C
            keys = set(env) ^ set(self.env) | {k for k in env if self.env.get(k) != env[k]}
            found += [f"env {_text(k)}" for k in sorted(keys)]
            self.env = dict(env)
        cwd = _cwd()
        if cwd != self.cwd:
            found.append("cwd")
            self.cwd = cwd
        if tuple(sys.path) != self.path:
            found.append("sys.path")
            self.path = tuple(sys.path)
        found += self._modules_left()
        for group in groups:
            found += group.inner_left()
        found += self._functions_left()
        for group in groups:
            found += group.entries_left()
        return found

    def _functions_left(self) -> list[str]:
        now_count = self.count()
        if now_count == self.count_seen:
            return []  # no function's part was written since the last look (``writes``)
        self.count_seen = now_count
        changed: set[int] = set()
        for index, part in enumerate(_FUNCTION_PARTS):
            parts = list(map(part, self.functions))  # in C: one map per part
            if parts != self.function_parts[index]:
                saved = self.function_parts[index]
                changed.update(
                    i for i, (a, b) in enumerate(zip(parts, saved, strict=True)) if a is not b
                )
                self.function_parts[index] = parts
        return [self.function_labels[i] for i in sorted(changed)]

    def _modules_left(self) -> list[str]:
        live = sys.modules
        try:
            same = all(map(operator.is_, self.modules_getter(live), self.modules_values))
        except KeyError:
            same = False
        if same and len(live) == len(self.modules):
            return []
        found = [f"sys.modules[{k}]" for k, v in self.modules.items() if live.get(k) is not v]
        for key in [k for k in list(live) if k not in self.modules]:
            module = live.get(key)
            spec = getattr(module, "__spec__", None)
            if not isinstance(module, types.ModuleType) or getattr(spec, "name", None) != key:
                found.append(f"sys.modules[{key}]")
            elif self._in_tree(module):
                self._watch(module, private=True)  # imported by a test: watched from now on
        self._take_modules()
        return found


class _Group:
    """Watched modules' entries (label, live namespace, names, getter of those names, their
    values then) and the tree's containers and classes (labels, readers, each of which
    returns a tuple in C, and the tuples they returned at the last look)."""

    def __init__(self) -> None:
        self.watched: list[_Watched] = []
        self.inner_labels: list[str] = []
        self.inner_readers: list[Callable[[], tuple[Any, ...]]] = []
        self.inner_values: list[tuple[Any, ...]] = []

    def inner_left(self) -> list[str]:
        """Return the labels of the containers and classes changed since the last look."""
        now = list(map(_call, self.inner_readers))
        if now == self.inner_values:  # in C, by identity first
            return []
        found = [
            label
            for label, a, b in zip(self.inner_labels, now, self.inner_values, strict=True)
            if a != b
        ]
        self.inner_values = now
        return found

    def entries_left(self) -> list[str]:
        """Return ``MODULE.NAME`` of each watched entry rebound since the last look."""
        watched = self.watched
        try:
            current = map(_call, map(_third, watched), map(_second, watched))
            if all(map(all, map(map, repeat(operator.is_), current, map(_fifth, watched)))):
                return []  # the fast path, in C: no watched module changed
        except KeyError:
            pass
        found: list[str] = []
        for index, (label, namespace, names, getter, values) in enumerate(watched):
            now: tuple[Any, ...]
            try:
                now = getter(namespace)
            except KeyError:
                now = tuple(namespace.get(n, _MISSING) for n in names)
            if all(map(operator.is_, now, values)):
                continue
            found += [
                f"{label}.{n}" for n, a, b in zip(names, now, values, strict=True) if a is not b
            ]
            watched[index] = (label, namespace, names, getter, now)
        return found


_second = operator.itemgetter(1)
_third = operator.itemgetter(3)
_fifth = operator.itemgetter(4)
_call = operator.call


def _reader(value: object, module: str) -> Callable[[], tuple[Any, ...]] | None:
    """Return a function (of nothing, run in C) that returns ``value``'s inner state as a
    tuple, or ``None`` when it has none to watch: a list's or set's items and a dict's
    values (a key added or removed changes their number), up to ``CONTENTS_LIMIT``, or the
    values of the own entries of a class that ``module`` defines. (A function's parts are
    read for all of the functions at once: ``_FUNCTION_PARTS``.)"""
    if isinstance(value, dict):
        return functools.partial(tuple, value.values()) if len(value) <= CONTENTS_LIMIT else None
    if isinstance(value, list | set):
        return functools.partial(tuple, value) if len(value) <= CONTENTS_LIMIT else None
    if isinstance(value, type) and value.__module__ == module and not _framework_class(value):
        return functools.partial(tuple, vars(value).values())
    return None


def _framework_class(cls: type) -> bool:
    """Whether ``cls`` is a ``unittest.TestCase``: unittest itself writes such a class's own
    entries as its tests run (``tearDown_exceptions``, ``_classSetupFailed``, at the base as
    at the head), so reading them in place would only ever find the framework. Without
    ``unittest`` loaded there is no such class (and none is imported for the question: a
    plain run's ``sys.modules`` stays as it is)."""
    unittest = sys.modules.get("unittest")
    case = getattr(unittest, "TestCase", None)
    return isinstance(case, type) and issubclass(cls, case)


def _environ_data() -> dict[Any, Any]:
    """Return the environment's own mapping (``os.environ._data``: bytes on POSIX), which
    compares in C; a copy of ``os.environ`` where it has none."""
    data = getattr(os.environ, "_data", None)
    return data if isinstance(data, dict) else dict(os.environ)


def _text(key: object) -> str:
    """Return an environment key as text."""
    return os.fsdecode(key) if isinstance(key, bytes) else str(key)


def _cwd(_getcwd: Callable[[], str] = os.getcwd) -> str:
    """Return the working directory, or ``""`` when it no longer exists."""
    try:
        return _getcwd()
    except OSError:
        return ""


def preload(root: str, files: Iterable[str]) -> int:
    """Import the modules of the tree ``root`` at ``files`` (repository-relative), each
    named from the longest ``sys.path`` entry that holds it; a module that does not import
    is left alone. What a narrowed slice's process lacks beside the full suite's, where the
    whole collection imported them: code that rebinds another module only when that module
    is loaded (``vars(sys.modules.get(...))``) then does so where the watch sees it.
    Returns how many imported."""
    entries = sorted(
        {os.path.abspath(p) for p in sys.path if isinstance(p, str) and p},  # noqa: PTH100
        key=len,
        reverse=True,
    )
    done = 0
    for rel in files:
        full = os.path.abspath(os.path.join(root, rel))  # noqa: PTH100, PTH118
        holder = next((e for e in entries if full.startswith(e + os.sep)), None)
        if holder is None or not full.endswith(".py"):
            continue
        parts = os.path.relpath(full[:-3], holder).split(os.sep)  # noqa: PTH206
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts or not all(p.isidentifier() for p in parts):
            continue
        try:
            importlib.import_module(".".join(parts))
            done += 1
        except BaseException:  # noqa: BLE001, S112 - the full run would hit it at collection
            continue
    return done


def phrases(items: Iterable[str], limit: int = 50) -> list[str]:
    """Return at most ``limit`` of ``items``, each at most 200 characters (for a record)."""
    return [str(i)[:200] for i in list(items)[:limit]]
