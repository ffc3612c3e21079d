"""Whether a module's changed import-time code may change state outside the module
(docs/architecture.md §2, "The slice is what the base's record says").

A module's top-level code runs while it is imported, which for most modules is during
collection, before every test of the process. A change there that only binds names in the
module itself (a ``def``, a class of builtin or third-party bases, ``NAME = 3``) reaches the
module's importers, which the map and the import graph name. Anything else (a call, a store
into another object, a decorator that is not plainly a descriptor, a loop, an import of a
project module the base did not import at collection) may change what a test that never
imports the module sees, so it selects every test.

This is an allow-list of statement forms, not a list of tricks: what is not known to bind
only the module's own names is taken to reach everything. Raises nothing.
"""

from __future__ import annotations

import ast
import builtins
import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# Calls that build a value and change nothing else, when the name is the builtin (or a
# third-party module's attribute: ``re.compile``, ``typing.TypeVar``).
_PURE_CALLS = frozenset(
    {"frozenset", "set", "dict", "list", "tuple", "str", "int", "float", "bool", "bytes",
     "range", "len", "sorted", "object", "property", "staticmethod", "classmethod",
     "TypeVar", "NewType", "namedtuple", "compile", "getLogger", "field", "cast",
     "ParamSpec", "TypeAlias", "Literal", "Optional", "Union"}
)  # fmt: skip
# Decorators that make a descriptor or mark a definition and run nothing of the project's.
_PLAIN_DECORATORS = frozenset(
    {"property", "staticmethod", "classmethod", "abstractmethod", "overload", "override",
     "wraps", "cached_property", "dataclass", "total_ordering", "final", "runtime_checkable",
     "setter", "getter", "deleter", "unique"}
)  # fmt: skip
_BUILTINS = frozenset(dir(builtins))

# A dotted module name -> ``OUTSIDE`` (not the project's), ``COLLECTED`` (the project's,
# imported at collection at the base) or ``LAZY`` (the project's, not imported then: its
# import-time code would run where it did not before).
Where = Callable[[str], str]
OUTSIDE, COLLECTED, LAZY = "outside", "collected", "lazy"


@dataclass(frozen=True)
class _Module:
    imported: dict[str, str]  # name bound by an import statement -> the module it names
    literal_only: frozenset[str]  # names every module-level binding of binds a literal
    classes: dict[str, ast.ClassDef]
    where: Where
    package: str
    originals: dict[str, str]  # name bound by ``from X import N as name`` -> ``N``
    rebound: frozenset[str]  # every name the module stores or defines anywhere


def outside_change(base: bytes, head: bytes, where: Where, package: str = "") -> str | None:
    """Return where the change from ``base`` to ``head`` (a module's bytes) has import-time
    code that may change state outside the module (``line N: what``, at the side that has
    it), or ``None`` when every changed top-level statement only binds the module's own
    names. A side that is not valid Python is such a change. ``where(name)`` places a
    dotted module name (``OUTSIDE``, ``COLLECTED``, ``LAZY``); ``package`` is the module's
    own package, against which relative imports resolve."""
    try:
        trees = (ast.parse(base), ast.parse(head))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "line 1: not valid Python on one side"
    try:
        sides = (_context(trees[0], where, package), _context(trees[1], where, package))
        return _changed(trees[0].body, trees[1].body, sides)
    except RecursionError:
        return "line 1: nested too deeply to read"


