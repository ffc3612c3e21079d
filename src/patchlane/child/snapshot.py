"""The snapshot engine of the children's tripwires: capture objects by identity, compare them
later, say what changed (one phrase each) and put them back.

Code under test runs in a child's interpreter, so it can rebind what the child's verdict
rests on. Both tripwires (the property child's ``integrity``, the run child's ``tripwire``)
decide *what* they watch and *when* they look; this module is how they look. A snapshot
holds, for each watched namespace (a module's, a class's, an object's own ``__dict__``),
the entries it captured, and for each Python function found there its ``__code__``,
``__defaults__`` and ``__kwdefaults__``; ``compare`` tells, by identity (``is``), which of
them was rebound, deleted or added since. What an addition is depends on the namespace's
kind:

- ``MODULE``: none counts (a module may gain a submodule or a lazy attribute, which shadows
  nothing);
- ``BUILTINS``: every name but ``_`` (which ``sys.displayhook`` sets);
- ``CLASS``: every entry was captured, and a change between plain data values is state
  (Hypothesis's ``settings._current_profile``), not a rebinding; an added entry that is not
  plain data counts (an added ``random.Random.random`` shadows the C base's);
- ``SHADOW``: only the entries that are not plain data were captured; an added one counts
  when it is a dunder or a base class defines its name (pytest's ``legacypath`` adds
  ``Node.fspath`` at configure time: a fresh name shadows nothing the captured code calls);
- ``OBJECT``: an object's own dict; every added entry that is not plain data counts (an
  ``emit`` set on a writer shadows its class's).

Each phrase is the dotted name followed by one of ``verbs``: ``PHRASES`` (``" was
replaced"``, ``" was deleted"``, ``" was added"``) or ``NAMES`` (the dotted name alone).

Nothing here is read through this module's globals or a builtin looked up by name when a
check runs: what ``compare``, ``unchanged`` and ``restore`` need (the helpers they call
included) are default arguments, bound when this module was imported, so that code under
test that rebinds them (or ``builtins``) cannot blind the check. A helper rebound by the
code under test is itself reported (its ``__code__`` or ``__defaults__``) by a tripwire that
watches this module. Snapshots are plain tuples, not instances of a class of this module:
reading them involves no attribute lookup the code under test could redirect.
"""

from __future__ import annotations

import itertools
import operator
import sys
import types
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any, Final

from patchlane.child.namespaces import Namespace

# The kinds of namespace (see the module docstring). Compared as literals where a check
# runs, not through these globals.
MODULE: Final = 0
BUILTINS: Final = 1
CLASS: Final = 2
SHADOW: Final = 3
OBJECT: Final = 4

PHRASES: Final = (" was replaced", " was deleted", " was added")
"""What follows a dotted name in a phrase: rebound, deleted, added."""
NAMES: Final = ("", "", "")
"""The verbs of a check that reports dotted names alone."""
Verbs = tuple[str, str, str]

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
_MISSING: Final = object()

# (label, live namespace, captured entries, kind, where to write back (a namespace dict, or
# the class; the class is also whose bases ``SHADOW`` looks at), an itemgetter of the captured
# names, the values it returned, and how many entries the namespace had).
Space = tuple[
    str,
    Mapping[str, Any],
    Namespace,
    int,
    Any,
    Callable[[Mapping[str, Any]], tuple[Any, ...]],
    tuple[Any, ...],
    int,
]
# (dotted names, functions, and their __code__, __defaults__ and __kwdefaults__), in step.
Functions = tuple[
    tuple[str, ...],
    tuple[types.FunctionType, ...],
    tuple[types.CodeType, ...],
    tuple[tuple[Any, ...] | None, ...],
    tuple[dict[str, object] | None, ...],
]
Snapshot = tuple[
    tuple[Space, ...],
    Functions,
    tuple[tuple[str, types.ModuleType], ...],
    dict[str, types.ModuleType],
    Namespace,
]
"""Spaces, functions, (``sys.modules`` key, module) pairs, ``sys.modules``, ``sys.__dict__``."""
NO_FUNCTIONS: Final[Functions] = ((), (), (), (), ())


