"""Mutants of the code under test (``survives_mutants``), on real modules written to disk
and imported: real code objects are swapped, real timers fire, nothing is mocked."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import patchlane
from patchlane.child.oracle_audit.audit import (
    SURVIVES_MUTANTS,
    AuditResult,
    audit_property,
)
from patchlane.child.oracle_audit.mutants import (
    KINDS,
    MutableFunction,
    Mutant,
    Unmutatable,
    plan_mutants,
    prepare,
    run_mutants,
)
from tests.loader import Loader

EXAMPLE = Path(patchlane.__file__).parent / "demo" / "example"

COUNT_UP = """\
def count_up(n):
    i = 0
    while i < n:
        i += 1
    return i
"""


@pytest.fixture
def example(load: Loader) -> tuple[types.ModuleType, types.ModuleType]:
    """The example's billing module (aliased ``billing``) and the seed's property module."""
    billing = load(
        (EXAMPLE / "src" / "billing" / "__init__.py").read_text(encoding="utf-8"), alias="billing"
    )
    props = load((EXAMPLE / "checks" / "billing_props.py").read_text(encoding="utf-8"))
    return billing, props


@pytest.fixture(autouse=True)
def alarm_left_alone() -> Iterator[None]:
    """Every test leaves SIGALRM's handler and timer as it found them."""
    before = signal.getsignal(signal.SIGALRM)
    yield
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def as_lane_runs(fn: Callable[..., None], *args: object) -> Callable[[], None]:
    """The zero-argument callable the runner builds: runs ``fn`` as the lane does."""

    @functools.wraps(fn)
    def prop() -> None:
        fn(*args)

    return prop


def run_with(mutant: Mutant, *args: object) -> object:
    """Call the mutated function once with ``args``; restore its code afterwards."""
    func = mutant.target.func
    original = func.__code__
    func.__code__ = mutant.target.compile_mutant(mutant.change)
    try:
        return func(*args)
    finally:
        func.__code__ = original


def by_description(mutants: list[Mutant], text: str) -> Mutant:
    found = [m for m in mutants if m.description.endswith(f": {text}")]
    assert len(found) == 1, [m.description for m in mutants]
    return found[0]


@pytest.mark.parametrize(
    ("expression", "kind", "change", "args", "before", "after"),
    [
        ("a < b", "compare", "'<' -> '<='", (1, 1), False, True),
        ("a <= b", "compare", "'<=' -> '<'", (1, 1), True, False),
        ("a > b", "compare", "'>' -> '>='", (1, 1), False, True),
        ("a >= b", "compare", "'>=' -> '>'", (1, 1), True, False),
        ("a == b", "compare", "'==' -> '!='", (1, 1), True, False),
        ("a != b", "compare", "'!=' -> '=='", (1, 1), False, True),
        ("a is b", "compare", "'is' -> 'is not'", (None, None), True, False),
        ("a is not b", "compare", "'is not' -> 'is'", (None, None), False, True),
        ("a in b", "compare", "'in' -> 'not in'", (1, [1]), True, False),
        ("a not in b", "compare", "'not in' -> 'in'", (1, [1]), False, True),
        ("a + b", "arithmetic", "'+' -> '-'", (5, 3), 8, 2),
        ("a - b", "arithmetic", "'-' -> '+'", (5, 3), 2, 8),
        ("a * b", "arithmetic", "'*' -> '//'", (7, 2), 14, 3),
        ("a / b", "arithmetic", "'/' -> '*'", (6, 2), 3.0, 12),
        ("a // b", "arithmetic", "'//' -> '*'", (7, 2), 3, 14),
        ("a % b", "arithmetic", "'%' -> '//'", (7, 2), 1, 3),
        ("a and b", "boolean", "'and' -> 'or'", (True, False), False, True),
        ("a or b", "boolean", "'or' -> 'and'", (True, False), True, False),
        ("not a", "boolean", "'not a' -> 'a'", (True, None), False, True),
        ("a + 7", "constant", "7 -> 8", (1, None), 8, 9),
        ("a + 0", "constant", "0 -> 1", (1, None), 1, 2),
        ("a * 1", "constant", "1 -> 0", (5, None), 5, 0),
        ("a + 2.5", "constant", "2.5 -> 3.5", (1, None), 3.5, 4.5),
        ("True", "constant", "True -> False", (None, None), True, False),
        ("'abc'", "constant", "'abc' -> ''", (None, None), "abc", ""),
        ("a", "return", "'return a' -> 'return None'", (5, None), 5, None),
    ],
)
def test_each_operator_class_gives_its_mutant(
    load: Loader,
    expression: str,
    kind: str,
    change: str,
    args: tuple[object, ...],
    before: object,
    after: object,
) -> None:
    module = load(f"def f(a, b):\n    return {expression}\n")
    mutants = MutableFunction(module.f).mutants()

    mutant = by_description(mutants, change)

    assert mutant.kind == kind
    assert mutant.description == f"{module.__name__}.f line 2: {change}"
    assert mutant.id.startswith(f"{module.__name__}.f:2:")
    assert module.f(*args) == before
    assert run_with(mutant, *args) == after
    assert module.f(*args) == before  # restored


