"""``teststores``: test code that stores into the code under test or into pytest."""

from __future__ import annotations

import pytest

from patchlane.project.teststores import harness_store

PROJECT = ("billing",)


@pytest.mark.parametrize(
    ("source", "where"),
    [
        ("import billing.calc\n\nbilling.calc.VALUE = 3\n", "line 3: stores into billing.calc.VALUE"),
        ("from billing import calc as c\n\ndef test_x():\n    c.RATE += 1\n", "line 4: stores into c.RATE"),
        ("import pytest\n\nsetattr(pytest.Function, 'runtest', None)\n",
         "line 3: calls setattr() on pytest.Function"),
        ("import _pytest.python\n\n_pytest.python.Function.runtest = lambda self: None\n",
         "line 3: stores into _pytest.python.Function.runtest"),
        ("from _pytest.python import Function\n\ndel Function.runtest\n",
         "line 3: stores into Function.runtest"),
        ("import importlib\n\nm = importlib.import_module('pluggy')\nm.HookCaller.x = 1\n",
         "line 4: stores into m.HookCaller.x"),
        ("import sys\n\nsys.modules['billing.calc'].add = max\n",
         "line 3: stores into sys.modules['billing.calc'].add"),
        ("from . import helpers\n\nhelpers.SEEN = []\n", "line 3: stores into helpers.SEEN"),
        ("import pytest\nimport billing\n\npytest.MonkeyPatch().setattr(billing, 'X', 1)\n",
         "line 4: calls setattr() on billing at import"),
        ("from unittest import mock\n\nmock.patch('billing.calc.add', max).start()\n",
         "line 3: calls patch() on 'billing.calc.add' at import"),
    ],
)  # fmt: skip
def test_a_store_into_the_project_or_pytest_is_found(source: str, where: str) -> None:
    assert harness_store(source.encode(), "tests/test_x.py", PROJECT) == where


@pytest.mark.parametrize(
    "source",
    [
        # Undone after the test: monkeypatch is a fixture, not an imported name.
        "import billing.calc\n\n\ndef test_x(monkeypatch):\n"
        "    monkeypatch.setattr(billing.calc, 'VALUE', 3)\n",
        # A decorator's or a with block's patch is undone when it ends.
        "from unittest import mock\n\n\n@mock.patch('billing.calc.add', max)\ndef test_x(m):\n"
        "    pass\n",
        "from unittest import mock\n\nwith mock.patch('billing.calc.add', max):\n    pass\n",
        # Its own state, another library's, a local object.
        "import json\n\nCASES = {}\nCASES['a'] = 1\njson.X = 1\n",
        "from billing.calc import Account\n\n\ndef test_x():\n    a = Account()\n    a.x = 1\n",
        "pytestmark = []\n",
        "def broken(:\n",
    ],
)
def test_what_is_no_store_into_the_project_or_pytest(source: str) -> None:
    assert harness_store(source.encode(), "tests/test_x.py", PROJECT) is None