def space(label: str, live: Mapping[str, Any], saved: Namespace, kind: int, target: Any) -> Space:
    """Return the space of ``live`` (a namespace of kind ``kind``; ``target``: the dict or
    class ``restore`` writes back to) with its captured entries ``saved``."""
    # An itemgetter of two or more names returns a tuple (of one, the bare value): a lone
    # name is asked for twice.
    names = tuple(saved) if len(saved) != 1 else tuple(saved) * 2
    getter = operator.itemgetter(*names) if names else _nothing
    return (label, live, saved, kind, target, getter, getter(live), len(live))


def _nothing(_live: Mapping[str, Any]) -> tuple[Any, ...]:
    """Return ``()``: the getter of a space that captured nothing."""
    return ()


def is_plain(value: Any, _type: type[type] = type, _plain: tuple[type, ...] = _PLAIN) -> bool:
    """Return whether ``value``'s type is exactly one of the plain data types (state, not
    behaviour; compared by identity: ``in`` would call ``__eq__``, which a metaclass of the
    code under test may define)."""
    kind = _type(value)
    for plain in _plain:  # noqa: SIM110 - any() is a builtin, looked up by name
        if kind is plain:
            return True
    return False


def capture_module(
    out: list[Space],
    seen: set[int],
    module: types.ModuleType,
    label: str,
    keep: Callable[[Any], bool],
    classes: tuple[str, str, Container[object]],
) -> None:
    """Append to ``out`` the space (``MODULE``) of ``module``'s entries that ``keep`` accepts,
    then one space per class among them defined there (not seen before, by ``seen``'s ids;
    ``classes``: the prefix of their labels, ``"class"`` (every entry, ``CLASS``) or
    ``"shadow"`` (what is not plain data, ``SHADOW``), and the ``__module__`` values that say
    "defined there"). Returns nothing."""
    namespace = vars(module)
    saved = {k: v for k, v in namespace.items() if keep(v)}
    out.append(space(label, namespace, saved, MODULE, namespace))
    prefix, how, homes = classes
    for value in saved.values():
        if isinstance(value, type) and id(value) not in seen:
            if vars(value).get("__module__") not in homes:
                continue
            seen.add(id(value))
            entries = vars(value)
            if how == "class":
                out.append(space(prefix + value.__qualname__, entries, dict(entries), CLASS, value))
            else:
                kept = {k: v for k, v in entries.items() if not is_plain(v)}
                out.append(space(prefix + value.__qualname__, entries, kept, SHADOW, value))


def functions(spaces: Iterable[Space], properties: bool = False) -> Functions:
    """Return the Python functions among the captured entries of ``spaces`` (static and class
    methods unwrapped; with ``properties``, a property's getter too), each once, with their
    dotted names and their ``__code__``, ``__defaults__`` and ``__kwdefaults__`` now."""
    found: dict[int, tuple[str, types.FunctionType]] = {}
    for label, _live, saved, *_rest in spaces:
        for name, value in saved.items():
            func = value.__func__ if isinstance(value, staticmethod | classmethod) else value
            if properties and isinstance(value, property):
                func = value.fget
            if type(func) is types.FunctionType and id(func) not in found:
                found[id(func)] = (f"{label}.{name}", func)
    return functions_of(found.values())


def functions_of(found: Iterable[tuple[str, types.FunctionType]]) -> Functions:
    """Return the ``Functions`` of the (dotted name, function) pairs ``found``: their
    ``__code__``, ``__defaults__`` and ``__kwdefaults__`` now."""
    pairs = tuple(found)
    funcs = tuple(f for _label, f in pairs)
    return (
        tuple(label for label, _f in pairs),
        funcs,
        tuple(f.__code__ for f in funcs),
        tuple(f.__defaults__ for f in funcs),
        tuple(f.__kwdefaults__ for f in funcs),
    )


