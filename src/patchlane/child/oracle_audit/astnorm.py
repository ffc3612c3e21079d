"""Source and structure of live functions, for the oracle audit.

Two questions share this module: where is a live function's definition (its ``def`` node
with the file's own line and column numbers), and what is the *shape* of an expression
once variable names stop mattering (``normalise``), so that ``c if r > c else c - r`` and
``charge if refund > charge else charge - refund`` compare equal.
"""

from __future__ import annotations

import ast
import functools
import linecache
import types
from dataclasses import dataclass

from patchlane.inputs.untrusted import parse_python

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

# A normalised expression: nested tuples of str, int, float, ... (hashable, comparable).
Key = tuple[object, ...]

# Fields that carry no meaning for what an expression computes.
_IGNORED_FIELDS = frozenset({"ctx", "type_comment", "kind", "annotation", "returns", "type_params"})

# ``a > b`` is ``b < a``: ordered comparisons are rewritten to ``<``/``<=`` before numbering.
_FLIPPED: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.Gt: ast.Lt, ast.GtE: ast.LtE}


class SourceUnavailable(Exception):
    """The definition of a live function cannot be found; ``str()`` says why (without the
    function's name, which the caller adds)."""


@dataclass(frozen=True)
class FunctionSource:
    """Where a live function is defined.

    ``node`` is its ``def`` node parsed from the whole file, so its line and column numbers
    are the file's; ``lines`` are the file's lines (``lines[n - 1]`` is line ``n``);
    ``module`` is the whole file's tree (shared: never mutate it).
    """

    func: types.FunctionType
    name: str
    filename: str
    node: FunctionNode
    lines: tuple[str, ...]
    module: ast.Module

    def line(self, lineno: int, width: int = 120) -> str:
        """Return line ``lineno`` of the file, stripped and cut to ``width`` characters."""
        text = self.lines[lineno - 1].strip() if 0 < lineno <= len(self.lines) else ""
        return text if len(text) <= width else text[: width - 3] + "..."


def qualified_name(func: types.FunctionType) -> str:
    """Return ``module.qualname`` of ``func`` (``billing.apply_refund``)."""
    return f"{func.__module__}.{func.__qualname__}"


@functools.lru_cache(maxsize=64)
def _parse(text: str, filename: str) -> ast.Module:
    # Cached on the text itself: several functions of one module share one parse, and a
    # file edited since the last call is parsed afresh. Callers never mutate the tree.
    # The code under test is the patch's: parse_python turns every way it can fail to
    # parse (nesting, NUL bytes, size) into a SyntaxError.
    return parse_python(text, filename)


def load_source(func: types.FunctionType) -> FunctionSource:
    """Return the definition of ``func`` as found in its source file.

    The whole file is parsed (not ``inspect.getsource``'s dedented slice) so that nested
    functions, odd indentation and decorators need no special case and positions are the
    file's. Raises ``SourceUnavailable`` for a lambda, a function generated from a string
    (a dataclass ``__init__``), a missing or unparsable file, or no matching ``def``.
    """
    code = func.__code__
    name = qualified_name(func)
    if code.co_name == "<lambda>":
        raise SourceUnavailable("a lambda has no def to parse")
    filename = code.co_filename
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, func.__globals__)
    if not lines:
        raise SourceUnavailable(f"no source file ({filename})")
    text = "".join(lines)
    try:
        module = _parse(text, filename)
    except SyntaxError as exc:
        raise SourceUnavailable(f"cannot parse {filename}: {exc}") from None
    for node in ast.walk(module):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if node.name != code.co_name:
            continue
        # co_firstlineno is the first decorator's line; accept the ``def`` line as well.
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if code.co_firstlineno in (first, node.lineno):
            return FunctionSource(func, name, filename, node, tuple(lines), module)
    raise SourceUnavailable(f"no 'def {code.co_name}' at line {code.co_firstlineno} of {filename}")


def body_statements(node: FunctionNode) -> list[ast.stmt]:
    """Return the statements of a function body without its docstring."""
    body = list(node.body)
    if body and is_docstring(body[0]):
        body = body[1:]
    return body


def is_docstring(stmt: ast.AST) -> bool:
    """Return whether ``stmt`` is a bare string expression (a docstring's form)."""
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | complex) and not isinstance(value, bool)


def _constant_key(value: object) -> Key:
    # Numbers, booleans and None keep their value: a formula copied from the code under
    # test copies its constants too, and ``x * 100`` is not ``x * 3``. Strings and bytes
    # keep only their type: they are messages and keys, not arithmetic.
    if isinstance(value, str | bytes):
        return ("const", type(value).__name__)
    return ("const", type(value).__name__, repr(value))


