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


# -- the property module's own namespace -------------------------------------------------
#
# Code under test can walk the frames up to the property module being imported (or reach it
# through ``sys.modules`` while a property runs) and rebind the names of that module itself:
# its ``random``, its ``from random import randint``, a helper it defines. The child reads
# and compiles the module's source itself before importing it (``plan``); after the import
# ``check_module`` compares the namespace with what that source binds, and the check it
# returns compares the same objects by identity after each property (see docs/decisions.md,
# "The property child checks its property module").

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
_STEPS: Final = 32
"""How many wrappers (``__wrapped__``) are followed at most."""

# An import's candidates: ("module", key, "") is ``sys.modules[key]``, ("attr", key, name)
# is ``getattr(sys.modules[key], name)``.
Candidate = tuple[str, str, str]
# (the module's dict, dummy ``sys.modules``/``sys`` for ``compare``) -- see ``check_module``.
Handles = tuple[tuple[str, Any, types.FunctionType], ...]
Shadows = tuple[str, Mapping[str, Any], frozenset[str], frozenset[str]]


class Def(NamedTuple):
    """A ``def`` (or ``class``) of the source: its code object, how many decorators it
    has, whether it is bound conditionally (inside a top-level ``if``/``try``/...), the
    literal defaults (``_MISSING`` for others) and literal keyword-only defaults."""

    code: types.CodeType
    decorators: int
    conditional: bool
    defaults: tuple[Any, ...]
    kwdefaults: dict[str, Any]


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


def plan(source: bytes, filename: str, name: str, package: str) -> Plan | None:
    """Return the ``Plan`` of module ``name`` (in ``package``) from its ``source``, or
    ``None`` when it is not checked (it does not compile, or binds names dynamically:
    ``globals()``, ``exec``, ...). Read and compiled before the module is imported, so that
    nothing the import runs can change what it says."""
    try:
        tree = ast.parse(source, filename)
        code = compile(tree, filename, "exec", dont_inherit=True)
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
    out = Plan(name, {}, {}, {}, {}, frozenset(bindings), bool(stars))
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


def _collect(
    body: list[ast.stmt],
    conditional: bool,
    out: dict[str, list[tuple[ast.AST, ast.alias | None, bool]]],
    stars: list[int],
) -> None:
    """Add to ``out`` every binding of module scope in ``body``: (node, the alias of an
    import or ``None``, conditional). Over-counting only skips a name."""

    def store(part: ast.AST | None) -> None:
        for node in ast.walk(part) if part is not None else ():
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                out.setdefault(node.id, []).append((node, None, conditional))
            name = getattr(node, "name", None) or getattr(node, "rest", None)
            if isinstance(node, ast.MatchAs | ast.MatchStar | ast.MatchMapping) and name:
                out.setdefault(name, []).append((node, None, conditional))

    for stmt in body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                if alias.name == "*":
                    stars.append(stmt.lineno)
                    continue
                bound = alias.asname or alias.name.split(".")[0]
                out.setdefault(bound, []).append((stmt, alias, conditional))
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.setdefault(stmt.name, []).append((stmt, None, conditional))
            # What a def evaluates in module scope (a walrus could bind there).
            for part in stmt.decorator_list:
                store(part)
            store(stmt.args if not isinstance(stmt, ast.ClassDef) else None)
            for part in getattr(stmt, "bases", []):
                store(part)
        elif isinstance(stmt, _COMPOUND):
            for field, value in ast.iter_fields(stmt):
                if field in ("body", "orelse", "finalbody"):
                    _collect(value, True, out, stars)
                elif field in ("handlers", "cases"):
                    for clause in value:
                        if getattr(clause, "name", None):
                            out.setdefault(clause.name, []).append((clause, None, True))
                        store(getattr(clause, "type", None) or getattr(clause, "pattern", None))
                        store(getattr(clause, "guard", None))
                        _collect(clause.body, True, out, stars)
                elif isinstance(value, ast.AST | list):
                    for part in value if isinstance(value, list) else [value]:
                        store(part)
        elif isinstance(stmt, ast.Assign) and _one_name(stmt.targets):
            out.setdefault(stmt.targets[0].id, []).append((stmt, None, conditional))  # type: ignore[attr-defined]
            store(stmt.value)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if stmt.value is not None:
                out.setdefault(stmt.target.id, []).append((stmt, None, conditional))
                store(stmt.value)
        else:
            store(stmt)


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
    assert isinstance(node, ast.ImportFrom)
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
# and functions (for ``compare``/``restore``), the ``@given`` tests' inner functions, and
# the module's names that would shadow a builtin.
ModuleState = tuple[Snapshot, Handles, Shadows | None]


