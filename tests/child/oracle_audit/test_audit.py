"""The oracle audit's mirrored-formula check (``mirrors_implementation``), on real modules
written to disk and imported: no mocks, the same live function objects the runner passes."""

from __future__ import annotations

import ast
import functools
import types
from collections.abc import Callable
from pathlib import Path

import pytest

import patchlane
from patchlane.child.oracle_audit.astnorm import is_formula, normalise
from patchlane.child.oracle_audit.audit import (
    MIRRORS_IMPLEMENTATION,
    AuditResult,
    audit_property,
    user_function,
)
from tests.loader import Loader

EXAMPLE = Path(patchlane.__file__).parent / "demo" / "example"

IMPL = """\
from dataclasses import dataclass


@dataclass(frozen=True)
class RefundResult:
    net_cents: int
    rejected: bool


def apply_refund(charge, refund):
    net = charge if refund > charge else charge - refund
    return RefundResult(net_cents=net, rejected=refund > charge)
"""
IMPL_FORMULA_LINE = 11


def as_lane_runs(fn: Callable[..., None], *args: object) -> Callable[[], None]:
    """The zero-argument callable the runner builds: runs ``fn`` as the lane does."""

    @functools.wraps(fn)
    def prop() -> None:
        fn(*args)

    return prop


def audit(prop: Callable[[], None], *called: types.FunctionType) -> AuditResult:
    return audit_property(prop, list(called), mutants_limit=0, per_mutant_timeout_s=1.0)


def kinds(result: AuditResult) -> list[str]:
    return [kind for kind, _ in result.findings]


def test_a_property_that_recomputes_the_formula_is_flagged(load: Loader) -> None:
    impl = load(IMPL)
    props = load(
        f"""\
        import random
        from {impl.__name__} import apply_refund


        def prop_net_is_formula(seed, n=50):
            rng = random.Random(seed)
            for i in range(n):
                c, r = rng.randint(0, 100), rng.randint(0, 120)
                assert apply_refund(c, r).net_cents == (c if r > c else c - r), (seed, i)
        """
    )
    fn = props.prop_net_is_formula
    prop = as_lane_runs(fn, 7, 50)
    prop()  # it passes: that is the problem

    result = audit(prop, impl.apply_refund)

    assert kinds(result) == [MIRRORS_IMPLEMENTATION]
    detail = result.findings[0][1]
    assert detail.startswith("prop_net_is_formula line 9 ")
    assert "`assert apply_refund(c, r).net_cents == (c if r > c else c - r), (seed, i)`" in detail
    assert f"{impl.__name__}.apply_refund line {IMPL_FORMULA_LINE} " in detail
    assert "`net = charge if refund > charge else charge - refund`" in detail
    assert "`c if r > c else c - r`" in detail
    assert (result.mutants, result.killed) == (0, 0)


def test_the_seed_property_is_not_flagged_against_the_example(load: Loader) -> None:
    # The example's files, copied as they are; the property's ``from billing import``
    # resolves to the copy through its alias.
    billing = load(
        (EXAMPLE / "src" / "billing" / "__init__.py").read_text(encoding="utf-8"), alias="billing"
    )
    props = load((EXAMPLE / "checks" / "billing_props.py").read_text(encoding="utf-8"))
    prop = as_lane_runs(props.prop_refund_never_exceeds_charge, 20260924, 200)
    prop()

    result = audit(prop, billing.apply_refund, billing.RefundResult.__init__)

    assert result.findings == ()
    # The dataclass's generated __init__ has no source: said, not hidden.
    assert any("RefundResult.__init__" in note and "no source" in note for note in result.notes)


def test_a_shared_comparison_alone_is_not_a_finding(load: Loader) -> None:
    impl = load(IMPL)
    props = load(
        f"""\
        from {impl.__name__} import apply_refund


        def prop_bounds(pairs=((3, 5), (5, 3), (4, 4))):
            for c, r in pairs:
                result = apply_refund(c, r)
                assert 0 <= result.net_cents <= c
                assert result.rejected is (r > c)
                assert result.net_cents - 0 >= 0
        """
    )
    prop = as_lane_runs(props.prop_bounds)
    prop()

    assert audit(prop, impl.apply_refund).findings == ()


def test_renamed_variables_and_a_flipped_comparison_still_match(load: Loader) -> None:
    impl = load(IMPL)
    props = load(
        f"""\
        from {impl.__name__} import apply_refund


        def prop_renamed(pairs=((3, 5), (5, 3))):
            for total, back in pairs:
                expected = total if total < back else total - back
                assert apply_refund(total, back).net_cents == expected
        """
    )
    prop = as_lane_runs(props.prop_renamed)
    prop()

    result = audit(prop, impl.apply_refund)

    assert kinds(result) == [MIRRORS_IMPLEMENTATION]
    assert "`expected = total if total < back else total - back`" in result.findings[0][1]


