"""The child's integrity check (issue 9): code under test that rebinds what properties rely
on fails them with ``sandbox: tampered: <name>``. The lane tests run hostile code for real
in the lane's real child; the same code without the rebindings passes."""

from __future__ import annotations

import builtins
import random
import sys
import types
from pathlib import Path

import pytest

from patchlane.child import integrity
from patchlane.child import snapshot as engine
from tests.gitrepo import GitRepo
from tests.lanes.property import project as P
from tests.loader import Loader

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
    "patchlane.child.properties.Writer.emit": (
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
    # The snapshot engine the check compares with: blinding it is a rebinding like any other.
    "patchlane.child.snapshot.changed_entries": (
        "import patchlane.child.snapshot",
        "patchlane.child.snapshot.changed_entries = lambda *a, **k: None",
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


@pytest.mark.slow
def test_the_routes_without_the_rebinding_pass(repo: GitRepo) -> None:
    # The same code as the tests below, at import and while a property runs, minus the
    # rebindings: nothing is reported.
    reach = "\n".join(setup for setup, _ in ROUTES.values())
    report = run(repo, shop(at_import=reach, in_act=reach))
    assert report.status == "pass", report.to_json()
    assert set(P.outcomes(report).values()) == {"pass"}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ROUTES))
def test_tampering_at_import_fails_every_property(repo: GitRepo, name: str) -> None:
    report = run(repo, shop(at_import=tampering(name)))
    for prop in NAMES:
        failure = P.one_failure(report, prop)
        assert failure["kind"] == "sandbox", failure
        assert failure["message"] == f"sandbox: tampered: {name} (during import)", failure
    assert report.status == "fail"


@pytest.mark.slow
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
        "patchlane.child.properties.Writer.emit",
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
    both = ("random.Random.randint.__code__", "patchlane.child.properties.Writer.emit")
    report = run(repo, shop(at_import="\n".join(tampering(n) for n in both), code=BROKEN))
    assert report.status == "fail"
    for prop in NAMES:
        assert P.one_failure(report, prop)["message"] == (
            "sandbox: tampered: patchlane.child.properties.Writer.emit, "
            "random.Random.randint.__code__ (during import)"
        )


@pytest.mark.slow
def test_tampering_while_describing_a_failure_is_caught(repo: GitRepo) -> None:
    # The check runs after the failure is described: an exception whose __str__ rebinds
    # the writer is caught too.
    body = indent(indent(tampering("patchlane.child.properties.Writer.emit")))
    raiser = f"class Sneaky(Exception):\n    def __str__(self):\n{body}\n"
    raiser += '        return "sneaky"\nraise Sneaky()'
    report = run(repo, shop(in_act=raiser))
    message = P.one_failure(report, "prop_a_seed")["message"]
    assert message.startswith(
        "sandbox: tampered: patchlane.child.properties.Writer.emit; "
        "the property failed too: Sneaky: sneaky"
    )
    assert P.outcomes(report)[("prop_b_check", "head")] == "pass"


@pytest.mark.slow
def test_ordinary_code_is_not_tampering(repo: GitRepo) -> None:
    # State is not a rebinding: seeding and drawing from the global random, registering
    # a Hypothesis profile, running a doctest (it sets builtins._), importing more of
    # Hypothesis and of patchlane, adding attributes to modules.
    ordinary = """\
import doctest, hashlib, random
import hypothesis, hypothesis.stateful
import patchlane.gate.verdict
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
    # Blinding the builtins the check would use, or this module's own helpers, changes
    # nothing. Written by hand, not with monkeypatch: pytest itself needs the builtins.
    namespace = vars(builtins)
    saved = {n: namespace[n] for n in ("type", "tuple")}
    # The engine's helpers (``child.snapshot``) and the tripwire's own names.
    monkeypatch.setattr(engine, "is_plain", lambda value: True)
    for helper in ("_same", "_counts", "changed_entries", "changed_functions", "_any_base"):
        monkeypatch.setattr(engine, helper, lambda *a: None)
    for name in ("compare", "restore", "verify"):
        monkeypatch.setattr(engine, name, lambda *a, **k: [])
    monkeypatch.setattr(integrity, "_watched", lambda *a: False)
    synthetic.Box.close = lambda self: None
    monkeypatch.setattr(synthetic.helper, "__defaults__", (5,))
    try:
        namespace["type"] = lambda *a: int
        namespace["tuple"] = lambda *a: ()
        found = integrity.compare(snapshot)
    finally:
        namespace.update(saved)
    assert sorted(found) == [
        "builtins.tuple",
        "builtins.type",
        f"{synthetic.__name__}.Box.close",
        f"{synthetic.__name__}.helper.__defaults__",
    ]


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
    main.__spec__ = types.SimpleNamespace(name="patchlane.child.properties")  # type: ignore[assignment]
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


# -- the property module's own namespace (frames walked up from the code under test) -----

# ``_within`` is defined before the code under test is imported: at that point the code
# under test can reach it (and ``random``, ``randint``) through the frames.
NS_PROPS = """\
import random
from random import randint


