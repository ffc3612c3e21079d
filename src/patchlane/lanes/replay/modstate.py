"""Whether a module keeps state that outlives one call (docs/architecture.md §4).

The dependency map knows which tests ran a function, not which tests later read what that
run left behind. A change inside one function's body may therefore be judged by the tests
that ran it only when the function cannot leave anything another test can see: a module in
which some function may change state that lives as long as the module is judged
module-level as a whole (``keeps_state``), so every importer is selected.

State that lives as long as the module, as far as the module's own text can show it:

- a ``global`` statement;
- a store, deletion or mutating call (``append``, ``update``, ``__setitem__`` ...) on
  anything reached from a name the module binds at module level (a constant, an imported
  module such as ``sys`` or ``os``, a class, a function), unless the function binds that
  name itself; ``setattr``/``delattr`` on such a name; anything reached from ``globals()``;
- a store on a class from inside a method (``cls.x``, ``type(self).x``,
  ``self.__class__.x``);
- a ``nonlocal`` statement, or a store on ``self``, where the closure or the instance can
  be made while the module is imported: the enclosing function, or the class, is named by
  code that runs at import (module-level statements, class bodies, decorators, defaults),
  directly or through functions such code names.

A ``nonlocal`` in a closure made during a call (a generator's helper) is that call's own
state and does not count. What another module keeps (an instance of this module's class
held in another module's global, a file outside the tree) is not visible here; the
recording's fixtures cover values shared through fixtures (``mapselect``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

_MUTATORS = frozenset(
    {"append", "extend", "insert", "update", "add", "setdefault", "pop", "popitem", "clear",
     "remove", "discard", "appendleft", "extendleft", "__setitem__", "__delitem__", "sort",
     "reverse", "put", "put_nowait", "set", "register", "chdir", "putenv", "unsetenv",
     "setlocale", "seed", "setrecursionlimit", "setdefaulttimeout", "filterwarnings",
     "simplefilter", "resetwarnings", "basicConfig", "umask", "addHandler", "setLevel",
     "add_type"}
)  # fmt: skip
_CLASS_OF = "<class>"  # the root of ``cls.x``, ``type(self).x``, ``self.__class__.x``
_MODULE = "<module>"  # the root of ``globals()[...]``
# Methods that build a new instance: what they store is not yet shared.
_CONSTRUCTION = frozenset(
    {"__init__", "__new__", "__post_init__", "__init_subclass__", "__set_name__",
     "__setstate__", "__copy__", "__deepcopy__"}
)  # fmt: skip
_Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def keeps_state(tree: ast.Module) -> bool:
    """Return whether some function of ``tree`` may change state that outlives its call
    and is shared by every user of the module (see the module docstring). Raises nothing."""
    return bool(stateful_functions(tree))


def stateful_functions(tree: ast.Module, *, passed_in: bool = False) -> list[tuple[int, int]]:
    """Return the first and last line of every function (or lambda) of ``tree`` that may
    change state outliving its call (see the module docstring), in source order. With
    ``passed_in``, a store into what the caller handed in (a parameter, or a local bound to
    one: ``s = settings; s["k"] = v``) counts too: the caller's object may be a module's.
    Raises nothing."""
    # Each walk once: the import-time nodes and every function's own nodes serve all rules.
    at_import = _import_time_nodes(tree)
    functions = list(_functions(tree))
    module = _Module(
        bound=_module_bindings(at_import),
        at_import=_run_at_import(tree, at_import),
        readers=_readers(at_import, functions),
    )
    return [
        (f[0].lineno, f[0].end_lineno or f[0].lineno)
        for f in functions
        if _changes_state(f, module, passed_in=passed_in)
    ]


@dataclass(frozen=True)
class _Module:
    bound: frozenset[str]  # names bound at module level
    at_import: frozenset[str]  # functions and classes import-time code may call
    readers: dict[str, frozenset[int]]  # attribute name -> ids of the functions that read it


def _changes_state(
    found: _FunctionEntry,
    module: _Module,
    *,
    passed_in: bool = False,
) -> bool:
    """Whether a function (``found``: the function, the names it or an enclosing function
    binds, its class when it is a method, its own body) changes shared state through its
    own body (nested functions are judged on their own)."""
    function, scope, owner, own = found
    names = (scope | _local_names(function, own)) - _declared(own, ast.Global)
    # What an import inside the body binds is a module (or its object): shared, not local.
    imported = {
        n
        for node in own
        if isinstance(node, ast.Import | ast.ImportFrom)
        for n in _import_names(node)
    }
    shared = (module.bound - names) | _shared_defaults(function) | imported
    if passed_in:
        shared |= _passed_in(function, owner, own, shared)
    instance = None
    if owner is not None and owner.name in module.at_import:
        name = getattr(function, "name", "")
        instance = None if name in _CONSTRUCTION else _self_name(function)
    for node in own:
        if isinstance(node, ast.Global):
            return True
        if isinstance(node, ast.Nonlocal) and _made_at_import(module.at_import, scope):
            return True
        target: ast.expr | None = None
        if isinstance(node, ast.Attribute | ast.Subscript) and isinstance(
            node.ctx, ast.Store | ast.Del
        ):
            target = node
        elif isinstance(node, ast.Call):
            target = _mutated(node)
        if target is not None and _shared_target(target, shared, instance, id(function), module):
            return True
    return False


def _mutated(node: ast.Call) -> ast.expr | None:
    """What a call mutates: ``x`` of ``x.append(...)`` or ``setattr(x, ...)``, else ``None``."""
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
        return func.value
    if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
        return node.args[0]
    return None


def _shared_target(
    target: ast.expr, shared: frozenset[str], instance: str | None, here: int, module: _Module
) -> bool:
    """Whether ``target`` (stored into, or mutated) is reached from module-level state: a
    shared name, a class, ``globals()``; or an attribute of an instance that may have been
    made at import and that another function reads (a memo only its own method reads is
    that method's business: every test that depends on it ran the method)."""
    root = _root(target)
    if root in (_CLASS_OF, _MODULE) or root in shared:
        return True
    if root is None or root != instance:
        return False
    attribute = _first_attribute(target)
    if attribute is None:
        return True  # ``self[k] = v``, ``self.update(...)``: the instance itself
    return bool(module.readers.get(attribute, frozenset()) - {here})


def _first_attribute(expr: ast.expr) -> str | None:
    """``X`` of ``self.X``, ``self.X[k]``, ``self.X.y``; ``None`` for ``self`` itself."""
    attribute = None
    while isinstance(expr, ast.Attribute | ast.Subscript | ast.Call):
        if isinstance(expr, ast.Attribute):
            attribute = expr.attr
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return attribute


def _made_at_import(at_import: frozenset[str], scope: frozenset[str]) -> bool:
    """Whether an enclosing function may run at import, making the closure then
    (``_functions`` puts ``<def NAME>`` in a nested function's scope per enclosing one)."""
    return any(m.startswith("<def ") and m[5:-1] in at_import for m in scope)


def _root(expr: ast.expr) -> str | None:
    """The name ``expr`` is reached from through attributes, items and calls
    (``a.b[c].d()`` → ``a``), ``_CLASS_OF`` for a class, ``_MODULE`` for ``globals()``."""
    while True:
        if isinstance(expr, ast.Attribute):
            if expr.attr == "__class__":
                return _CLASS_OF
            expr = expr.value
        elif isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Name) and expr.func.id == "type" and len(expr.args) == 1:
                return _CLASS_OF
            if isinstance(expr.func, ast.Name) and expr.func.id in ("globals", "vars"):
                return _MODULE if not expr.args else _root(expr.args[0])
            expr = expr.func
        elif isinstance(expr, ast.Name):
            return _CLASS_OF if expr.id in ("cls", "mcs", "metacls") else expr.id
        else:
            return None