def snapshot(
    spaces: Iterable[Space],
    found: Functions,
    watched: Iterable[tuple[str, types.ModuleType]] = (),
    modules: dict[str, types.ModuleType] | None = None,
) -> Snapshot:
    """Return the snapshot of ``spaces`` and ``found``; ``watched``: the ``sys.modules``
    entries that must still be those modules (``modules``: ``sys.modules`` itself, which
    must still be ``sys``'s; without it, none is compared)."""
    if modules is None:
        held: dict[str, types.ModuleType] = {}
        return (tuple(spaces), found, (), held, {"modules": held})
    return (tuple(spaces), found, tuple(watched), modules, vars(sys))


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


def _any_base(
    cls: type,
    name: str,
    _any: Callable[[Iterable[Any]], bool] = any,
    _vars: Callable[[Any], Namespace] = vars,
) -> bool:
    """Return whether a base class of ``cls`` (its MRO beyond itself) defines ``name``."""
    return _any(name in _vars(base) for base in cls.__mro__[1:])


def _counts(
    kind: int,
    target: Any,
    name: str,
    value: Any,
    _is_plain: Callable[[Any], bool] = is_plain,
    _any_base: Callable[[type, str], bool] = _any_base,
    _missing: object = _MISSING,
) -> bool:
    """Return whether the entry ``name`` (now ``value``) added to a space of ``kind`` is a
    change (see the module docstring). Kinds are literals (1 builtins, 3 shadow)."""
    if kind == 1:
        return name != "_"
    if value is _missing or _is_plain(value):
        return False
    return kind != 3 or (name[:2] == "__" and name[-2:] == "__") or _any_base(target, name)


def changed_entries(
    spaces: tuple[Space, ...],
    verbs: Verbs,
    changed: list[str],
    _same: Callable[[Iterable[Any], tuple[Any, ...]], bool] = _same,
    _is_plain: Callable[[Any], bool] = is_plain,
    _counts: Callable[[int, Any, str, Any], bool] = _counts,
    _len: Callable[[Any], int] = len,
    _tuple: type[tuple[Any, ...]] = tuple,
    _type: type[type] = type,
    _str: type[str] = str,
    _key_error: type[Exception] = KeyError,
    _missing: object = _MISSING,
) -> None:
    """Append to ``changed`` one phrase per captured entry of ``spaces`` rebound or deleted,
    and per entry added that counts, in snapshot order. Returns nothing. Reads no global of
    this module and no builtin by name (see the module docstring)."""
    replaced, deleted, added = verbs
    # Kinds are literals here (0 module, 1 builtins, 2 class, 3 shadow, 4 object).
    for label, live, saved, kind, target, getter, values, size in spaces:
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
                changed.append(label + "." + name + (deleted if new is _missing else replaced))
        if kind == 0 or (kind > 2 and unchanged and _len(live) == size):
            continue
        if live.keys() == saved.keys():
            continue
        # A copy of the keys: a thread of the code under test may add names meanwhile.
        for name in _tuple(live):
            if name in saved:
                continue
            if _type(name) is not _str:
                if kind < 3:
                    changed.append(label + ".<not a str>" + added)
                continue
            if _counts(kind, target, name, live.get(name, _missing)):
                changed.append(label + "." + name + added)


def changed_functions(
    found: Functions,
    verbs: Verbs,
    changed: list[str],
    _tuple: type[tuple[Any, ...]] = tuple,
    _map: type[map[Any]] = map,
    _attribute: type[operator.attrgetter[Any]] = operator.attrgetter,
    _zip: type[zip[Any]] = zip,
    _same: Callable[[Iterable[Any], tuple[Any, ...]], bool] = _same,
) -> None:
    """Append to ``changed`` ``label.__code__`` (``__defaults__``, ``__kwdefaults__``) and
    the first of ``verbs`` for each of the captured functions whose attribute was rebound.
    Returns nothing. Bound as ``changed_entries`` is."""
    labels, funcs, codes, defaults, kwdefaults = found
    for attribute, originals in (
        ("__code__", codes),
        ("__defaults__", defaults),
        ("__kwdefaults__", kwdefaults),
    ):
        current = _tuple(_map(_attribute(attribute), funcs))
        if not _same(current, originals):
            for label, new, old in _zip(labels, current, originals):
                if new is not old:
                    changed.append(label + "." + attribute + verbs[0])