def _within(lo, hi, v):
    return lo <= v <= hi


from shop import act, clamp


def prop_module_random(seed, n=200):
    act()
    rng = random.Random(seed)
    for _ in range(n):
        v = rng.randint(-50, 150)
        assert 0 <= clamp(0, 100, v) <= 100, v


def prop_from_import(seed, n=200):
    random.seed(seed)
    for _ in range(n):
        v = randint(-50, 150)
        assert 0 <= clamp(0, 100, v) <= 100, v


def prop_helper(seed, n=200):
    rng = random.Random(seed)
    for _ in range(n):
        v = rng.randint(-50, 150)
        assert _within(0, 100, clamp(0, 100, v)), v
"""
NS_NAMES = ("prop_module_random", "prop_from_import", "prop_helper")
CLAMP = "def clamp(lo, hi, v):\n    return min(hi, max(lo, v))\n"
BROKEN_CLAMP = "def clamp(lo, hi, v):\n    return max(lo, v)\n"  # never clamps at hi
# The property module's globals, found by walking the frames up from the code under test.
FRAME_WALK = """\
import sys


def _property_globals():
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == "checks.props":
            return frame.f_globals
        frame = frame.f_back
    raise LookupError("no property module on the stack")


_found = _property_globals()"""
# Each swap makes every draw the lower bound of its range (or every value "within").
SWAPS = {
    "random": """\
class _Rng:
    def randint(self, a, b):
        return a


class _FakeRandom:
    def Random(self, seed=None):
        return _Rng()

    def seed(self, seed=None):
        pass


_found["random"] = _FakeRandom()""",
    "randint": '_found["randint"] = lambda a, b: a',
    "_within": '_found["_within"] = lambda lo, hi, v: True',
}


def run_ns(repo: GitRepo, code_under_test: str, props: str = NS_PROPS) -> P.PropertyReport:
    P.make(repo, props, code_under_test)
    return P.lane(repo, base=None, head="HEAD")


def test_walking_the_frames_without_a_swap_passes(repo: GitRepo) -> None:
    report = run_ns(repo, shop(at_import=FRAME_WALK, in_act=FRAME_WALK, code=CLAMP))
    assert report.status == "pass", report.to_json()


def test_without_a_swap_the_properties_catch_the_broken_clamp(repo: GitRepo) -> None:
    report = run_ns(repo, shop(at_import=FRAME_WALK, code=BROKEN_CLAMP))
    for prop in NS_NAMES:
        assert P.one_failure(report, prop)["kind"] == "assertion"


@pytest.mark.parametrize("name", list(SWAPS))
def test_swapping_a_property_module_name_at_import_fails(repo: GitRepo, name: str) -> None:
    # Without the check, the swap turns the broken clamp green.
    swap = f"{FRAME_WALK}\n{SWAPS[name]}"
    report = run_ns(repo, shop(at_import=swap, code=BROKEN_CLAMP))
    assert report.status == "fail"
    for prop in NS_NAMES:
        failure = P.one_failure(report, prop)
        assert failure["kind"] == "sandbox", failure
        assert failure["message"] == f"sandbox: tampered: checks.props.{name} (during import)"


def test_swapping_a_helper_while_a_property_runs_fails_that_property(repo: GitRepo) -> None:
    swap = f"{FRAME_WALK}\n{SWAPS['_within']}"
    report = run_ns(repo, shop(in_act=swap, code=CLAMP))
    failure = P.one_failure(report, "prop_module_random")
    assert failure["message"] == "sandbox: tampered: checks.props._within", failure
    # Put back: the helper's own property, after it, runs with the real one.
    assert P.outcomes(report) == {
        ("prop_module_random", "head"): "error",
        ("prop_from_import", "head"): "pass",
        ("prop_helper", "head"): "pass",
    }


# Names the module itself binds more than once, conditionally, relatively, behind
# decorators, or from a function (``global``): none is a swap.
LEGITIMATE = """\
import functools
import random

