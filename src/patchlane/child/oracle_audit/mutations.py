"""The mutation operators: which small changes a function's AST admits, and applying one.

A change is a comparison, arithmetic, boolean, constant or return mutation at one node of
a function body, named by the node's index in ``visit_body``'s fixed order so that it
applies to any deep copy of the same definition. Rebuilding the function's code with the
change applied is ``recompile``'s part; selecting and running mutants is ``mutants``'.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import TypeVar

from patchlane.child.oracle_audit.astnorm import FunctionNode, is_docstring
from patchlane.inputs.untrusted import DEPTH_FAILURES

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
_Op = TypeVar("_Op", ast.cmpop, ast.operator, ast.boolop)


class Unmutatable(Exception):
    """A function (or one mutant of it) cannot be compiled and swapped in; ``str()`` says why."""


@dataclass(frozen=True)
class Change:
    """One mutation: at the ``index``-th node of ``visit_body``'s order, ``slot`` of a chain."""

    kind: str
    index: int
    slot: int
    replacement: object
    text: str


@dataclass(frozen=True)
class Visit:
    """A node in ``visit_body`` order, with where it hangs so that it can be replaced."""

    node: ast.AST
    parent: ast.AST
    field: str
    position: int | None
    message: bool  # inside a ``raise`` or an ``assert`` message: strings there are prose


def visit_body(definition: FunctionNode) -> list[Visit]:
    """Return the nodes of a function body in a fixed pre-order.

    Left out: the definition's own decorators, defaults and annotations (evaluated by the
    enclosing scope, not by the function's code), every annotation, docstrings, and the
    literal parts of f-strings. The same source always gives the same order, so an index
    into it names a node in any deep copy of the definition.
    """
    out: list[Visit] = []

    def visit(node: ast.AST, parent: ast.AST, name: str, pos: int | None, message: bool) -> None:
        out.append(Visit(node, parent, name, pos, message))
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
    try:
        text = " ".join(ast.unparse(node).split())
    except DEPTH_FAILURES:
        # ast.unparse recurses deeper per level than visit_body: a node visit_body reached
        # can still be too deep to print. The description is only for people.
        return "<expression nested too deeply to show>"
    return text if len(text) <= width else text[: width - 3] + "..."


def changes_at(index: int, visit: Visit) -> list[Change]:
    """Return the mutations of one node (none for most nodes)."""
    node = visit.node
    changes: list[Change] = []
    if isinstance(node, ast.Compare):
        for slot, op in enumerate(node.ops):
            new_cmp = _CMP_SWAP.get(type(op))
            if new_cmp is not None:
                text = f"'{_CMP_SYMBOL[type(op)]}' -> '{_CMP_SYMBOL[new_cmp]}'"
                changes.append(Change("compare", index, slot, new_cmp, text))
    elif isinstance(node, ast.BinOp | ast.AugAssign):
        new_op = _ARITH_SWAP.get(type(node.op))
        if new_op is not None:
            suffix = "=" if isinstance(node, ast.AugAssign) else ""
            old, new = _ARITH_SYMBOL[type(node.op)], _ARITH_SYMBOL[new_op]
            changes.append(
                Change("arithmetic", index, 0, new_op, f"'{old}{suffix}' -> '{new}{suffix}'")
            )
    elif isinstance(node, ast.BoolOp):
        new_bool, old_text, new_text = _BOOL_SWAP[type(node.op)]
        changes.append(Change("boolean", index, 0, new_bool, f"'{old_text}' -> '{new_text}'"))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        text = f"'{_short(node)}' -> '{_short(node.operand)}'"
        changes.append(Change("boolean", index, 0, None, text))
    elif isinstance(node, ast.Constant):
        if not (visit.message and isinstance(node.value, str | bytes)):
            found = _constant_change(node.value)
            if found is not None:
                changes.append(Change("constant", index, 0, found[0], found[1]))
    elif isinstance(node, ast.Return) and node.value is not None and not _returns_none(node.value):
        text = f"'return {_short(node.value)}' -> 'return None'"
        changes.append(Change("return", index, 0, None, text))
    return changes


def _returns_none(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is None


def apply_change(definition: FunctionNode, change: Change) -> None:
    """Apply ``change`` to ``definition`` (a private deep copy) in place."""
    visit = visit_body(definition)[change.index]
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
    else:  # pragma: no cover - changes_at only creates changes for the kinds above
        raise Unmutatable(f"no mutation applies to {type(node).__name__}")


def _instance(cls: object, base: type[_Op]) -> _Op:
    if not (isinstance(cls, type) and issubclass(cls, base)):  # pragma: no cover
        raise Unmutatable(f"bad replacement {cls!r}")
    return cls()


def _replace(visit: Visit, new: ast.AST) -> None:
    if visit.position is None:
        setattr(visit.parent, visit.field, new)
    else:
        getattr(visit.parent, visit.field)[visit.position] = new