def _self_name(function: _Function) -> str | None:
    args = function.args.posonlyargs + function.args.args
    return args[0].arg if args else None


# --- scopes ----------------------------------------------------------------------------------


_FunctionEntry = tuple[_Function, frozenset[str], ast.ClassDef | None, list[ast.AST]]


def _functions(tree: ast.Module) -> Iterator[_FunctionEntry]:
    """Every function and lambda of ``tree`` with the names its enclosing functions bind
    (and a ``<def NAME>`` marker per enclosing function), its class when it is a method,
    and its own nodes (``_own_nodes``)."""

    def visit(
        node: ast.AST, scope: frozenset[str], owner: ast.ClassDef | None
    ) -> Iterator[_FunctionEntry]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _Function):
                own = _own_nodes(child)
                yield child, scope, owner, own
                inner = scope | _local_names(child, own)
                if not isinstance(child, ast.Lambda):
                    inner |= {f"<def {child.name}>"}
                yield from visit(child, frozenset(inner), None)
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, scope, child)
            else:
                yield from visit(child, scope, owner)

    yield from visit(tree, frozenset(), None)


def _own_nodes(function: _Function) -> list[ast.AST]:
    """The nodes of ``function``'s body that run when it is called: not those of nested
    functions' bodies (their decorators and defaults, which run here, are kept)."""
    out: list[ast.AST] = []
    body: list[ast.AST] = [function.body] if isinstance(function, ast.Lambda) else [*function.body]
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, _Function):
            stack.extend([*_header(node)])
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def _header(function: _Function) -> list[ast.AST]:
    """What runs where ``function`` is defined: decorators and default values."""
    decorators = [] if isinstance(function, ast.Lambda) else function.decorator_list
    defaults = [d for d in (*function.args.defaults, *function.args.kw_defaults) if d]
    return [*decorators, *defaults]


