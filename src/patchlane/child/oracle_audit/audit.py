"""The oracle audit: is a passing property evidence at all?

A property can pass and still prove nothing. Two findings say so, for the property
report's ``oracle_findings``:

- ``mirrors_implementation``: the property recomputes the code under test's own formula
  (a "tautology"), so it stays green while that formula is wrong. Found by
  comparing normalised expressions of the property with those of the functions it called
  (``astnorm``).
- ``survives_mutants``: the property kills none of the mutants of the code it called
  (``mutants``), so it checks nothing.

``audit_property`` runs in the property lane's child process, after the property passed,
with the live property and the live functions it called.
"""

from __future__ import annotations

import ast
import inspect
import math
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from patchlane.child.oracle_audit.astnorm import (
    FunctionSource,
    Key,
    SourceUnavailable,
    body_statements,
    is_formula,
    load_source,
    normalise,
    qualified_name,
    weight,
)
from patchlane.child.oracle_audit.mutants import run_mutants
from patchlane.inputs.untrusted import DEPTH_FAILURES

MIRRORS_IMPLEMENTATION = "mirrors_implementation"
SURVIVES_MUTANTS = "survives_mutants"


@dataclass(frozen=True)
class AuditResult:
    """The audit of one property.

    ``findings`` are ``(kind, detail)`` pairs, kind ``mirrors_implementation`` or
    ``survives_mutants``; ``mutants`` is how many mutants were tried and ``killed`` how
    many the property caught (raised, errored or timed out), so that ``killed/mutants``
    is the kill ratio. ``notes`` say what the audit could not look at and why (no source,
    a wrapper, no timer, ...); ``survivors`` describe the mutants the property missed.
    """

    findings: tuple[tuple[str, str], ...]
    mutants: int
    killed: int
    notes: tuple[str, ...] = ()
    survivors: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Formula:
    """A non-trivial expression of one function, with its normalised key."""

    node: ast.expr
    key: Key
    operators: int
    size: int
    source: FunctionSource


def user_function(prop: Callable[[], None]) -> types.FunctionType | None:
    """Return the user's property function behind the runner's ``prop``, or ``None``.

    Follows ``__wrapped__`` (set by the runner with ``functools.wraps``) and, for a
    Hypothesis ``@given`` test, its ``hypothesis.inner_test``.
    """
    try:
        found: object = inspect.unwrap(prop)
        handle = getattr(found, "hypothesis", None)
        inner = getattr(handle, "inner_test", None)
        if isinstance(inner, types.FunctionType):
            found = inspect.unwrap(inner)
    except ValueError:  # a __wrapped__ cycle
        return None
    return found if isinstance(found, types.FunctionType) else None


def _expressions(source: FunctionSource) -> Iterator[ast.expr]:
    """Yield every expression of a function body, outermost first.

    Left out: the docstring, annotations, and ``assert`` messages (they report a failure;
    they check nothing).
    """

    def walk(node: ast.AST) -> Iterator[ast.expr]:
        if isinstance(node, ast.expr):
            yield node
        for name, value in ast.iter_fields(node):
            if name in ("annotation", "returns") or (
                isinstance(node, ast.Assert) and name == "msg"
            ):
                continue
            children = value if isinstance(value, list) else [value]
            for child in children:
                if isinstance(child, ast.AST):
                    yield from walk(child)

    for stmt in body_statements(source.node):
        yield from walk(stmt)


def _formulas(source: FunctionSource) -> list[_Formula]:
    out: list[_Formula] = []
    for node in _expressions(source):
        if is_formula(node):
            size = sum(1 for _ in ast.walk(node))
            out.append(_Formula(node, normalise(node), weight(node).operators, size, source))
    return out


def _contains(outer: ast.AST, inner: ast.AST) -> bool:
    return any(node is inner for node in ast.walk(outer))


def _mirror_detail(prop_name: str, pairs: list[tuple[_Formula, _Formula]]) -> str:
    mine, theirs = pairs[0]
    line, their_line = getattr(mine.node, "lineno", 0), getattr(theirs.node, "lineno", 0)
    shared = " ".join(ast.unparse(mine.node).split())
    if len(shared) > 80:
        shared = shared[:77] + "..."
    more = len(pairs) - 1
    tail = f" (and {more} more shared formula{'s' if more > 1 else ''})" if more else ""
    return (
        f"{prop_name} line {line} `{mine.source.line(line)}` recomputes "
        f"{theirs.source.name} line {their_line} `{theirs.source.line(their_line)}`: "
        f"the expression `{shared}` has the same structure as the implementation's "
        f"({mine.operators} operators, names aside), so the property stays green while that "
        f"formula is wrong{tail}"
    )


