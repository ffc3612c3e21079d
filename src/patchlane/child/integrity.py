"""The property child's tripwire: are the objects properties rely on still the ones it captured?

Code under test runs in the child's interpreter, so it can rebind what a property leans on
(``random.Random.random = lambda self: 0.5``, ``hashlib.sha256 = ...``, ``builtins.all =
...``, ``hypothesis.given = ...``, ``patchlane.props.case_rng = ...``) and make a broken
property look green. Before the repository goes on ``sys.path`` the child ``take``s a
snapshot of the modules named by ``watched_modules``; after importing the property module,
and after each property, ``verify`` compares every watched object by identity (``is``) with
the snapshot, puts the captured objects back (so that the child's own reporting runs with
them again) and returns the dotted names of what was rebound. Capturing, comparing and
restoring are the snapshot engine's (``child.snapshot``, shared with the run child's
``tripwire``); this module says what is watched and how it is reported.

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

The check runs only on what was captured when this module and the engine were imported
(the builtins they call are default arguments, bound at definition time) and reads nothing
through their globals, so that rebinding them (or ``builtins``) cannot blind it. It is a
tripwire, not a sandbox: see docs/explanation/decisions/0005-properties-base-and-head.md.

The property module's own namespace is checked too (``plan``, ``check_module``,
``verify_module``): the child compiles the module's source itself before importing it
(``child.bindings``), and the names it binds once at module scope (imports, defs, classes'
methods, literal constants) must be what that source makes of them; after each property,
the same objects.
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any, Final

from patchlane.child import snapshot as engine
from patchlane.child.bindings import MISSING as _MISSING
from patchlane.child.bindings import Candidate, Def, same_code, same_value
from patchlane.child.bindings import Plan as Plan
from patchlane.child.bindings import plan as plan
from patchlane.child.namespaces import Namespace
from patchlane.child.snapshot import BUILTINS as _BUILTINS
from patchlane.child.snapshot import MODULE as _MODULE
from patchlane.child.snapshot import Snapshot

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
_CONSTANTS: Final = (str, bytes, int, float, bool, complex, tuple, frozenset, type(None))


def compare(
    taken: Snapshot,
    _compare: Callable[[Snapshot, engine.Verbs], list[str]] = engine.compare,
    _names: engine.Verbs = engine.NAMES,
) -> list[str]:
    """The dotted names of the watched objects rebound, deleted or added since ``taken``
    (``[]`` when none was), in snapshot order (``engine.compare`` with the names alone).
    Like ``verify``, a function whose defaults are a tuple, not a ``functools.partial``,
    whose ``keywords`` would be a live dict code under test could change."""
    return _compare(taken, _names)


restore: Final = engine.restore
"""``restore(snapshot)``: put back what ``compare`` reports (``engine.restore``)."""


def verify(
    taken: Snapshot,
    _verify: Callable[[Snapshot, engine.Verbs], list[str]] = engine.verify,
    _names: engine.Verbs = engine.NAMES,
) -> list[str]:
    """What ``compare`` reports, after ``restore`` when it reported any. A function whose
    defaults are a tuple, not a ``functools.partial``: a partial's ``keywords`` is a live
    dict that code under test could add a ``_compare`` to (``verify_module`` binds this)."""
    return _verify(taken, _names)


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
    spaces: list[engine.Space] = []
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
        label = _label(key, module)
        if label == "builtins":
            namespace = vars(module)
            saved = {k: v for k, v in namespace.items() if k != "_"}
            spaces.append(engine.space(label, namespace, saved, _BUILTINS, namespace))
            continue
        keep = functools.partial(_watched, label.split(".")[0] == "patchlane")
        # Every entry of a class, for speed (see ``engine.compare``): a change between two
        # plain values is state (Hypothesis's ``settings._current_profile``), not reported.
        home = (getattr(module, "__name__", None),)
        engine.capture_module(spaces, seen, module, label, keep, (label + ".", "class", home))
    # The functions of modules and classes (a Python function among the builtins is
    # compared as an entry of ``builtins``, like any other).
    found = engine.functions(s for s in spaces if s[3] != _BUILTINS)
    return engine.snapshot(spaces, found, watched, sys.modules)


def _label(key: str, module: types.ModuleType) -> str:
    """Return the dotted name to report ``module`` (``sys.modules[key]``) by."""
    # The child runs as __main__: name it by what it is.
    spec = getattr(module, "__spec__", None)
    return str(spec.name) if key == "__main__" and spec is not None else key


def _watched(constants: bool, value: Any) -> bool:
    """Return whether a module's entry ``value`` is compared (``constants``: its plain
    immutable data too)."""
    # Module state (caches, counters, lazily set paths) changes legitimately: only what
    # is called or imported through the module is compared, and patchlane's constants.
    if callable(value) or isinstance(value, types.ModuleType):
        return True
    return constants and isinstance(value, _CONSTANTS)


def watch() -> Callable[[], list[str]]:
    """Snapshot the ``watched_modules`` now; return the check to call later (``verify``
    bound to the snapshot: a ``functools.partial``, whose target rebinding a module's name
    cannot change; code that reaches the partial itself, through ``gc`` or a frame, could:
    a tripwire, not a sandbox, decision 0005)."""
    return functools.partial(verify, take(watched_modules()))


def describe(names: list[str], when: str = "") -> str:
    """Return the failure message for tampered ``names``: ``sandbox: tampered: a, b, c
    (and N more)``, followed by `` (when)`` when ``when`` is given."""
    shown = ", ".join(names[:SHOWN])
    more = f" (and {len(names) - SHOWN} more)" if len(names) > SHOWN else ""
    suffix = f" ({when})" if when else ""
    return f"sandbox: tampered: {shown}{more}{suffix}"


# -- the property module's own namespace (its source's ``Plan``: ``child.bindings``) ------

_INNER: Final = "__patchlane_inner__"
"""The attribute ``styles`` puts on its wrapper of a ``@given`` test's inner function: the
author's function (``styles`` calls that one)."""
# Methods ``type`` turns into a class or static method without a decorator.
_IMPLICIT: Final = frozenset({"__init_subclass__", "__class_getitem__", "__new__"})
_STEPS: Final = 32
"""How many wrappers (``__wrapped__``) are followed at most."""

