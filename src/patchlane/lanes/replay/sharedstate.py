"""Changed code that changes state every later test in the process shares.

pytest runs the whole suite in one process, so a module that, when imported, sets
``decimal.getcontext().rounding``, stores into another module (``quota.LIMIT = 3``) or into
``sys.modules``/``os.environ``, or calls a global setter (``random.seed``,
``warnings.simplefilter``, ``locale.setlocale``) changes what later tests see, including
tests that never import it. The slice cannot follow such state, so a changed file that does
it selects the whole suite (docs/explanation/decisions/0011-selection-widens.md).

What counts: a store, deletion or augmented assignment whose target is rooted at a name an
``import`` bound, a call of a mutating method or a global setter on such a name, and
``setattr``/``delattr`` of one. In a code module only the code that runs at import (the
module's and its classes' bodies) is read, since its functions run when a test calls them
and change what that test's selection already covers; in a test module every function is
read too, as each test that runs may leave what it set behind. Names bound by anything but
an import (a local list, a module global of its own) are that module's own state, which the
import graph already follows.
"""

from __future__ import annotations

import ast

# Methods that change the object they are called on (a list, a dict, a registry, a logger),
# when it is reached through an imported name: ``sys.path.insert``, ``TAGS.update``.
_MUTATORS = frozenset(
    {
        "append", "extend", "insert", "remove", "pop", "popitem", "clear", "update",
        "setdefault", "add", "discard", "register", "unregister", "addHandler",
        "removeHandler", "addFilter", "setLevel", "setFormatter",
    }
)  # fmt: skip
# Functions of an imported module that set the process's global state: ``random.seed``.
_GLOBAL_SETTERS = frozenset(
    {
        "seed", "filterwarnings", "simplefilter", "resetwarnings", "chdir", "putenv",
        "unsetenv", "umask", "setlocale", "setrecursionlimit", "setdefaulttimeout",
        "setcontext", "basicConfig", "disable", "register", "enable", "signal", "settrace",
        "setprofile", "set_printoptions", "add_type", "pickle", "setswitchinterval",
    }
)  # fmt: skip


def shared_state_change(source: bytes, *, every_function: bool) -> str | None:
    """Return where ``source`` changes state shared by the process (``line N: what``), or
    ``None``. ``every_function``: read function bodies too (a test module). A source that
    does not parse is ``None`` here: the import graph already takes it to reach every
    module. Raises nothing."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    modules, objects = _imported_names(tree)
    if not modules and not objects:
        return None
    for node in _nodes(tree, every_function):
        found = _change(node, modules, objects)
        if found is not None:
            return f"line {getattr(node, 'lineno', '?')}: {found}"
    return None


def _imported_names(tree: ast.Module) -> tuple[frozenset[str], frozenset[str]]:
    """The names ``import x`` binds (modules) and those ``from x import y`` binds (a module
    or an object: a dict, a class, a registry)."""
    modules: set[str] = set()
    objects: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.asname or a.name.split(".", 1)[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            objects.update(a.asname or a.name for a in node.names if a.name != "*")
    return frozenset(modules), frozenset(objects)


def _nodes(tree: ast.Module, every_function: bool) -> list[ast.AST]:
    """Every node that runs at import (function bodies left out), or, with
    ``every_function``, every node."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = [s for s in tree.body if not _main_block(s)]
    while stack:
        node = stack.pop()
        out.append(node)
        # A decorator is called with what it decorates: ``@registry.add`` calls ``add``.
        out.extend(
            ast.Call(func=d, args=[], keywords=[], lineno=d.lineno, col_offset=d.col_offset)
            for d in getattr(node, "decorator_list", [])
        )
        if not every_function and isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
        ):
            # Its decorators and defaults run at import; its body when it is called.
            stack.extend(getattr(node, "decorator_list", []))
            stack.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d)])
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def _main_block(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":``: runs as a script, never when a test imports it."""
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def _root(node: ast.AST) -> str | None:
    """The name an attribute, subscript or call chain starts from, or ``None``."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


def _change(node: ast.AST, modules: frozenset[str], objects: frozenset[str]) -> str | None:
    imported = modules | objects
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    elif isinstance(node, ast.Delete):
        targets = list(node.targets)
    for target in targets:
        if isinstance(target, ast.Attribute | ast.Subscript) and _root(target) in imported:
            return f"sets {ast.unparse(target)}"
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and _root(func.value) in imported:
        on_module = isinstance(func.value, ast.Name) and func.value.id in modules
        if on_module and func.attr in _GLOBAL_SETTERS:
            return f"calls {ast.unparse(func)}()"  # random.seed(0)
        if not on_module and func.attr in _MUTATORS:
            return f"calls {ast.unparse(func)}()"  # sys.path.insert(...), TAGS.update(...)
    if (
        isinstance(func, ast.Name)
        and func.id in ("setattr", "delattr")
        and node.args
        and _root(node.args[0]) in imported
    ):
        return f"calls {func.id}() on {ast.unparse(node.args[0])}"
    return None
