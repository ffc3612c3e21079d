"""The property child's tripwire: are the objects properties rely on still the ones it captured?

Code under test runs in the child's interpreter, so it can rebind what a property leans on
(``random.Random.random = lambda self: 0.5``, ``hashlib.sha256 = ...``, ``builtins.all =
...``, ``hypothesis.given = ...``, ``patchlane.props.case_rng = ...``) and make a broken
property look green. Before the repository goes on ``sys.path`` the child ``take``s a
snapshot of the modules named by ``watched_modules``; after importing the property module,
and after each property, ``verify`` compares every watched object by identity (``is``) with
the snapshot, puts the captured objects back (so that the child's own reporting runs with
them again) and returns the dotted names of what was rebound.

What is compared (identity only; state such as ``random``'s seed or Hypothesis's current
profile is data, not a rebinding):

- each watched module's entries that are callables, classes or modules (changed or
  deleted), and for ``patchlane`` modules also their constants (str, bytes, numbers, ...);
  a module may gain attributes (a submodule imported later), which shadow nothing;
- the ``__dict__`` of every class a watched module defines: entries that are not plain data
  (changed or deleted), and added ones that are not plain data either (an added
  ``random.Random.random`` shadows the C base's; ``copyreg`` adds a ``__slotnames__``
  list, ``type`` an empty ``__annotations__``);
- ``__code__``, ``__defaults__`` and ``__kwdefaults__`` of the Python functions found there;
- every entry of ``builtins`` (changed, deleted or added), except ``_`` (which
  ``sys.displayhook`` sets, e.g. when a doctest runs);
- ``sys.modules`` itself and its entry for every watched module.

The check runs only on what this module captured when it was imported (the builtins it
calls are default arguments, bound at definition time) and reads nothing through this
module's globals, so that rebinding them (or ``builtins``) cannot blind it. It is a
tripwire, not a sandbox: see docs/decisions.md, "The property child's integrity check".
"""

from __future__ import annotations

import functools
import operator
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

# The standard-library modules that properties, Hypothesis and the child's own reporting
# use (json writes the result lines; ``_hashlib`` is what ``hashlib.new`` calls through).
STDLIB: Final = (
    "builtins",
    "random",
    "hashlib",
    "_hashlib",
    "os",
    "os.path",
    "json",
    "json.encoder",
)
# Every loaded module of these packages is watched (and the child itself, run as __main__).
PACKAGES: Final = ("patchlane", "hypothesis")
SHOWN = 3
"""How many tampered names ``describe`` lists before "(and N more)"."""

# The kinds of namespace: a module (what is called or imported through it; additions
# shadow nothing), ``builtins`` (every name), a class dict (everything but plain data).
_MODULE: Final = 0
_BUILTINS: Final = 1
_CLASS: Final = 2
_PLAIN: Final = (
    str,
    bytes,
    int,
    float,
    bool,
    complex,
    tuple,
    list,
    dict,
    set,
    frozenset,
    type(None),
)
_CONSTANTS: Final = (str, bytes, int, float, bool, complex, tuple, frozenset, type(None))
_MISSING: Final = object()

# (label, live mapping, captured entries, kind, where to write back (the module's dict or
# the class), an itemgetter of the captured names and the values it returned). Plain
# tuples, not a class of this module: reading them involves no attribute lookup that the
# code under test could redirect.
Space = tuple[
    str, Mapping[str, Any], dict[str, Any], int, Any, Callable[[Any], Any], tuple[Any, ...]
]
# (dotted names, functions, and their __code__, __defaults__ and __kwdefaults__), in step.
Functions = tuple[
    tuple[str, ...],
    tuple[types.FunctionType, ...],
    tuple[types.CodeType, ...],
    tuple[Any, ...],
    tuple[Any, ...],
]
Snapshot = tuple[
    tuple[Space, ...],
    Functions,
    tuple[tuple[str, types.ModuleType], ...],
    dict[str, types.ModuleType],
    dict[str, Any],
]
"""Spaces, functions, (``sys.modules`` key, module) pairs, ``sys.modules``, ``sys.__dict__``."""