# A ``@given`` test's (label, test, ``hypothesis`` handle, inner function); a module's
# (label, namespace, builtins' names it must not bind, names its source binds).
Handles = tuple[tuple[str, Any, Any, types.FunctionType], ...]
Shadows = tuple[str, Namespace, frozenset[str], frozenset[str]]

# The state ``check_module`` hands to ``verify_module``: a ``Snapshot`` of the checked names
# and functions (for ``compare``/``restore``), the ``@given`` tests' handles and inner
# functions, and the module's names that would shadow a builtin.
ModuleState = tuple[Snapshot, Handles, Shadows | None]
# What ``check_module`` gathers: the names checked (with their objects), the functions
# found (by id), the ``@given`` handles and the names that differ.
_Found = tuple[
    Namespace,
    dict[int, tuple[str, types.FunctionType]],
    list[tuple[str, Any, Any, types.FunctionType]],
    list[str],
]


def check_module(
    checks: Plan, module: types.ModuleType, snapshot: Snapshot
) -> tuple[list[str], ModuleState]:
    """Return the dotted names of ``module``'s namespace that differ from what its source
    (``checks``) binds, and the state to hand ``verify_module`` after each property.

    An import's name must be one of the objects its imports give (a watched module, or a
    name in one, as ``snapshot`` captured it; otherwise ``sys.modules`` now); a def's
    function (behind its decorators: ``__wrapped__``, a ``@given`` test's inner function)
    must have the source's code, literal defaults and the module's globals, and a class's
    methods the same; a literal constant must have its value. A name set in the module
    that its source does not bind must not shadow a builtin. A name bound only inside a
    top-level ``if``/``try``/... may be missing.
    """
    namespace = vars(module)
    prefix = checks.name + "."
    found: _Found = ({}, {}, [], [])
    kept, functions, handles, changed = found
    _check_imports(checks, namespace, snapshot, found)
    for name, (value, conditional) in checks.constants.items():
        live = namespace.get(name, _MISSING)
        if live is _MISSING and conditional:
            continue
        kept[name] = live
        if live is _MISSING or not same_value(live, value):
            changed.append(prefix + name)
    for name, defined in checks.functions.items():
        live = namespace.get(name, _MISSING)
        if not (live is _MISSING and defined.conditional):
            kept[name] = live
            if not _check_def(prefix + name, live, defined, namespace, found):
                changed.append(prefix + name)
    spaces = [
        engine.space(label, vars(cls), _only(methods, vars(cls)), _MODULE, cls)
        for label, cls, methods in _check_classes(checks, namespace, found)
    ]
    spaces.insert(
        0, engine.space(checks.name, namespace, _only(kept, namespace), _MODULE, namespace)
    )
    shadows = _shadows(checks, namespace, snapshot)
    if shadows is not None:
        changed += _shadowing(shadows)
    state = engine.snapshot(spaces, engine.functions_of(functions.values()))
    return changed, (state, tuple(handles), shadows)