try:
    import simplejson as json
except ImportError:
    import json

from hypothesis import given, strategies as st
from patchlane.props import check

from . import helpers
from .helpers import LIMIT
from shop import clamp

N = 200
seen = 0
seen = 1
mode = "a"
if json:
    mode = "b"


def _within(lo, hi, v, *, strict=False):
    return lo <= v <= hi


def _within(lo, hi, v, *, strict=False):  # redefined: the second one counts
    return lo <= v <= hi


@functools.lru_cache(maxsize=None)
def _bounds():
    return 0, helpers.LIMIT


class Sampler:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def draw(self):
        return self.rng.randint(-50, 150)

    @staticmethod
    def low():
        return 0


def _count():
    global seen
    seen += 1


def prop_a_seed(seed, n=N):
    _count()
    sampler = Sampler(seed)
    for _ in range(n):
        lo, hi = _bounds()
        assert _within(lo, hi, clamp(Sampler.low(), LIMIT, sampler.draw()))
    json.dumps({"seen": seen})


@check(lambda rng: {"v": rng.randint(-50, 150)})
def prop_b_check(v):
    assert _within(0, LIMIT, clamp(0, LIMIT, v))


@given(st.integers(-50, 150))
def prop_c_given(v):
    assert _within(0, LIMIT, clamp(0, LIMIT, v))
"""


@pytest.mark.slow
def test_a_module_that_rebinds_its_own_names_passes(repo: GitRepo) -> None:
    P.make(repo, LEGITIMATE, shop(code=CLAMP), files={"checks/helpers.py": "LIMIT = 100\n"})
    report = P.lane(repo, base=None, head="HEAD")
    assert report.status == "pass", report.to_json()
    assert set(P.outcomes(report).values()) == {"pass"}


NS_SOURCE = """\
import random
from random import randint
try:
    import simplejson as json
except ImportError:
    import json
from hypothesis import given, strategies as st

N = 200
twice = 1
twice = 2


def helper(lo, hi, v, n=3):
    return lo <= v <= hi


def counted():
    global written
    written = 1


class Box:
    def open(self):
        return "open"


@given(st.integers())
def prop_given(x):
    assert helper(0, 1, 0)
"""


def test_check_module_compares_the_namespace_with_the_source(
    load: Loader, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = load(NS_SOURCE)
    file = module.__file__
    assert file is not None
    checks = integrity.plan(Path(file).read_bytes(), file, module.__name__, "")
    assert checks is not None
    # Bound more than once, or from a function: not checked.
    assert sorted(checks.imports) == ["given", "json", "randint", "random", "st"]
    assert sorted(checks.functions) == ["counted", "helper", "prop_given"]
    assert checks.constants == {"N": (200, False)}
    snapshot = integrity.take(integrity.watched_modules())
    found, state = integrity.check_module(checks, module, snapshot)
    assert found == []
    assert integrity.verify_module(state) == []

    name, namespace = module.__name__, vars(module)
    helper, inner = namespace["helper"], namespace["prop_given"].hypothesis.inner_test
    namespace.update(twice=3, written=2)  # not checked
    monkeypatch.setattr(module, "random", types.SimpleNamespace())
    monkeypatch.setattr(module, "N", 0)
    namespace["len"] = lambda x: 0  # shadows a builtin (removed by the check)
    monkeypatch.setattr(module.Box, "open", lambda self: "forced")
    monkeypatch.setattr(helper, "__defaults__", (0,))
    monkeypatch.setattr(module.prop_given.hypothesis, "inner_test", lambda x: None)
    assert integrity.verify_module(state) == [
        f"{name}.random",
        f"{name}.N",
        f"{name}.Box.open",
        f"{name}.helper.__defaults__",
        f"{name}.prop_given.hypothesis.inner_test",
        f"{name}.len",
    ]
    # Put back.
    assert module.random is random and module.N == 200 and "len" not in vars(module)
    assert module.prop_given.hypothesis.inner_test is inner
    assert helper.__defaults__ == (3,) and module.Box().open() == "open"
    # What the source says, checked afresh: a swapped code object is not the source's.
    monkeypatch.setattr(helper, "__code__", (lambda lo, hi, v, n=3: True).__code__)
    monkeypatch.setattr(module, "randint", lambda a, b: a)
    assert integrity.check_module(checks, module, snapshot)[0] == [
        f"{name}.randint",
        f"{name}.helper",
    ]
