"""Which modules keep state a function can change (issue 11): in such a module no change is
judged by the tests that ran the changed function alone, since tests that never ran it may
read what it left."""

from __future__ import annotations

import ast

import pytest

from patchlane.lanes.replay.mapselect import changed_functions
from patchlane.lanes.replay.modstate import keeps_state, stateful_functions

KEEPS = {
    "a global": "N = 0\n\ndef f(x):\n    global N\n    N += 1\n    return x\n",
    "a module-level registry": "R = {}\n\ndef reg(n):\n    R[n] = 1\n",
    "an item below a module-level name": "R = {'a': {}}\n\ndef reg(n):\n    R['a'][n] = 1\n",
    "a mutating method": "SEEN = []\n\ndef see(n):\n    SEEN.append(n)\n",
    "another module's attribute": "import os\n\ndef env(v):\n    os.environ['X'] = v\n",
    "sys.path": "import sys\n\ndef add(p):\n    sys.path.insert(0, p)\n",
    "globals()": "def put(k, v):\n    globals()[k] = v\n",
    "setattr on the module's class": "class C:\n    x = 1\n\ndef bump():\n    setattr(C, 'x', 2)\n",
    "a class attribute through cls": (
        "class C:\n    n = 0\n\n    @classmethod\n    def bump(cls):\n        cls.n += 1\n"
    ),
    "a class attribute through type(self)": (
        "class C:\n    n = 0\n\n    def bump(self):\n        type(self).n += 1\n"
    ),
    "a mutable default": "def memo(x, cache={}):\n    cache[x] = x\n    return x\n",
    "a default bound to a registry": ("R = {}\n\ndef reg(n, into=R):\n    into[n] = 1\n"),
    "a closure made at import": (
        "def make():\n    n = 0\n\n    def inc():\n        nonlocal n\n        n += 1\n\n"
        "    def get():\n        return n\n\n    return inc, get\n\n\ninc, get = make()\n"
    ),
    "an instance made at import, read by another method": (
        "class Ids:\n    def __init__(self):\n        self.next = 0\n\n"
        "    def reseed(self, n):\n        self.next = n\n\n"
        "    def take(self):\n        return self.next\n\n\nIDS = Ids()\n"
    ),
    "an instance made at import through an alias": (
        "class Ids:\n    def reseed(self, n):\n        self.start = n\n\n"
        "    def take(self):\n        return self.start\n\n\nMaker = Ids\nIDS = Maker()\n"
    ),
    "a process-wide setting": "import os\n\ndef go(d):\n    os.chdir(d)\n",
}

KEEPS_NONE = {
    "a closure made per call": (
        "def sample(it):\n    n = 0\n\n    def feed():\n        nonlocal n\n        n += 1\n"
        "        return n\n\n    return [feed() for _ in it]\n"
    ),
    "a local that shadows a module-level name": (
        "R = {}\n\ndef build():\n    R = {}\n    R['a'] = 1\n    return R\n"
    ),
    "an instance made only by callers": (
        "class Acc:\n    def add(self, n):\n        self.total = n\n\n"
        "    def get(self):\n        return self.total\n"
    ),
    "a memo only its own method reads": (
        "class Curry:\n    def __init__(self, f):\n        self.f = f\n        self.memo = None\n\n"
        "    def __call__(self, x):\n        if self.memo is None:\n            self.memo = 1\n"
        "        return self.f(x)\n\n\n@Curry\ndef inc(x):\n    return x + 1\n"
    ),
    "an immutable default": "def f(x, sep=', ', n=-1, t=(1, 2)):\n    return sep.join(x)\n",
    "a new object's own items": "def f():\n    out = {}\n    out['a'] = 1\n    return out\n",
}


@pytest.mark.parametrize("why", sorted(KEEPS))
def test_a_module_whose_function_can_change_shared_state_keeps_state(why: str) -> None:
    assert keeps_state(ast.parse(KEEPS[why])), why


@pytest.mark.parametrize("why", sorted(KEEPS_NONE))
def test_state_that_ends_with_the_call_or_is_nobody_elses_is_not_module_state(why: str) -> None:
    assert not keeps_state(ast.parse(KEEPS_NONE[why])), why


def test_stateful_functions_names_the_functions_that_keep_state() -> None:
    # Selection judges a body change by the record: is the changed function one of these,
    # or did a test that ran it also run one (mapselect)?
    source = "R = {}\n\n\ndef reg(n):\n    R[n] = 1\n\n\ndef f(x):\n    return x\n"
    assert stateful_functions(ast.parse(source)) == [(4, 5)]
    head = source.replace("return x\n", "return x + 1\n")
    assert changed_functions(source.encode(), head.encode()) == [("f", 9, 9)]


def test_a_module_imported_inside_the_body_is_shared_state() -> None:
    # ``from billing import quota`` binds a module, not a local value: lowering its limit
    # changes what every later test of the process sees.
    source = "def add(a, b):\n    from billing import quota\n\n    quota.LIMIT -= 1\n    return a\n"
    assert keeps_state(ast.parse(source))


def test_a_per_call_closure_leaves_the_change_inside_its_function() -> None:
    source = KEEPS_NONE["a closure made per call"]
    head = source.replace("n += 1", "n += 2")
    assert changed_functions(source.encode(), head.encode()) == [("sample.feed", 5, 7)]


def test_what_the_caller_handed_in_counts_only_when_asked() -> None:
    # For the changed function itself (mapselect), a store into a parameter, or into a local
    # bound to one, may reach a module's object; for the functions beside it, not.
    source = "def normalize(settings):\n    s = settings\n    s['currency'] = 'eur'\n    return s\n"
    tree = ast.parse(source)
    assert stateful_functions(tree, passed_in=True) == [(1, 4)]
    assert stateful_functions(tree) == []
    copied = source.replace("s = settings", "s = dict(settings)")
    assert stateful_functions(ast.parse(copied), passed_in=True) == []