_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _changed(
    base: list[ast.stmt], head: list[ast.stmt], sides: tuple[_Module, _Module]
) -> str | None:
    """The first changed statement of two bodies that is not inert (``line N: what``). A
    definition whose header (decorators, defaults, bases) is the same on both sides changed
    only in its body: a function's body does not run at import; a class's is compared
    statement by statement."""
    dumps = [[ast.dump(s, include_attributes=False) for s in body] for body in (base, head)]
    matcher = difflib.SequenceMatcher(None, dumps[0], dumps[1], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            for old, new in zip(base[i1:i2], head[j1:j2], strict=True):
                why = _pair(old, new, sides)
                if why is not None:
                    return why
            continue
        for statement, module in [
            *((s, sides[1]) for s in head[j1:j2]),
            *((s, sides[0]) for s in base[i1:i2]),
        ]:
            why = _not_inert(statement, module)
            if why is not None:
                return f"line {statement.lineno}: {why}"
    return None


def _pair(old: ast.stmt, new: ast.stmt, sides: tuple[_Module, _Module]) -> str | None:
    if isinstance(old, _Definition) and type(old) is type(new) and _header(old) == _header(new):
        if isinstance(old, ast.ClassDef) and isinstance(new, ast.ClassDef):
            return _changed(old.body, new.body, sides)
        return None  # a function whose body alone changed: nothing of it runs at import
    for statement, module in ((new, sides[1]), (old, sides[0])):
        why = _not_inert(statement, module)
        if why is not None:
            return f"line {statement.lineno}: {why}"
    return None


def _header(node: ast.stmt) -> str:
    """A definition's dump without its body (what runs when the ``def``/``class`` runs)."""
    return "\0".join(_dump(getattr(node, f)) for f in node._fields if f != "body")


def _dump(value: object) -> str:
    if isinstance(value, ast.AST):
        return ast.dump(value, include_attributes=False)
    if isinstance(value, list):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    return repr(value)


def _context(tree: ast.Module, where: Where, package: str) -> _Module:
    imported: dict[str, str] = {}
    originals: dict[str, str] = {}
    bound: dict[str, bool] = {}
    classes: dict[str, ast.ClassDef] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                imported[a.asname or a.name.split(".")[0]] = (
                    a.name if a.asname else a.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, package)
            for a in node.names:
                imported[a.asname or a.name] = source
                originals[a.asname or a.name] = a.name
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            literal = isinstance(
                node.value, ast.List | ast.Dict | ast.Set | ast.Tuple | ast.Constant
            )
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = bound.get(target.id, True) and literal
    literal_only = frozenset(n for n, ok in bound.items() if ok and n not in imported)
    rebound = frozenset(
        n.id if isinstance(n, ast.Name) else n.name
        for n in ast.walk(tree)
        if (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del))
        or isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    )
    return _Module(imported, literal_only, classes, where, package, originals, rebound)


def _known(func: ast.expr, module: _Module, wanted: frozenset[str]) -> bool:
    """Whether ``func`` (a callee or a decorator) is one of ``wanted`` as the builtins or a
    module outside the project define it: a builtin the module never rebinds, a name
    imported under its own name from outside the project, or an attribute of such a
    module. Never by its spelling alone (``from project import register as property``)."""
    if isinstance(func, ast.Attribute):
        root = func.value
        if not (isinstance(root, ast.Name) and root.id in module.imported):
            return False
        source = module.imported[root.id]
        outside = (
            module.where(source) == OUTSIDE and module.where(f"{source}.{func.attr}") == OUTSIDE
        )
        return func.attr in wanted and outside and root.id not in module.rebound
    if not isinstance(func, ast.Name) or func.id not in wanted:
        return False
    if func.id in module.imported:
        source, original = module.imported[func.id], module.originals.get(func.id, func.id)
        outside = (
            module.where(source) == OUTSIDE and module.where(f"{source}.{original}") == OUTSIDE
        )
        return original == func.id and outside and func.id not in module.rebound
    return func.id in _BUILTINS and func.id not in module.rebound


def _not_inert(node: ast.stmt, module: _Module) -> str | None:
    """Why ``node`` may change state outside its module when it runs at import, or ``None``."""
    if isinstance(node, ast.Pass) or (
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    ):
        return None
    if isinstance(node, ast.Import | ast.ImportFrom):
        return _import(node, module)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return _definition(node, module)
    if isinstance(node, ast.ClassDef):
        return _class(node, module)
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not all(_own_names(t) for t in targets):
            return "a store into something other than the module's own name"
        if node.value is not None and not _simple(node.value, module):
            return "an assignment that calls or computes more than a value"
        return None
    if isinstance(node, ast.AugAssign):
        name = node.target.id if isinstance(node.target, ast.Name) else None
        if name is None or name not in module.literal_only or not _simple(node.value, module):
            return "an augmented assignment that may change an object shared with others"
        return None
    if isinstance(node, ast.If):
        if _main_guard(node.test):
            return _body([], module)  # the body never runs on import
        if not _simple(node.test, module):
            return "a condition that calls code"
        return _body([*node.body, *node.orelse], module)
    if isinstance(node, ast.Try):
        handlers = [s for h in node.handlers for s in h.body]
        return _body([*node.body, *handlers, *node.orelse, *node.finalbody], module)
    if isinstance(node, ast.Expr):
        return "an expression (a call) that runs at import"
    return f"a {type(node).__name__.lower()} statement that runs at import"


