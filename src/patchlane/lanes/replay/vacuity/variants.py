"""Impossible variants and repeats of the tests that ran the changed code, by AST rewriting.

For one test module (its source, unchanged by the patch, so the same at the base and the
head) and the node ids of it to judge, ``extend`` returns text to append to the module and
the node ids it adds:

- a *repeat* of every judged test: a copy of its function under a new name, the copies in
  the reverse order of the originals, so the run holds each test twice in one process, the
  second time in another order;
- *impossible variants*: a copy of a test with one expected value changed (``assert x ==
  <literal>`` / ``<literal> == x``, ``assert x is True``, ``== approx(<literal>)``,
  ``self.assertEqual(x, <literal>)`` and its family, or one row of a
  ``pytest.mark.parametrize`` expectation column) to a different value of the same type,
  which the real result cannot equal where the original assertion passed.

The variants are appended to the module itself, so ``inspect`` and ``linecache`` see the
variant's own line on disk: exactly what code that reads its caller's ``assert`` reads. A
method is copied into a subclass of its class of its own (one test a class, so the copies
run in the order they are written). Hypothesis tests are left out: a failing one shrinks,
which costs more than the check is worth, and it draws other inputs on every run anyway.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

VARIANT = "variant"
REPEAT = "repeat"

# unittest's equality assertions: (expected, actual) in either argument.
_EQUAL_METHODS = frozenset(
    {
        "assertEqual",
        "assertEquals",
        "assertListEqual",
        "assertTupleEqual",
        "assertSequenceEqual",
        "assertMultiLineEqual",
        "assertAlmostEqual",
        "assertAlmostEquals",
        "assertCountEqual",
    }
)
# The id pytest gives the one row of a parametrize variant (``ids=[...]``).
VARIANT_ID = "v"


@dataclass(frozen=True)
class Generated:
    """One test added to a module: the node id to run, its kind (``variant`` or
    ``repeat``), the original node id it derives from, and what was changed (one line)."""

    nodeid: str
    kind: str
    original: str
    what: str


@dataclass(frozen=True)
class Extension:
    """What to append to one test module (``text``, empty for nothing) and the tests it
    adds, repeats first."""

    text: str
    generated: tuple[Generated, ...]


@dataclass(frozen=True)
class _Site:
    """One expected value a variant can change: the node holding it (a literal, or a
    ``parametrize`` decorator), its line, and the changed value's source."""

    node: ast.AST
    line: int
    new: ast.expr
    shown: str