def watched_modules(modules: Mapping[str, object] | None = None) -> list[str]:
    """Return the ``sys.modules`` keys (of ``modules``, default ``sys.modules``) to watch:
    ``STDLIB`` that are loaded, every loaded module of ``PACKAGES``, and ``__main__`` when
    it is one of them (the child runs as ``python -m``)."""
    loaded = sys.modules if modules is None else modules
    keys = [k for k in STDLIB if k in loaded]
    keys += sorted(k for k in loaded if k.split(".")[0] in PACKAGES)
    spec = getattr(loaded.get("__main__"), "__spec__", None)
    if spec is not None and str(spec.name).split(".")[0] in PACKAGES:
        keys.append("__main__")
    return keys


def take(keys: Iterable[str]) -> Snapshot:
    """Return a snapshot of the modules ``keys`` names in ``sys.modules`` (missing ones
    are skipped), to hand to ``compare``/``restore``/``verify`` later."""
    spaces: list[Space] = []
    functions: dict[int, tuple[str, types.FunctionType]] = {}
    watched: list[tuple[str, types.ModuleType]] = []
    seen: set[int] = set()
    for key in keys:
        module = sys.modules.get(key)
        if not isinstance(module, types.ModuleType):
            continue
        watched.append((key, module))
        if id(module) in seen:
            continue
        seen.add(id(module))
        namespace = vars(module)
        label = _label(key, module)
        if label == "builtins":
            spaces.append(_space(label, namespace, _BUILTINS, namespace, lambda k, _v: k != "_"))
            continue
        constants = label.split(".")[0] == "patchlane"
        keep = functools.partial(_watched, constants)
        space = _space(label, namespace, _MODULE, namespace, keep)
        spaces.append(space)
        _add_functions(functions, space)
        for value in space[2].values():
            if isinstance(value, type) and id(value) not in seen and _defined_in(value, module):
                seen.add(id(value))
                where = f"{label}.{value.__qualname__}"
                # Every entry, for speed (see ``compare``): a change between two plain
                # values is state (Hypothesis's ``settings._current_profile``), not reported.
                spaces.append(_space(where, vars(value), _CLASS, value, lambda _k, _v: True))
                _add_functions(functions, spaces[-1])
    found = tuple(functions.values())
    labels, funcs = tuple(f[0] for f in found), tuple(f[1] for f in found)
    codes = tuple(f.__code__ for f in funcs)
    defaults = tuple(f.__defaults__ for f in funcs)
    kwdefaults = tuple(f.__kwdefaults__ for f in funcs)
    return (
        tuple(spaces),
        (labels, funcs, codes, defaults, kwdefaults),
        tuple(watched),
        sys.modules,
        vars(sys),
    )


def _space(
    label: str,
    live: Mapping[str, Any],
    kind: int,
    target: Any,
    keep: Callable[[str, Any], bool],
) -> Space:
    """Return the space of ``live`` (a module's or class's namespace) with the entries
    ``keep(name, value)`` accepts."""
    saved = {k: v for k, v in live.items() if keep(k, v)}
    # An itemgetter of two or more names returns a tuple (of one, the bare value): a lone
    # name is asked for twice.
    names = tuple(saved) if len(saved) != 1 else tuple(saved) * 2
    getter = operator.itemgetter(*names) if names else _nothing
    return (label, live, saved, kind, target, getter, getter(live))


def _nothing(_live: Mapping[str, Any]) -> tuple[Any, ...]:
    """Return ``()``: the getter of a space that captured nothing."""
    return ()


def _label(key: str, module: types.ModuleType) -> str:
    """Return the dotted name to report ``module`` (``sys.modules[key]``) by."""
    # The child runs as __main__: name it by what it is.
    spec = getattr(module, "__spec__", None)
    return str(spec.name) if key == "__main__" and spec is not None else key


