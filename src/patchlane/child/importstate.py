"""What importing a changed module did outside it, seen at the head in the run child (issue 31).

The static allow-list (``lanes.replay.inert``) cannot prove a module's changed import-time code
inert once it calls anything: ``mode = _StatsProperty('mode', _calc_mode)`` may as well be
``register(REGISTRY)``. The run child that collects the head imports the module anyway; this
watch looks at what that import changed outside the module, and the parent keeps the
whole-suite widening unless the look shows nothing and is one it can trust.

``ImportWatch.install`` (before pytest loads any conftest) puts a finder first on
``sys.meta_path`` for the changed modules' names. It asks the finders behind it for the spec,
as the import system would, and wraps the loader's ``exec_module``: just before the module's
code runs, ``snapshot`` takes the process's shared state; just after, ``changes`` compares.
One record per execution is sent at once (``{"import_state": NAME, "status": ..., "changes":
[...]}``), so nothing the process does later can change it. A status other than ``ok`` says
the look cannot be trusted (imported before the watch, run twice, failed, a loader that
cannot be wrapped, state too large to read): the parent then widens as before.

What the snapshot holds (compared by identity, never by ``==``):

- every module in ``sys.modules`` but the one imported: its namespace (names added, removed,
  rebound), and two steps further in: the items of a dict, list, set or deque, a class's own
  entries, an object's own ``__dict__``, a function's code, defaults, closure cells and
  ``__dict__``, a tuple's items (read, not compared: it cannot change);
- ``sys.modules`` (an entry removed or replaced; a new one that is not a real module of its
  own name), ``os.environ``, the working directory, the umask, the state of ``random``'s
  shared generator, ``decimal``'s context, the threads of the process (``/proc/self/task``),
  every signal's handler, the trace and profile functions, the recursion limit, the switch
  interval, the garbage collector's switch and thresholds, ``atexit``'s count, the default
  socket timeout, the locale;
- every audit event raised while the module's code runs, but reading ones (an import, an
  ``open`` for reading, ``compile``, ``exec``, a directory listing, ``id``) and a write of an
  attribute of the module's own classes and functions: a file written, a process started,
  ``ctypes``, ``gc``'s object graph, frames (``sys._getframe``), a new audit hook, each is a
  change.

What it does not see, so that a patch doing only that still gets ``ok`` with nothing: a write
into an object three steps below a module's name (``other.a.b.c.d = 1``; ``other.a.b.c = 1``
is seen), state kept only inside compiled code that raises no audit event
(``codecs.register``, ``os.register_at_fork``, an extension's globals), and code that reaches
this function's frame to rewrite its locals (Python 3.13's writable ``f_locals``; reaching a
frame is itself an audit event, named). See docs/explanation/trust-model.md.

Standard library only (docs/architecture.md §6).
"""

from __future__ import annotations

import collections
import importlib.abc
import os
import sys
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from patchlane.child.processstate import process

# How many items one snapshot reads at most; past it the look is not trusted.
ITEMS_LIMIT: Final = 4_000_000
# Statuses of a record (``ok``: the look can be trusted).
OK, BEFORE, TWICE, FAILED, UNWRAPPABLE, TOO_LARGE = (
    "ok",
    "imported before the watch started",
    "imported more than once",
    "its import failed",
    "its loader cannot be watched",
    "the process's state was too large to read",
)
OUTSIDE = "a watched module's code ran outside the watch"
# Audit events that read and change nothing a later test sees.
_READING: Final = frozenset(
    {
        "import",
        "exec",
        "compile",
        "builtins.id",
        "marshal.loads",
        "os.listdir",
        "os.scandir",
        "function.__new__",
        "code.__new__",
        "sys._getframemodulename",
    }
)
# Audit events that write an object's attribute: allowed for the module's own objects.
_SETATTR: Final = frozenset({"object.__setattr__", "object.__delattr__"})
_READ_MODES: Final = frozenset("rbt")
Emit = Callable[[dict[str, object]], None]