def _body(statements: Iterable[ast.stmt], module: _Module) -> str | None:
    for statement in statements:
        why = _not_inert(statement, module)
        if why is not None:
            return why
    return None


def _import(node: ast.Import | ast.ImportFrom, module: _Module) -> str | None:
    if isinstance(node, ast.ImportFrom):
        if node.module == "__future__":
            return None
        source = _absolute(node, module.package)
        names = [source] + [f"{source}.{a.name}" for a in node.names]
    else:
        names = [a.name for a in node.names]
    for name in names:
        if module.where(name) == LAZY:
            return f"imports {name}, whose import-time code the base did not run at collection"
    return None


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from`` import names, a relative one resolved against ``package``."""
    if not node.level:
        return node.module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
    return ".".join([*base, *([node.module] if node.module else [])])


def _definition(node: ast.FunctionDef | ast.AsyncFunctionDef, module: _Module) -> str | None:
    if not all(_plain_decorator(d, module) for d in node.decorator_list):
        return "a decorator runs at import"
    args = node.args
    values = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    annotations = [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    values += [a for a in (*annotations, node.returns) if a is not None]
    if not all(_simple(v, module) for v in values):
        return "a default or annotation that calls code"
    return None


def _class(node: ast.ClassDef, module: _Module) -> str | None:
    if not all(_plain_decorator(d, module) for d in node.decorator_list):
        return "a class decorator runs at import"
    if node.keywords:
        return "a class keyword (a metaclass) runs at import"
    for base in node.bases:
        why = _base(base, module)
        if why is not None:
            return why
    return _body(node.body, module)


def _base(base: ast.expr, module: _Module) -> str | None:
    """A base class's ``__init_subclass__`` and metaclass run when the class is made: a
    builtin's or a third-party one's are not the project's; a class of this module is as
    inert as its own statement, unless it defines ``__init_subclass__``."""
    target = base.value if isinstance(base, ast.Subscript) else base
    root = target
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name):
        return "a computed base class"
    if root.id in module.classes and root is target:
        own = module.classes[root.id]
        hooks = any(
            isinstance(s, ast.FunctionDef) and s.name == "__init_subclass__" for s in own.body
        )
        return "a base class with __init_subclass__" if hooks else None
    if root.id in module.rebound and root.id not in module.classes:
        return "a base class the module binds by other means"
    if root.id in module.imported:
        source, original = module.imported[root.id], module.originals.get(root.id, root.id)
        if module.where(source) != OUTSIDE or module.where(f"{source}.{original}") != OUTSIDE:
            return "a base class imported from the project"
        return None
    if root.id in _BUILTINS and root is target:
        return None
    return "a base class patchlane cannot place"


def _plain_decorator(node: ast.expr, module: _Module) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute) and target.attr in ("setter", "getter", "deleter"):
        # ``@x.setter``: a property of this class, made by a plain decorator above it.
        return isinstance(target.value, ast.Name)
    return _known(target, module, _PLAIN_DECORATORS)


def _own_names(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return not (target.id.startswith("__") and target.id.endswith("__")) or target.id in (
            "__all__",
            "__version__",
            "__doc__",
        )
    if isinstance(target, ast.Tuple | ast.List):
        return all(_own_names(e) for e in target.elts)
    return False


def _main_guard(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _simple(node: ast.expr, module: _Module) -> bool:
    """Whether evaluating ``node`` only reads names and builds values."""
    if isinstance(node, ast.Call):
        if not _known(node.func, module, _PURE_CALLS):
            return False
        args = [*node.args, *(k.value for k in node.keywords)]
        return all(_simple(a, module) for a in args)
    if isinstance(node, ast.Lambda | ast.NamedExpr | ast.Await | ast.Yield | ast.YieldFrom):
        return False
    if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
        return False
    return all(_simple(c, module) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))