def _watched(constants: bool, _name: str, value: Any) -> bool:
    """Return whether a module's entry ``value`` is compared (``constants``: its plain
    immutable data too)."""
    # Module state (caches, counters, lazily set paths) changes legitimately: only what
    # is called or imported through the module is compared, and patchlane's constants.
    if callable(value) or isinstance(value, types.ModuleType):
        return True
    return constants and isinstance(value, _CONSTANTS)


def _defined_in(cls: type, module: types.ModuleType) -> bool:
    """Return whether ``cls`` was defined in ``module`` (not imported into it)."""
    return vars(cls).get("__module__") == getattr(module, "__name__", None)


def _add_functions(out: dict[int, tuple[str, types.FunctionType]], space: Space) -> None:
    """Add to ``out`` (by id) the Python functions of ``space``, static and class methods
    unwrapped, with their dotted names."""
    label, saved = space[0], space[2]
    for name, value in saved.items():
        func = value.__func__ if isinstance(value, staticmethod | classmethod) else value
        if type(func) is types.FunctionType and id(func) not in out:
            out[id(func)] = (f"{label}.{name}", func)


def _is_plain(value: Any, _type: type[type] = type, _plain: tuple[type, ...] = _PLAIN) -> bool:
    """Return whether ``value``'s type is exactly one of the plain data types (compared by
    identity: ``in`` would call ``__eq__``, which a metaclass of the code under test may
    define)."""
    kind = _type(value)
    for plain in _plain:  # noqa: SIM110 - any() is a builtin, looked up by name
        if kind is plain:
            return True
    return False


def _same(
    objects: Iterable[Any],
    originals: tuple[Any, ...],
    _all: Callable[[Iterable[Any]], bool] = all,
    _map: type[map[Any]] = map,
    _is: Callable[[Any, Any], bool] = operator.is_,
) -> bool:
    """Return whether ``objects`` are ``originals``, one for one, by identity. Runs in C
    (no bytecode per item): the fast path of ``compare`` when nothing changed."""
    return _all(_map(_is, objects, originals))


def compare(
    snapshot: Snapshot,
    _type: type[type] = type,
    _tuple: type[tuple[Any, ...]] = tuple,
    _str: type[str] = str,
    _map: type[map[Any]] = map,
    _key_error: type[Exception] = KeyError,
    _attribute: type[operator.attrgetter[Any]] = operator.attrgetter,
    _zip: type[zip[Any]] = zip,
    _is_plain: Callable[[Any], bool] = _is_plain,
    _same: Callable[[Iterable[Any], tuple[Any, ...]], bool] = _same,
    _missing: object = _MISSING,
) -> list[str]:
    """Return the dotted names of the watched objects rebound, deleted or added since
    ``snapshot`` was taken (``[]`` when none was), in snapshot order.

    Reads no global of this module and no builtin by name (what it needs are default
    arguments, bound when this module was imported): the code under test may have rebound
    both. A helper it calls that was tampered with is reported by its ``__code__`` or
    ``__defaults__`` (compared one by one when the fast path fails).
    """
    spaces, (labels, funcs, codes, defaults, kwdefaults), watched, modules, sys_dict = snapshot
    changed: list[str] = []
    # Kinds are literals here (0 module, 1 builtins, 2 class), not this module's globals.
    for label, live, saved, kind, _target, getter, values in spaces:
        try:
            unchanged = _same(getter(live), values)
        except _key_error:  # a name was deleted
            unchanged = False
        if not unchanged:
            for name, old in saved.items():
                new = live.get(name, _missing)
                if new is old or (
                    kind == 2 and _is_plain(old) and (new is _missing or _is_plain(new))
                ):
                    continue
                changed.append(label + "." + name)
        if kind == 0 or live.keys() == saved.keys():
            continue
        # A copy of the keys: a thread of the code under test may add names meanwhile.
        for name in _tuple(live):
            if name in saved or (kind == 1 and name == "_"):
                continue
            value = live.get(name, _missing)
            if kind == 2 and (value is _missing or _is_plain(value)):
                continue
            changed.append(label + "." + (name if _type(name) is _str else "<not a str>"))
    for attribute, originals in (
        ("__code__", codes),
        ("__defaults__", defaults),
        ("__kwdefaults__", kwdefaults),
    ):
        current = _tuple(_map(_attribute(attribute), funcs))
        if not _same(current, originals):
            for label, new, old in _zip(labels, current, originals):
                if new is not old:
                    changed.append(label + "." + attribute)
    if sys_dict.get("modules", _missing) is not modules:
        changed.append("sys.modules")
    for key, module in watched:
        if modules.get(key, _missing) is not module:
            changed.append("sys.modules[" + key + "]")
    return changed


