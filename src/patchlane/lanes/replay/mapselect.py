"""Which tests a changed file needs, read from the base's dependency map (docs/architecture.md §4).

For each changed path the map can speak for (``decide``), the tests it needs are:

- a change inside one function's body (at the base and at the head; decorated or not,
  unless the decorator may cache): the tests that ran that function at the base (rule
  ``ran changed code``), its fixtures' setup included; every Hypothesis test that ran any
  line of the file; every test that uses a fixture wider than a function that one of those
  tests used; and every importer of a module one of them imported first. When the changed
  function may itself change state that outlives its call (``lanes.replay.modstate``),
  every test (rule ``changed code keeps state``); when a test that ran it also ran a
  function of the module that may, every importer (below);
- a change of docstrings alone (the two syntax trees equal once docstrings are blanked):
  the same tests as below, under rule ``changed docstring``, since the map records no
  reads of ``__doc__``; the code is the base's, so no state rule applies;
- any other change to a module (imports, constants, class bodies, decorators, signatures,
  ``__all__``; a deleted module; a function the module runs while it is imported): every
  test that imported the module, statically or at run time, or ran any of its lines (rule
  ``module-level change``, each reason saying where the change lies);
- a data file: the tests that opened it, and for a file added or deleted, those that listed
  its directory (rule ``read changed data``), added to what the static rules select (C code
  reads files without an ``open`` event, so the map never narrows a data file's slice).

It cannot speak for a file the base does not have, a test file or conftest, a module that is
not valid Python at the base or the head, a data file read while modules were imported (no
test's own context saw it), nor for a test it does not know or that started a process:
those keep the static rules (``lanes.replay.select``).
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from patchlane.formats.depmap import DependencyMap
from patchlane.lanes.replay.modstate import stateful_functions

RAN = "ran changed code"
MODULE = "module-level change"
DATA = "read changed data"
STATE = "changed code keeps state"
DOC = "changed docstring"


@dataclass(frozen=True)
class Change:
    """One changed path, as selection sees it: git's status letter and both sides' bytes
    (``None`` where that side has no such file)."""

    path: str
    status: str
    base: bytes | None
    head: bytes | None


@dataclass(frozen=True)
class Lookups:
    """What the map's decision asks of the head's static graph: which paths keep the static
    rules whatever the map holds (``is_test_or_harness``), a module file's import names
    (``module_names``), the node ids whose test file (or its conftests) imports a path
    (``static_importers``) or a module name (``module_importers``)."""

    is_test_or_harness: Callable[[str], bool]
    module_names: Callable[[str], tuple[str, ...]]
    static_importers: Callable[[str], set[str]]
    module_importers: Callable[[str], set[str]] = lambda name: set()


@dataclass
class Decision:
    """What the map decided: for each changed path it speaks for, the tests it needs, each
    with one reason; the paths it could not speak for, each with why."""

    needs: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> nodeid -> why
    rules: dict[str, str] = field(default_factory=dict)  # path -> rule
    undecided: dict[str, str] = field(default_factory=dict)  # path -> why not


def decide(depmap: DependencyMap, changes: Iterable[Change], lookups: Lookups) -> Decision:
    """Return the map's decision for ``changes`` (see the module docstring), asking the
    head's static graph through ``lookups`` (``Lookups``). Raises nothing."""
    decision = Decision()
    for change in changes:
        path = change.path
        if lookups.is_test_or_harness(path):
            decision.undecided[path] = "a test file or the harness"
        elif path.endswith(".py"):
            _module(depmap, change, decision, lookups)
        else:
            _data(depmap, change, decision)
    return decision


