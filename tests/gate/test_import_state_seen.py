"""State widens where the head shows it (issue 31): a changed module whose import-time code
``inert`` cannot prove inert selects every test only when the run child's look at its import
at the head saw a change outside it (``child.importstate``, ``lanes.replay.importseen``).

Each test builds the sample project in a real git repo and gates the patch for real with
``--replay local`` and the base's dependency map. The hostile patches make the project's full
suite fail (proved by running it at both commits) through a change at import that only a call
or a store shows: a registry entry added in another module, a name rebound there, a variable
of the environment, and the same through a helper the module calls. Each must widen to every
test, by the rule that names what the look saw. The honest patch (boltons' ``statsutils``
shape: a call of the module's own class in a class body) must not widen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from patchlane.lanes.replay.staticrules import SHARED_STATE
from tests.gate.reach import (
    QUOTA,
    TEST_CALC,
    TEST_QUOTA,
    assert_not_accepted,
    build,
    full_suite,
    gate_verdict,
)
from tests.gitrepo import GitRepo
from tests.sample import CALC

pytestmark = pytest.mark.slow  # the gate end to end, with a map recording and a local replay

REGISTRY = 'HANDLERS = {"csv": "csv"}\n'
TEST_REGISTRY = """\
from billing import handlers, registry  # noqa: F401 - the base imports both at collection


def test_only_csv_is_handled():
    assert sorted(registry.HANDLERS) == ["csv"]
"""
TEST_ENV = """\
import os


def test_debug_is_off():
    assert "BILLING_DEBUG" not in os.environ
"""
BASE = {
    "src/billing/quota.py": QUOTA,
    "tests/test_quota.py": TEST_QUOTA,
    "src/billing/registry.py": REGISTRY,
    "tests/test_registry.py": TEST_REGISTRY,
    "tests/test_env.py": TEST_ENV,
    # An unchanged helper: a patch that calls it at import shows only a call.
    "src/billing/handlers.py": "from billing import registry\n\n\ndef add_handler(name):\n"
    "    registry.HANDLERS.setdefault(name, name)\n",
}
SEEN = "importing it at the head changed"


def widened_by_the_look(replay: dict[str, Any], nodeid: str) -> None:
    """Assert that ``nodeid`` is in the slice by the shared-state rule, for what the look at
    ``calc``'s import saw."""
    why = replay["slice_reasons"].get(nodeid, "")
    assert why.startswith(SHARED_STATE), why
    assert "src/billing/calc.py" in why and SEEN in why, why


@pytest.mark.parametrize(
    ("calc", "reader"),
    [
        pytest.param(
            'from billing import registry\n\nregistry.HANDLERS["xml"] = "xml"\n',
            "tests/test_registry.py::test_only_csv_is_handled",
            id="registry-entry",
        ),
        pytest.param(
            "import billing.quota\n\nbilling.quota.LIMIT = 3\n",
            "tests/test_quota.py::test_limit",
            id="name-rebound",
        ),
        pytest.param(
            'import os\n\nos.environ["BILLING_DEBUG"] = "1"\n',
            "tests/test_env.py::test_debug_is_off",
            id="environ",
        ),
        pytest.param(
            'from billing.handlers import add_handler\n\nadd_handler("xml")\n',
            "tests/test_registry.py::test_only_csv_is_handled",
            id="through-a-helper",
        ),
    ],
)
def test_a_change_outside_the_module_at_import_selects_every_test(
    repo: GitRepo, tmp_path: Path, calc: str, reader: str
) -> None:
    build(repo, BASE, {"src/billing/calc.py": calc + "\n\n" + CALC})
    assert_not_accepted(repo, tmp_path, "auto")
    _said, replay = gate_verdict(repo, tmp_path / "again", "auto")
    widened_by_the_look(replay, reader)


HONEST = (
    CALC
    + """

class _Prop:
    def __init__(self, name, func):
        self.name, self.func = name, func

    def __get__(self, obj, owner=None):
        return self if obj is None else self.func(obj)


def _calc_mode(stats):
    return max(sorted(set(stats.data)), key=stats.data.count)


class Stats:
    def __init__(self, data):
        self.data = list(data)

    mode = _Prop("mode", _calc_mode)
"""
)
TEST_STATS = """\
from billing.calc import Stats


def test_mode():
    assert Stats([1, 2, 2, 3]).mode == 2
"""


def test_a_call_of_the_modules_own_class_at_import_does_not_widen(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The look is made where the base's tests run: ``tests/test_calc.py``, unchanged,
    imports ``calc`` there (a module only the patch's own test files import gets no look,
    and widens)."""
    build(repo, BASE, {"src/billing/calc.py": HONEST, "tests/test_stats.py": TEST_STATS})
    assert full_suite(repo).returncode == 0
    said, replay = gate_verdict(repo, tmp_path, "auto")
    assert said == "accept_for_review", replay
    assert SHARED_STATE not in replay["slice_rules"], replay["slice_rules"]
    assert "tests/test_stats.py::test_mode" in replay["slice_reasons"]
    for nodeid, why in replay["slice_reasons"].items():
        assert "src/billing/calc.py changes state" not in why, (nodeid, why)


def test_a_module_only_the_patchs_own_test_files_import_gets_no_look_and_widens(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The same honest change, but the only test file that imports ``calc`` is one the patch
    changes: it runs in a process of its own, so no look comes back from the base's tests'
    process, and every test is selected, saying so."""
    test_calc = TEST_CALC + "\n\n" + TEST_STATS.replace("from billing.calc import Stats\n", "")
    test_calc = test_calc.replace("import add, mean", "import Stats, add, mean")
    build(repo, BASE, {"src/billing/calc.py": HONEST, "tests/test_calc.py": test_calc})
    said, replay = gate_verdict(repo, tmp_path, "auto")
    why = replay["slice_reasons"]["tests/test_quota.py::test_limit"]
    assert why.startswith(SHARED_STATE), why
    assert "no look at its import at the head came back" in why, why
    assert said == "accept_for_review", replay