def test_augmented_assignment_and_nested_code_are_mutated(load: Loader) -> None:
    module = load(
        """\
        def total(lines):
            acc = 0
            for line in lines:
                acc += line
            return acc + sum(x * 2 for x in lines)
        """
    )
    mutants = MutableFunction(module.total).mutants()

    assert run_with(by_description(mutants, "'+=' -> '-='"), [1, 2]) == -3 + 6
    # The generator expression's code is a constant of total's code: mutated with it.
    assert run_with(by_description(mutants, "'*' -> '//'"), [1, 2]) == 3 + 1
    assert module.total([1, 2]) == 9


def test_docstrings_messages_and_annotations_are_not_mutated(load: Loader) -> None:
    module = load(
        """\
        def check(amount: int = 5) -> int:
            \"\"\"A docstring is not behaviour.\"\"\"
            note: str = "kept"
            if amount < 0:
                raise ValueError("negative: " + str(amount))
            assert amount != 3, "three"
            return f"{amount} cents"
        """
    )
    descriptions = [m.description for m in MutableFunction(module.check).mutants()]

    assert not any("docstring" in d or "negative" in d or "three" in d for d in descriptions)
    assert not any("' cents'" in d for d in descriptions)
    assert any("'kept' -> ''" in d for d in descriptions)  # a value, not a message
    assert not any("5 -> 6" in d for d in descriptions)  # a default: not in __code__


def test_ids_and_order_are_deterministic(load: Loader) -> None:
    module = load(
        """\
        def f(a, b):
            if a > 0 and b > 0:
                return a + b + 1
            return not a
        """
    )
    first, notes = plan_mutants([module.f], 100)
    second, _ = plan_mutants([module.f], 100)

    assert notes == []
    assert [m.id for m in first] == [m.id for m in second]
    assert [m.description for m in first] == [m.description for m in second]
    assert len({m.id for m in first}) == len(first)  # unique, even for a + b + 1
    keys = [(m.line, m.col, KINDS.index(m.kind)) for m in first]
    assert keys == sorted(keys)
    assert first[0].id == f"{module.__name__}.f:2:7:compare:0"
    assert [m.id for m in first if m.line == 3 and m.kind == "arithmetic"] == [
        f"{module.__name__}.f:3:15:arithmetic:0",
        f"{module.__name__}.f:3:15:arithmetic:1",
    ]


def test_the_limit_is_respected_and_spread_over_functions_and_kinds(load: Loader) -> None:
    module = load(
        """\
        def busy(a, b):
            if a < 1 and b > 2 or a == 3:
                return a + b * 4 - 5
            return a is None


        def small(x):
            return x + 1
        """
    )
    every, _ = plan_mutants([module.busy, module.small], 1000)
    five, _ = plan_mutants([module.busy, module.small], 5)
    four_of_busy, _ = plan_mutants([module.busy], 4)

    assert len(every) == 19
    assert len(five) == 5
    assert {m.function.rsplit(".", 1)[1] for m in five} == {"busy", "small"}
    assert sorted(m.kind for m in four_of_busy) == ["arithmetic", "boolean", "compare", "constant"]
    assert five == [m for m in every if m in five]  # kept in canonical order

    run = run_mutants(
        as_lane_runs(lambda: None), [module.busy, module.small], limit=3, per_mutant_timeout_s=1.0
    )
    assert run.tried == 3