def _only(names: Container[str], live: Mapping[str, Any]) -> Namespace:
    """Return the entries of ``live`` named in ``names`` (what a space of it captures)."""
    return {k: v for k, v in live.items() if k in names}


def _check_imports(checks: Plan, namespace: Namespace, snapshot: Snapshot, found: _Found) -> None:
    """Check the names ``checks`` says only imports bind (into ``found``)."""
    kept, _functions, _handles, changed = found
    watched = dict(snapshot[2])
    saved = {space[0]: space[2] for space in snapshot[0] if space[3] == _MODULE}
    for name, (candidates, conditional) in checks.imports.items():
        live = namespace.get(name, _MISSING)
        if live is _MISSING:
            if not conditional:
                changed.append(f"{checks.name}.{name}")
            continue
        kept[name] = live
        expected = _expected(candidates, watched, saved)
        # No candidate to compare with (its module is not in ``sys.modules``): unknown.
        if expected and not any(live is e for e in expected):
            changed.append(f"{checks.name}.{name}")


def _expected(
    candidates: tuple[Candidate, ...],
    watched: dict[str, types.ModuleType],
    saved: dict[str, Namespace],
) -> list[Any]:
    """Return the objects ``candidates`` give: from the snapshot for a watched module."""
    out: list[Any] = []
    for kind, key, attribute in candidates:
        module = watched[key] if key in watched else sys.modules.get(key, _MISSING)
        if module is _MISSING:
            continue
        if kind == "module":
            out.append(module)
            continue
        captured = saved.get(key, {}) if key in watched else {}
        if attribute in captured:
            out.append(captured[attribute])
            continue
        try:
            out.append(getattr(module, attribute))
        except Exception:  # noqa: BLE001, S112 - no such name: not a candidate
            continue
    return out


def _check_classes(
    checks: Plan, namespace: Namespace, found: _Found
) -> list[tuple[str, type, dict[str, Def]]]:
    """Check the classes of ``checks`` (into ``found``); return (label, class, methods)
    of each class found, for ``check_module``'s state."""
    kept, _functions, _handles, changed = found
    out: list[tuple[str, type, dict[str, Def]]] = []
    for name, (body, methods) in checks.classes.items():
        label = f"{checks.name}.{name}"
        live = namespace.get(name, _MISSING)
        if live is _MISSING and body.conditional:
            continue
        kept[name] = live
        if not isinstance(live, type):
            # A class decorator may return something else: not checked.
            if live is _MISSING or not body.decorators:
                changed.append(label)
            continue
        out.append((label, live, methods))
        for method, defined in methods.items():
            # A decorated class's methods are judged as decorated ones (see ``_check_def``).
            lenient = defined._replace(decorators=max(defined.decorators, body.decorators))
            value = vars(live).get(method, _MISSING)
            if method in _IMPLICIT and isinstance(value, staticmethod | classmethod):
                value = value.__func__  # ``type`` made it one
            if not _check_def(f"{label}.{method}", value, lenient, namespace, found):
                changed.append(f"{label}.{method}")
    return out


def _check_def(label: str, live: Any, defined: Def, namespace: Namespace, found: _Found) -> bool:
    """Return whether ``live`` is what ``defined`` makes: the function, or behind its
    decorators the innermost one (``__wrapped__``; a ``@given`` test's inner function, as
    ``styles`` finds it), has the source's code, literal defaults and ``namespace`` as its
    globals. Adds the functions (and a ``@given`` handle) to ``found``."""
    _kept, functions, handles, _changed = found
    if live is _MISSING:
        return False
    func, outer, handle = _innermost(live, defined.decorators)
    if type(live) is types.FunctionType:
        functions.setdefault(id(live), (label, live))
    if type(func) is not types.FunctionType:
        # A decorator hid the function: not checked (an undecorated def must be one).
        return defined.decorators > 0
    same = (
        func.__globals__ is namespace
        and same_code(func.__code__, defined.code)
        and _same_defaults(func, defined)
    )
    if not same and defined.decorators and handle is None:
        # A decorator may wrap without ``__wrapped__``: what is found is its wrapper. Only a
        # function that claims the def's name is judged.
        same = func.__code__.co_qualname != defined.code.co_qualname
    if same:
        functions.setdefault(id(func), (label, func))
        if handle is not None:
            handles.append((f"{label}.hypothesis.inner_test", outer, handle, func))
    return same