class ImportWatch:
    """The finder and loader wrapping for the modules ``names`` (see the module docstring);
    each execution's record goes to ``emit``."""

    def __init__(
        self,
        names: Iterable[str],
        emit: Emit,
        own: Sequence[object] = (),
        files: Iterable[str] = (),
    ) -> None:
        self.names = frozenset(names)
        # The watched modules' files: a module body of one run by ``exec`` other than the
        # one ``run`` expects (``expected``) is sent as ``OUTSIDE`` for every watched name.
        self.files = frozenset(os.path.abspath(f) for f in files)  # noqa: PTH100
        self.expected: list[str] = []
        self.emit = emit
        self.runs: dict[str, int] = {}
        # Objects of patchlane's that move while a module imports (the write count).
        self.own = tuple(own)
        # The modules being imported (one inside another's import: a stack), each with the
        # audit events raised since its code started.
        self.window: list[tuple[str, list[str]]] = []
        # The watch's own moving parts are not the module's doing (its attributes are: a
        # module that rebinds them is caught by ``run``'s own check).
        self.own = (*self.own, self.runs, self.window, self.expected)
        self.finder: _Finder | None = None

    def install(self) -> None:
        """Put the finder first on ``sys.meta_path`` and the audit hook in place; send a
        ``BEFORE`` record for each watched module already imported. Never raises."""
        for name in sorted(self.names):
            if name in sys.modules:
                self.runs[name] = 1
                self._send(name, BEFORE, [])
        # Once before any look: its first call fills caches (a codec's) the next leaves be.
        process()
        self.finder = _Finder(self)
        sys.meta_path.insert(0, self.finder)
        sys.addaudithook(self._audit)

    def _send(self, name: str, status: str, changes: list[str]) -> None:
        self.emit({"import_state": name, "status": status, "changes": changes[:50]})

    def close(self) -> None:
        """Stop watching (collection is over: a later look would not count); the audit hook,
        which cannot be removed, then returns at once."""
        self.names = frozenset()
        self.files = frozenset()

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.window and event != "exec":
            return  # the common case, first: the hook runs for every event of the process
        if event == "exec" and self.files and args:
            self._executed(args[0])
        if not self.window or event in _READING:
            return
        if event == "open" and _reading(args):
            return
        # A module imported while another is: its events are the outer one's too.
        for name, events in self.window:
            if event in _SETATTR and args and _own(args[0], name):
                continue
            if len(events) < 50:
                events.append(f"audit event {event}")

    def _executed(self, code: object) -> None:
        """Note a module body of a watched file run by ``exec``: the one ``run`` expects, or
        one the watch did not wrap (sent at once, for every watched name)."""
        if not isinstance(code, types.CodeType) or code.co_name != "<module>":
            return
        path = os.path.abspath(code.co_filename)  # noqa: PTH100
        if path not in self.files:
            return
        if self.expected and self.expected[-1] == path:
            self.expected.pop()
            return
        for name in sorted(self.names):
            self._send(name, OUTSIDE, [])

    def run(self, name: str, loader: Any, module: types.ModuleType) -> None:
        """Run ``loader.exec_module(module)`` between two snapshots; send the record.
        Raises what the module's code raises."""
        # What the record goes out through, and the watch's own parts, held here: a module
        # that rebinds them (``sys.meta_path[0].watch.emit = ...``) is seen doing so.
        emit, parts = self.emit, _parts(self)

        def send(status: str, changes: list[str]) -> None:
            emit({"import_state": name, "status": status, "changes": changes[:50]})

        self.runs[name] = self.runs.get(name, 0) + 1
        twice = self.runs[name] > 1
        try:
            before = snapshot(module, self.own)
        except _TooLarge:
            before = None
        events: list[str] = []
        self.window.append((name, events))
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
        path = os.path.abspath(origin) if isinstance(origin, str) else None  # noqa: PTH100
        if path is not None:
            self.expected.append(path)
        try:
            loader.exec_module(module)
        except BaseException:
            self.window.pop()
            send(FAILED, [])
            raise
        finally:
            if path is not None and self.expected and self.expected[-1] == path:
                self.expected.pop()  # a loader that ran no ``exec`` of it
        self.window.pop()
        if _parts(self) != parts:
            send(OK, ["the import watch itself"])
        elif twice:
            send(TWICE, [])
        elif before is None:
            send(TOO_LARGE, [])
        else:
            try:
                found = changes(before, module)
            except Exception as e:  # noqa: BLE001 - the process is the patch's
                found = [f"the state could not be read ({type(e).__name__})"]
            send(OK, [*events, *found])