class _Normaliser:
    """One expression's normalisation: placeholders are numbered per root expression."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}

    def placeholder(self, name: str) -> Key:
        return ("name", self.names.setdefault(name, len(self.names)))

    def visit(self, node: ast.AST) -> Key:
        if isinstance(node, ast.Name):
            return self.placeholder(node.id)
        if isinstance(node, ast.arg):
            return self.placeholder(node.arg)
        if isinstance(node, ast.Constant):
            return _constant_key(node.value)
        if isinstance(node, ast.Attribute):
            # The base is a variable (renamed); the attribute is an API name (kept).
            return ("attr", self.visit(node.value), node.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            # A callee called by name is part of the formula (``min`` is not ``max``).
            return (
                "call",
                node.func.id,
                tuple(self.visit(arg) for arg in node.args),
                tuple(self.visit(kw) for kw in node.keywords),
            )
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub | ast.UAdd)
            and isinstance(node.operand, ast.Constant)
            and _is_number(node.operand.value)
        ):
            # ``-1`` is a constant, not an operator applied to one.
            value = node.operand.value
            return _constant_key(-value if isinstance(node.op, ast.USub) else value)  # type: ignore[operator]
        if (
            isinstance(node, ast.Compare)
            and node.ops
            and all(type(op) in _FLIPPED for op in node.ops)
        ):
            operands = [node.left, *node.comparators][::-1]
            ops = [(_FLIPPED[type(op)].__name__,) for op in node.ops][
                ::-1
            ]  # as generic() spells an operator
            keys = [self.visit(operand) for operand in operands]
            return ("Compare", keys[0], tuple(ops), tuple(keys[1:]))
        return self.generic(node)

    def generic(self, node: ast.AST) -> Key:
        parts: list[object] = [type(node).__name__]
        for field, value in ast.iter_fields(node):
            if field in _IGNORED_FIELDS:
                continue
            parts.append(self.field(value))
        return tuple(parts)

    def field(self, value: object) -> object:
        if isinstance(value, ast.AST):
            return self.visit(value)
        if isinstance(value, list):
            return tuple(self.field(item) for item in value)
        return value  # identifiers (keyword names), conversion flags, None


def normalise(node: ast.expr) -> Key:
    """Return the structural key of an expression.

    Every variable name (also an attribute's base and a lambda's or comprehension's
    parameter) becomes a placeholder numbered in order of first appearance within
    ``node``; ``ctx`` and similar bookkeeping are dropped; operators, attribute names,
    keyword names and the names of called functions are kept; numbers keep their value,
    strings only their type; ``a > b`` is written ``b < a``. Equal keys mean the same
    formula up to consistent renaming.
    """
    return _Normaliser().visit(node)


def is_leaf(node: ast.expr) -> bool:
    """Return whether ``node`` only names a value (a name, constant, or attribute/subscript chain of those)."""
    if isinstance(node, ast.Name | ast.Constant):
        return True
    if isinstance(node, ast.Attribute | ast.Starred):
        return is_leaf(node.value)
    if isinstance(node, ast.Subscript):
        return is_leaf(node.value) and is_leaf(node.slice)
    return False


def _call_computes(node: ast.Call) -> bool:
    # ``len(xs)`` reads a value; ``max(a - b, 0)`` transforms a computed one.
    values = [*node.args, *(kw.value for kw in node.keywords)]
    return any(not is_leaf(value) for value in values)


@dataclass(frozen=True)
class Weight:
    """How much of a formula an expression holds.

    ``operators`` counts BinOp, BoolOp, Compare, UnaryOp (not a signed literal), IfExp and
    calls whose arguments are computed; ``arithmetic`` counts those that compute a value:
    BinOp, IfExp and ``-x``/``+x``/``~x``.
    """

    operators: int
    arithmetic: int


def weight(node: ast.expr) -> Weight:
    """Return the ``Weight`` of the expression ``node`` (all its sub-expressions included)."""
    operators = arithmetic = 0
    for sub in ast.walk(node):
        if isinstance(sub, ast.BinOp | ast.IfExp):
            operators += 1
            arithmetic += 1
        elif isinstance(sub, ast.UnaryOp):
            if isinstance(sub.op, ast.Not):
                operators += 1
            elif not (isinstance(sub.operand, ast.Constant) and _is_number(sub.operand.value)):
                operators += 1
                arithmetic += 1
        elif isinstance(sub, ast.BoolOp | ast.Compare) or (
            isinstance(sub, ast.Call) and _call_computes(sub)
        ):
            operators += 1
    return Weight(operators, arithmetic)


# A shared expression is a finding only with at least this many operators.
MIN_OPERATORS = 2


def is_formula(node: ast.expr) -> bool:
    """Return whether a shared ``node`` would be a non-trivial formula.

    True when it has at least ``MIN_OPERATORS`` operators, at least one of which computes
    a value (arithmetic or a conditional choice), and it is not itself a predicate
    (Compare, BoolOp, ``not``). Predicates such as ``refund > charge`` or
    ``0 <= x and x <= cap`` are what a sound bounds property legitimately shares with the
    code's own guards; a formula is what a tautology copies. The value parts of a predicate
    (``a * b + c`` in ``a * b + c > 0``) are still examined on their own.
    """
    if isinstance(node, ast.Compare | ast.BoolOp):
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return False
    w = weight(node)
    return w.operators >= MIN_OPERATORS and w.arithmetic >= 1
