"""The property child's assert rewriting (``asserts``): operands' values in the message, and
the semantics of ``assert`` kept (evaluation order, short-circuit, lazy message)."""

from __future__ import annotations

import builtins
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from patchlane.child import asserts


@pytest.fixture(autouse=True)
def _explain() -> Iterator[None]:
    missing = object()
    before = getattr(builtins, asserts.EXPLAIN, missing)
    asserts.install()
    yield
    if before is missing:
        delattr(builtins, asserts.EXPLAIN)
    else:
        setattr(builtins, asserts.EXPLAIN, before)


def _load(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    code = asserts.compile_source(textwrap.dedent(source).encode(), "m.py")
    exec(code, namespace)  # noqa: S102 - the test's own source
    return namespace


def _message(fn: Any, *args: Any) -> str:
    with pytest.raises(AssertionError) as caught:
        fn(*args)
    return str(caught.value)


def test_a_call_operand_is_shown_with_its_value_and_not_called_again() -> None:
    ns = _load(
        """
        calls = []
        def total(items):
            calls.append(items)
            return sum(items)
        def prop(items):
            assert total(items) == 4
        """
    )
    assert _message(ns["prop"], [1, 2]) == "assert 3 == 4 where 3 = total(items)"
    assert ns["calls"] == [[1, 2]]


def test_a_chain_stops_at_its_first_false_comparison() -> None:
    ns = _load(
        """
        seen = []
        def f(x):
            seen.append(x)
            return x
        def prop(a, b, c):
            assert f(a) < f(b) < f(c)
        """
    )
    assert _message(ns["prop"], 3, 1, 9) == "assert 3 < 1 where 3 = f(a), 1 = f(b)"
    assert ns["seen"] == [3, 1]  # f(c) was never evaluated, as without the rewrite


def test_a_message_is_evaluated_only_on_failure_and_stays_the_argument() -> None:
    ns = _load(
        """
        made = []
        def note(x):
            made.append(x)
            return (7, 2, x)
        def prop(x):
            assert x.real > 0, note(x)
        """
    )
    ns["prop"](1)
    assert ns["made"] == []
    with pytest.raises(AssertionError) as caught:
        ns["prop"](-5)
    assert caught.value.args == ((7, 2, -5),)
    assert getattr(caught.value, asserts.EXPLANATION) == "assert -5 > 0 where -5 = x.real"


def test_other_asserts_show_their_value() -> None:
    ns = _load(
        """
        def negated(x):
            assert not x
        def truthy(d):
            assert d.get("k")
        def plain(flag):
            assert flag
        """
    )
    assert _message(ns["negated"], [1]) == "assert not [1]"
    assert _message(ns["truthy"], {}) == 'assert None where None = d.get("k")'
    assert _message(ns["plain"], 0) == "assert 0"


def test_module_and_class_level_asserts_are_left_alone() -> None:
    source = "X = 1\nassert X == 1\nclass C:\n    assert X == 1\n"
    code = asserts.compile_source(source.encode(), "m.py")
    assert code.co_code == compile(source, "m.py", "exec", dont_inherit=True).co_code


def test_a_rebound_helper_cannot_turn_a_failing_assert_into_a_pass() -> None:
    ns = _load("def prop(x):\n    assert x == 1\n")
    setattr(builtins, asserts.EXPLAIN, lambda *args: None)
    with pytest.raises(TypeError):  # raising None: still a failure, never a pass
        ns["prop"](2)
    ns["prop"](1)