def _parts(watch: ImportWatch) -> tuple[object, ...]:
    """The watch's and its finder's attributes, for an identity comparison."""
    finder = watch.finder
    mine = tuple(map(id, vars(watch).values()))
    return (*mine, *map(id, vars(finder).values())) if finder is not None else mine


class _Finder(importlib.abc.MetaPathFinder):
    """Finds a watched module's spec through the finders behind it and wraps its loader."""

    def __init__(self, watch: ImportWatch) -> None:
        self.watch = watch

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.watch.names:
            return None
        spec = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        if spec is None:
            return None
        if not hasattr(spec.loader, "exec_module"):
            self.watch.runs[fullname] = self.watch.runs.get(fullname, 0) + 1
            self.watch._send(fullname, UNWRAPPABLE, [])
            return spec
        spec.loader = _Loader(spec.loader, self.watch, fullname)
        return spec


class _Loader(importlib.abc.Loader):
    """A loader that runs the real one's ``exec_module`` under the watch; the module keeps
    the real loader as its ``__loader__``."""

    def __init__(self, loader: Any, watch: ImportWatch, name: str) -> None:
        self.loader, self.watch, self.name = loader, watch, name

    def create_module(self, spec: Any) -> Any:
        create = getattr(self.loader, "create_module", None)
        return None if create is None else create(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self.loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self.loader
        self.watch.run(self.name, self.loader, module)


def _reading(args: tuple[Any, ...]) -> bool:
    """Whether an ``open`` event's ``(path, mode, flags)`` opens for reading only."""
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else 0
    if isinstance(mode, str):
        return set(mode) <= _READ_MODES
    return mode is None and isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR) == 0


def _own(target: object, name: str) -> bool:
    """Whether ``target`` is a class or function that the module ``name`` defines."""
    if not isinstance(target, type | types.FunctionType):
        return False
    try:
        return bool(object.__getattribute__(target, "__module__") == name)
    except AttributeError:
        return False


class _TooLarge(Exception):
    """The snapshot passed ``ITEMS_LIMIT``."""


class Snapshot:
    """The state before a module's code ran (see the module docstring)."""

    def __init__(self) -> None:
        self.modules: dict[str, Any] = {}
        self.containers: list[tuple[str, Any, Callable[[Any], tuple[Any, ...]], tuple[Any, ...]]]
        self.containers = []
        self.process: dict[str, object] = {}


