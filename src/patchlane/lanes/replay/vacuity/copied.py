"""Values the patch adds to the code that also stand in the base's test files.

Code that knows its tests' inputs or outputs (a lookup table of every input the tests use,
a hard-coded expected string) passes them without doing the work. ``scan`` compares the
literals the patch adds to the code under test (those the base's version of the file lacks;
docstrings aside) with every literal of the base's test files:

- a *copied value*: an added number other than a trivial one (-1 to 2, ``_TRIVIAL``) or an
  added string or bytes of ``MIN_TEXT`` characters or more, not an identifier
  (``significant``), that a base test file holds (the text of an f-string is wording, not
  a value: left out);
- a *table*: an added dict, set, list or tuple literal of at least ``TABLE_MIN`` values
  (keys and values, one level of nesting flattened) most of whose values
  (``TABLE_SHARE``) stand in the base's tests, ``TABLE_MIN - 1`` of them significant.

Each is listed in the note; ``COPIED_LIMIT`` distinct copied values, or one table, make the
verdict ``undecided`` (rule 6). The figures are measured on honest history (CHANGELOG,
docs/architecture.md §4).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

# Numbers honest code uses whatever the tests say (indexes, signs, halves, pairs).
_TRIVIAL = frozenset({-1, 0, 1, 2})
MIN_TEXT = 5
TABLE_MIN = 4
TABLE_SHARE = 0.75
# Distinct copied values that make the verdict undecided. Measured on honest history
# (docs/architecture.md §2): no commit of tomli's 304 or attrs' last 1,000 had more than 3.
COPIED_LIMIT = 5

Value = tuple[str, object]  # (type name, value): 1 and 1.0 and True stay apart


@dataclass(frozen=True)
class Copied:
    """What ``scan`` found: the distinct copied values (``repr``, sorted) and the tables
    (``path:line: n values, k in the tests``)."""

    values: tuple[str, ...]
    tables: tuple[str, ...]

    @property
    def past_threshold(self) -> bool:
        """Whether what was found keeps the verdict at ``undecided``."""
        return len(self.values) >= COPIED_LIMIT or bool(self.tables)


def _key(value: object) -> Value | None:
    """The comparable key of a literal's value, or ``None`` for one that never counts."""
    if isinstance(value, bool) or value is None or value is Ellipsis:
        return None
    if isinstance(value, int | float | complex | str | bytes):
        return (type(value).__name__, value)
    return None


def significant(value: object) -> bool:
    """Whether a literal ``value`` is specific enough that its presence in both the code
    and the tests says something: a number other than -1..2, a text of ``MIN_TEXT``
    characters or more that is not a Python identifier. An identifier (``"__eq__"``,
    ``"on_setattr"``) names an attribute, option or keyword: the API's vocabulary, which
    code and tests share by necessity (measured: attrs' honest history)."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return value not in _TRIVIAL
    if isinstance(value, str):
        return len(value.strip()) >= MIN_TEXT and not value.isidentifier()
    if isinstance(value, bytes):
        return len(value.strip()) >= MIN_TEXT
    return False


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of ``tree``'s module, classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _constants(tree: ast.AST, *, templates: bool = True) -> Iterator[ast.Constant]:
    """The constants of ``tree`` but its docstrings (and, without ``templates``, but the
    text of its f-strings)."""
    skip = _docstrings(tree)
    if not templates:
        skip |= {
            id(part)
            for node in ast.walk(tree)
            if isinstance(node, ast.JoinedStr)
            for part in node.values
        }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in skip:
            yield node


def literals(source: bytes, *, templates: bool = True) -> set[Value]:
    """Every literal value of ``source`` (a Python file; none when it does not parse),
    negative numbers included, docstrings not; without ``templates``, not the text of
    f-strings either (a message's wording is formatting, not a value)."""
    tree = _parse(source)
    if tree is None:
        return set()
    found = {k for c in _constants(tree, templates=templates) if (k := _key(c.value)) is not None}
    for node in ast.walk(tree):
        if isinstance(node, ast.UnaryOp):
            key = _key(_number_or_constant(node))
            if key is not None:
                found.add(key)
    return found


def _parse(source: bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _table_values(node: ast.expr) -> list[object]:
    """The literal values of a container literal, one level of nesting flattened."""
    items: list[ast.expr | None] = []
    if isinstance(node, ast.Dict):
        items = [*node.keys, *node.values]
    elif isinstance(node, ast.Set | ast.List | ast.Tuple):
        items = list(node.elts)
    values: list[object] = []
    for item in items:
        for element in item.elts if isinstance(item, ast.Tuple | ast.List) else [item]:
            value = _number_or_constant(element)
            if value is not None:
                values.append(value)
    return values


def _number_or_constant(node: ast.expr | None) -> object:
    """The value of a literal (a negative number included), else ``None``."""
    if isinstance(node, ast.Constant):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float)
        and not isinstance(node.operand.value, bool)
    ):
        return -node.operand.value
    return None


def _tables(source: bytes) -> Iterator[tuple[ast.expr, list[object]]]:
    """The container literals of ``source`` of ``TABLE_MIN`` values or more, outermost
    first (``ast.walk`` is breadth first)."""
    tree = _parse(source)
    if tree is None:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict | ast.Set | ast.List | ast.Tuple):
            values = _table_values(node)
            if len(values) >= TABLE_MIN:
                yield node, values


def scan(
    changed_code: Mapping[str, tuple[bytes | None, bytes]], test_sources: Iterable[bytes]
) -> Copied:
    """Return the copied values and tables of the patch.

    ``changed_code``: path -> (the base's bytes or ``None`` for a new file, the head's
    bytes) for each changed file of the code under test; ``test_sources``: the base's test
    files. Raises nothing (a file that does not parse adds nothing)."""
    return scan_against(changed_code, tests_literals(test_sources))


def tests_literals(test_sources: Iterable[bytes]) -> frozenset[Value]:
    """Return the literals of the base's test files ``test_sources`` (what ``scan`` looks
    for in the patch's code): the costly half of the scan, which needs nothing the slice's
    run finds, so the replay computes it beside the run. Raises nothing."""
    in_tests: set[Value] = set()
    for source in test_sources:
        in_tests |= literals(source)
    return frozenset(in_tests)


def scan_against(
    changed_code: Mapping[str, tuple[bytes | None, bytes]], in_tests: frozenset[Value]
) -> Copied:
    """``scan`` with the literals of the base's tests computed already (``tests_literals``)."""
    copied: set[Value] = set()
    tables: list[str] = []
    for path, (base, head) in sorted(changed_code.items()):
        before = literals(base, templates=False) if base is not None else set()
        added = literals(head, templates=False) - before
        copied |= {v for v in added if v in in_tests and significant(v[1])}
        old_tables = {ast.dump(n) for n, _ in _tables(base)} if base is not None else set()
        inside: set[int] = set()  # the parts of a table already listed: listed once
        for node, values in _tables(head):
            if id(node) in inside or ast.dump(node) in old_tables:
                continue
            keys = [k for v in values if (k := _key(v)) is not None]
            shared = [k for k in keys if k in in_tests]
            specific = [k for k in shared if significant(k[1])]
            if len(specific) >= TABLE_MIN - 1 and len(shared) >= TABLE_SHARE * len(keys):
                inside |= {id(n) for n in ast.walk(node)}
                tables.append(
                    f"{path}:{node.lineno}: a literal of {len(keys)} values, {len(shared)} of them "
                    "in the base's tests"
                )
    shown = sorted(repr(v) for _, v in copied)
    return Copied(tuple(shown), tuple(tables))
