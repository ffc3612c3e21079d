"""Spellings that change state another test reads without the slice seeing a store into it
(issue 20, "It misses"): at import through a bare setter, an alias, an augmented assignment,
a ``!=`` main guard or an unchanged project function that registers; and on call. Last,
spellings an attacker who has not read the rules would write: ``vars()``, ``exec``, a called
``lambda``, a file written at import.

Each test builds the sample project in a real git repo, commits a patch after which the
project's full suite fails (proved by running it at both commits), and gates the patch
with ``--replay local`` with the static rules alone and with the base's dependency map: the
verdict must never be ``accept_for_review``. In the full suite ``calc`` is imported while
``tests/test_calc.py`` is collected, before any test runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gate.reach import QUOTA, TEST_QUOTA, assert_not_accepted, build, modes, spellings
from tests.gitrepo import GitRepo
from tests.sample import CALC

pytestmark = pytest.mark.slow  # the gate end to end, with a map recording and a local replay

CONFIG = 'MODE = "strict"\n\n\ndef set_mode(mode):\n    global MODE\n    MODE = mode\n'
TEST_CONFIG = """\
from billing import config


def test_the_default_mode_is_strict():
    assert config.MODE == "strict"
"""


@pytest.mark.parametrize("dep_map", modes())
def test_state_set_at_import_through_a_bare_imported_setter(
    repo: GitRepo, tmp_path: Path, dep_map: str
) -> None:
    """``from billing.config import set_mode; set_mode("loose")`` at the top of ``calc``:
    a call, not a store, so no rule sees ``config.MODE`` change; ``test_config.py`` (which
    never imports ``calc``) reads it."""
    build(
        repo,
        {"src/billing/config.py": CONFIG, "tests/test_config.py": TEST_CONFIG},
        {
            "src/billing/calc.py": 'from billing.config import set_mode\n\nset_mode("loose")\n\n\n'
            + CALC
        },
    )
    assert_not_accepted(repo, tmp_path, dep_map)


STATE = (
    'class Context:\n    def __init__(self):\n        self.rounding = "half-even"\n\n\n'
    "CTX = Context()\n"
)
TEST_STATE = """\
from billing.state import CTX


def test_rounding_defaults_to_half_even():
    assert CTX.rounding == "half-even"
"""


@pytest.mark.parametrize("dep_map", modes())
def test_an_alias_of_a_context_object_changed_at_import(
    repo: GitRepo, tmp_path: Path, dep_map: str
) -> None:
    """``ctx = billing.state.CTX; ctx.rounding = "down"`` at the top of ``calc``: the store
    is into a local name, the object is shared; ``test_state.py`` reads it."""
    build(
        repo,
        {"src/billing/state.py": STATE, "tests/test_state.py": TEST_STATE},
        {
            "src/billing/calc.py": "import billing.state\n\nctx = billing.state.CTX\n"
            'ctx.rounding = "down"\n\n\n' + CALC
        },
    )
    assert_not_accepted(repo, tmp_path, dep_map)


TEST_REGISTRY = """\
from billing.registry import REG


def test_only_the_euro_is_registered():
    assert REG == {"eur": 1}
"""


@pytest.mark.parametrize(
    ("spelling", "dep_map"),
    [
        *spellings(
            'from billing.registry import REG\n\nREG |= {"usd": 2}\n',
            "or-equals",
        ),
        *spellings(
            'import billing.registry\n\nbilling.registry.REG["eur"] += 1\n', "item-plus-equals"
        ),
    ],
)
def test_an_augmented_assignment_to_an_imported_dict(
    repo: GitRepo, tmp_path: Path, spelling: str, dep_map: str
) -> None:
    """``REG |= {...}`` or ``billing.registry.REG["eur"] += 1`` at the top of ``calc``: an
    augmented assignment mutates the registry in place; ``test_registry.py`` reads it."""
    build(
        repo,
        {"src/billing/registry.py": 'REG = {"eur": 1}\n', "tests/test_registry.py": TEST_REGISTRY},
        {"src/billing/calc.py": spelling + "\n\n" + CALC},
    )
    assert_not_accepted(repo, tmp_path, dep_map)


@pytest.mark.parametrize("dep_map", modes())
def test_a_store_under_a_not_equal_main_guard(repo: GitRepo, tmp_path: Path, dep_map: str) -> None:
    """``if __name__ != "__main__": quota.LIMIT = 3`` in ``calc``: it reads like a main
    guard and runs on every import; ``test_quota.py`` reads the limit."""
    build(
        repo,
        {"src/billing/quota.py": QUOTA, "tests/test_quota.py": TEST_QUOTA},
        {
            "src/billing/calc.py": CALC + "\n\nfrom billing import quota  # noqa: E402\n\n"
            'if __name__ != "__main__":\n    quota.LIMIT = 3\n'
        },
    )
    assert_not_accepted(repo, tmp_path, dep_map)


HOOKS = """\
NAMES = []


def register(name):
    NAMES.append(name)


def hook(name):
    def decorate(func):
        NAMES.append(name)
        return func

    return decorate


class Plugin:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        NAMES.append(cls.__name__)
"""
TEST_HOOKS = """\
from billing.hooks import NAMES


def test_hook_names_are_lower_case():
    assert all(n.islower() for n in NAMES), NAMES