def changed_value(node: ast.expr) -> ast.expr | None:
    """Return a literal of the same type as the literal ``node`` that cannot equal it:
    ``int`` + 1, ``float`` * 2 + 1, ``str`` + NUL, ``bytes`` + NUL, a flipped ``bool``,
    a tuple or list with its first changeable element changed. ``None`` for anything else
    (``None``, containers with nothing to change, names, calls): a variant is made only
    where the change is certain."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = node.operand
        number = inner.value if isinstance(inner, ast.Constant) else None
        if isinstance(number, int | float) and not isinstance(number, bool):
            return _changed_constant(-number if isinstance(node.op, ast.USub) else number)
        return None
    if isinstance(node, ast.Constant):
        return _changed_constant(node.value)
    if isinstance(node, ast.Tuple | ast.List):
        for i, element in enumerate(node.elts):
            new = changed_value(element)
            if new is not None:
                elts = [*node.elts[:i], new, *node.elts[i + 1 :]]
                return type(node)(elts=elts, ctx=ast.Load())
    return None


def _changed_constant(value: object) -> ast.expr | None:
    if isinstance(value, bool):
        return ast.Constant(not value)
    if isinstance(value, int):
        return ast.Constant(value + 1)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return ast.Constant(value * 2 + 1)
    if isinstance(value, str):
        return ast.Constant(value + "\x00")
    if isinstance(value, bytes):
        return ast.Constant(value + b"\x00")
    return None


def _is_approx(node: ast.expr) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name == "approx"


def _expected_side(left: ast.expr, right: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    """Of two compared operands, the expected literal (or ``approx(<literal>)``'s literal)
    and its changed value, when exactly one side is such a literal."""
    found = []
    for side in (left, right):
        target = (
            side.args[0] if isinstance(side, ast.Call) and _is_approx(side) and side.args else side
        )
        new = changed_value(target)
        if new is not None:
            found.append((target, new))
    return found[0] if len(found) == 1 else None


def _sites(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[_Site]:
    """The assertion sites of ``function``'s body (not of functions nested in it), in
    source order."""
    for node in _walk_body(function):
        pair: tuple[ast.expr, ast.expr] | None = None
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
            test = node.test
            if len(test.ops) != 1:
                continue
            op, right = test.ops[0], test.comparators[0]
            if isinstance(op, ast.Eq):
                pair = _expected_side(test.left, right)
            elif isinstance(op, ast.Is):
                bools = [
                    s
                    for s in (test.left, right)
                    if isinstance(s, ast.Constant) and isinstance(s.value, bool)
                ]
                if len(bools) == 1:
                    pair = (bools[0], ast.Constant(not bools[0].value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _EQUAL_METHODS
            and len(node.args) >= 2
        ):
            pair = _expected_side(node.args[0], node.args[1])
        if pair is not None:
            target, new = pair
            yield _Site(
                target,
                getattr(node, "lineno", 0),
                new,
                f"{ast.unparse(target)} -> {ast.unparse(new)}",
            )


def _walk_body(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    stack: list[ast.AST] = list(reversed(function.body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _decorator_name(node: ast.expr) -> str | None:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else None


def _uses_hypothesis(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(_decorator_name(d) == "given" for d in function.decorator_list)


def _parametrize_site(function: ast.FunctionDef | ast.AsyncFunctionDef) -> _Site | None:
    """The first row of the only ``parametrize`` decorator whose expectation column holds
    a changeable literal, as a site whose ``new`` is the whole replaced decorator.

    The expectation column is a parameter the body compares for equality with something
    that is not a literal nor another parameter (``assert f(a) == expected``,
    ``assertEqual(f(a), expected)``): conservative, a column read any other way is input."""
    marks = [d for d in function.decorator_list if _decorator_name(d) == "parametrize"]
    if len(marks) != 1 or not isinstance(marks[0], ast.Call) or len(marks[0].args) < 2:
        return None
    mark = marks[0]
    names = _argnames(mark.args[0])
    rows = mark.args[1]
    if names is None or len(names) < 2 or not isinstance(rows, ast.List | ast.Tuple):
        return None
    column = _expectation_column(function, names)
    if column is None:
        return None
    index = names.index(column)
    for row in rows.elts:
        if not isinstance(row, ast.Tuple | ast.List) or len(row.elts) != len(names):
            continue
        new = changed_value(row.elts[index])
        if new is None:
            continue
        changed_row = ast.Tuple(
            elts=[*row.elts[:index], new, *row.elts[index + 1 :]], ctx=ast.Load()
        )
        keywords = [k for k in mark.keywords if k.arg not in ("ids", "indirect")]
        keywords.append(ast.keyword("ids", ast.List([ast.Constant(VARIANT_ID)], ast.Load())))
        replaced = ast.Call(
            func=mark.func,
            args=[mark.args[0], ast.List([changed_row], ast.Load()), *mark.args[2:]],
            keywords=keywords,
        )
        shown = f"{column}: {ast.unparse(row.elts[index])} -> {ast.unparse(new)}"
        return _Site(mark, row.lineno, replaced, shown)
    return None


def _argnames(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [n.strip() for n in node.value.split(",") if n.strip()]
    if isinstance(node, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [str(e.value) for e in node.elts if isinstance(e, ast.Constant)]
    return None


def _expectation_column(
    function: ast.FunctionDef | ast.AsyncFunctionDef, names: Sequence[str]
) -> str | None:
    params = set(names)
    for node in _walk_body(function):
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
            if len(node.test.ops) == 1 and isinstance(node.test.ops[0], ast.Eq):
                pairs.append((node.test.left, node.test.comparators[0]))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _EQUAL_METHODS
            and len(node.args) >= 2
        ):
            pairs.append((node.args[0], node.args[1]))
        for a, b in pairs:
            for mine, other in ((a, b), (b, a)):
                if not (isinstance(mine, ast.Name) and mine.id in params):
                    continue
                if isinstance(other, ast.Constant | ast.Name):
                    continue  # a literal, or a bare name (another parameter): not a result
                return mine.id
    return None


def _top_names(module: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name):
            names.add(node.id)
    return names


@dataclass(frozen=True)
class _Target:
    """A judged test: its node ids (one per parameter set), its class (``None`` at module
    level) and its function."""

    nodeids: tuple[str, ...]
    cls: str | None
    function: ast.FunctionDef | ast.AsyncFunctionDef


def _targets(module: ast.Module, path: str, nodeids: Sequence[str]) -> list[_Target]:
    """The functions of ``module`` the node ids name, in the order first named."""
    top: dict[str, ast.AST] = {}
    for node in module.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            top[node.name] = node  # the last definition wins, as at run time
    found: dict[tuple[str | None, str], list[str]] = {}
    functions: dict[tuple[str | None, str], ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for nodeid in nodeids:
        file, _, rest = nodeid.partition("::")
        parts = rest.split("[", 1)[0].split("::")
        if file != path or not rest or len(parts) > 2:
            continue
        cls, name = (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
        function = _function(top, cls, name)
        if function is None or _uses_hypothesis(function):
            continue
        found.setdefault((cls, name), []).append(nodeid)
        functions[(cls, name)] = function
    return [_Target(tuple(ids), key[0], functions[key]) for key, ids in found.items()]


def _function(
    top: dict[str, ast.AST], cls: str | None, name: str
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    if cls is None:
        node = top.get(name)
    else:
        holder = top.get(cls)
        if not isinstance(holder, ast.ClassDef) or holder.decorator_list:
            return None  # a decorated class may not be a plain base to subclass
        node = next(
            (
                n
                for n in reversed(holder.body)
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name
            ),
            None,
        )
    return node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None


class _Names:
    """Fresh names for the copies: ``<name>_<k>``, never one the module uses."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken

    def fresh(self, name: str) -> str:
        k = 2
        while f"{name}_{k}" in self.taken:
            k += 1
        self.taken.add(f"{name}_{k}")
        return f"{name}_{k}"


def _suffix(nodeid: str) -> str:
    rest = nodeid.partition("::")[2]
    return "[" + rest.split("[", 1)[1] if "[" in rest else ""


def extend(
    source: str, path: str, nodeids: Sequence[str], *, variants_per_test: int = 2
) -> Extension:
    """Return what to append to the test module ``path`` (``source``) to run each test of
    ``nodeids`` (node ids of that file) a second time in reverse order, and its impossible
    variants (at most ``variants_per_test`` a test: its first and last assertion sites,
    then a ``parametrize`` row). A source that does not parse extends nothing."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return Extension("", ())
    targets = _targets(module, path, nodeids)
    if not targets:
        return Extension("", ())
    names = _Names(_top_names(module))
    chunks: list[str] = []
    generated: list[Generated] = []
    for target in reversed(targets):
        copied = copy.deepcopy(target.function)
        chunk, ids = _placed(copied, target, names, [_suffix(n) for n in target.nodeids], path)
        chunks.append(chunk)
        generated += [
            Generated(i, REPEAT, o, "run again, in reverse order")
            for i, o in zip(ids, target.nodeids, strict=True)
        ]
    for target in targets:
        for site_index, site in _chosen_sites(target.function, variants_per_test):
            copied = copy.deepcopy(target.function)
            param = site.new if site_index < 0 else None
            if param is not None:
                copied.decorator_list = [
                    param if _decorator_name(d) == "parametrize" else d
                    for d in copied.decorator_list
                ]
                suffixes = [f"[{VARIANT_ID}]"]
            else:
                _replace(copied, site_index, site.new)
                suffixes = [_suffix(target.nodeids[0])]
            chunk, ids = _placed(copied, target, names, suffixes, path)
            chunks.append(chunk)
            what = f"line {site.line}: {site.shown}"
            generated.append(Generated(ids[0], VARIANT, target.nodeids[0], what))
    text = "\n\n" + "\n\n".join(chunks) + "\n"
    return Extension(text, tuple(generated))


def _chosen_sites(
    function: ast.FunctionDef | ast.AsyncFunctionDef, limit: int
) -> list[tuple[int, _Site]]:
    """Up to ``limit`` sites: the first and last assertion (by index in the body walk),
    then the parametrize row (index -1)."""
    sites = list(_sites(function))
    chosen: list[tuple[int, _Site]] = []
    if sites:
        chosen.append((0, sites[0]))
        if len(sites) > 1:
            chosen.append((len(sites) - 1, sites[-1]))
    param = _parametrize_site(function)
    if param is not None:
        chosen.insert(1 if chosen else 0, (-1, param))
    return chosen[:limit]


def _replace(function: ast.FunctionDef | ast.AsyncFunctionDef, index: int, new: ast.expr) -> None:
    """Replace the literal of the ``index``-th site of ``function`` (a copy) with ``new``."""
    site = list(_sites(function))[index]
    for parent in _walk_body(function):
        for field, value in ast.iter_fields(parent):
            if value is site.node:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is site.node:
                        value[i] = new
                        return


def _placed(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    target: _Target,
    names: _Names,
    suffixes: Sequence[str],
    path: str,
) -> tuple[str, list[str]]:
    """The source of ``function`` placed under a fresh name (a module-level function, or a
    method in a fresh subclass of its class) and the node ids it runs as."""
    if target.cls is None:
        function.name = names.fresh(function.name)
        return ast.unparse(function), [f"{path}::{function.name}{s}" for s in suffixes]
    sub = names.fresh(target.cls)
    cls = ast.parse(f"class {sub}({target.cls}):\n    pass\n").body[0]
    assert isinstance(cls, ast.ClassDef)  # noqa: S101 - parsed from the line above
    cls.body = [function]
    return ast.unparse(cls), [f"{path}::{sub}::{function.name}{s}" for s in suffixes]
