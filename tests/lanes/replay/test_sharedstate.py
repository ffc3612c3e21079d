"""``sharedstate``: which changed sources change state that later tests in the process see."""

from __future__ import annotations

import pytest

from patchlane.lanes.replay.sharedstate import shared_state_change


@pytest.mark.parametrize(
    ("source", "every_function", "found"),
    [
        ("import decimal\ndecimal.getcontext().rounding = decimal.ROUND_DOWN\n", False,
         "line 2: sets decimal.getcontext().rounding"),
        ("from billing import quota\nquota.LIMIT = 3\n", True, "line 2: sets quota.LIMIT"),
        ("import sys\nsys.modules['quota'] = object()\n", False, "line 2: sets sys.modules['quota']"),
        ("import sys\nsys.path.insert(0, 'x')\n", False, "line 2: calls sys.path.insert()"),
        ("import random\nrandom.seed(0)\n", False, "line 2: calls random.seed()"),
        ("from .base import TAGS\nTAGS.update({1: 2})\n", False, "line 2: calls TAGS.update()"),
        ("import os\nsetattr(os, 'sep', '|')\n", False, "line 2: calls setattr() on os"),
        # In a test module, what a test function leaves set counts too.
        ("import os\n\n\ndef test_x():\n    os.environ['X'] = '1'\n", True,
         "line 5: sets os.environ['X']"),
        ("import logging\n\n@logging.getLogger().addFilter\ndef f(r):\n    return r\n", False,
         "line 3: calls logging.getLogger().addFilter()"),
    ],
)  # fmt: skip
def test_a_change_to_shared_state_is_found(source: str, every_function: bool, found: str) -> None:
    assert shared_state_change(source.encode(), every_function=every_function) == found


@pytest.mark.parametrize(
    ("source", "every_function"),
    [
        # A code module's functions change state when a test calls them: that test's
        # selection covers them.
        ("import os\n\n\ndef f():\n    os.environ['X'] = '1'\n", False),
        ("import os\nos.remove('x')\n", False),  # a module function, not a setter of state
        ("import json\nRATES = {}\nRATES.update(json.loads('{}'))\n", False),  # its own dict
        ("import sys\nif __name__ == '__main__':\n    sys.path.insert(0, 'x')\n", False),
        ("x = [1]\nx.append(2)\n", True),
        ("def f(:\n", False),  # does not parse: the import graph's to judge
    ],
)
def test_what_is_not_shared_state(source: str, every_function: bool) -> None:
    assert shared_state_change(source.encode(), every_function=every_function) is None
