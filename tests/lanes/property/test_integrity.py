"""The child's integrity check (issue 9): code under test that rebinds what properties rely
on fails them with ``sandbox: tampered: <name>``. The lane tests run hostile code for real
in the lane's real child; the same code without the rebindings passes."""

from __future__ import annotations

import builtins
import random
import sys
import types

import pytest

from patchlane.lanes.property import integrity
from tests.gitrepo import GitRepo
from tests.lanes.property import project as P

# One property of each style; only the first calls ``act()``, the code under test's hook
# for tampering while a property runs.
PROPS = """\
import random

from hypothesis import given, strategies as st
from patchlane.props import check
from shop import act, refund


def prop_a_seed(seed, n=200):
    act()
    rng = random.Random(seed)
    for i in range(n):
        charge, amount = rng.randint(0, 100), rng.randint(0, 120)
        assert 0 <= refund(charge, amount) <= charge, (seed, i, charge, amount)


@check(lambda rng: {"charge": rng.randint(0, 100), "amount": rng.randint(0, 120)})
def prop_b_check(charge, amount):
    assert 0 <= refund(charge, amount) <= charge


@given(st.integers(0, 100), st.integers(0, 120))
def prop_c_given(charge, amount):
    assert 0 <= refund(charge, amount) <= charge
"""
NAMES = ("prop_a_seed", "prop_b_check", "prop_c_given")

# Each route: the code that reaches the object (run in the clean version too) and the
# rebinding, and the dotted name the check reports.
ROUTES = {
    "random.Random.random": ("import random", "random.Random.random = lambda self: 0.5"),
    "random.random": ("import random", "random.random = lambda: 0.5"),
    "hashlib.sha256": ("import hashlib", "hashlib.sha256 = hashlib.md5"),
    "os.urandom": ("import os", "os.urandom = lambda n: bytes(n)"),
    "builtins.all": ("import builtins", "builtins.all = lambda iterable: True"),
    "builtins.sorted": (
        "import builtins",
        "builtins.sorted = lambda iterable, **kw: list(iterable)",
    ),
    "hypothesis.strategies.integers": (
        "import hypothesis.strategies as st",
        "st.integers = lambda *a, **k: st.just(0)",
    ),
    "hypothesis.seed": (
        "import hypothesis",
        "hypothesis.seed = lambda seed: (lambda test: test)",
    ),
    "patchlane.props.case_rng": (
        "import random, patchlane.props",
        "patchlane.props.case_rng = lambda seed, name, index: random.Random(0)",
    ),
    # The child runs as __main__: its result writer, made to turn failures into passes.
    "patchlane.lanes.property.child.Writer.emit": (
        """\
import sys
Writer = sys.modules["__main__"].Writer
original = Writer.emit
def emit(self, record):
    if record.get("outcome") == "fail":
        record = {**record, "outcome": "pass", "kind": None, "case_index": None,
                  "arguments": None, "message": None, "missing": None}
    original(self, record)""",
        "Writer.emit = emit",
    ),
    "random.Random.randint.__code__": (
        "import random",
        "random.Random.randint.__code__ = (lambda self, a, b: a).__code__",
    ),
}


def tampering(name: str) -> str:
    """The statements of route ``name``, rebinding included."""
    return "\n".join(ROUTES[name])


def indent(code: str) -> str:
    return "\n".join("    " + line for line in code.splitlines())


def shop(at_import: str = "", in_act: str = "pass", code: str = P.SHOP) -> str:
    """The code under test (``code``) with ``at_import`` at module level and ``in_act`` as
    the body of ``act()``."""
    return f"{code}\n\n{at_import}\n\n\ndef act():\n{indent(in_act)}\n"


def run(repo: GitRepo, code_under_test: str) -> P.PropertyReport:
    """Run the lane (the head alone) on ``PROPS`` against ``code_under_test``."""
    P.make(repo, PROPS, code_under_test)
    return P.lane(repo, base=None, head="HEAD")


def test_the_routes_without_the_rebinding_pass(repo: GitRepo) -> None:
    # The same code as the tests below, at import and while a property runs, minus the
    # rebindings: nothing is reported.
    reach = "\n".join(setup for setup, _ in ROUTES.values())
    report = run(repo, shop(at_import=reach, in_act=reach))
    assert report.status == "pass", report.to_json()
    assert set(P.outcomes(report).values()) == {"pass"}


