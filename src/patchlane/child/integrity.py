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
tripwire, not a sandbox: see docs/explanation/decisions/0005-properties-base-and-head.md.

The property module's own namespace is checked too (``plan``, ``check_module``,
``verify_module``): the child compiles the module's source itself before importing it, and
the names it binds once at module scope (imports, defs, classes' methods, literal
constants) must be what that source makes of them; after each property, the same objects.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.util
import operator
import sys
import types
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any, Final, NamedTuple

from patchlane.child.namespaces import Namespace

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
# the class: ``Any``, as ``restore`` tells the two apart by an identity test of its type,
# which no checker narrows by), an itemgetter of the captured names and the values it
# returned). Plain tuples, not a class of this module: reading them involves no attribute
# lookup that the code under test could redirect.
Space = tuple[
    str,
    Mapping[str, Any],
    Namespace,
    int,
    Any,
    Callable[[Mapping[str, Any]], tuple[Any, ...]],
    tuple[Any, ...],
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


def _changed_entries(
    label: str,
    live: Mapping[str, Any],
    saved: Namespace,
    kind: int,
    changed: list[str],
    _is_plain: Callable[[Any], bool] = _is_plain,
    _missing: object = _MISSING,
) -> None:
    """Append to ``changed`` the dotted names of the entries of ``saved`` that ``live``
    rebound or deleted (a change between plain values of a class dict is state, not
    counted). Returns nothing. Called by ``compare`` and bound as it is: no global, no
    builtin looked up by name."""
    for name, old in saved.items():
        new = live.get(name, _missing)
        if new is old or (kind == 2 and _is_plain(old) and (new is _missing or _is_plain(new))):
            continue
        changed.append(label + "." + name)


def _added_entries(
    label: str,
    live: Mapping[str, Any],
    saved: Namespace,
    kind: int,
    changed: list[str],
    _type: type[type] = type,
    _tuple: type[tuple[Any, ...]] = tuple,
    _str: type[str] = str,
    _is_plain: Callable[[Any], bool] = _is_plain,
    _missing: object = _MISSING,
) -> None:
    """Append to ``changed`` the dotted names ``live`` gained since ``saved`` was taken
    (``_`` of builtins, and plain data added to a class dict, aside). Returns nothing.
    Bound as ``compare`` is."""
    # A copy of the keys: a thread of the code under test may add names meanwhile.
    for name in _tuple(live):
        if name in saved or (kind == 1 and name == "_"):
            continue
        value = live.get(name, _missing)
        if kind == 2 and (value is _missing or _is_plain(value)):
            continue
        changed.append(label + "." + (name if _type(name) is _str else "<not a str>"))


def _changed_functions(
    functions: Functions,
    changed: list[str],
    _tuple: type[tuple[Any, ...]] = tuple,
    _map: type[map[Any]] = map,
    _attribute: type[operator.attrgetter[Any]] = operator.attrgetter,
    _zip: type[zip[Any]] = zip,
    _same: Callable[[Iterable[Any], tuple[Any, ...]], bool] = _same,
) -> None:
    """Append to ``changed`` ``label.__code__`` (``__defaults__``, ``__kwdefaults__``) for
    each of the captured ``functions`` whose attribute was rebound. Returns nothing. Bound
    as ``compare`` is."""
    labels, funcs, codes, defaults, kwdefaults = functions
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


def compare(
    snapshot: Snapshot,
    _key_error: type[Exception] = KeyError,
    _same: Callable[[Iterable[Any], tuple[Any, ...]], bool] = _same,
    _changed_entries: Callable[
        [str, Mapping[str, Any], Namespace, int, list[str]], None
    ] = _changed_entries,
    _added_entries: Callable[
        [str, Mapping[str, Any], Namespace, int, list[str]], None
    ] = _added_entries,
    _changed_functions: Callable[[Functions, list[str]], None] = _changed_functions,
    _missing: object = _MISSING,
) -> list[str]:
    """Return the dotted names of the watched objects rebound, deleted or added since
    ``snapshot`` was taken (``[]`` when none was), in snapshot order.

    Reads no global of this module and no builtin by name (what it needs, the helpers it
    calls included, are default arguments, bound when this module was imported): the code
    under test may have rebound both. A helper it calls that was tampered with is reported
    by its ``__code__`` or ``__defaults__`` (compared one by one when the fast path fails).
    """
    spaces, functions, watched, modules, sys_dict = snapshot
    changed: list[str] = []
    # Kinds are literals here (0 module, 1 builtins, 2 class), not this module's globals.
    for label, live, saved, kind, _target, getter, values in spaces:
        try:
            unchanged = _same(getter(live), values)
        except _key_error:  # a name was deleted
            unchanged = False
        if not unchanged:
            _changed_entries(label, live, saved, kind, changed)
        if kind != 0 and live.keys() != saved.keys():
            _added_entries(label, live, saved, kind, changed)
    _changed_functions(functions, changed)
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
    _dict: type[Namespace] = dict,
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


# -- the property module's own namespace -------------------------------------------------
#
# Code under test can walk the frames up to the property module being imported (or reach it
# through ``sys.modules`` while a property runs) and rebind the names of that module itself:
# its ``random``, its ``from random import randint``, a helper it defines. The child reads
# and compiles the module's source itself before importing it (``plan``); after the import
# ``check_module`` compares the namespace with what that source binds, and the check it
# returns compares the same objects by identity after each property (see
# docs/explanation/decisions/0005-properties-base-and-head.md).

_INNER: Final = "__patchlane_inner__"
"""The attribute ``styles`` puts on its wrapper of a ``@given`` test's inner function: the
author's function (``styles`` calls that one)."""
# Calls through which a module binds names its source does not spell out: a module making
# them is not checked at all (``setattr``/``delattr`` with a literal name only skip it).
_DYNAMIC: Final = frozenset({"globals", "locals", "exec", "eval"})
_COMPOUND: Final = (
    ast.If,
    ast.Try,
    ast.TryStar,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Match,
)
_IMMUTABLE: Final = (str, bytes, int, float, bool, complex, type(None))
# Methods ``type`` turns into a class or static method without a decorator.
_IMPLICIT: Final = frozenset({"__init_subclass__", "__class_getitem__", "__new__"})
_STEPS: Final = 32
"""How many wrappers (``__wrapped__``) are followed at most."""

# An import's candidates: ("module", key, "") is ``sys.modules[key]``, ("attr", key, name)
# is ``getattr(sys.modules[key], name)``.
Candidate = tuple[str, str, str]
# A ``@given`` test's (label, test, ``hypothesis`` handle, inner function); a module's
# (label, namespace, builtins' names it must not bind, names its source binds).
Handles = tuple[tuple[str, Any, Any, types.FunctionType], ...]
Shadows = tuple[str, Namespace, frozenset[str], frozenset[str]]


class Def(NamedTuple):
    """A ``def`` (or ``class``) of the source: its code object, how many decorators it
    has, whether it is bound conditionally (inside a top-level ``if``/``try``/...), the
    literal defaults (``_MISSING`` for others) and literal keyword-only defaults."""

    code: types.CodeType
    decorators: int
    conditional: bool
    defaults: tuple[Any, ...]
    kwdefaults: Mapping[str, object]


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a property module's source binds at module scope, each name bound once (or,
    for imports, only by imports): what ``check_module`` checks."""

    name: str
    imports: dict[str, tuple[tuple[Candidate, ...], bool]]
    functions: dict[str, Def]
    classes: dict[str, tuple[Def, dict[str, Def]]]
    constants: dict[str, tuple[Any, bool]]
    bound: frozenset[str]
    star: bool


def plan(
    source: bytes,
    filename: str,
    name: str,
    package: str,
    compiler: Callable[[bytes, str], types.CodeType] | None = None,
) -> Plan | None:
    """Return the ``Plan`` of module ``name`` (in ``package``) from its ``source``, or
    ``None`` when it is not checked (it does not compile, or binds names dynamically:
    ``globals()``, ``exec``, ...). Read and compiled before the module is imported, so that
    nothing the import runs can change what it says. ``compiler``: how the import compiles
    the module (the child's assert rewriting), when not as ``compile`` does."""
    try:
        tree = ast.parse(source, filename)
        # As the import compiles it (and none of this module's ``__future__`` flags).
        if compiler is not None:
            code = compiler(source, filename)
        else:
            code = compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    skip = _dynamic_names(tree)
    if skip is None:
        return None
    bindings: dict[str, list[tuple[ast.AST, ast.alias | None, bool]]] = {}
    stars: list[int] = []
    _collect(tree.body, False, bindings, stars)
    last_star = max(stars, default=0)
    codes = _codes(code)
    out = Plan(name, {}, {}, {}, {}, frozenset(bindings) | skip, bool(stars))
    for bound, found in bindings.items():
        first = min(getattr(node, "lineno", 0) for node, _alias, _cond in found)
        if bound in skip or first < last_star:
            continue
        if all(alias is not None for _node, alias, _cond in found):
            candidates = tuple(
                c for node, alias, _c in found if alias for c in _candidates(node, alias, package)
            )
            out.imports[bound] = (candidates, all(cond for _n, _a, cond in found))
        elif len(found) == 1:
            _plan_one(out, bound, found[0][0], found[0][2], codes, skip)
    return out


def _plan_one(
    out: Plan,
    bound: str,
    node: ast.AST,
    conditional: bool,
    codes: dict[tuple[str, int], types.CodeType],
    skip: set[str],
) -> None:
    """Add to ``out`` the one binding ``node`` of name ``bound`` (a def, a class or a
    literal constant; anything else is not checked)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        found = _def(node, conditional, codes)
        if found is not None:
            out.functions[bound] = found
    elif isinstance(node, ast.ClassDef):
        body = _def(node, conditional, codes)
        if body is not None:
            out.classes[bound] = (body, _methods(node, body.code, skip))
    elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
        value = _literal(node.value)
        if value is not _MISSING:
            out.constants[bound] = (value, conditional)


def _dynamic_names(tree: ast.Module) -> set[str] | None:
    """Return the names not to check (declared ``global`` somewhere, or set as an
    attribute anywhere: ``x.name = ...``, ``setattr(x, "name", ...)``), or ``None`` when the
    module binds names dynamically."""
    skip: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            skip.update(node.names)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            skip.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called = node.func.id
            if called in _DYNAMIC or (called == "vars" and not node.args):
                return None
            if called in ("setattr", "delattr"):
                name = node.args[1] if len(node.args) > 1 else None
                if not isinstance(name, ast.Constant) or not isinstance(name.value, str):
                    return None
                skip.add(name.value)
    return skip


# Every binding of module scope found so far, by name: (node, the alias of an import or
# ``None``, whether it is bound conditionally).
Bindings = dict[str, list[tuple[ast.AST, ast.alias | None, bool]]]


def _collect(body: list[ast.stmt], conditional: bool, out: Bindings, stars: list[int]) -> None:
    """Add to ``out`` every binding of module scope in ``body``: (node, the alias of an
    import or ``None``, conditional), and to ``stars`` the line of each ``import *``.
    Over-counting only skips a name. Returns nothing."""
    for stmt in body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            _collect_import(stmt, conditional, out, stars)
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            _collect_def(stmt, conditional, out)
        elif isinstance(stmt, _COMPOUND):
            _collect_compound(stmt, conditional, out, stars)
        elif isinstance(stmt, ast.Assign) and _one_name(stmt.targets):
            out.setdefault(stmt.targets[0].id, []).append((stmt, None, conditional))  # type: ignore[attr-defined]
            _store(stmt.value, conditional, out)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if stmt.value is not None:
                out.setdefault(stmt.target.id, []).append((stmt, None, conditional))
                _store(stmt.value, conditional, out)
        else:
            _store(stmt, conditional, out)


def _collect_import(
    stmt: ast.Import | ast.ImportFrom, conditional: bool, out: Bindings, stars: list[int]
) -> None:
    """Add to ``out`` the names import ``stmt`` binds, to ``stars`` its line when it is an
    ``import *``. Returns nothing."""
    for alias in stmt.names:
        if alias.name == "*":
            stars.append(stmt.lineno)
            continue
        bound = alias.asname or alias.name.split(".")[0]
        out.setdefault(bound, []).append((stmt, alias, conditional))


def _collect_def(
    stmt: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, conditional: bool, out: Bindings
) -> None:
    """Add to ``out`` the name ``def`` (or ``class``) ``stmt`` binds and what its
    decorators, arguments and bases bind. Returns nothing."""
    out.setdefault(stmt.name, []).append((stmt, None, conditional))
    # What a def evaluates in module scope (a walrus could bind there).
    for part in stmt.decorator_list:
        _store(part, conditional, out)
    _store(stmt.args if not isinstance(stmt, ast.ClassDef) else None, conditional, out)
    for part in getattr(stmt, "bases", []):
        _store(part, conditional, out)


def _collect_compound(stmt: ast.stmt, conditional: bool, out: Bindings, stars: list[int]) -> None:
    """Add to ``out`` the bindings of the compound statement ``stmt`` (``if``, ``try``,
    ``for``, ``with``, ``match``, ...): those of its bodies and clauses are conditional,
    those of what it evaluates itself (a test, an iterable) as ``conditional`` says.
    Returns nothing."""
    for field, value in ast.iter_fields(stmt):
        if field in ("body", "orelse", "finalbody"):
            _collect(value, True, out, stars)
        elif field in ("handlers", "cases"):
            for clause in value:
                if getattr(clause, "name", None):
                    out.setdefault(clause.name, []).append((clause, None, True))
                pattern = getattr(clause, "type", None) or getattr(clause, "pattern", None)
                _store(pattern, conditional, out)
                _store(getattr(clause, "guard", None), conditional, out)
                _collect(clause.body, True, out, stars)
        elif isinstance(value, ast.AST | list):
            for item in value if isinstance(value, list) else [value]:
                _store(item, conditional, out)


def _store(part: ast.AST | None, conditional: bool, out: Bindings) -> None:
    """Add to ``out`` every name ``part`` (an expression, a pattern, a statement; ``None``:
    nothing) stores to: assignment targets, walruses, capture patterns. Returns nothing."""
    for node in ast.walk(part) if part is not None else ():
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.setdefault(node.id, []).append((node, None, conditional))
        name = getattr(node, "name", None) or getattr(node, "rest", None)
        if isinstance(node, ast.MatchAs | ast.MatchStar | ast.MatchMapping) and name:
            out.setdefault(name, []).append((node, None, conditional))


def _one_name(targets: list[ast.expr]) -> bool:
    return len(targets) == 1 and isinstance(targets[0], ast.Name)


def _candidates(node: ast.AST, alias: ast.alias, package: str) -> tuple[Candidate, ...]:
    """Return what import ``alias`` of ``node`` may bind its name to."""
    if isinstance(node, ast.Import):
        if alias.asname is None:
            return (("module", alias.name.split(".")[0], ""),)
        parent, _dot, last = alias.name.rpartition(".")
        found: tuple[Candidate, ...] = (("module", alias.name, ""),)
        return found + ((("attr", parent, last),) if parent else ())
    if not isinstance(node, ast.ImportFrom):
        return ()
    try:
        base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
    except (ImportError, ValueError):
        return ()
    return (("attr", base, alias.name), ("module", f"{base}.{alias.name}", ""))


def _codes(code: types.CodeType) -> dict[tuple[str, int], types.CodeType]:
    """Return the code objects among ``code``'s constants by (name, first line)."""
    return {
        (c.co_name, c.co_firstlineno): c for c in code.co_consts if isinstance(c, types.CodeType)
    }


def _def(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
    conditional: bool,
    codes: dict[tuple[str, int], types.CodeType],
) -> Def | None:
    """Return the ``Def`` of ``node`` (its code object found in ``codes``), or ``None``."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    code = codes.get((node.name, first))
    if code is None:
        return None
    if isinstance(node, ast.ClassDef):
        return Def(code, len(node.decorator_list), conditional, (), {})
    defaults = tuple(_literal(d) for d in node.args.defaults)
    kwdefaults = {
        a.arg: _literal(d)
        for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)
        if d is not None
    }
    return Def(code, len(node.decorator_list), conditional, defaults, kwdefaults)


def _methods(node: ast.ClassDef, body: types.CodeType, skip: set[str]) -> dict[str, Def]:
    """Return the methods defined once, directly, in class ``node`` (whose body compiled
    to ``body``) and bound nowhere else in its body."""
    bindings: dict[str, list[tuple[ast.AST, ast.alias | None, bool]]] = {}
    _collect(node.body, False, bindings, [])
    codes = _codes(body)
    out: dict[str, Def] = {}
    for name, found in bindings.items():
        method = found[0][0]
        if name in skip or len(found) != 1 or found[0][2]:
            continue
        if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            checked = _def(method, False, codes)
            if checked is not None:
                out[name] = checked
    return out


def _literal(node: ast.expr) -> Any:
    """Return the immutable literal ``node`` spells, or ``_MISSING``."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING
    return value if _immutable(value) else _MISSING


def _immutable(value: Any) -> bool:
    if type(value) is tuple:
        return all(_immutable(v) for v in value)
    return type(value) in _IMMUTABLE


def _same_value(a: Any, b: Any) -> bool:
    """Return whether ``a`` and ``b`` are the same immutable literal (``repr`` for NaN)."""
    return type(a) is type(b) and (repr(a) == repr(b))


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """Return whether code objects ``a`` and ``b`` have the same bytecode, names and
    constants (nested code objects compared the same way)."""
    if a is b:
        return True
    if a.co_code != b.co_code or a.co_names != b.co_names:
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts, strict=True):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _same_code(x, y):
                return False
        elif not _same_value(x, y):
            return False
    return True


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
        if live is _MISSING or not _same_value(live, value):
            changed.append(prefix + name)
    for name, defined in checks.functions.items():
        live = namespace.get(name, _MISSING)
        if not (live is _MISSING and defined.conditional):
            kept[name] = live
            if not _check_def(prefix + name, live, defined, namespace, found):
                changed.append(prefix + name)
    spaces = [
        _space(label, vars(cls), _MODULE, cls, functools.partial(_named, methods))
        for label, cls, methods in _check_classes(checks, namespace, found)
    ]
    keep = functools.partial(_named, kept)
    spaces.insert(0, _space(checks.name, namespace, _MODULE, namespace, keep))
    shadows = _shadows(checks, namespace, snapshot)
    if shadows is not None:
        changed += _shadowing(shadows)
    funcs = tuple(f for _label, f in functions.values())
    modules: dict[str, types.ModuleType] = {}
    state: Snapshot = (
        tuple(spaces),
        (
            tuple(label for label, _f in functions.values()),
            funcs,
            tuple(f.__code__ for f in funcs),
            tuple(f.__defaults__ for f in funcs),
            tuple(f.__kwdefaults__ for f in funcs),
        ),
        (),
        modules,
        {"modules": modules},
    )
    return changed, (state, tuple(handles), shadows)


def _named(names: Container[str], name: str, _value: Any) -> bool:
    """Return whether ``name`` is one of ``names`` (a ``_space``'s ``keep``)."""
    return name in names


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
        and _same_code(func.__code__, defined.code)
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
        if expected is not _MISSING and not _same_value(value, expected):
            return False
    kwdefaults = func.__kwdefaults__ or {}
    if kwdefaults.keys() != defined.kwdefaults.keys():
        return False
    return all(
        expected is _MISSING or _same_value(kwdefaults[name], expected)
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