def restore(
    snapshot: Snapshot,
    _type: type[type] = type,
    _tuple: type[tuple[Any, ...]] = tuple,
    _dict: type[dict[str, Any]] = dict,
    _set: Callable[[Any, str, Any], None] = type.__setattr__,
    _delete: Callable[[Any, str], None] = type.__delattr__,
    _setattr: Callable[[Any, str, Any], None] = setattr,
    _zip: type[zip[Any]] = zip,
    _is_plain: Callable[[Any], bool] = _is_plain,
    _error: type[Exception] = Exception,
    _missing: object = _MISSING,
) -> None:
    """Put every captured object back where ``snapshot`` found it and remove the additions
    ``compare`` reports, so that the child's own reporting runs with what it captured.
    Best effort: what cannot be written back is left as it is. Returns nothing."""
    spaces, (_labels, funcs, codes, defaults, kwdefaults), watched, modules, sys_dict = snapshot
    # Builtins first (the first space), then modules and classes, then functions. Kinds
    # are literals, as in ``compare``.
    for _label, live, saved, kind, target, _getter, _values in spaces:
        in_dict = _type(target) is _dict
        for name, value in saved.items():
            new = live.get(name, _missing)
            # What ``compare`` reports, no more: plain data in a class dict is state.
            if new is value or (
                kind == 2 and _is_plain(value) and (new is _missing or _is_plain(new))
            ):
                continue
            try:
                if in_dict:
                    target[name] = value
                else:
                    _set(target, name, value)
            except _error:  # best effort, item by item
                pass
        for name in _tuple(live) if kind else ():
            if name in saved or (kind == 1 and name == "_"):
                continue
            if kind == 2 and _is_plain(live.get(name)):
                continue
            try:
                if in_dict:
                    del target[name]
                else:
                    _delete(target, name)
            except _error:
                pass
    for func, code, default, kwdefault in _zip(funcs, codes, defaults, kwdefaults):
        try:
            _setattr(func, "__code__", code)
            _setattr(func, "__defaults__", default)
            _setattr(func, "__kwdefaults__", kwdefault)
        except _error:
            pass
    sys_dict["modules"] = modules
    for key, module in watched:
        modules[key] = module


def verify(
    snapshot: Snapshot,
    _compare: Callable[[Snapshot], list[str]] = compare,
    _restore: Callable[[Snapshot], None] = restore,
) -> list[str]:
    """Return what ``compare`` reports, after ``restore`` when it reported anything."""
    changed = _compare(snapshot)
    if changed:
        _restore(snapshot)
    return changed


def watch() -> Callable[[], list[str]]:
    """Snapshot the ``watched_modules`` now; return the check to call later (``verify``
    bound to the snapshot: a ``functools.partial``, whose target no rebinding can change)."""
    return functools.partial(verify, take(watched_modules()))


def describe(names: list[str], when: str = "") -> str:
    """Return the failure message for tampered ``names``: ``sandbox: tampered: a, b, c
    (and N more)``, followed by `` (when)`` when ``when`` is given."""
    shown = ", ".join(names[:SHOWN])
    more = f" (and {len(names) - SHOWN} more)" if len(names) > SHOWN else ""
    suffix = f" ({when})" if when else ""
    return f"sandbox: tampered: {shown}{more}{suffix}"