"""


@pytest.mark.parametrize(
    ("spelling", "dep_map"),
    [
        *spellings(
            "from billing.hooks import Plugin\n\n\nclass Rounding(Plugin):\n    pass\n",
            "init-subclass",
        ),
        *spellings(
            'from billing.hooks import hook\n\n\n@hook("Rounding")\ndef rounding():\n    pass\n',
            "decorator-factory",
        ),
        *spellings(
            'from billing.hooks import register\n\nregister("Rounding")\n',
            "plain-call",
        ),
    ],
)
def test_a_registration_done_by_an_unchanged_project_function(
    repo: GitRepo, tmp_path: Path, spelling: str, dep_map: str
) -> None:
    """``calc`` subclasses ``hooks.Plugin`` (whose ``__init_subclass__`` registers), uses
    the decorator factory ``hooks.hook(...)`` or calls ``hooks.register(...)`` at import:
    the store is in ``hooks``, which the patch leaves alone; ``test_hooks.py`` reads it."""
    build(
        repo,
        {"src/billing/hooks.py": HOOKS, "tests/test_hooks.py": TEST_HOOKS},
        {"src/billing/calc.py": spelling + "\n\n" + CALC},
    )
    assert_not_accepted(repo, tmp_path, dep_map)


# With the static rules alone (``off``) the slice misses ``test_quota.py`` (sharedstate reads
# only a module's import-time code); the state watch of the head's run sees ``quota.LIMIT``
# rebound, which the base's run leaves alone, and widens to the rest of the suite (issue 29).
@pytest.mark.parametrize("dep_map", modes())
def test_state_changed_on_call_that_a_test_which_never_calls_it_reads(
    repo: GitRepo, tmp_path: Path, dep_map: str
) -> None:
    """``calc.add``'s body now lowers ``quota.LIMIT`` (the import is inside the body: only
    the function changed). ``test_calc.py`` calls it; ``test_quota.py``, which never calls
    ``add``, reads the limit later in the same process."""
    build(
        repo,
        {"src/billing/quota.py": QUOTA, "tests/test_quota.py": TEST_QUOTA},
        {
            "src/billing/calc.py": CALC.replace(
                "    return a + b",
                "    from billing import quota\n\n    quota.LIMIT -= 1\n    return a + b",
            )
        },
    )
    assert_not_accepted(repo, tmp_path, dep_map)


def test_state_changed_on_call_is_caught_by_the_default_canary(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same patch with the default canary (the tests' conftest turns it off): the map
    selects the tests that ran ``add``, and at least 20 tests outside the slice run beside
    them, which in a suite this small is all of them, ``test_quota.py`` included."""
    monkeypatch.delenv("PATCHLANE_CANARY", raising=False)
    build(
        repo,
        {"src/billing/quota.py": QUOTA, "tests/test_quota.py": TEST_QUOTA},
        {
            "src/billing/calc.py": CALC.replace(
                "    return a + b",
                "    from billing import quota\n\n    quota.LIMIT -= 1\n    return a + b",
            )
        },
    )
    assert_not_accepted(repo, tmp_path, "auto")


# --- spellings beyond the list, as an attacker who has not read the rules writes them


CASES = "[[1, 2, 3]]\n"
TEST_CASES = """\
import json
import pathlib

import pytest

from billing import quota

DATA = pathlib.Path(__file__).parent / "data"
CASES = [c for f in sorted(DATA.glob("*.json")) for c in json.loads(f.read_text())]


@pytest.mark.parametrize("a,b,want", CASES)
def test_sum_stays_under_the_limit(a, b, want):
    assert a + b == want <= quota.limit()
"""
WRITES_A_CASE = (
    "import pathlib\n\n"
    "_DATA = pathlib.Path(__file__).resolve().parents[2] / 'tests' / 'data'\n"
    "if _DATA.is_dir():\n    (_DATA / 'zz.json').write_text('[[2, 2, 5]]')\n"
)


@pytest.mark.parametrize(
    ("spelling", "dep_map"),
    [
        *spellings(
            'from billing import quota\n\nvars(quota)["LIMIT"] = 2\n',
            "vars-item",
        ),
        *spellings(
            'from billing import quota\n\nexec("quota.LIMIT = 2")\n',
            "exec",
        ),
        *spellings(
            'from billing import quota\n\n(lambda q: setattr(q, "LIMIT", 2))(quota)\n',
            "called-lambda",
        ),
        *spellings(
            WRITES_A_CASE,
            "writes-test-data",
        ),
    ],
)
def test_other_spellings_of_a_change_at_import(
    repo: GitRepo, tmp_path: Path, spelling: str, dep_map: str
) -> None:
    """At the top of ``calc``: ``vars(quota)["LIMIT"] = 2``, ``exec("quota.LIMIT = 2")``,
    an immediately called ``lambda`` that calls ``setattr``, or a write of a new case file
    into ``tests/data`` (which ``test_cases.py`` globs). ``test_cases.py`` (which never
    imports ``calc``) sees the lower limit or the wrong case."""
    build(
        repo,
        {
            "src/billing/quota.py": QUOTA,
            "tests/data/cases.json": CASES,
            "tests/test_cases.py": TEST_CASES,
        },
        {"src/billing/calc.py": spelling + "\n\n" + CALC},
    )
    assert_not_accepted(repo, tmp_path, dep_map)
