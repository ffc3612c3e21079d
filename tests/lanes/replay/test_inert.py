"""Which changed import-time code may reach outside its module (``lanes.replay.inert``): an
allow-list of statements that bind only the module's own names; anything else selects
every test, since a module's top level runs at collection, before every test."""

from __future__ import annotations

import pytest

from patchlane.lanes.replay.inert import COLLECTED, LAZY, OUTSIDE, outside_change


def _where(name: str) -> str:
    # billing.* is the project's; billing.early was imported at collection at the base.
    if name == "billing.early" or name.startswith("billing.early."):
        return COLLECTED
    return LAZY if name == "billing" or name.startswith("billing.") else OUTSIDE


INERT = {
    "a function's body": ("def f():\n    return 1\n", "def f():\n    return 2\n"),
    "a decorated function's body": (
        "import nx\n\n\n@nx.dispatch\ndef f():\n    return 1\n",
        "import nx\n\n\n@nx.dispatch\ndef f():\n    return 2\n",
    ),
    "a new function": ("X = 1\n", "X = 1\n\n\ndef g(a=3, *, b=(1, 'x')):\n    return a\n"),
    "a method's body": (
        "class A:\n    def f(self):\n        return 1\n",
        "class A:\n    def f(self):\n        return 2\n",
    ),
    "a constant": ("RATE = 2\n", "RATE = 3 * 2\n"),
    "__all__ grown": ("__all__ = ['a']\n", "__all__ = ['a']\n__all__ += ['b']\n"),
    "a main guard": ("import os\n", "import os\nif __name__ == '__main__':\n    main()\n"),
    "an exception class": ("", "class E(ValueError):\n    code = 3\n"),
    "an enum": ("import enum\n", "import enum\n\n\nclass C(enum.Enum):\n    A = 1\n"),
    "stdlib imports and a pattern": ("", "import os\nimport re\n\nPAT = re.compile('x+')\n"),
    "a project module imported at collection": ("", "from billing.early import thing\n"),
    "a relative import of one": ("", "from .early import thing\n"),
    "typing imports under their own names": (
        "",
        "from typing import TypeVar\nfrom dataclasses import dataclass\n\nT = TypeVar('T')\n\n\n"
        "@dataclass\nclass P:\n    x: int = 0\n",
    ),
    "a property": (
        "class A:\n    pass\n",
        "class A:\n    @property\n    def x(self):\n        return 1\n",
    ),
}

OUTSIDE_REACHING = {
    "a bare setter call": (
        "from billing.config import set_mode\n",
        "from billing.config import set_mode\nset_mode('loose')\n",
    ),
    "an alias of a context object": (
        "import billing.state\n",
        "import billing.state\nctx = billing.state.CTX\nctx.x = 1\n",
    ),
    "an augmented assignment to an imported dict": (
        "from billing.registry import REG\n",
        "from billing.registry import REG\nREG |= {'a': 1}\n",
    ),
    "an item store into an imported dict": (
        "import billing.registry\n",
        "import billing.registry\nbilling.registry.REG['eur'] += 1\n",
    ),
    "a != main guard": (
        "import os\n",
        "import os\nif __name__ != '__main__':\n    os.environ['X'] = '1'\n",
    ),
    "a project base class (__init_subclass__)": (
        "from billing.hooks import Plugin\n",
        "from billing.hooks import Plugin\n\n\nclass P(Plugin):\n    pass\n",
    ),
    "a registering decorator factory": (
        "from billing.hooks import register\n",
        "from billing.hooks import register\n\n\n@register('x')\ndef f():\n    pass\n",
    ),
    "vars() of an imported module": (
        "import billing.quota as q\n",
        "import billing.quota as q\nvars(q)['LIMIT'] = 1\n",
    ),
    "exec": ("", "exec('import billing')\n"),
    "a called lambda": ("", "X = (lambda: 1)()\n"),
    "a class attribute computed by a call": (
        "class A:\n    X = 1\n",
        "class A:\n    X = setup()\n",
    ),
    "a default computed by a call": ("def f(a=1):\n    pass\n", "def f(a=make()):\n    pass\n"),
    "a removed setter call": ("import random\nrandom.seed(1)\n", "import random\n"),
    "a loop at import": ("", "for i in range(3):\n    pass\n"),
    "a project module the base imported lazily": ("", "from billing import hooks\n"),
    "a relative import of one": ("", "from . import hooks\n"),
    "a rebinding of __name__": ("", "__name__ = '__main__'\n"),
    "not valid Python": ("X = 1\n", "X = (\n"),
    # What a name is, the module's bindings say, never its spelling:
    "a project setter imported as dict": (
        "",
        "from billing.config import set_mode as dict\n\nX = dict('loose')\n",
    ),
    "a project decorator imported as property": (
        "",
        "from billing.hooks import register as property\n\n\n@property\ndef f():\n    pass\n",
    ),
    "a project module imported as re": (
        "",
        "import billing.hooks as re\n\nPAT = re.compile('x')\n",
    ),
    "a builtin the module rebinds": (
        "",
        "from billing.hooks import make\n\nfrozenset = make\nX = frozenset()\n",
    ),
    "a builtin base the module rebinds": (
        "from billing.hooks import Plugin\n\nValueError = Plugin\n",
        "from billing.hooks import Plugin\n\nValueError = Plugin\n\n\nclass E(ValueError):\n    pass\n",
    ),
}


@pytest.mark.parametrize(("base", "head"), INERT.values(), ids=list(INERT))
def test_a_change_that_binds_only_the_modules_own_names_is_inert(base: str, head: str) -> None:
    assert outside_change(base.encode(), head.encode(), _where, "billing") is None


@pytest.mark.parametrize(("base", "head"), OUTSIDE_REACHING.values(), ids=list(OUTSIDE_REACHING))
def test_anything_else_may_reach_outside_the_module(base: str, head: str) -> None:
    found = outside_change(base.encode(), head.encode(), _where, "billing")
    assert found is not None and found.startswith("line ")