def _module(depmap: DependencyMap, change: Change, decision: Decision, lookups: Lookups) -> None:
    """Decide for the changed module ``change`` (into ``decision``)."""
    module_names, static_importers = lookups.module_names, lookups.static_importers
    module_importers = lookups.module_importers
    path = change.path
    if change.base is None:
        decision.undecided[path] = "new at the head: the map has never seen it"
        return
    functions = None if change.head is None else changed_functions(change.base, change.head)
    if functions is not None:
        reach = _state_widens(depmap, change, functions)
    else:
        docs_only = change.head is not None and changed_docstrings(change.base, change.head)
        # Only docstrings changed: the code, and so the state it may keep, is the base's.
        stateful = change.head is not None and not docs_only and _stateful_changed(change)
        reach = STATE if stateful else None
    if reach == STATE:
        # The changed code may leave state any later test reads, whatever it imports.
        why = f"{path}: a changed function may change state that outlives its call"
        decision.needs[path] = dict.fromkeys(depmap.tests, why)
        decision.rules[path] = STATE
        return
    if reach == MODULE:
        functions = None
    if functions is not None and not any(
        depmap.import_lines.get(path, frozenset()) & set(range(start, end + 1))
        for _, start, end in functions
    ):
        needs = _source_readers(depmap, path)
        ran: set[str] = set()
        for name, start, end in functions:
            for nodeid in depmap.ran_lines(path, range(start, end + 1)):
                ran.add(nodeid)
                needs.setdefault(nodeid, f"ran {name} (lines {start}-{end} of {path})")
        _first_importers(depmap, ran, needs, module_importers)
        for nodeid, (fixture, user) in depmap.sharers(ran).items():
            # The changed code may have changed that one value, which later users see.
            needs.setdefault(nodeid, f"shares fixture {fixture} with {user}")
        for nodeid in depmap.ran_file(path) & depmap.whole_file_tests:
            needs.setdefault(nodeid, f"a Hypothesis test that ran {path}")
        if not needs:
            # No traced test ran it. A test that started a process or a raw thread, or
            # replaced the tracer, is blind and keeps the static rules anyway; a route the
            # recorder cannot see at all (the source exec'd from its text, a thread C code
            # starts) leaves just this empty record, and taking it as "nothing runs it"
            # turned such routes into accepts (bench/redteam): the static rules (every
            # importer) and the unreached check say.
            names = ", ".join(name for name, _, _ in functions[:3])
            more = " and more" if len(functions) > 3 else ""
            decision.undecided[path] = (
                f"no test of the base ran the changed code ({names}{more}): what runs it, "
                "if anything, the map did not see"
            )
            return
        decision.needs[path], decision.rules[path] = needs, RAN
        return
    _importers(depmap, change, decision, module_names, static_importers)


def _importers(
    depmap: DependencyMap,
    change: Change,
    decision: Decision,
    module_names: Callable[[str], tuple[str, ...]],
    static_importers: Callable[[str], set[str]],
) -> None:
    """Decide a module-level change: every test that imports the module, statically or at
    run time, or ran or read any of it; each reason says why the change is module-level
    (or that only docstrings changed, rule ``DOC``)."""
    path = change.path
    base, head = change.base or b"", change.head
    docs = None if head is None else changed_docstrings(base, head)
    if docs:
        # The code is the base's; only ``__doc__`` values differ. The map records no reads
        # of ``__doc__`` (a test, ``help``, ``inspect.getdoc``, a wrapper copying it), so
        # any importer may read it: the importers, and the rule says so.
        what = f"the docstring of {', '.join(docs[:3])}{' and more' if len(docs) > 3 else ''}"
        why = f"{what} changed and the map records no reads of __doc__"
        rule = DOC
    else:
        why = "deleted at the head" if head is None else module_level_why(base, head)
        rule = MODULE
    needs = _source_readers(depmap, path)
    for nodeid in static_importers(path):
        needs.setdefault(nodeid, f"imports {path}: {why}")
    for name in module_names(path):
        for nodeid in depmap.tests_of(depmap.imported.get(name, ())):
            needs.setdefault(nodeid, f"imported {name} while it ran: {why}")
    for nodeid in depmap.ran_file(path):
        needs.setdefault(nodeid, f"ran {path}: {why}")
    decision.needs[path], decision.rules[path] = needs, rule