@pytest.mark.parametrize("name", list(ROUTES))
def test_tampering_at_import_fails_every_property(repo: GitRepo, name: str) -> None:
    report = run(repo, shop(at_import=tampering(name)))
    for prop in NAMES:
        failure = P.one_failure(report, prop)
        assert failure["kind"] == "sandbox", failure
        assert failure["message"] == f"sandbox: tampered: {name} (during import)", failure
    assert report.status == "fail"


@pytest.mark.parametrize(
    "name",
    [
        "random.Random.random",
        "random.random",
        "hashlib.sha256",
        "os.urandom",
        "builtins.sorted",
        "hypothesis.seed",
        "patchlane.props.case_rng",
        "patchlane.lanes.property.child.Writer.emit",
    ],
)
def test_tampering_during_a_run_fails_that_property(repo: GitRepo, name: str) -> None:
    report = run(repo, shop(in_act=tampering(name)))
    failure = P.one_failure(report, "prop_a_seed")
    assert failure["kind"] == "sandbox", failure
    assert failure["message"] == f"sandbox: tampered: {name}", failure
    # What was rebound is put back: the properties after it run with the real objects.
    assert P.outcomes(report) == {
        ("prop_a_seed", "head"): "error",
        ("prop_b_check", "head"): "pass",
        ("prop_c_given", "head"): "pass",
    }


BROKEN = "def refund(charge, amount):\n    return charge - amount\n"


def test_tampering_cannot_turn_a_broken_property_green(repo: GitRepo) -> None:
    # ``refund`` is broken (a refund above the charge goes negative). The tampering makes
    # every randint draw its lower bound (no such refund is ever drawn) and the writer
    # report passes: without the check, the seed and check properties would look green.
    both = ("random.Random.randint.__code__", "patchlane.lanes.property.child.Writer.emit")
    report = run(repo, shop(at_import="\n".join(tampering(n) for n in both), code=BROKEN))
    assert report.status == "fail"
    for prop in NAMES:
        assert P.one_failure(report, prop)["message"] == (
            "sandbox: tampered: patchlane.lanes.property.child.Writer.emit, "
            "random.Random.randint.__code__ (during import)"
        )


def test_tampering_while_describing_a_failure_is_caught(repo: GitRepo) -> None:
    # The check runs after the failure is described: an exception whose __str__ rebinds
    # the writer is caught too.
    body = indent(indent(tampering("patchlane.lanes.property.child.Writer.emit")))
    raiser = f"class Sneaky(Exception):\n    def __str__(self):\n{body}\n"
    raiser += '        return "sneaky"\nraise Sneaky()'
    report = run(repo, shop(in_act=raiser))
    message = P.one_failure(report, "prop_a_seed")["message"]
    assert message.startswith(
        "sandbox: tampered: patchlane.lanes.property.child.Writer.emit; "
        "the property failed too: Sneaky: sneaky"
    )
    assert P.outcomes(report)[("prop_b_check", "head")] == "pass"


def test_ordinary_code_is_not_tampering(repo: GitRepo) -> None:
    # State is not a rebinding: seeding and drawing from the global random, registering
    # a Hypothesis profile, running a doctest (it sets builtins._), importing more of
    # Hypothesis and of patchlane, adding attributes to modules.
    ordinary = """\
import doctest, hashlib, random
import hypothesis, hypothesis.stateful
import patchlane.verdict
random.seed(1)
random.random()
hashlib.sha256(b"x").hexdigest()
hypothesis.settings.register_profile("mine", max_examples=3)
hypothesis.settings.load_profile("mine")
random.my_note = "added"


def _doc():
    '''
    >>> 1 + 1
    2
    '''


doctest.run_docstring_examples(_doc, {})"""
    report = run(repo, shop(at_import=ordinary, in_act=ordinary))
    assert report.status == "pass", report.to_json()


# -- integrity.py itself, on a synthetic module ------------------------------------------


SYNTHETIC = """\
LIMIT = 3
state = []


def helper(x, y=1):
    return x + y


class Box:
    size = 2

    def open(self):
        return "open"

    @staticmethod
    def make():
        return Box()
"""