def _local_names(function: _Function, own: list[ast.AST]) -> frozenset[str]:
    args = function.args
    names = {
        a.arg
        for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
        if a is not None
    }
    for node in own:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(_import_names(node))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return frozenset(names - _declared(own, ast.Nonlocal))


def _passed_in(
    function: _Function, owner: ast.ClassDef | None, own: list[ast.AST], shared: frozenset[str]
) -> frozenset[str]:
    """The parameters (a method's instance aside, which ``_shared_target`` judges) and the
    local names bound to one of them or to ``shared`` (``s = settings``): what the caller
    handed in may be a module's object, so a store into it outlives the call."""
    args = function.args
    params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    decorators = getattr(function, "decorator_list", [])
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in decorators)
    if owner is not None and params and not static:
        params = params[1:]
    passed = set(params) | set(shared)
    for node in own:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id in passed
        ):
            passed.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return frozenset(passed - set(shared))


def _shared_defaults(function: _Function) -> frozenset[str]:
    """Parameters whose default is an object made once, when the ``def`` ran (``cache={}``,
    ``registry=REGISTRY``): every call that does not pass them shares it."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    pairs = [*zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)]
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d]
    return frozenset(a.arg for a, d in pairs if not _immutable(d))


def _immutable(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.UnaryOp):
        return _immutable(expr.operand)
    return isinstance(expr, ast.Tuple) and all(_immutable(e) for e in expr.elts)


def _declared(own: list[ast.AST], kind: type[ast.Global] | type[ast.Nonlocal]) -> frozenset[str]:
    return frozenset(name for node in own if isinstance(node, kind) for name in node.names)


def _import_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]


# --- the module's own level ------------------------------------------------------------------


def _import_time_nodes(tree: ast.Module) -> list[ast.AST]:
    """The nodes that run when the module is imported: every statement outside a function's
    body, class bodies included, and the decorators and defaults of every function."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, _Function):
            stack.extend(_header(node))
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def _module_bindings(at_import: list[ast.AST]) -> frozenset[str]:
    """The names the module binds at its own level (assignments, imports, classes,
    functions, loop and ``with`` targets), from its import-time nodes."""
    names: set[str] = set()
    for node in at_import:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(_import_names(node))
    return frozenset(names)


def _run_at_import(tree: ast.Module, at_import: list[ast.AST]) -> frozenset[str]:
    """The names of the module's functions and classes that code run at import may call:
    called, applied as a decorator or passed to a call at import (a statement, a class
    body, a decorator, a default), or so used by such a function's body, and so on; a
    module-level alias (``A = B``) of such a name counts too. Names, not bindings: an
    over-approximation."""
    by_name: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            by_name.setdefault(node.name, []).append(node)
    aliases: dict[str, set[str]] = {}
    for stmt in at_import:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name | ast.Attribute):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    aliases.setdefault(target.id, set()).add(_last_name(stmt.value))
    reached: set[str] = set()
    todo = [_called(at_import)]
    while todo:
        for name in todo.pop() - reached:
            reached.add(name)
            todo.append(aliases.get(name, set()))
            for definition in by_name.get(name, ()):
                todo.append(_called(list(ast.walk(definition))))
    return frozenset(reached & set(by_name))


def _called(nodes: list[ast.AST]) -> set[str]:
    """Names called, applied as decorators or passed to calls among ``nodes``."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Call):
            for part in (node.func, *node.args, *(k.value for k in node.keywords)):
                if isinstance(part, ast.Name | ast.Attribute):
                    names.add(_last_name(part))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.update(_last_name(d) for d in node.decorator_list)
    return names


def _last_name(expr: ast.expr) -> str:
    """``c`` of ``a.b.c``, ``f`` of ``f``, ``d`` of ``d(x)``; ``""`` for anything else."""
    if isinstance(expr, ast.Call):
        expr = expr.func
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return expr.id if isinstance(expr, ast.Name) else ""


def _readers(
    at_import: list[ast.AST], functions: list[_FunctionEntry]
) -> dict[str, frozenset[int]]:
    """For each attribute name read anywhere in the module: the ids of the functions whose
    own body reads it (``-1`` for code run at import)."""
    readers: dict[str, set[int]] = {}
    sources: list[tuple[int, list[ast.AST]]] = [(-1, at_import)]
    sources += [(id(function), own) for function, _, _, own in functions]
    for where, nodes in sources:
        for node in nodes:
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                readers.setdefault(node.attr, set()).add(where)
    return {name: frozenset(ids) for name, ids in readers.items()}
