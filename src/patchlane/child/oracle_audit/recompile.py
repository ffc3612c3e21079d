"""A live function rebuilt from its source, and the mutants of it.

``MutableFunction`` checks that a function's source recompiles to exactly its live
``__code__`` (same module flags, imports, class and closure shape) and then compiles one
mutation (``mutations``) at a time into a code object that can be swapped in as the
function's ``__code__``.
"""

from __future__ import annotations
import __future__

import ast
import copy
import types
import warnings
from dataclasses import dataclass, field

from patchlane.child.oracle_audit.astnorm import (
    FunctionNode,
    SourceUnavailable,
    load_source,
    qualified_name,
)
from patchlane.child.oracle_audit.mutations import (
    KINDS,
    Change,
    Unmutatable,
    apply_change,
    changes_at,
    visit_body,
)
from patchlane.inputs.untrusted import DEPTH_FAILURES

# Compiler flags of ``from __future__`` imports: a mutant compiles like its module did.
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
# Code flags that must agree between the live code and its recompiled source.
_SHAPE_FLAGS = (
    0x04  # CO_VARARGS
    | 0x08  # CO_VARKEYWORDS
    | 0x20  # CO_GENERATOR
    | 0x80  # CO_COROUTINE
    | 0x100  # CO_ITERABLE_COROUTINE
    | 0x200  # CO_ASYNC_GENERATOR
)
_OUTER = "__patchlane_outer__"


@dataclass(frozen=True)
class Mutant:
    """One mutant of one function.

    ``id`` is stable for the same source (``billing.apply_refund:47:7:compare:0``:
    function, line, column, kind, ordinal among changes at that place);
    ``description`` is one line (``billing.apply_refund line 47: '>' -> '>='``).
    """

    id: str
    function: str
    line: int
    col: int
    kind: str
    description: str
    target: MutableFunction = field(compare=False, repr=False)
    change: Change = field(compare=False, repr=False)


def _strip(definition: FunctionNode) -> None:
    # Decorators, defaults and annotations are evaluated by the enclosing scope; the
    # function's own code does not contain them, and they must not run again here.
    definition.decorator_list = []
    definition.returns = None
    arguments = definition.args
    for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        arg.annotation = None
    for extra in (arguments.vararg, arguments.kwarg):
        if extra is not None:
            extra.annotation = None
    arguments.defaults = []
    arguments.kw_defaults = [None] * len(arguments.kwonlyargs)


def _shape(code: types.CodeType) -> tuple[object, ...]:
    """Return what must agree for two code objects to be the same function body."""
    consts = tuple(_const_shape(const) for const in code.co_consts)
    return (
        code.co_code,
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        code.co_argcount,
        code.co_posonlyargcount,
        code.co_kwonlyargcount,
        code.co_flags & _SHAPE_FLAGS,
        consts,
    )


def _module_imports(module: ast.Module) -> list[ast.stmt]:
    """Return copies of the import statements of ``module``'s own scope (not ``__future__``).

    The compiler looks at them: in 3.11 a call ``time.time()`` on an imported module
    compiles to ``LOAD_ATTR`` rather than ``LOAD_METHOD``. A definition compiled without
    them would not reproduce its live code.
    """
    found: list[ast.stmt] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import) or (
                isinstance(child, ast.ImportFrom) and child.module != "__future__"
            ):
                found.append(copy.deepcopy(child))
            elif isinstance(
                child, ast.stmt | ast.excepthandler | ast.match_case
            ) and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                walk(child)  # imports under a module-level if/try/with/match count too

    walk(module)
    return found


def _const_shape(const: object) -> object:
    if isinstance(const, types.CodeType):
        return _shape(const)
    if isinstance(const, tuple):
        return ("tuple", tuple(_const_shape(item) for item in const))
    if isinstance(const, frozenset):
        # A frozenset loaded from a .pyc may iterate in another order than a fresh one.
        return ("frozenset", tuple(sorted(repr(_const_shape(item)) for item in const)))
    return (type(const).__name__, repr(const))


def _enclosing_class(qualname: str) -> str | None:
    # ``Invoice.total`` is a method of a class named Invoice; ``make.<locals>.add`` is not.
    parts = qualname.split(".")
    if len(parts) >= 2 and parts[-2] != "<locals>":
        return parts[-2]
    return None