def _state_widens(
    depmap: DependencyMap, change: Change, functions: list[tuple[str, int, int]]
) -> str | None:
    """How far the state the change may leave reaches: ``STATE`` when a changed function may
    itself change state outliving its call (``modstate``, at the base or the head: a test
    that never imports this module may read what it stored elsewhere, so every test);
    ``MODULE`` when a test that ran the changed code also ran such a function of this module
    (it may have stored what the changed code returned: every importer); else ``None``, and
    the map's answer stands."""
    try:
        base_tree, head_tree = ast.parse(change.base or b""), ast.parse(change.head or b"")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return MODULE
    try:
        # The changed function's own stores count also into what its caller handed in.
        at_base = stateful_functions(base_tree, passed_in=True)
        at_head = stateful_functions(head_tree, passed_in=True)
        beside_base = stateful_functions(base_tree)
    except RecursionError:
        return STATE
    changed = [(start, end) for _, start, end in functions]
    if any(a <= end and start <= b for a, b in at_base for start, end in changed):
        return STATE
    # At the head, the changed functions' own spans (nested functions and lambdas in them
    # included: they run, or are made, when the changed code runs).
    names = {name for name, _, _ in functions}
    spans = [(first, end) for name, first, _, end in _bodies(head_tree) if name in names]
    if any(a <= end and start <= b for a, b in at_head for start, end in spans):
        return STATE
    ran = {
        n
        for _, start, end in functions
        for n in depmap.ran_lines(change.path, range(start, end + 1))
    }
    beside = any(depmap.ran_lines(change.path, range(a, b + 1)) & ran for a, b in beside_base)
    return MODULE if beside else None


def _stateful_changed(change: Change) -> bool:
    """Whether a module-level change also changes (or adds) a function that may change
    state outliving its call (``modstate``): what it stores is read by tests that never
    import this module, so the importers are not enough."""
    try:
        base_tree, head_tree = ast.parse(change.base or b""), ast.parse(change.head or b"")
        spans = stateful_functions(head_tree, passed_in=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    if not spans:
        return False
    old = (change.base or b"").decode("utf-8", "replace").splitlines()
    new = (change.head or b"").decode("utf-8", "replace").splitlines()
    at_base = {name: old[first - 1 : end] for name, first, _, end in _bodies(base_tree)}
    named = {first: name for name, first, _, _ in _bodies(head_tree)}
    whole = "\n".join(old)
    for start, end in spans:
        text = new[start - 1 : end]
        if start in named:
            if at_base.get(named[start]) != text:
                return True
        elif "\n".join(text) not in whole:
            return True  # a lambda, a cached function: its text is not the base's
    return False


def _first_importers(
    depmap: DependencyMap,
    ran: set[str],
    needs: dict[str, str],
    module_importers: Callable[[str], set[str]],
) -> None:
    """A test that ran the changed code and imported a project module first may have run
    that code as the module was imported; later importers found it imported and never ran
    it, yet they see what its import made. Add every importer of such a module to
    ``needs``. Only tests in ``ran`` count: code run during a test's import of a module is
    charged to that test, so one that did not run the changed lines did not run them then
    either (a test that only read the module's source, say)."""
    for nodeid in sorted(ran):
        for name in sorted(depmap.first_imports.get(nodeid, ())):
            for other in module_importers(name):
                needs.setdefault(other, f"imports {name}, first imported by {nodeid}")


def _source_readers(depmap: DependencyMap, path: str) -> dict[str, str]:
    """Tests that opened a module's source file while they ran (``inspect.getsource``, a
    test of the source text itself): they depend on its text, whatever it runs."""
    return {n: f"read the source of {path}" for n in depmap.tests_of(depmap.opened.get(path, ()))}


def _data(depmap: DependencyMap, change: Change, decision: Decision) -> None:
    path = change.path
    parents = _parents(path)
    # A file added or deleted changes what a listing of its directory returns; a changed
    # one, only what opening it returns.
    listing = change.status != "M"
    if path in depmap.opened_at_import or (
        listing and any(p in depmap.listed_at_import for p in parents)
    ):
        decision.undecided[path] = "read while modules were imported"
        return
    if change.base is None and change.status != "A":
        decision.undecided[path] = "not a file at the base"
        return
    needs = {n: f"opened {path}" for n in depmap.tests_of(depmap.opened.get(path, ()))}
    if listing:
        for parent in parents:
            for nodeid in depmap.tests_of(depmap.listed.get(parent, ())):
                needs.setdefault(nodeid, f"listed {parent or '.'}, where {path} changed")
    # Only adds: C code reads files without an ``open`` event (sqlite3, an image or HDF5
    # library), so the static rules' choice for a data file stays.
    decision.needs[path], decision.rules[path] = needs, DATA
    decision.undecided[path] = "a data file: its readers are added to the static rules' choice"


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts), -1, -1)]