def snapshot(module: types.ModuleType, own: Sequence[object] = ()) -> Snapshot:
    """Return the state outside ``module`` now. Raises ``_TooLarge`` past ``ITEMS_LIMIT``."""
    snap = Snapshot()
    snap.modules = dict(sys.modules)
    snap.process = process()
    # ``sys.modules`` is compared apart (``_modules``): a module's own imports add to it.
    # Identity by ``object.__hash__`` (the address, for any object), not ``id``: ``id``
    # raises an audit event, and this reads some 100,000 objects.
    key = object.__hash__
    skip = {key(module), key(vars(module)), key(sys.modules), *map(key, own)}
    seen: set[int] = set(skip)
    budget = [ITEMS_LIMIT]
    readers: dict[int, Any] = {}
    level: list[tuple[str, Any]] = []
    for name, value in sorted(snap.modules.items(), key=lambda kv: str(kv[0])):
        if isinstance(value, types.ModuleType) and key(value) not in skip:
            seen.add(key(value))
            level.append((str(name), value))
    for depth in range(3):
        below: list[tuple[str, Any]] = []
        for label, value in level:
            kind = key(type(value))
            reader = readers.get(kind, _UNSEEN)
            if reader is _UNSEEN:
                reader = readers[kind] = _reader(value)  # by type alone: read once per type
            if reader is None:
                continue
            try:
                items = reader(value)
            except Exception:  # noqa: BLE001, S112 - an object that cannot be read is left
                continue
            budget[0] -= len(items)
            if budget[0] < 0:
                raise _TooLarge
            snap.containers.append((label, value, reader, items))
            if depth == 2:
                continue
            for item in items:
                mark = key(item)
                if mark in seen or isinstance(item, types.ModuleType):
                    continue
                seen.add(mark)
                below.append((label if depth else f"{label} (in place)", item))
        level = below
    # Reading may itself fill a cache (a codec looked up): what the look did is not the
    # module's, so the state it leaves is the one compared.
    for index, (label, value, reader, items) in enumerate(snap.containers):
        try:
            now = reader(value)
        except Exception:  # noqa: BLE001, S112 - compared (and named) after the import
            continue
        if len(now) != len(items) or not all(map(_same, now, items)):
            snap.containers[index] = (label, value, reader, now)
    return snap


def changes(before: Snapshot, module: types.ModuleType) -> list[str]:
    """Return what changed outside ``module`` since ``before`` (one phrase each)."""
    found: list[str] = []
    now = process()
    found += [k for k, v in before.process.items() if now.get(k) != v]
    found += _modules(before.modules, module)
    caches = _caches()
    for label, value, reader, items in before.containers:
        try:
            current = reader(value)
        except Exception:  # noqa: BLE001
            found.append(f"{label} (no longer readable)")
            continue
        if len(current) == len(items) and all(map(_same, current, items)):
            continue
        if reader is _namespace:
            added = _new_submodules(value, before.modules)
            found += [n for n in _names(label, items, current) if n not in added]
        elif (mark := object.__hash__(value)) in caches and _only_added(
            items, current, caches[mark]
        ):
            continue  # the import system's or ``re``'s own cache, filled as it does
        elif label not in found:
            found.append(label)
    return found


def _new_submodules(package: Any, before: dict[str, Any]) -> set[str]:
    """``PACKAGE.NAME`` of each submodule the import made (the import system binds it in its
    package): a real module of that name, in ``sys.modules`` now and not before."""
    name = getattr(package, "__name__", None)
    if not isinstance(name, str):
        return set()
    found = set()
    for key, value in list(vars(package).items()):
        full = f"{name}.{key}"
        if (
            full not in before
            and isinstance(value, types.ModuleType)
            and sys.modules.get(full) is value
            and getattr(getattr(value, "__spec__", None), "name", None) == full
        ):
            found.add(full)
    return found


