"""Test code the patch adds or changes that stores into the code under test or into pytest.

A test module that assigns ``pkg.mod.VALUE = old`` (at import or in any function), or
wraps ``_pytest.python.Function.runtest``, changes what every later test in its process
sees, and the full suite runs in one process: the base's tests that the replay runs
without it (``lanes.replay.split``) may fail beside it. Such a module is a test-harness
change (docs/architecture.md §2), so the verdict stays ``undecided``. This is a widening
rule, so a static pattern is enough: a store, deletion or augmented assignment whose target
is an attribute or item of a name bound by an import of a project module or of ``pytest``,
``_pytest``, ``pluggy`` or ``patchlane`` (``import x``, ``from x import y``,
``x = importlib.import_module("x")``, ``sys.modules[...]``); ``setattr``/``delattr`` on
one; and, in code that runs at import, a ``.setattr``/``patch`` call on one (a
``MonkeyPatch()`` made at import is never undone). ``monkeypatch.setattr`` inside a test
is undone after it and does not count: ``monkeypatch`` is no imported name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from patchlane.inputs import untrusted

# Where a store changes how every test is run or judged, whatever the project.
PYTEST_PACKAGES = frozenset({"pytest", "_pytest", "pluggy", "patchlane"})
_IMPORT_FUNCS = frozenset({"import_module", "__import__"})
# Calls that set an attribute of their first argument (a ``MonkeyPatch`` or ``mock``).
_SETTERS = frozenset({"setattr", "delattr", "setitem", "delitem", "object", "patch"})


def harness_store(data: bytes, path: str, packages: Iterable[str]) -> str | None:
    """Return where the Python source ``data`` (the file ``path``) stores into a module of
    ``packages`` (the project's top-level names) or of pytest (``line N: sets X``), or
    ``None``. A source that does not parse is ``None`` here (it does not collect at the
    head either). Never raises."""
    try:
        tree = untrusted.parse_python(data, path)
    except SyntaxError:
        return None
    counted = frozenset(packages) | PYTEST_PACKAGES
    try:
        bound = _bound_names(tree, counted)
        import_time = _import_time_nodes(tree)
        for node in ast.walk(tree):
            found = _store(node, bound, counted, node in import_time)
            if found is not None:
                return f"line {getattr(node, 'lineno', '?')}: {found}"
    except untrusted.DEPTH_FAILURES:
        return "its code is nested too deeply to read: it may store anywhere"
    return None


def _bound_names(tree: ast.Module, counted: frozenset[str]) -> frozenset[str]:
    """The names an import of a counted module binds (anywhere in the module)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                origin = alias.name if alias.asname else alias.name.split(".", 1)[0]
                if _counts(origin, counted):
                    out.add(alias.asname or origin)
        elif isinstance(node, ast.ImportFrom):
            # A relative import is the project's own module.
            if node.level or _counts(node.module or "", counted):
                out.update(a.asname or a.name for a in node.names if a.name != "*")
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            name = _imported_by_call(node.value)
            if name is not None and _counts(name, counted):
                out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return frozenset(out)


def _counts(module: str, counted: frozenset[str]) -> bool:
    return module.split(".", 1)[0] in counted


def _imported_by_call(call: ast.Call) -> str | None:
    """``importlib.import_module("x")`` or ``__import__("x")`` -> ``"x"``."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in _IMPORT_FUNCS or not call.args:
        return None
    first = call.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _import_time_nodes(tree: ast.Module) -> set[ast.AST]:
    """The nodes that run when the module is imported (function bodies left out, and the
    calls of decorators and ``with`` items, whose patches are undone)."""
    out: set[ast.AST] = set()
    # A decorator or ``with`` patch is undone when its function or block ends.
    undone = {
        id(n)
        for node in ast.walk(tree)
        for n in [
            *getattr(node, "decorator_list", []),
            *(i.context_expr for i in getattr(node, "items", [])),
        ]
    }
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if id(node) not in undone:
            out.add(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            stack.extend(getattr(node, "decorator_list", []))
            stack.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d)])
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def _rooted(node: ast.AST, bound: frozenset[str], counted: frozenset[str]) -> bool:
    """Whether an attribute/subscript/call chain starts at a counted module: a bound name,
    ``sys.modules[...]``, or an ``import_module`` call of one."""
    while True:
        if isinstance(node, ast.Name):
            return node.id in bound
        if isinstance(node, ast.Subscript):
            value = node.value
            if (
                isinstance(value, ast.Attribute)
                and value.attr == "modules"
                and isinstance(value.value, ast.Name)
                and value.value.id == "sys"
            ):
                key = node.slice
                return not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or (
                    _counts(key.value, counted)
                )
            node = value
        elif isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            name = _imported_by_call(node)
            if name is not None:
                return _counts(name, counted)
            node = node.func
        else:
            return False


def _store(
    node: ast.AST, bound: frozenset[str], counted: frozenset[str], at_import: bool
) -> str | None:
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign | ast.Delete):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign) or (isinstance(node, ast.AnnAssign) and node.value):
        targets = [node.target]
    for target in targets:
        if isinstance(target, ast.Attribute | ast.Subscript) and _rooted(target, bound, counted):
            return f"stores into {_show(target)}"
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func, first = node.func, node.args[0]
    if isinstance(func, ast.Name) and func.id in ("setattr", "delattr"):
        if _rooted(first, bound, counted):
            return f"calls {func.id}() on {_show(first)}"
        return None
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if not at_import or name not in _SETTERS:
        return None
    if _rooted(first, bound, counted) or (
        isinstance(first, ast.Constant)
        and isinstance(first.value, str)
        and _counts(first.value, counted)
        and "." in first.value
    ):
        return f"calls {name}() on {_show(first)} at import"
    return None


def _show(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."