@pytest.fixture
def synthetic(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A fresh module in ``sys.modules`` (removed afterwards)."""
    module = types.ModuleType("plt_integrity_synthetic")
    exec(compile(SYNTHETIC, "<synthetic>", "exec"), vars(module))  # noqa: S102 - test input
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def test_compare_reports_rebinding_by_identity_and_restore_puts_back(
    synthetic: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = synthetic.__name__
    snapshot = integrity.take([name])
    assert integrity.compare(snapshot) == []
    helper, box, code = synthetic.helper, synthetic.Box, synthetic.helper.__code__
    # State is not a rebinding: a module's data may change (but not a class dict's).
    synthetic.state = [1]
    synthetic.LIMIT = 4
    synthetic.added = "new"
    assert integrity.compare(snapshot) == []

    synthetic.helper = lambda x, y=1: 0
    box.open = lambda self: "forced"
    box.close = lambda self: None  # an addition shadows what a base class would give
    box.size = 3  # plain data in a class is state, as in a module
    box.__annotations__ = {}
    del box.make
    helper.__code__ = (lambda x, y=1: 0).__code__
    helper.__defaults__ = (2,)
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    assert integrity.compare(snapshot) == [
        f"{name}.helper",
        f"{name}.Box.open",
        f"{name}.Box.make",
        f"{name}.Box.close",
        f"{name}.helper.__code__",
        f"{name}.helper.__defaults__",
        f"sys.modules[{name}]",
    ]
    assert integrity.verify(snapshot)  # reports, then restores
    assert integrity.compare(snapshot) == []
    assert sys.modules[name] is synthetic and synthetic.helper is helper
    assert helper.__code__ is code and helper(1) == 2
    assert box().open() == "open" and isinstance(box.make(), box)
    assert not hasattr(box, "close")


def test_builtins_additions_count_except_underscore(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = integrity.take(["builtins"])
    monkeypatch.setattr(builtins, "_", "set by sys.displayhook", raising=False)
    assert integrity.compare(snapshot) == []
    monkeypatch.setattr(builtins, "plt_extra_builtin", len, raising=False)
    monkeypatch.setattr(builtins, "sorted", lambda *a, **k: [])
    found = integrity.compare(snapshot)
    monkeypatch.undo()
    assert found == ["builtins.sorted", "builtins.plt_extra_builtin"]


def test_the_check_does_not_call_through_what_it_checks(
    synthetic: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot = integrity.take(["builtins", synthetic.__name__])
    # Blinding the builtins the check would use, or this module's own helper, changes
    # nothing. Written by hand, not with monkeypatch: pytest itself needs the builtins.
    namespace = vars(builtins)
    saved = {n: namespace[n] for n in ("type", "tuple")}
    monkeypatch.setattr(integrity, "_is_plain", lambda value: True)
    synthetic.Box.close = lambda self: None
    try:
        namespace["type"] = lambda *a: int
        namespace["tuple"] = lambda *a: ()
        found = integrity.compare(snapshot)
    finally:
        namespace.update(saved)
    assert sorted(found) == ["builtins.tuple", "builtins.type", f"{synthetic.__name__}.Box.close"]


def test_random_state_is_not_a_rebinding() -> None:
    snapshot = integrity.take(["random"])
    state = random.getstate()
    try:
        random.seed(12345)
        random.random()  # noqa: S311 - state, not secrets
    finally:
        random.setstate(state)
    assert integrity.compare(snapshot) == []


def test_watched_modules_and_describe() -> None:
    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name="patchlane.lanes.property.child")  # type: ignore[assignment]
    loaded = {
        "os": sys,
        "random": random,
        "hypothesis.core": sys,
        "hypothesis_extra": sys,
        "patchlane.props": sys,
        "__main__": main,
        "json": sys,
    }
    assert integrity.watched_modules(loaded) == [
        "random",
        "os",
        "json",
        "hypothesis.core",
        "patchlane.props",
        "__main__",
    ]
    assert integrity.describe(["a", "b"]) == "sandbox: tampered: a, b"
    assert integrity.describe(["a", "b", "c", "d", "e"], "during import") == (
        "sandbox: tampered: a, b, c (and 2 more) (during import)"
    )
