"""A failing ``assert`` in a property shows the values of its operands, as pytest's does.

The property child compiles the one module it runs (a property module, or a test file the
map names) with ``compile_source`` rather than ``compile``: inside each function, every
``assert`` is rewritten so that its operands are evaluated once, in order, into temporaries
(names no source can spell), each comparison of a chain is made inline on them, and only an
assert that fails calls the builtin ``EXPLAIN`` (installed by the child, ``install``) to
build the ``AssertionError``. So ``assert total(items) == 4`` fails with ``assert 3 == 4
where 3 = total(items)``, no call is made again to explain it, and whether an assert holds
never depends on patchlane's helper: code under test that rebinds it can change a message,
never turn a failure into a pass (and the child's integrity check sees the rebinding: the
builtin is in its snapshot).

Semantics kept: operands are evaluated left to right, a chain (``a < b < c``) stops at its
first false comparison without evaluating the rest, the message expression is evaluated
only when the assert fails, and an ``AssertionError`` with a message carries that message
as its argument (a ``seed``-style property's ``(seed, i, ...)`` tuple), with the explanation in
``EXPLANATION``. Asserts at module or class level are left alone (their temporaries would be
module or class attributes). This is far smaller than pytest's rewriter (no ``and``/``or``
breakdown, no diff of long sequences) and costs the child no import of pytest.
"""

from __future__ import annotations

import ast
import builtins
import types
from typing import Any, TypeVar

_N = TypeVar("_N", bound=ast.AST)

EXPLAIN = "__patchlane_assert__"
"""The builtin a failing rewritten assert calls to build its ``AssertionError``."""
EXPLANATION = "patchlane_explanation"
"""The attribute of an ``AssertionError`` with a message that holds the explanation."""
_TEMP = "@patchlane{}_{}"  # "@" cannot appear in a name of the source: no clash
_REPR_LIMIT = 240
_SOURCE_LIMIT = 200
_OPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}


def compile_source(source: bytes, filename: str) -> types.CodeType:
    """Compile a module's ``source`` as an import would (``dont_inherit``), its asserts
    rewritten (see the module). Raises what ``compile`` raises for bad source; a rewrite
    that fails for any other reason gives the plain compilation (deterministically: the
    child's integrity check compiles the same way and must get the same code)."""
    if b"assert" not in source:
        return compile(source, filename, "exec", dont_inherit=True)
    tree = ast.parse(source, filename)
    try:
        if not _rewrite_body(tree.body, False, [0], source.splitlines(keepends=True)):
            return compile(source, filename, "exec", dont_inherit=True)
        return compile(tree, filename, "exec", dont_inherit=True)
    except (ValueError, TypeError, RecursionError, SyntaxError):
        return compile(source, filename, "exec", dont_inherit=True)


def install() -> None:
    """Make ``EXPLAIN`` a builtin (the child does this before its integrity snapshot)."""
    setattr(builtins, EXPLAIN, explain)


_BODIES = ("body", "orelse", "finalbody")


def _rewrite_body(
    body: list[ast.stmt], in_function: bool, count: list[int], lines: list[bytes]
) -> bool:
    """Rewrite, in place, the asserts of ``body`` and of the statements nested in it that
    run in a function (not at module or class level); only statements are walked (an
    assert is one), never expressions. Return whether any assert was rewritten."""
    changed = False
    index = 0
    while index < len(body):
        node = body[index]
        if isinstance(node, ast.Assert) and in_function:
            count[0] += 1
            replacement = _rewrite(node, count[0], lines)
            body[index : index + 1] = replacement
            index += len(replacement)
            changed = True
            continue
        inner = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or (
            in_function and not isinstance(node, ast.ClassDef)
        )
        blocks: list[list[ast.stmt]] = [getattr(node, name, None) or [] for name in _BODIES]
        blocks.extend(h.body for h in getattr(node, "handlers", ()) or ())
        blocks.extend(c.body for c in getattr(node, "cases", ()) or ())
        for block in blocks:
            if isinstance(block, list):
                changed = _rewrite_body(block, inner, count, lines) or changed
        index += 1
    return changed