def compare(
    taken: Snapshot,
    verbs: Verbs = PHRASES,
    _changed_entries: Callable[[tuple[Space, ...], Verbs, list[str]], None] = changed_entries,
    _changed_functions: Callable[[Functions, Verbs, list[str]], None] = changed_functions,
    _missing: object = _MISSING,
) -> list[str]:
    """Return one phrase per watched object rebound, deleted or added since ``taken`` was
    taken (``[]`` when none was), in snapshot order: entries, functions, ``sys.modules``.

    Reads no global of this module and no builtin by name (what it needs, the helpers it
    calls included, are default arguments, bound when this module was imported): the code
    under test may have rebound both."""
    spaces, found, watched, modules, sys_dict = taken
    changed: list[str] = []
    _changed_entries(spaces, verbs, changed)
    _changed_functions(found, verbs, changed)
    if sys_dict.get("modules", _missing) is not modules:
        changed.append("sys.modules" + verbs[0])
    for key, module in watched:
        if modules.get(key, _missing) is not module:
            changed.append("sys.modules[" + key + "]" + verbs[0])
    return changed


def unchanged(
    spaces: tuple[Space, ...],
    _all: Callable[[Iterable[Any]], bool] = all,
    _map: type[map[Any]] = map,
    _is: Callable[[Any, Any], bool] = operator.is_,
    _repeat: type[itertools.repeat[Any]] = itertools.repeat,
    _call: Callable[..., Any] = operator.call,
    _len: Callable[[Any], int] = len,
    _tuple: type[tuple[Any, ...]] = tuple,
    _itemgetter: type[operator.itemgetter[Any]] = operator.itemgetter,
    _key_error: type[Exception] = KeyError,
) -> bool:
    """Return whether no captured entry of ``spaces`` changed and no space but a module's
    grew: every comparison by identity, iterated in C (no Python frame per space)."""
    getters = _tuple(_map(_itemgetter(5), spaces))
    lives = _tuple(_map(_itemgetter(1), spaces))
    values = _tuple(_map(_itemgetter(6), spaces))
    try:
        now = _map(_call, getters, lives)
        if not _all(_map(_all, _map(_map, _repeat(_is), now, values))):
            return False
    except _key_error:  # a name was deleted
        return False
    # Modules may grow (a lazy attribute); a class or an object's own dict may not.
    return _all(_len(space[1]) == space[7] for space in spaces if space[3] != 0)


def restore(
    taken: Snapshot,
    _type: type[type] = type,
    _tuple: type[tuple[Any, ...]] = tuple,
    _dict: type[Namespace] = dict,
    _set: Callable[[Any, str, Any], None] = type.__setattr__,
    _delete: Callable[[Any, str], None] = type.__delattr__,
    _setattr: Callable[[Any, str, Any], None] = setattr,
    _zip: type[zip[Any]] = zip,
    _is_plain: Callable[[Any], bool] = is_plain,
    _counts: Callable[[int, Any, str, Any], bool] = _counts,
    _error: type[Exception] = Exception,
    _missing: object = _MISSING,
) -> None:
    """Put every captured object back where ``taken`` found it and remove the additions
    ``compare`` reports, so that the child's own reporting runs with what it captured.
    Best effort: what cannot be written back is left as it is. Returns nothing."""
    spaces, (_labels, funcs, codes, defaults, kwdefaults), watched, modules, sys_dict = taken
    # In snapshot order (builtins first when watched), then functions. Kinds are literals,
    # as in ``changed_entries``.
    for _label, live, saved, kind, target, _getter, _values, _size in spaces:
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
            try:
                if name in saved or not _counts(kind, target, name, live.get(name, _missing)):
                    continue
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
    taken: Snapshot,
    verbs: Verbs = PHRASES,
    _compare: Callable[[Snapshot, Verbs], list[str]] = compare,
    _restore: Callable[[Snapshot], None] = restore,
) -> list[str]:
    """Return what ``compare`` reports, after ``restore`` when it reported anything."""
    changed = _compare(taken, verbs)
    if changed:
        _restore(taken)
    return changed