def _innermost(obj: Any, steps: int) -> tuple[Any, Any, Any]:
    """Return (the object behind at most ``steps`` wrappers of ``obj``, the ``@given``
    test met on the way and its ``hypothesis`` handle, or ``None`` twice)."""
    outer = handle = None
    for _ in range(min(steps, _STEPS)):
        following: Any = _MISSING
        if type(obj) is types.FunctionType:
            attributes = vars(obj)
            found = attributes.get("hypothesis")
            if found is not None and handle is None and hasattr(found, "inner_test"):
                outer, handle = obj, found
                following = _inner_test(found)
            else:
                following = attributes.get("__wrapped__", _MISSING)
        elif isinstance(obj, property):
            following = _MISSING if obj.fget is None else obj.fget
        else:
            try:
                following = getattr(obj, "__wrapped__", _MISSING)
            except Exception:  # noqa: BLE001 - an object that hides it: stop there
                following = _MISSING
        if following is _MISSING:
            break
        obj = following
    return obj, outer, handle


def _inner_test(
    handle: Any,
    _getattr: Callable[..., Any] = getattr,
    _type: type[type] = type,
    _vars: Callable[[Any], Namespace] = vars,
    _function: type = types.FunctionType,
    _name: str = _INNER,
    _missing: object = _MISSING,
) -> Any:
    """Return the function ``styles`` runs for a ``@given`` test whose ``hypothesis``
    handle is ``handle``: its ``inner_test``, or what ``styles``' wrapper of it wraps."""
    try:
        inner = _getattr(handle, "inner_test", _missing)
    except Exception:  # noqa: BLE001 - unreadable: not the inner function
        return _missing
    if _type(inner) is _function:
        return _vars(inner).get(_name, inner)
    return inner


def _same_defaults(func: types.FunctionType, defined: Def) -> bool:
    """Return whether ``func``'s defaults are those of ``defined`` (the literal ones)."""
    defaults = func.__defaults__ or ()
    if len(defaults) != len(defined.defaults):
        return False
    for value, expected in zip(defaults, defined.defaults, strict=True):
        if expected is not _MISSING and not same_value(value, expected):
            return False
    kwdefaults = func.__kwdefaults__ or {}
    if kwdefaults.keys() != defined.kwdefaults.keys():
        return False
    return all(
        expected is _MISSING or same_value(kwdefaults[name], expected)
        for name, expected in defined.kwdefaults.items()
    )


def _shadows(checks: Plan, namespace: Namespace, snapshot: Snapshot) -> Shadows | None:
    """Return what ``_shadowing`` needs for ``namespace``: the builtins' names (but
    dunders) its source does not bind; ``None`` when a star import may bind any."""
    if checks.star:
        return None
    builtin = next((s[2] for s in snapshot[0] if s[3] == _BUILTINS), {})
    names = frozenset(n for n in builtin if not (n.startswith("__") and n.endswith("__")))
    return (checks.name, namespace, names - checks.bound, checks.bound)


def _shadowing(
    shadows: Shadows,
    _sorted: Callable[[Iterable[str]], list[str]] = sorted,
) -> list[str]:
    """Return the dotted names of the module's names that shadow a builtin."""
    label, live, names, _bound = shadows
    found = live.keys() & names
    return [label + "." + name for name in _sorted(found)] if found else []


def verify_module(
    state: ModuleState,
    _verify: Callable[[Snapshot], list[str]] = verify,
    _inner: Callable[[Any], Any] = _inner_test,
    _shadowing: Callable[[Shadows], list[str]] = _shadowing,
    _vars: Callable[[Any], Namespace] = vars,
    _setattr: Callable[[Any, str, Any], None] = setattr,
    _error: type[Exception] = Exception,
    _missing: object = _MISSING,
) -> list[str]:
    """Return the dotted names of the property module's checked names, functions,
    ``@given`` inner functions and builtin shadows that changed since ``check_module``,
    after putting them back. Reads no global of this module (see ``compare``)."""
    snapshot, handles, shadows = state
    changed = _verify(snapshot)
    for label, outer, handle, inner in handles:
        current = _vars(outer).get("hypothesis", _missing)
        if current is handle and _inner(handle) is inner:
            continue
        changed.append(label)
        try:
            _vars(outer)["hypothesis"] = handle
            _setattr(handle, "inner_test", inner)
        except _error:  # best effort
            pass
    if shadows is not None:
        extra = _shadowing(shadows)
        if extra:
            changed += extra
            _label, live, names, _bound = shadows
            for name in live.keys() & names:
                live.pop(name, None)
    return changed


def both(first: Callable[[], list[str]], second: Callable[[], list[str]]) -> list[str]:
    """Return what ``first()`` and then ``second()`` report (two checks as one)."""
    return first() + second()
