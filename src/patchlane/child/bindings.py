"""What a property module's source binds at module scope, read before the module is imported.

Code under test can walk the frames up to the property module being imported (or reach it
through ``sys.modules`` while a property runs) and rebind the names of that module itself:
its ``random``, its ``from random import randint``, a helper it defines. The property child
reads and compiles the module's source itself before importing it (``plan``, this module);
after the import ``integrity.check_module`` compares the namespace with what that source
binds, and the check it returns compares the same objects by identity after each property
(see docs/explanation/decisions/0005-properties-base-and-head.md).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import types
from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple

MISSING: Final = object()
"""What ``plan`` says of a default that is not a literal (and what the check reads as
"no such name")."""

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

# An import's candidates: ("module", key, "") is ``sys.modules[key]``, ("attr", key, name)
# is ``getattr(sys.modules[key], name)``.
Candidate = tuple[str, str, str]


class Def(NamedTuple):
    """A ``def`` (or ``class``) of the source: its code object, how many decorators it
    has, whether it is bound conditionally (inside a top-level ``if``/``try``/...), the
    literal defaults (``MISSING`` for others) and literal keyword-only defaults."""

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
        if value is not MISSING:
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
    """Return the immutable literal ``node`` spells, or ``MISSING``."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return MISSING
    return value if _immutable(value) else MISSING


def _immutable(value: Any) -> bool:
    if type(value) is tuple:
        return all(_immutable(v) for v in value)
    return type(value) in _IMMUTABLE


def same_value(a: Any, b: Any) -> bool:
    """Return whether ``a`` and ``b`` are the same immutable literal (``repr`` for NaN)."""
    return type(a) is type(b) and (repr(a) == repr(b))


def same_code(a: types.CodeType, b: types.CodeType) -> bool:
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
            if not same_code(x, y):
                return False
        elif not same_value(x, y):
            return False
    return True
