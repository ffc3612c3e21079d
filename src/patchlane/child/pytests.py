"""Existing Hypothesis tests run as properties: finding them, and calling them in the child.

The map's ``lanes.property.tests`` names pytest node ids (``tests/test_x.py::test_y``,
``tests/test_x.py::TestA::test_y``) and paths (a test file, or a directory whose
``test_*.py``/``*_test.py`` files are taken). The parent finds their tests by parsing each
file with ``ast`` (``scan``), never by importing it: module-level ``test*`` functions and
``test*`` methods of ``Test*`` classes, as pytest collects them by default. A test with a
``@given`` decorator (``given(...)`` or ``hypothesis.given(...)``) runs as a property; any
other is listed as skipped, and so is a stateful test (a ``RuleBasedStateMachine``'s
``TestCase``), which needs Hypothesis' state-machine runner rather than one call. Its node id is the property's name.

In the child, ``prepare_test`` resolves a node id in the imported module and calls the test
function directly, without pytest, under the lane's pinned Hypothesis settings and seed
(``styles.prepare_given``). Fixtures are not supported: a ``@given`` test whose remaining
parameters (those ``@given`` does not fill) have no default would need pytest to fill them,
so it is refused as an error, and so is a class with an xunit ``setup_method``/``setup``.

Import names follow pytest's default ``prepend`` mode: the first directory above the file
without an ``__init__.py`` goes first on ``sys.path`` and the module's name is the dotted
path below it (``tests/test_x.py`` without ``tests/__init__.py`` is ``test_x``).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchlane.child import styles
from patchlane.inputs.untrusted import parse_python

SEPARATOR = "::"
_XUNIT_SETUP = ("setup_method", "setup", "setup_class")


@dataclass(frozen=True)
class Scan:
    """The tests of one test file: ``given`` (node-id tails, ``test_y`` or
    ``TestA::test_y``, in source order) run as properties; ``others`` are not
    ``@given`` tests."""

    given: tuple[str, ...]
    others: tuple[str, ...]
    # Stateful Hypothesis tests: ``TestX = Machine.TestCase`` (or a ``Test*`` class built on
    # such a ``TestCase``), which pytest collects as a unittest case; never run as properties.
    stateful: tuple[str, ...] = ()


def is_test_file(name: str) -> bool:
    """Whether a file name is one pytest collects by default."""
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def scan(source: str, filename: str) -> Scan:
    """Return the tests a test file's source defines. Raises ``SyntaxError`` when it
    cannot be parsed (``untrusted.parse_python``)."""
    tree = parse_python(source, filename)
    given: list[str] = []
    others: list[str] = []
    stateful: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and _is_machine_case(node.value):
            stateful += [
                t.id for t in node.targets if isinstance(t, ast.Name) and t.id.startswith("Test")
            ]
        elif (
            isinstance(node, ast.ClassDef)
            and node.name.startswith("Test")
            and any(_is_machine_case(b) for b in node.bases)
        ):
            stateful.append(node.name)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name.startswith("test"):
                (given if _has_given(node) else others).append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    item.name.startswith("test")
                ):
                    tail = f"{node.name}{SEPARATOR}{item.name}"
                    (given if _has_given(item) else others).append(tail)
    return Scan(
        tuple(dict.fromkeys(given)), tuple(dict.fromkeys(others)), tuple(dict.fromkeys(stateful))
    )


def _is_machine_case(node: ast.expr) -> bool:
    """Whether ``node`` spells a state machine's ``TestCase`` (``Machine.TestCase``,
    ``mod.Machine.TestCase``), and not unittest's own (``unittest.TestCase``)."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "TestCase"
        and not (isinstance(node.value, ast.Name) and node.value.id == "unittest")
    )


def _has_given(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in node.decorator_list:
        func = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(func, ast.Name) and func.id == "given":
            return True
        if isinstance(func, ast.Attribute) and func.attr == "given":
            return True
    return False


def mentions_given(source: str) -> bool:
    """A cheap first look (``init``): whether a file could hold a ``@given`` test."""
    return "given" in source and "hypothesis" in source


def import_place(root: Path, rel: str) -> tuple[str, str]:
    """Return ``(directory, module)`` for the test file at repository path ``rel`` in the
    tree at ``root``: the directory (repository path, ``""`` for the root) pytest's
    ``prepend`` mode puts first on ``sys.path``, and the module's dotted name."""
    parts = rel.split("/")
    names = [parts[-1][: -len(".py")]]
    depth = len(parts) - 1
    while depth > 0 and root.joinpath(*parts[:depth], "__init__.py").is_file():
        names.insert(0, parts[depth - 1])
        depth -= 1
    return "/".join(parts[:depth]), ".".join(names)


# -- in the child ---------------------------------------------------------------------------


def prepare_test(
    nodeid: str, module: Any, *, seed: int, pinned: Any, roots: Sequence[str]
) -> styles.Prepared:
    """Return the test ``nodeid`` of the imported ``module`` ready to run as a Hypothesis
    property, or one that is refused (``Prepared.refused``) with why it cannot run. Never
    raises for what the test module holds (instantiating a test class runs its code: what
    that raises is the test's failure)."""
    parts = nodeid.split(SEPARATOR)[1:]
    namespace = vars(module)
    if len(parts) == 1:
        target, owner = namespace.get(parts[0]), None
    elif len(parts) == 2 and isinstance(namespace.get(parts[0]), type):
        owner = namespace[parts[0]]
        target = inspect.getattr_static(owner, parts[1], None)
        if isinstance(target, staticmethod):
            target, owner = target.__func__, None
    else:
        return styles.refused(nodeid, f"{nodeid} is not defined after import", roots)
    if target is None or not callable(target):
        return styles.refused(nodeid, f"{nodeid} is not defined after import", roots)
    if styles.style_of(target) != "hypothesis":
        return styles.refused(nodeid, f"{nodeid} is not a Hypothesis (@given) test", roots)
    why = _unsupported(target, owner)
    if why is not None:
        return styles.refused(nodeid, why, roots)
    return styles.prepare_given(nodeid, target, seed, pinned, roots, owner)


def _unsupported(target: Any, owner: type | None) -> str | None:
    """Why a ``@given`` test cannot be called without pytest, or ``None``."""
    if owner is not None:
        setups = [name for name in _XUNIT_SETUP if callable(getattr(owner, name, None))]
        if setups:
            return f"uses xunit setup ({', '.join(setups)}): not supported as a property"
    try:
        # Hypothesis leaves in the signature what ``@given`` does not fill: for pytest,
        # those are fixtures.
        parameters = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return None
    if owner is not None and parameters:
        parameters = parameters[1:]  # self
    fixtures = [
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if fixtures:
        return f"uses pytest fixtures ({', '.join(fixtures)}): not supported as a property"
    return None