def test_code_is_restored_when_the_property_raises(load: Loader) -> None:
    module = load("def f(a, b):\n    return a + b if a > b else a - b\n")
    original = module.f.__code__

    def prop() -> None:
        if module.f.__code__ is not original:
            raise RuntimeError("mutant seen")

    run = run_mutants(prop, [module.f], limit=100, per_mutant_timeout_s=1.0)

    assert run.tried == run.killed > 0
    assert {o.detail for o in run.outcomes} == {"RuntimeError: mutant seen"}
    assert module.f.__code__ is original


@pytest.mark.parametrize(
    ("body", "note"),
    [
        ("assert f(2, 1) == 0", "the property, unmutated, failed: AssertionError"),
        ("time.sleep(0.5)", "the property, unmutated, took longer than 0.1 s"),
    ],
)
def test_a_property_that_does_not_pass_unmutated_runs_no_mutants(
    load: Loader, body: str, note: str
) -> None:
    module = load(f"import time\n\n\ndef f(a, b):\n    return a + b\n\n\ndef prop():\n    {body}\n")

    run = run_mutants(module.prop, [module.f], limit=10, per_mutant_timeout_s=0.1)

    assert run.tried == 0
    assert any(note in n for n in run.notes), run.notes


def test_an_infinite_loop_mutant_is_killed_by_timeout(load: Loader) -> None:
    module = load(COUNT_UP)
    original = module.count_up.__code__

    def prop_counts() -> None:
        assert module.count_up(5) == 5

    started = time.monotonic()
    run = run_mutants(prop_counts, [module.count_up], limit=100, per_mutant_timeout_s=0.2)
    elapsed = time.monotonic() - started

    status = {o.mutant.description.split(": ", 1)[1]: o.status for o in run.outcomes}
    assert status["'+=' -> '-='"] == "timeout"
    assert status["1 -> 0"] == "timeout"  # i += 0 never ends either
    assert status["'<' -> '<='"] == "killed"
    assert status["0 -> 1"] == "survived"  # starting at 1 still ends at 5
    assert elapsed < 5
    assert module.count_up.__code__ is original
    assert module.count_up(3) == 3


@pytest.mark.slow
def test_a_property_that_swallows_the_timeout_is_interrupted_again(load: Loader) -> None:
    module = load(COUNT_UP)

    def prop_swallows() -> None:
        with contextlib.suppress(BaseException):  # the point of the test
            module.count_up(5)
        assert module.count_up(5) == 5

    run = run_mutants(prop_swallows, [module.count_up], limit=100, per_mutant_timeout_s=0.2)

    status = {o.mutant.description.split(": ", 1)[1]: o.status for o in run.outcomes}
    assert status["'+=' -> '-='"] == "timeout"


@pytest.mark.slow
def test_the_callers_alarm_is_paused_and_restored(load: Loader) -> None:
    module = load(COUNT_UP)
    fired: list[int] = []

    def handler(signum: int, frame: types.FrameType | None) -> None:
        fired.append(signum)

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)
        run_mutants(
            as_lane_runs(module.count_up, 5), [module.count_up], limit=3, per_mutant_timeout_s=0.2
        )
        assert signal.getsignal(signal.SIGALRM) is handler
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < remaining <= 30

        # A caller's deadline that falls due during the mutants caps them and fires after.
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        run = run_mutants(
            as_lane_runs(lambda: module.count_up(5)),
            [module.count_up],
            limit=100,
            per_mutant_timeout_s=5.0,
        )
        time.sleep(0.1)
        assert fired == [signal.SIGALRM]
        assert any("caller's own timer" in note for note in run.notes)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_property_that_asserts_nothing_survives_every_mutant(
    example: tuple[types.ModuleType, types.ModuleType], load: Loader
) -> None:
    billing, _ = example
    props = load(
        """\
        from billing import apply_refund


        def prop_calls_only():
            apply_refund(1, 2)
        """
    )
    prop = as_lane_runs(props.prop_calls_only)

    result = audit_property(prop, [billing.apply_refund], mutants_limit=50, per_mutant_timeout_s=1)

    assert result.mutants == 11
    assert result.killed == 0
    assert result.findings == (
        (
            SURVIVES_MUTANTS,
            f"prop_calls_only kills 0 of 11 mutants of {billing.__name__}.apply_refund: "
            "it checks nothing",
        ),
    )
    assert len(result.survivors) == 11