def check_module(
    checks: Plan, module: types.ModuleType, snapshot: Snapshot
) -> tuple[list[str], ModuleState]:
    """Return the dotted names of ``module``'s namespace that differ from what its source
    (``checks``) binds, and the state to hand ``verify_module`` after each property.

    An import's name must be one of the objects its imports give (a watched module's, or
    name in one, as ``snapshot`` captured it; otherwise ``sys.modules`` now); a def's
    function (behind its decorators, through ``__wrapped__`` or a ``@given`` test's inner
    function) must have the source's code, literal defaults and the module's globals, and a
    class the same of the methods its body defines; a literal constant, its value. A name
    set in the module that its source does not bind must not shadow a builtin.
    """
    namespace = vars(module)
    watched = dict(snapshot[2])
    saved = {space[0]: space[2] for space in snapshot[0] if space[3] == _MODULE}
    prefix = checks.name + "."
    changed: list[str] = []
    kept: dict[str, Any] = {}
    functions: dict[int, tuple[str, types.FunctionType]] = {}
    handles: list[tuple[str, Any, types.FunctionType]] = []
    for name, (candidates, conditional) in checks.imports.items():
        live = namespace.get(name, _MISSING)
        expected = _expected(candidates, watched, saved)
        if (live is _MISSING and not conditional) or (
            live is not _MISSING and expected and not any(live is e for e in expected)
        ):
            changed.append(prefix + name)
        kept[name] = live
    for name, (value, conditional) in checks.constants.items():
        live = namespace.get(name, _MISSING)
        if live is _MISSING and conditional:
            continue
        if live is _MISSING or not _same_value(live, value):
            changed.append(prefix + name)
        kept[name] = live
    for name, found in checks.functions.items():
        live = namespace.get(name, _MISSING)
        if not (live is _MISSING and found.conditional):
            kept[name] = live
            if not _check_def(prefix + name, live, found, namespace, functions, handles):
                changed.append(prefix + name)
    spaces = [_space(checks.name, namespace, _MODULE, namespace, lambda k, _v: k in kept)]
    for name, (body, methods) in checks.classes.items():
        live = namespace.get(name, _MISSING)
        if live is _MISSING and body.conditional:
            continue
        kept[name] = live
        if not isinstance(live, type):
            if live is _MISSING or not body.decorators:
                changed.append(prefix + name)
            continue
        label = prefix + name
        spaces.append(_space(label, vars(live), _MODULE, live, lambda k, _v, m=methods: k in m))
        for method, defined in methods.items():
            # A decorated class's methods are checked as if they were decorated too.
            lenient = defined._replace(decorators=max(defined.decorators, body.decorators))
            value = vars(live).get(method, _MISSING)
            if not _check_def(f"{label}.{method}", value, lenient, namespace, functions, handles):
                changed.append(f"{label}.{method}")
    spaces[0] = _space(checks.name, namespace, _MODULE, namespace, lambda k, _v: k in kept)
    shadows = _shadows(checks, namespace, snapshot)
    if shadows is not None:
        changed += _shadowing(shadows)
    found = tuple(functions.values())
    funcs = tuple(f[1] for f in found)
    modules: dict[str, types.ModuleType] = {}
    state: Snapshot = (
        tuple(spaces),
        (
            tuple(f[0] for f in found),
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