# --- where a change lies ---------------------------------------------------------------------


def changed_functions(base: bytes, head: bytes) -> list[tuple[str, int, int]] | None:
    """Return the base's functions whose bodies hold every change from ``base`` to ``head``
    (name, first and last line of the body at the base), or ``None`` when some change is not
    inside a function's body on both sides (``_locate``, which says where)."""
    return _locate(base, head)[0]


def module_level_why(base: bytes, head: bytes) -> str:
    """Return, in a few words, why the change from ``base`` to ``head`` is a module-level
    change: where its first change outside a function's body is (the report's reason)."""
    return _locate(base, head)[1] or "a change outside any function's body"


def changed_docstrings(base: bytes, head: bytes) -> list[str]:
    """Return the qualified names (``the module`` for its own) whose docstrings differ from
    ``base`` to ``head`` when nothing else of the two modules' code does (their syntax
    trees are equal once every docstring is blanked; comments and blank lines are not in
    them); else ``[]``. Raises nothing."""
    try:
        trees = [ast.parse(base), ast.parse(head)]
        found = [_docstrings(t) for t in trees]
        dumps = [ast.dump(t, include_attributes=False) for t in trees]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    if dumps[0] != dumps[1]:
        return []
    old, new = found
    return [name for name in new if old.get(name) != new[name]] + [n for n in old if n not in new]


def _docstrings(tree: ast.Module) -> dict[str, str]:
    """Blank every docstring of ``tree`` in place and return them by qualified name."""
    out: dict[str, str] = {}

    def visit(node: ast.AST, name: str) -> None:
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                out[name] = first.value.value
                first.value.value = ""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                prefix = "" if name == "the module" else name + "."
                visit(child, prefix + child.name)
            else:
                visit(child, name)

    visit(tree, "the module")
    return out


def _locate(base: bytes, head: bytes) -> tuple[list[tuple[str, int, int]] | None, str]:
    """Return the base's functions whose bodies hold every change from ``base`` to ``head``
    (name, first and last line of the body at the base) and ``""``; or ``None`` and where
    the first change that is not inside a function's body on both sides is (or that a side
    is not valid Python): a module-level change.

    A body is the function's statements, not its ``def`` line, decorators or defaults
    (those run when the module is imported). An insertion counts as inside the function
    whose body holds a neighbouring base line. A change that only touches blank lines or
    comments between functions is module-level too: cheap to over-select, never wrong.
    """
    try:
        base_tree, head_tree = ast.parse(base), ast.parse(head)
        old = base.decode("utf-8", "replace").splitlines()
        new = head.decode("utf-8", "replace").splitlines()
        base_bodies = _bodies(base_tree, old)
        head_bodies = _bodies(head_tree, new)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, "not valid Python at the base or the head"
    found: dict[tuple[str, int, int], None] = {}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        head_function = _innermost(head_bodies, j1 + 1, j2) if j2 > j1 else None
        if j2 > j1 and head_function is None:
            # The head's new lines are not all inside one function's body.
            return None, f"line {j1 + 1} of the head is outside any function's body"
        if i2 > i1:
            function = _innermost(base_bodies, i1 + 1, i2)
        else:  # a pure insertion between base lines i1 and i1 + 1
            function = _innermost(base_bodies, i1, i1) or _innermost(base_bodies, i1 + 1, i1 + 1)
        if function is None:
            return (
                None,
                f"line {i1 + 1 if i2 > i1 else i1} of the base is outside any function's body",
            )
        if head_function is not None and head_function[0] != function[0]:
            # The head puts the lines in another function than the base's neighbours are
            # in (an outer function's lines just after a nested one's last line).
            return None, f"line {j1 + 1} of the head moves into {head_function[0]}"
        found[function] = None
    return list(found), ""