def _rewrite(node: ast.Assert, number: int, lines: list[bytes]) -> list[ast.stmt]:
    """The statements that replace ``node`` (see the module); ``lines``: the source's."""

    def at(new: _N) -> _N:  # every node made here has the assert's location
        return ast.copy_location(new, node)

    test = node.test
    compares: list[ast.cmpop] = []
    if isinstance(test, ast.Compare):
        operands = [test.left, *test.comparators]
        compares = list(test.ops)
        ops = [_OPS[type(op)] for op in compares]
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        operands, ops = [test.operand], ["not"]
    else:
        operands, ops = [test], []
    names = [_TEMP.format(number, i) for i in range(len(operands))]
    sources = tuple(_segment(lines, o) for o in operands)
    shown = tuple(not isinstance(o, ast.Name | ast.Constant) for o in operands)
    spec = at(ast.Constant((tuple(ops), sources, shown)))  # type: ignore[arg-type]
    message = node.msg if node.msg is not None else at(ast.Constant(None))
    tail = [at(ast.Constant(node.msg is not None)), message]

    def load(i: int) -> ast.expr:
        return at(ast.Name(names[i], ast.Load()))

    def store(i: int) -> ast.stmt:
        return at(ast.Assign([at(ast.Name(names[i], ast.Store()))], operands[i]))

    def raise_if(fails: ast.expr, index: int, values: list[ast.expr]) -> ast.stmt:
        args = [spec, at(ast.Constant(index)), at(ast.Tuple(values, ast.Load())), *tail]
        call = at(ast.Call(at(ast.Name(EXPLAIN, ast.Load())), args, []))
        return at(ast.If(fails, [at(ast.Raise(call, None))], []))

    out: list[ast.stmt] = [store(0)]
    if not compares:
        fails = load(0) if ops else at(ast.UnaryOp(ast.Not(), load(0)))
        out.append(raise_if(fails, 0, [load(0)]))
    for i, op in enumerate(compares):
        out.append(store(i + 1))
        holds = at(ast.Compare(load(i), [op], [load(i + 1)]))
        out.append(raise_if(at(ast.UnaryOp(ast.Not(), holds)), i, [load(i), load(i + 1)]))
    # As pytest does: the temporaries hold nothing once the assert has passed.
    cleared: list[ast.expr] = [at(ast.Name(n, ast.Store())) for n in names]
    out.append(at(ast.Assign(cleared, at(ast.Constant(None)))))
    return out


def _segment(lines: list[bytes], node: ast.expr) -> str:
    """The source text of ``node`` (from the source's ``lines``: columns are UTF-8 byte
    offsets), on one line, at most ``_SOURCE_LIMIT`` characters."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    start, stop = node.col_offset, node.end_col_offset
    if not 0 <= first <= last < len(lines) or stop is None:
        return "?"
    if first == last:
        raw = lines[first][start:stop]
    else:
        raw = b"".join([lines[first][start:], *lines[first + 1 : last], lines[last][:stop]])
    text = " ".join(raw.decode("utf-8", "replace").split())
    return text if len(text) <= _SOURCE_LIMIT else text[: _SOURCE_LIMIT - 3] + "..."


def explain(
    spec: tuple[tuple[str, ...], tuple[str, ...], tuple[bool, ...]],
    index: int,
    values: tuple[Any, ...],
    has_message: bool,
    message: Any,
) -> AssertionError:
    """Return the ``AssertionError`` a rewritten assert raises: its message if it has one
    (the explanation then in ``EXPLANATION``), else the explanation. Never raises."""
    error = AssertionError(message) if has_message else AssertionError()
    try:
        text = explanation(spec, index, values)
    except Exception:  # noqa: BLE001 - a broken spec or repr must not hide the failure
        return error
    if has_message:
        setattr(error, EXPLANATION, text)
        return error
    return AssertionError(text)


def explanation(
    spec: tuple[tuple[str, ...], tuple[str, ...], tuple[bool, ...]],
    index: int,
    values: tuple[Any, ...],
) -> str:
    """Return ``assert 3 == 4 where 3 = total(items)`` for the failing comparison
    ``index`` of ``spec`` (operators, operands' sources, whether each is worth a
    ``where``), whose operands had ``values``."""
    ops, sources, shown = spec
    shown_values = [_repr(v) for v in values]
    if not ops:
        head = f"assert {shown_values[0]}"
        at = [0]
    elif ops == ("not",):
        head = f"assert not {shown_values[0]}"
        at = [0]
    else:
        head = f"assert {shown_values[0]} {ops[index]} {shown_values[1]}"
        at = [index, index + 1]
    wheres = [
        f"{value} = {sources[i]}"
        for i, value in zip(at, shown_values, strict=True)
        if shown[i] and value != sources[i]
    ]
    return f"{head} where {', '.join(wheres)}" if wheres else head


def _repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not hide the failure
        return f"<unrepresentable {type(value).__name__}>"
    text = " ".join(text.split()) if "\n" in text else text
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."
