"""Mutants of the code under test, and a property re-run against each of them.

A mutant is one small change to one function's AST (a comparison, arithmetic, boolean,
constant or return mutation), compiled in the function's own module and swapped in as the
function's ``__code__``: every reference to the function, including a
``from billing import apply_refund`` made before the swap, runs the mutant. A property
that still passes against a mutant did not notice the change; one that notices no mutant
at all checks nothing.

Everything here runs inside the property lane's child process: the mutants execute
patched (untrusted) code with the same isolation as the property itself, and each run is
bounded by an ``ITIMER_REAL`` timer so that a mutant that loops forever costs at most its
timeout.
"""

from __future__ import annotations
import __future__

import ast
import copy
import math
import signal
import threading
import time
import types
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from patchlane.lanes.property.astnorm import (
    FunctionNode,
    SourceUnavailable,
    is_docstring,
    load_source,
    qualified_name,
)

# The order of kinds within one position, and the rotation that spreads a limited budget.
KINDS = ("compare", "arithmetic", "boolean", "constant", "return")

_CMP_SYMBOL: dict[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_CMP_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_ARITH_SYMBOL: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitAnd: "&",
    ast.BitXor: "^",
    ast.MatMult: "@",
}
# ``*`` becomes ``//`` (not ``/``) so that integer code stays integer: the property has to
# notice a wrong value, not merely a float where an int was expected.
_ARITH_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
    ast.BitXor: ast.BitOr,
}
_BOOL_SWAP: dict[type[ast.boolop], tuple[type[ast.boolop], str, str]] = {
    ast.And: (ast.Or, "and", "or"),
    ast.Or: (ast.And, "or", "and"),
}

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
_Op = TypeVar("_Op", ast.cmpop, ast.operator, ast.boolop)

# After the first expiry the timer keeps firing at this period, so that a mutant whose
# code swallows one timeout (a bare ``except:`` in a loop) is interrupted again.
_REFIRE_S = 0.05
# A caller's timer that fell due while mutants ran is re-armed to fire at once.
_MIN_REARM_S = 0.001


class Unmutatable(Exception):
    """A function (or one mutant of it) cannot be compiled and swapped in; ``str()`` says why."""


class _MutantTimeout(BaseException):
    """Raised by the alarm handler inside a mutant's run; never escapes this module.

    A ``BaseException`` so that ``except Exception`` in the property or the code under
    test does not swallow it.
    """


@dataclass(frozen=True)
class _Change:
    """One mutation: at the ``index``-th node of ``_visit``'s order, ``slot`` of a chain."""

    kind: str
    index: int
    slot: int
    replacement: object
    text: str


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
    change: _Change = field(compare=False, repr=False)


@dataclass(frozen=True)
class MutantOutcome:
    """What the property did against one mutant.

    ``status`` is ``killed`` (the property raised; ``detail`` names the exception),
    ``timeout`` (the run exceeded its timeout) or ``survived`` (the property passed).
    """

    mutant: Mutant
    status: str
    detail: str = ""

    @property
    def killed(self) -> bool:
        """Return whether the property caught this mutant (raised or timed out)."""
        return self.status != "survived"