@pytest.mark.parametrize(
    ("mine", "theirs", "flagged"),
    [
        ("a * b + 1", "p * q + 1", True),
        ("a * b + 2", "p * q + 1", False),  # another constant: another formula
        ("a * b - 1", "p * q + 1", False),  # another operator
        ("(a - b) * (a - b)", "(p - q) * (q - p)", False),  # renaming must be consistent
        ("max(a - b, 0)", "max(p - q, 0)", True),
        ("min(a - b, 0)", "max(p - q, 0)", False),  # the callee is part of the formula
        ("-(a * b)", "-(p * q)", True),
        ("a.total * a.rate + b", "inv.total * inv.rate + p", True),
        ("a.total * a.rate + b", "inv.total * inv.price + p", False),  # attributes are kept
        ("sum(x.q * x.u for x in a)", "sum(line.q * line.u for line in q)", True),
        ("len(a) - 1", "len(p) - 1", False),  # one operator: trivial
        ("a - b >= 0", "p - q >= 0", False),  # a predicate, not a formula
        ("0 <= a and a <= b", "0 <= p and p <= q", False),
        ("not (a > b)", "not (p > q)", False),
        ("b > a", "q > p", False),
    ],
)
def test_formula_threshold_and_normalisation(
    load: Loader, mine: str, theirs: str, flagged: bool
) -> None:
    impl = load(f"def compute(p, q, inv=None):\n    return {theirs}\n")
    props = load(
        f"from {impl.__name__} import compute\n\n\n"
        f"def prop_x(a=1, b=2):\n    assert compute(1, 2) != ({mine})\n"
    )

    result = audit(as_lane_runs(props.prop_x), impl.compute)

    assert kinds(result) == ([MIRRORS_IMPLEMENTATION] if flagged else [])


def test_a_helper_in_the_property_module_counts_as_the_property(load: Loader) -> None:
    impl = load(IMPL)
    props = load(
        f"""\
        from {impl.__name__} import apply_refund


        def _expected(charge, refund):
            return charge if refund > charge else charge - refund


        def prop_with_helper(pairs=((3, 5), (5, 3))):
            for c, r in pairs:
                assert apply_refund(c, r).net_cents == _expected(c, r)
        """
    )
    prop = as_lane_runs(props.prop_with_helper)
    prop()

    result = audit_property(
        prop, [props._expected, impl.apply_refund], mutants_limit=20, per_mutant_timeout_s=1.0
    )

    assert kinds(result) == [MIRRORS_IMPLEMENTATION]
    assert "`return charge if refund > charge else charge - refund`" in result.findings[0][1]
    # Only the code under test is mutated, never the property's own helper.
    assert result.mutants > 0
    assert all(impl.__name__ in survivor for survivor in result.survivors)


def test_a_hypothesis_property_is_read_through_given(load: Loader) -> None:
    impl = load(IMPL)
    props = load(
        f"""\
        from hypothesis import given, strategies as st
        from {impl.__name__} import apply_refund


        @given(st.integers(0, 100), st.integers(0, 100))
        def prop_given(c, r):
            assert apply_refund(c, r).net_cents == (c if r > c else c - r)
        """
    )
    prop = as_lane_runs(props.prop_given)

    assert user_function(prop) is props.prop_given.hypothesis.inner_test
    assert kinds(audit(prop, impl.apply_refund)) == [MIRRORS_IMPLEMENTATION]


def test_a_property_without_source_is_noted_not_failed(load: Loader) -> None:
    impl = load(IMPL)
    namespace: dict[str, object] = {"apply_refund": impl.apply_refund}
    exec(  # noqa: S102 - a function with no source file, as generated code has
        "def prop_generated():\n    assert apply_refund(1, 2).rejected\n", namespace
    )
    generated = namespace["prop_generated"]
    assert isinstance(generated, types.FunctionType)

    result = audit(as_lane_runs(generated), impl.apply_refund)

    assert result.findings == ()
    assert any("no source file" in note for note in result.notes)


def test_bad_arguments_are_refused(load: Loader) -> None:
    impl = load(IMPL)
    prop = as_lane_runs(lambda: None)
    with pytest.raises(ValueError, match="limit"):
        audit_property(prop, [impl.apply_refund], mutants_limit=-1, per_mutant_timeout_s=1.0)
    with pytest.raises(ValueError, match="timeout"):
        audit_property(prop, [impl.apply_refund], mutants_limit=1, per_mutant_timeout_s=0)


def expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        ("a + b", "x + y", True),
        ("a + a", "x + y", False),
        ("a.b + c", "x.b + y", True),
        ("a.b + c", "x.c + y", False),
        ("a > b", "b < a", True),
        ("a >= b >= c", "c <= b <= a", True),
        ("-1 + a", "-1 + b", True),
        ("'x' + a", "'y' + b", True),  # strings keep only their type
        ("1 + a", "1.0 + a", False),  # numbers keep type and value
        ("f(a, k=b)", "f(x, k=y)", True),
        ("f(a, k=b)", "f(x, j=y)", False),
        ("f(a)", "g(a)", False),
        ("lambda v: v + a", "lambda w: w + b", True),
    ],
)
def test_normalise(left: str, right: str, equal: bool) -> None:
    assert (normalise(expr(left)) == normalise(expr(right))) is equal


@pytest.mark.parametrize(
    ("text", "formula"),
    [
        ("c if r > c else c - r", True),
        ("a * b + c", True),
        ("max(a - b, 0)", True),
        ("a - b", False),
        ("len(a) - 1", False),
        ("-1 + a", False),
        ("a * b > c", False),
        ("min(max(a, b), c)", False),
    ],
)
def test_is_formula(text: str, formula: bool) -> None:
    assert is_formula(expr(text)) is formula