def _only_added(before: tuple[Any, ...], now: tuple[Any, ...], valid: Callable[..., bool]) -> bool:
    """Whether a dict read by ``_dict`` only gained entries, each one ``valid(key, value)``:
    every old key keeps its value, by identity."""
    old = dict(zip(before[: len(before) // 2], before[len(before) // 2 :], strict=True))
    new = dict(zip(now[: len(now) // 2], now[len(now) // 2 :], strict=True))
    if any(k not in new or new[k] is not v for k, v in old.items()):
        return False
    return all(valid(k, v) for k, v in new.items() if k not in old)


def _caches() -> dict[int, Callable[..., bool]]:
    """The caches an import fills as a matter of course, by ``id``, each with what an entry
    must be: ``re``'s compiled patterns (a pattern compiled from its key's text and flags)
    and ``sys.path_importer_cache`` (a directory's finder, of a kind already there, for that
    very directory, or ``None``). Anything else in them is a change."""
    found: dict[int, Callable[..., bool]] = {}
    re = sys.modules.get("re")
    for name in ("_cache", "_cache2"):
        cache = getattr(re, name, None)
        if isinstance(cache, dict):
            found[object.__hash__(cache)] = _compiled
    kinds = {type(v) for v in sys.path_importer_cache.values() if v is not None}

    def finder(key: object, value: object) -> bool:
        return value is None or (type(value) in kinds and getattr(value, "path", None) == key)

    found[object.__hash__(sys.path_importer_cache)] = finder
    return found


def _compiled(key: object, value: object) -> bool:
    """Whether ``value`` is what ``re`` compiles for the cache key ``key``."""
    re = sys.modules.get("re")
    pattern_type = getattr(re, "Pattern", None)
    if not isinstance(key, tuple) or len(key) < 3 or type(value) is not pattern_type:
        return False
    flags = key[2]
    unicode = int(getattr(re, "UNICODE", 32))
    return bool(
        value.pattern == key[1]  # type: ignore[attr-defined]
        and type(value.pattern) is key[0]  # type: ignore[attr-defined]
        and isinstance(flags, int)
        and value.flags in (flags, flags | unicode)  # type: ignore[attr-defined]
    )


def _names(label: str, before: tuple[Any, ...], now: tuple[Any, ...]) -> list[str]:
    """Return ``MODULE.NAME`` for each entry added, removed or rebound, from two
    ``_dict`` readings (the keys, then the values)."""
    old = dict(zip(before[: len(before) // 2], before[len(before) // 2 :], strict=True))
    new = dict(zip(now[: len(now) // 2], now[len(now) // 2 :], strict=True))
    keys = {k for k in old.keys() ^ new.keys()} | {
        k for k in old if k in new and old[k] is not new[k]
    }
    return [f"{label}.{k}" for k in sorted(map(str, keys))]


def _same(a: object, b: object) -> bool:
    return a is b


def _modules(before: dict[str, Any], module: types.ModuleType) -> list[str]:
    """``sys.modules`` entries removed or replaced, and new ones that are not real modules
    of their own name (a module the import made is the module's own import)."""
    live = dict(sys.modules)
    found = [f"sys.modules[{k}]" for k, v in before.items() if live.get(k) is not v]
    for key, value in live.items():
        if key in before or value is module:
            continue
        spec = getattr(value, "__spec__", None)
        if not isinstance(value, types.ModuleType) or getattr(spec, "name", None) != key:
            found.append(f"sys.modules[{key}]")
    return found


def _reader(value: object) -> Callable[[Any], tuple[Any, ...]] | None:
    """Return a function that reads ``value``'s contents as a tuple, or ``None``."""
    if isinstance(value, types.ModuleType):
        return _namespace
    if isinstance(value, dict):
        return _dict
    if isinstance(value, list):
        return _list
    if isinstance(value, set | frozenset | tuple | collections.deque):
        return tuple
    if isinstance(value, type):
        return _class
    if isinstance(value, types.FunctionType):
        return _function
    if isinstance(value, types.BuiltinFunctionType | types.MethodType | str | bytes | int):
        return None
    if getattr(type(value), "__dictoffset__", 0):
        return _instance
    return None


def _namespace(module: Any) -> tuple[Any, ...]:
    return _dict(vars(module))


def _dict(d: Any) -> tuple[Any, ...]:
    return (*dict.keys(d), *dict.values(d))


def _list(items: Any) -> tuple[Any, ...]:
    return tuple(list.__iter__(items))


def _class(cls: Any) -> tuple[Any, ...]:
    entries = type.__dict__["__dict__"].__get__(cls)
    return (*entries.keys(), *entries.values())


def _function(f: Any) -> tuple[Any, ...]:
    cells = tuple(_cell(c) for c in f.__closure__ or ())
    return (f.__code__, f.__defaults__, f.__kwdefaults__, *cells, *_dict(f.__dict__))


_EMPTY: Final = object()
_UNSEEN: Final = object()


def _cell(cell: Any) -> object:
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


def _instance(obj: Any) -> tuple[Any, ...]:
    own = object.__getattribute__(obj, "__dict__")
    return _dict(own) if isinstance(own, dict) else ()