def _innermost(
    bodies: list[tuple[str, int, int, int]], first: int, last: int
) -> tuple[str, int, int] | None:
    """The innermost function whose body spans lines ``first``..``last``: (name, first and
    last line of its body), or ``None``."""
    best: tuple[str, int, int, int] | None = None
    for body in bodies:
        _, _, body_start, end = body
        if body_start <= first and last <= end and (best is None or body_start > best[2]):
            best = body
    return None if best is None else (best[0], best[2], best[3])


def _bodies(tree: ast.Module, lines: list[str] | None = None) -> list[tuple[str, int, int, int]]:
    """Every function of ``tree`` whose body the map may judge alone: (qualified name,
    ``def`` line, first body line, last line). With the source's ``lines``, the body starts
    at the first comment or blank line that only comments and blank lines separate from
    its first statement (``_body_start``).

    What the map saw run is the body's code object, whatever wraps it: a decorator that
    registers, dispatches or checks arguments still runs the body on every call, so the
    tests that depend on the body ran it (docs/architecture.md §4). A decorator that may
    answer a call without running the body (a cache: ``functools.lru_cache``, ``cache``,
    ``cached_property``, a project's ``memoize``) is left out: a test that got a value
    an earlier test computed never ran the body, so the whole module is judged."""
    out: list[tuple[str, int, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                end = child.end_lineno or child.body[-1].lineno
                if not any(_caching_decorator(d) for d in child.decorator_list):
                    out.append((name, child.lineno, _body_start(child, end, lines), end))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def _body_start(
    function: ast.FunctionDef | ast.AsyncFunctionDef, end: int, lines: list[str] | None = None
) -> int:
    """The first line of the statements that run when ``function`` is called: after its
    docstring, which a test can read without calling it (``__doc__``, ``help``). With the
    source's ``lines``, comment and blank lines just before that statement count as the
    body too (after the docstring or the ``def`` header, never in either): they run nothing,
    and an edit of a comment there is an edit of the body, not of the module
    (sqlparse's ``get_real_name``: a comment between the docstring and the first line)."""
    first = function.body[0]
    docstring = (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )
    if not docstring:
        start, floor = first.lineno, function.lineno
    elif len(function.body) > 1:
        start, floor = function.body[1].lineno, first.end_lineno or first.lineno
    else:
        return end + 1
    # Back over comment and blank lines; the header's last line (``):``, ``) -> T:``) and
    # the docstring's last line stop it, as does any line that holds code.
    while lines is not None and start - 1 > floor and start - 2 < len(lines):
        text = lines[start - 2].strip()
        if text and not text.startswith("#"):
            break
        start -= 1
    return start


# Words in a decorator's dotted name that mark one that may answer a call from what an
# earlier call left (a cache), without running the body. The decorators are the base's
# (a patch that adds or edits one changes a decorator line: a module-level change).
_CACHING_WORDS = ("cache", "memo", "lru", "once", "singleton", "lazy")


def _caching_decorator(node: ast.expr) -> bool:
    """Whether a decorator may answer calls without running the body: its dotted name (or
    its call's) has a word of ``_CACHING_WORDS``, or it is not a plain dotted name at all
    (a subscript, a lambda: nothing to read, so it may)."""
    target = node.func if isinstance(node, ast.Call) else node
    parts: list[str] = []
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    if not isinstance(target, ast.Name):
        return True
    parts.append(target.id)
    return any(word in part.lower() for part in parts for word in _CACHING_WORDS)