def test_the_seed_property_kills_mutants_of_the_example(
    example: tuple[types.ModuleType, types.ModuleType],
) -> None:
    billing, props = example
    original = billing.apply_refund.__code__
    prop = as_lane_runs(props.prop_refund_never_exceeds_charge, 20260924, 200)

    result = audit_property(prop, [billing.apply_refund], mutants_limit=50, per_mutant_timeout_s=2)

    assert result.findings == ()
    assert result.mutants == 11
    assert result.killed == 5
    # The bounds property misses input validation and the boundary refund == charge.
    assert f"{billing.__name__}.apply_refund line 35: '>' -> '>='" in result.survivors
    assert billing.apply_refund.__code__ is original


def test_mutants_limit_zero_tries_none(
    example: tuple[types.ModuleType, types.ModuleType],
) -> None:
    billing, props = example
    runs: list[int] = []

    def prop() -> None:
        runs.append(1)
        props.prop_refund_never_exceeds_charge(1, 5)

    result = audit_property(prop, [billing.apply_refund], mutants_limit=0, per_mutant_timeout_s=1)

    assert (result.mutants, result.killed, result.findings) == (0, 0, ())
    assert runs == []


def test_a_closure_is_rebuilt_with_its_cells(load: Loader) -> None:
    module = load(
        """\
        def make_scaler(k):
            def scale(x):
                return x * k + 1
            return scale
        """
    )
    scale = module.make_scaler(3)
    mutants = MutableFunction(scale).mutants()

    assert run_with(by_description(mutants, "'*' -> '//'"), 7) == 3
    assert run_with(by_description(mutants, "1 -> 0"), 7) == 21
    # Returning None drops the only use of k: the closure's shape is kept all the same.
    assert run_with(by_description(mutants, "'return x * k + 1' -> 'return None'"), 7) is None
    assert scale(7) == 22


def test_a_method_using_super_is_rebuilt_in_its_class(load: Loader) -> None:
    module = load(
        """\
        import functools


        def register(fn):
            return fn


        class Base:
            def total(self):
                return 10


        class Child(Base):
            @register
            def total(self):
                return super().total() + self.__extra


            __extra = 1
        """
    )
    child = module.Child()
    mutants = MutableFunction(module.Child.total).mutants()

    assert run_with(by_description(mutants, "'+' -> '-'"), child) == 9
    no_super = by_description(mutants, "'return super().total() + self.__extra' -> 'return None'")
    assert run_with(no_super, child) is None
    assert child.total() == 11


def test_functions_that_cannot_be_rebuilt_are_noted(load: Loader, tmp_path: Path) -> None:
    module = load(
        """\
        from dataclasses import dataclass


        @dataclass
        class Point:
            x: int


        def double(v):
            return v * 2


        halve = lambda v: v // 2  # noqa: E731
        """
    )
    # Edit the file after import: its source no longer compiles to the live code.
    path = Path(module.__file__ or "")
    path.write_text(path.read_text(encoding="utf-8").replace("v * 2", "v * 3"), encoding="utf-8")
    os.utime(path, (time.time() + 5, time.time() + 5))

    functions, notes = prepare([module.double, module.halve, module.Point.__init__])

    assert functions == []
    assert len(notes) == 3
    assert any(
        "double: not mutated: its source does not compile to its live code" in n for n in notes
    )
    assert any("<lambda>: not mutated: a lambda" in n for n in notes)
    assert any("Point.__init__: not mutated: no source file" in n for n in notes)
    with pytest.raises(Unmutatable):
        MutableFunction(module.double)


def test_outside_the_main_thread_nothing_runs(load: Loader) -> None:
    module = load(COUNT_UP)
    results: list[AuditResult] = []

    def prop_counts() -> None:
        assert module.count_up(5) == 5

    thread = threading.Thread(
        target=lambda: results.append(
            audit_property(
                prop_counts,
                [module.count_up],
                mutants_limit=10,
                per_mutant_timeout_s=1,
            )
        )
    )
    thread.start()
    thread.join()

    (result,) = results
    assert (result.mutants, result.findings) == (0, ())
    assert any("main thread" in note for note in result.notes)


def test_no_mutant_starts_after_the_deadline_and_the_note_says_why(load: Loader) -> None:
    module = load("def f(a, b):\n    return a + b if a > b else a - b\n")

    def prop() -> None:
        assert module.f(2, 1) == 3

    run = run_mutants(
        prop, [module.f], limit=100, per_mutant_timeout_s=1.0, deadline=time.monotonic()
    )

    assert run.tried == 0
    assert "mutation stopped early: the audit's time budget ran out" in run.notes