class MutableFunction:
    """A live function whose source recompiles to exactly its live code.

    Raises ``Unmutatable`` from the constructor when that is not so: no source (a lambda,
    generated code, a file that cannot be parsed), source nested too deeply to walk or
    recompile, or source that does not compile to the live ``__code__`` (a wrapper
    made by a decorator, a file edited since import, a closure shape that cannot be
    rebuilt). Checking the round trip first means that a mutant differs from the live
    function by its one change and nothing else.
    """

    def __init__(self, func: types.FunctionType) -> None:
        self.func = func
        self.name = qualified_name(func)
        self.original = func.__code__
        try:
            self.source = load_source(func)
        except SourceUnavailable as exc:
            raise Unmutatable(str(exc)) from None
        self._flags = self.original.co_flags & _FUTURE_FLAGS
        self._class = _enclosing_class(func.__qualname__)
        try:
            # These walks (and deepcopy, and the compiler) recurse: the patch's code can
            # parse and still be too deep for them.
            self._imports = _module_imports(self.source.module)
            self._visits = visit_body(self.source.node)
            code = self._compile(copy.deepcopy(self.source.node))
        except DEPTH_FAILURES:
            raise Unmutatable("its source is nested too deeply to mutate") from None
        except (SyntaxError, ValueError) as exc:
            raise Unmutatable(f"its source does not compile on its own: {exc}") from None
        if _shape(code) != _shape(self.original):
            raise Unmutatable(
                "its source does not compile to its live code (a decorator's wrapper, "
                "generated code, or a file edited since import)"
            )

    def _compile(self, definition: FunctionNode) -> types.CodeType:
        """Return the code object of ``definition`` compiled as the live function was.

        A method is compiled inside a class of the same name (same name mangling, same
        ``__class__`` cell); a closure inside an outer function that defines its free
        variables, so the code has the live function's free variables in the same order.
        """
        _strip(definition)
        stmt: ast.stmt = definition
        path = [definition.name]
        if self._class is not None:
            stmt = ast.ClassDef(
                name=self._class, bases=[], keywords=[], body=[stmt], decorator_list=[]
            )
            path.insert(0, self._class)
        free = [name for name in self.original.co_freevars if name != "__class__"]
        if free:
            assigns: list[ast.stmt] = [
                ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Constant(None))
                for name in free
            ]
            no_args = ast.arguments(
                posonlyargs=[],
                args=[],
                vararg=None,
                kwonlyargs=[],
                kw_defaults=[],
                kwarg=None,
                defaults=[],
            )
            stmt = ast.FunctionDef(
                name=_OUTER, args=no_args, body=[*assigns, stmt], decorator_list=[], returns=None
            )
            path.insert(0, _OUTER)
        if stmt is not definition:
            ast.copy_location(stmt, definition)
        # The imports are compiled, never executed: only the definition's code is taken.
        module = ast.Module(body=[*self._imports, stmt], type_ignores=[])
        ast.fix_missing_locations(module)
        with warnings.catch_warnings():
            # A mutant such as ``x is 1`` is legal but warned about; the warning is noise.
            warnings.simplefilter("ignore")
            code: types.CodeType = compile(
                module, self.original.co_filename, "exec", flags=self._flags, dont_inherit=True
            )
        for name in path:
            found = [
                c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name
            ]
            if not found:  # pragma: no cover - the compiler always emits the definitions
                raise Unmutatable(f"compiled code for {name!r} not found")
            code = found[0]
        return code.replace(co_qualname=self.original.co_qualname)

    def mutants(self) -> list[Mutant]:
        """Return every mutant of this function, ordered by line, column and kind."""
        located: list[tuple[int, int, int, int, int, Change]] = []
        for index, visit in enumerate(self._visits):
            line = getattr(visit.node, "lineno", 0)
            col = getattr(visit.node, "col_offset", 0)
            for change in changes_at(index, visit):
                located.append((line, col, KINDS.index(change.kind), index, change.slot, change))
        located.sort(key=lambda item: item[:5])
        seen: dict[tuple[int, int, str], int] = {}
        out: list[Mutant] = []
        for line, col, _, _, _, change in located:
            ordinal = seen.get((line, col, change.kind), 0)
            seen[(line, col, change.kind)] = ordinal + 1
            out.append(
                Mutant(
                    id=f"{self.name}:{line}:{col}:{change.kind}:{ordinal}",
                    function=self.name,
                    line=line,
                    col=col,
                    kind=change.kind,
                    description=f"{self.name} line {line}: {change.text}",
                    target=self,
                    change=change,
                )
            )
        return out

    def compile_mutant(self, change: Change) -> types.CodeType:
        """Return the code of this function with ``change`` applied.

        Raises ``Unmutatable`` when the mutant does not compile (nested too deeply
        included) or would change the function's free variables (``__code__`` cannot then
        be swapped).
        """
        try:
            definition = copy.deepcopy(self.source.node)
            apply_change(definition, change)
            code = self._compile(definition)
            if code.co_freevars != self.original.co_freevars:
                # The change dropped the only use of a free variable (``return super().f()``
                # became ``return None``): a dead reference restores the closure's shape.
                last = definition.body[-1]
                definition.body.append(_keep_alive(self.original.co_freevars, last))
                code = self._compile(definition)
        except DEPTH_FAILURES:
            raise Unmutatable("nested too deeply to compile") from None
        except (SyntaxError, ValueError) as exc:
            raise Unmutatable(f"does not compile: {exc}") from None
        if code.co_freevars != self.original.co_freevars:  # pragma: no cover - defensive
            raise Unmutatable("it would change the function's closure")
        return code


def _keep_alive(names: tuple[str, ...], last: ast.stmt) -> ast.stmt:
    """Return ``if False: (name, ...)``: never run, but the compiler still sees the names."""
    names_tuple = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load())
    stmt = ast.If(test=ast.Constant(False), body=[ast.Expr(names_tuple)], orelse=[])
    return ast.fix_missing_locations(ast.copy_location(stmt, last))