def find_mirrors(
    prop_sources: Sequence[FunctionSource],
    prop_name: str,
    targets: Sequence[FunctionSource],
) -> list[tuple[str, str]]:
    """Return one ``mirrors_implementation`` finding per target that shares a formula with
    the property.

    ``prop_sources`` are the property and its helpers (functions of the property's own
    module); a shared formula is a non-trivial expression (``astnorm.is_formula``) whose
    normalised key equals one of the target's. The finding names the largest shared
    formula and counts the others that are not part of it.
    """
    mine = [formula for source in prop_sources for formula in _formulas(source)]
    findings: list[tuple[str, str]] = []
    for target in targets:
        theirs: dict[Key, _Formula] = {}
        for formula in _formulas(target):
            theirs.setdefault(formula.key, formula)
        matched = [(m, theirs[m.key]) for m in mine if m.key in theirs]
        # Largest first; an expression inside an already reported one is the same finding.
        matched.sort(key=lambda pair: (-pair[0].operators, -pair[0].size))
        kept: list[tuple[_Formula, _Formula]] = []
        for pair in matched:
            if not any(_contains(k[0].node, pair[0].node) for k in kept):
                kept.append(pair)
        if kept:
            findings.append((MIRRORS_IMPLEMENTATION, _mirror_detail(prop_name, kept)))
    return findings


def _sources(functions: Sequence[types.FunctionType], notes: list[str]) -> list[FunctionSource]:
    out: list[FunctionSource] = []
    for func in functions:
        try:
            out.append(load_source(func))
        except SourceUnavailable as exc:
            notes.append(f"{qualified_name(func)}: not compared for mirrored formulas: {exc}")
    return out


def audit_property(
    prop: Callable[[], None],
    called: Sequence[types.FunctionType],
    *,
    mutants_limit: int,
    per_mutant_timeout_s: float,
    deadline: float = math.inf,
) -> AuditResult:
    """Audit one property that has just passed; return its findings and kill counts.

    ``prop`` runs the property exactly as the lane does and raises on failure;
    ``prop.__wrapped__`` is the user's function. ``called`` are the project functions
    the property called. Functions defined in the property's own file count as the
    property's helpers: their formulas are the property's, and they are not mutated.
    The others are compared for mirrored formulas and, unless ``mutants_limit`` is 0, up
    to ``mutants_limit`` mutants of them are run with ``per_mutant_timeout_s`` each, none
    started after ``deadline`` (``time.monotonic``; see
    ``mutants.run_mutants``; every ``__code__`` is restored afterwards). A property that
    ran against at least one mutant and killed none gets ``survives_mutants``. Source that
    cannot be parsed or is nested too deeply to analyse is never an error here: what it
    kept from being audited is said in ``notes``.

    Raises ``ValueError`` for a negative ``mutants_limit`` or a non-positive timeout.
    """
    if mutants_limit < 0:
        raise ValueError(f"mutants limit must be >= 0, not {mutants_limit}")
    if not per_mutant_timeout_s > 0:
        raise ValueError(f"per-mutant timeout must be > 0, not {per_mutant_timeout_s}")
    notes: list[str] = []
    user = user_function(prop)
    prop_name = user.__qualname__ if user is not None else getattr(prop, "__qualname__", repr(prop))
    own_file = user.__code__.co_filename if user is not None else None
    unique = list(
        {func.__code__: func for func in called if isinstance(func, types.FunctionType)}.values()
    )
    helpers = [f for f in unique if f.__code__.co_filename == own_file and f is not user]
    targets = [f for f in unique if f.__code__.co_filename != own_file]

    findings: list[tuple[str, str]] = []
    if user is None:
        notes.append(
            f"{prop_name}: not compared for mirrored formulas: no property function behind it"
        )
    else:
        prop_sources = _sources([user, *helpers], notes)
        if prop_sources and prop_sources[0].func is user:
            target_sources = sorted(_sources(targets, notes), key=lambda s: s.name)
            try:
                findings.extend(find_mirrors(prop_sources, prop_name, target_sources))
            except DEPTH_FAILURES:
                # The walks of find_mirrors recurse, and the code under test is the
                # patch's: an expression that parsed can still be too deep to walk.
                notes.append(
                    f"{prop_name}: not compared for mirrored formulas: "
                    "an expression is nested too deeply to analyse"
                )

    run = run_mutants(
        prop,
        targets,
        limit=mutants_limit,
        per_mutant_timeout_s=per_mutant_timeout_s,
        deadline=deadline,
    )
    notes.extend(run.notes)
    if run.tried and not run.killed:
        findings.append(
            (
                SURVIVES_MUTANTS,
                f"{prop_name} kills 0 of {run.tried} mutants of {', '.join(run.functions)}: "
                "it checks nothing",
            )
        )
    return AuditResult(
        findings=tuple(findings),
        mutants=run.tried,
        killed=run.killed,
        notes=tuple(notes),
        survivors=run.survivors,
    )