@dataclass(frozen=True)
class MutationRun:
    """All outcomes of one property against the selected mutants.

    ``notes`` say what was not mutated and why (no source, a wrapper, no timer, ...).
    """

    outcomes: tuple[MutantOutcome, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def functions(self) -> tuple[str, ...]:
        """Return the names of the functions whose mutants ran, in mutant order."""
        return tuple(dict.fromkeys(o.mutant.function for o in self.outcomes))

    @property
    def tried(self) -> int:
        """Return the number of mutants the property ran against."""
        return len(self.outcomes)

    @property
    def killed(self) -> int:
        """Return the number of mutants the property caught."""
        return sum(1 for outcome in self.outcomes if outcome.killed)

    @property
    def survivors(self) -> tuple[str, ...]:
        """Return the descriptions of the mutants the property did not catch."""
        return tuple(o.mutant.description for o in self.outcomes if not o.killed)


@dataclass(frozen=True)
class _Visit:
    """A node in ``_visit`` order, with where it hangs so that it can be replaced."""

    node: ast.AST
    parent: ast.AST
    field: str
    position: int | None
    message: bool  # inside a ``raise`` or an ``assert`` message: strings there are prose


def _visit(definition: FunctionNode) -> list[_Visit]:
    """Return the nodes of a function body in a fixed pre-order.

    Left out: the definition's own decorators, defaults and annotations (evaluated by the
    enclosing scope, not by the function's code), every annotation, docstrings, and the
    literal parts of f-strings. The same source always gives the same order, so an index
    into it names a node in any deep copy of the definition.
    """
    out: list[_Visit] = []

    def visit(node: ast.AST, parent: ast.AST, name: str, pos: int | None, message: bool) -> None:
        out.append(_Visit(node, parent, name, pos, message))
        for child_field, value in ast.iter_fields(node):
            if child_field in ("annotation", "returns", "type_comment"):
                continue
            inner = (
                message
                or isinstance(node, ast.Raise)
                or (isinstance(node, ast.Assert) and child_field == "msg")
            )
            if isinstance(value, ast.AST):
                visit(value, node, child_field, None, inner)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if not isinstance(item, ast.AST) or _left_out(node, child_field, i, item):
                        continue
                    visit(item, node, child_field, i, inner)

    for i, stmt in enumerate(definition.body):
        if i == 0 and is_docstring(stmt):
            continue
        visit(stmt, definition, "body", i, False)
    return out


def _left_out(parent: ast.AST, name: str, pos: int, item: ast.AST) -> bool:
    if isinstance(parent, ast.JoinedStr) and isinstance(item, ast.Constant):
        return True  # an f-string's literal text
    docstring_owner = isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    return docstring_owner and name == "body" and pos == 0 and is_docstring(item)


def _constant_change(value: object) -> tuple[object, str] | None:
    if isinstance(value, bool):
        return (not value), f"{value} -> {not value}"
    if isinstance(value, int):
        new = 1 if value == 0 else 0 if value == 1 else value + 1
        return new, f"{value} -> {new}"
    if isinstance(value, float) and math.isfinite(value):
        new_float = 1.0 if value == 0 else value + 1.0
        return new_float, f"{value!r} -> {new_float!r}"
    if isinstance(value, str | bytes) and value:
        shown = repr(value) if len(value) <= 20 else repr(value[:17]) + "..."
        return value[:0], f"{shown} -> {value[:0]!r}"
    return None


def _short(node: ast.AST, width: int = 40) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _changes_at(index: int, visit: _Visit) -> list[_Change]:
    """Return the mutations of one node (none for most nodes)."""
    node = visit.node
    changes: list[_Change] = []
    if isinstance(node, ast.Compare):
        for slot, op in enumerate(node.ops):
            new_cmp = _CMP_SWAP.get(type(op))
            if new_cmp is not None:
                text = f"'{_CMP_SYMBOL[type(op)]}' -> '{_CMP_SYMBOL[new_cmp]}'"
                changes.append(_Change("compare", index, slot, new_cmp, text))
    elif isinstance(node, ast.BinOp | ast.AugAssign):
        new_op = _ARITH_SWAP.get(type(node.op))
        if new_op is not None:
            suffix = "=" if isinstance(node, ast.AugAssign) else ""
            old, new = _ARITH_SYMBOL[type(node.op)], _ARITH_SYMBOL[new_op]
            changes.append(
                _Change("arithmetic", index, 0, new_op, f"'{old}{suffix}' -> '{new}{suffix}'")
            )
    elif isinstance(node, ast.BoolOp):
        new_bool, old_text, new_text = _BOOL_SWAP[type(node.op)]
        changes.append(_Change("boolean", index, 0, new_bool, f"'{old_text}' -> '{new_text}'"))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        text = f"'{_short(node)}' -> '{_short(node.operand)}'"
        changes.append(_Change("boolean", index, 0, None, text))
    elif isinstance(node, ast.Constant):
        if not (visit.message and isinstance(node.value, str | bytes)):
            found = _constant_change(node.value)
            if found is not None:
                changes.append(_Change("constant", index, 0, found[0], found[1]))
    elif isinstance(node, ast.Return) and node.value is not None and not _returns_none(node.value):
        text = f"'return {_short(node.value)}' -> 'return None'"
        changes.append(_Change("return", index, 0, None, text))
    return changes


def _returns_none(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is None


def _apply(definition: FunctionNode, change: _Change) -> None:
    """Apply ``change`` to ``definition`` (a private deep copy) in place."""
    visit = _visit(definition)[change.index]
    node = visit.node
    if isinstance(node, ast.Compare):
        node.ops[change.slot] = _instance(change.replacement, ast.cmpop)
    elif isinstance(node, ast.BinOp | ast.AugAssign):
        node.op = _instance(change.replacement, ast.operator)
    elif isinstance(node, ast.BoolOp):
        node.op = _instance(change.replacement, ast.boolop)
    elif isinstance(node, ast.UnaryOp):
        _replace(visit, node.operand)
    elif isinstance(node, ast.Constant):
        node.value = change.replacement  # type: ignore[assignment] # a constant's new value
    elif isinstance(node, ast.Return) and node.value is not None:
        node.value = ast.copy_location(ast.Constant(None), node.value)
    else:  # pragma: no cover - _changes_at only creates changes for the kinds above
        raise Unmutatable(f"no mutation applies to {type(node).__name__}")


def _instance(cls: object, base: type[_Op]) -> _Op:
    if not (isinstance(cls, type) and issubclass(cls, base)):  # pragma: no cover
        raise Unmutatable(f"bad replacement {cls!r}")
    return cls()


def _replace(visit: _Visit, new: ast.AST) -> None:
    if visit.position is None:
        setattr(visit.parent, visit.field, new)
    else:
        getattr(visit.parent, visit.field)[visit.position] = new


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
    generated code), or source that does not compile to the live ``__code__`` (a wrapper
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
        self._imports = _module_imports(self.source.module)
        self._visits = _visit(self.source.node)
        try:
            code = self._compile(copy.deepcopy(self.source.node))
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
        located: list[tuple[int, int, int, int, int, _Change]] = []
        for index, visit in enumerate(self._visits):
            line = getattr(visit.node, "lineno", 0)
            col = getattr(visit.node, "col_offset", 0)
            for change in _changes_at(index, visit):
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

    def compile_mutant(self, change: _Change) -> types.CodeType:
        """Return the code of this function with ``change`` applied.

        Raises ``Unmutatable`` when the mutant does not compile or would change the
        function's free variables (``__code__`` cannot then be swapped).
        """
        definition = copy.deepcopy(self.source.node)
        _apply(definition, change)
        try:
            code = self._compile(definition)
        except (SyntaxError, ValueError) as exc:
            raise Unmutatable(f"does not compile: {exc}") from None
        if code.co_freevars != self.original.co_freevars:
            # The change dropped the only use of a free variable (``return super().f()``
            # became ``return None``): a dead reference restores the closure's shape.
            definition.body.append(_keep_alive(self.original.co_freevars, definition.body[-1]))
            code = self._compile(definition)
        if code.co_freevars != self.original.co_freevars:  # pragma: no cover - defensive
            raise Unmutatable("it would change the function's closure")
        return code


def _keep_alive(names: tuple[str, ...], last: ast.stmt) -> ast.stmt:
    """Return ``if False: (name, ...)``: never run, but the compiler still sees the names."""
    names_tuple = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load())
    stmt = ast.If(test=ast.Constant(False), body=[ast.Expr(names_tuple)], orelse=[])
    return ast.fix_missing_locations(ast.copy_location(stmt, last))


def prepare(called: Sequence[types.FunctionType]) -> tuple[list[MutableFunction], list[str]]:
    """Return the mutable functions among ``called`` (sorted by name, each code once) and
    notes naming the ones left out and why."""
    functions: list[MutableFunction] = []
    notes: list[str] = []
    seen: set[types.CodeType] = set()
    for func in called:
        if not isinstance(func, types.FunctionType):
            notes.append(f"{func!r}: not mutated: not a Python function")
            continue
        if func.__code__ in seen:
            continue
        seen.add(func.__code__)
        try:
            functions.append(MutableFunction(func))
        except Unmutatable as exc:
            notes.append(f"{qualified_name(func)}: not mutated: {exc}")
    functions.sort(key=lambda f: (f.name, f.original.co_filename, f.original.co_firstlineno))
    return functions, notes


def select_mutants(mutants: Sequence[Mutant], limit: int) -> list[Mutant]:
    """Return at most ``limit`` of ``mutants``, spread fairly, in their original order.

    Functions take turns (in order of first appearance) and each function's turn takes
    its next kind in ``KINDS`` rotation, so a small budget still covers every function
    and every kind of mutation before it spends a second mutant on any of them.
    """
    if limit <= 0:
        return []
    if len(mutants) <= limit:
        return list(mutants)
    # Positions into ``mutants``, queued per function and kind in their original order.
    queues: dict[str, dict[str, deque[int]]] = {}
    for position, mutant in enumerate(mutants):
        by_kind = queues.setdefault(mutant.function, {kind: deque() for kind in KINDS})
        by_kind[mutant.kind].append(position)
    cursor = dict.fromkeys(queues, 0)
    picked: set[int] = set()
    while len(picked) < limit:
        for function, by_kind in queues.items():
            if len(picked) == limit:
                break
            for step in range(len(KINDS)):
                turn = (cursor[function] + step) % len(KINDS)
                queue = by_kind[KINDS[turn]]
                if queue:
                    picked.add(queue.popleft())
                    cursor[function] = turn + 1
                    break
    return [mutant for position, mutant in enumerate(mutants) if position in picked]


def plan_mutants(
    called: Sequence[types.FunctionType], limit: int
) -> tuple[list[Mutant], list[str]]:
    """Return the mutants a run with this ``limit`` tries, and notes on what was left out."""
    functions, notes = prepare(called)
    every = [mutant for function in functions for mutant in function.mutants()]
    return select_mutants(every, limit), notes


# This module's frames, as the alarm handler sees them (the compiler's own spelling).
_THIS_FILE = (lambda: None).__code__.co_filename


class _Alarm:
    """The ``SIGALRM`` handler for mutant runs.

    It raises ``_MutantTimeout`` only while armed and never inside this module's own
    frames, so the bookkeeping that restores ``__code__`` cannot be interrupted by it.
    """

    def __init__(self) -> None:
        self.armed = False
        self.fired = False

    def handler(self, signum: int, frame: types.FrameType | None) -> None:
        """Record the expiry; raise ``_MutantTimeout`` unless disarmed or in this module."""
        if not self.armed:
            return
        self.fired = True
        if frame is not None and frame.f_code.co_filename == _THIS_FILE:
            return  # the timer fires again after _REFIRE_S if the run goes on
        raise _MutantTimeout


def _timer_unavailable() -> str | None:
    if not (hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")):
        return "this platform has no interval timer (SIGALRM) to bound a mutant's run"
    if threading.current_thread() is not threading.main_thread():
        return "the per-mutant timeout needs SIGALRM, which only the main thread receives"
    if signal.getsignal(signal.SIGALRM) is None:
        return "the current SIGALRM handler was not installed from Python and could not be restored"
    return None


def _describe(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()
    first = message[0] if message else ""
    if len(first) > 100:
        first = first[:97] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _run_bounded(
    prop: Callable[[], None],
    func: types.FunctionType,
    code: types.CodeType,
    alarm: _Alarm,
    budget: float,
) -> tuple[str, str]:
    """Run ``prop`` with ``func`` running ``code``, for at most ``budget`` seconds.

    Returns ``(status, detail)``: ``survived`` (it passed), ``killed`` (it raised:
    ``detail`` names the exception) or ``timeout``. ``func``'s own code is back in place
    when this returns or raises (``KeyboardInterrupt`` is the only exception let through).
    """
    original = func.__code__
    alarm.fired = False
    detail: str | None = None
    try:
        func.__code__ = code
        alarm.armed = True
        signal.setitimer(signal.ITIMER_REAL, budget, _REFIRE_S)
        prop()
    except _MutantTimeout:
        pass  # alarm.fired says so
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - anything the property raises kills the mutant
        detail = _describe(exc)
    finally:
        # Only this module's frames run here, so the alarm cannot interrupt the restore.
        alarm.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        func.__code__ = original
    if alarm.fired:
        return "timeout", f"exceeded {budget:g} s"
    if detail is not None:
        return "killed", detail
    return "survived", ""


def run_mutants(
    prop: Callable[[], None],
    called: Sequence[types.FunctionType],
    *,
    limit: int,
    per_mutant_timeout_s: float,
) -> MutationRun:
    """Run ``prop`` once against each selected mutant of the ``called`` functions.

    Returns every outcome (in mutant order) with notes on functions or mutants left out.
    Each function's original ``__code__`` is restored after each run, whatever the
    property did. The caller's ``SIGALRM`` handler and ``ITIMER_REAL`` timer are paused
    and restored (a timer that fell due meanwhile fires right after; its deadline also
    caps the mutant runs). Must run in the main thread for the timeout; elsewhere nothing
    is run and a note says so. Raises ``ValueError`` for a negative ``limit`` or a
    non-positive timeout.
    """
    if limit < 0:
        raise ValueError(f"mutants limit must be >= 0, not {limit}")
    if not per_mutant_timeout_s > 0:
        raise ValueError(f"per-mutant timeout must be > 0, not {per_mutant_timeout_s}")
    if limit == 0:
        return MutationRun()
    selected, notes = plan_mutants(called, limit)
    if not selected:
        return MutationRun(notes=tuple(notes))
    reason = _timer_unavailable()
    if reason is not None:
        return MutationRun(notes=(*notes, f"mutation skipped: {reason}"))
    previous_handler = signal.getsignal(signal.SIGALRM)
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, 0)
    outer_deadline = time.monotonic() + previous_delay if previous_delay > 0 else math.inf
    alarm = _Alarm()
    outcomes: list[MutantOutcome] = []
    signal.signal(signal.SIGALRM, alarm.handler)
    try:
        # A baseline run first: the property must pass unmutated within the timeout, or a
        # mutant's failure or timeout would be the property's own (slow, flaky), not a kill.
        baseline = selected[0].target
        budget = min(per_mutant_timeout_s, outer_deadline - time.monotonic())
        status, detail = _run_bounded(prop, baseline.func, baseline.original, alarm, budget)
        if status != "survived":
            reason = f"failed: {detail}" if status == "killed" else f"took longer than {budget:g} s"
            notes.append(f"mutation skipped: the property, unmutated, {reason}")
            selected = []
        for mutant in selected:
            budget = min(per_mutant_timeout_s, outer_deadline - time.monotonic())
            if budget <= 0:
                notes.append("mutation stopped early: the caller's own timer fell due")
                break
            try:
                code = mutant.target.compile_mutant(mutant.change)
            except Unmutatable as exc:
                notes.append(f"{mutant.description}: skipped: {exc}")
                continue
            status, detail = _run_bounded(prop, mutant.target.func, code, alarm, budget)
            if status == "timeout" and budget < per_mutant_timeout_s:
                notes.append("mutation stopped early: the caller's own timer fell due")
                break
            outcomes.append(MutantOutcome(mutant, status, detail))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay > 0:
            remaining = outer_deadline - time.monotonic()
            signal.setitimer(signal.ITIMER_REAL, max(remaining, _MIN_REARM_S), previous_interval)
    return MutationRun(tuple(outcomes), tuple(notes))
