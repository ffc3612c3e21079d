"""Spellings that reach a test without an import the slice can see (issue 20, "It misses"):
code loaded by file or by a computed name, sources read as text, a pickle naming a class, a
mock left started, a folder the review map ignores.

Each test builds the sample project in a real git repo, commits a patch after which the
project's full suite fails (proved by running it at both commits), and gates the patch
with ``--replay local`` with the static rules alone and with the base's dependency map: the
verdict must never be ``accept_for_review``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gate.reach import QUOTA, TEST_QUOTA, assert_not_accepted, build, modes, spellings
from tests.gitrepo import GitRepo
from tests.sample import CALC

pytestmark = pytest.mark.slow  # the gate end to end, with a map recording and a local replay

# Why the slice misses the failing test today (issue 20), for the xfail marks.
EXEC_MODULE_MISSED = (
    "sourcescan counts __import__/import_module/importorskip only: spec_from_file_location "
    "+ exec_module over a glob is no edge, so test_plugins.py does not reach p_double "
    "(test_double.py, which imports it, passes)"
)
IMPORT_MODULE_MISSED = (
    "sourcescan.literal_import knows import_module by its name: the alias im is not seen, so "
    "its computed name is no ANY_MODULE edge (test_csv.py, which imports fmt_csv, passes)"
)
IGNORED_GLOB_MISSED = (
    "a changed data file selects a test that names it or a folder above it in a string "
    "(staticrules._may_read); ROOT.rglob('*.md') names neither, and the comment in calc "
    "keeps the slice from being empty"
)
PICKLE_MISSED = (
    "the pickle imports billing.money only when loaded: test_money_data.py imports nothing "
    "of the project and money.pkl is unchanged (test_money.py, which imports it, passes)"
)

PLUGINS = """\
import importlib.util
import pathlib

HERE = pathlib.Path(__file__).parent


def load_all():
    found = {}
    for path in sorted(HERE.glob("p_*.py")):
        spec = importlib.util.spec_from_file_location("billing_plugin_" + path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found[path.stem] = module
    return found
"""
TEST_PLUGINS = """\
from billing.plugins import load_all


def test_every_plugin_maps_ints_to_ints():
    for name, module in load_all().items():
        assert isinstance(module.run(3), int), name
"""
# A test that imports the plugin by name and still passes: the changed file is reached, so
# the slice is not empty and the gate does not fall back to "no test reaches it".
TEST_DOUBLE = """\
from billing.plugins import p_double


def test_run_doubles():
    assert p_double.run(2) == 4
"""


@pytest.mark.parametrize("dep_map", modes(off=EXEC_MODULE_MISSED))
def test_a_plugin_loaded_by_exec_module_over_a_glob(
    repo: GitRepo, tmp_path: Path, dep_map: str
) -> None:
    """``importlib.util.spec_from_file_location`` + ``exec_module`` over ``glob("p_*.py")``:
    no import names ``p_double`` in the plugin test (it imports only the package); the
    patch makes ``run`` return a float, which that test rejects and ``test_double.py``
    (importing ``p_double``) does not notice."""
    build(
        repo,
        {
            "src/billing/plugins/__init__.py": PLUGINS,
            "src/billing/plugins/p_double.py": "def run(x):\n    return 2 * x\n",
            "tests/test_plugins.py": TEST_PLUGINS,
            "tests/test_double.py": TEST_DOUBLE,
        },
        {"src/billing/plugins/p_double.py": "def run(x):\n    return 2.0 * x\n"},
    )
    assert_not_accepted(repo, tmp_path, dep_map)


TEST_FORMATS = """\
from importlib import import_module as im

import pytest


@pytest.mark.parametrize("name,sep", [("csv", ","), ("tsv", "\\t")])
def test_render_joins_with_its_separator(name, sep):
    fmt = im("billing.fmt_" + name)
    assert fmt.render([1, 2]) == f"1{sep}2"
"""
# Reaches fmt_csv by a plain import and still passes (see TEST_DOUBLE).
TEST_CSV = """\
from billing.fmt_csv import render


def test_an_empty_row_renders_empty():
    assert render([]) == ""
"""
RENDER = 'def render(row):\n    return "{sep}".join(str(x) for x in row)\n'


@pytest.mark.parametrize("dep_map", modes(off=IMPORT_MODULE_MISSED))
def test_a_module_imported_by_an_aliased_import_module(
    repo: GitRepo, tmp_path: Path, dep_map: str
) -> None:
    """``from importlib import import_module as im; im("billing.fmt_" + name)``: the name
    is computed and the loader aliased; the patch changes the CSV separator that test
    checks, which ``test_csv.py`` (importing ``fmt_csv``) does not."""
    build(
        repo,
        {
            "src/billing/fmt_csv.py": RENDER.format(sep=","),
            "src/billing/fmt_tsv.py": RENDER.format(sep="\\t"),
            "tests/test_formats.py": TEST_FORMATS,
            "tests/test_csv.py": TEST_CSV,
        },
        {"src/billing/fmt_csv.py": RENDER.format(sep=";")},
    )
    assert_not_accepted(repo, tmp_path, dep_map)


TEST_STYLE = """\
import pathlib

import billing


def test_no_module_prints():
    for path in sorted(pathlib.Path(billing.__file__).parent.glob("*.py")):
        assert "print(" not in path.read_text(), path.name
"""


@pytest.mark.parametrize(
    "dep_map",
    modes(
        off="the test names no changed file or folder above it in a string "
        "(staticrules READS_SOURCE) and imports only billing/__init__.py"
    ),
)
def test_a_lint_test_that_globs_the_packages_own_folder(
    repo: GitRepo, tmp_path: Path, dep_map: str
) -> None:
    """A lint test reads every ``*.py`` beside ``billing.__file__`` (no path in a string, no
    import of ``calc``); the patch adds a ``print(`` to ``calc.mean``, which the lint fails
    and ``calc``'s own tests do not notice."""
    build(
        repo,
        {"tests/test_style.py": TEST_STYLE},
        {
            "src/billing/calc.py": CALC.replace(
                "    return sum(xs) / len(xs)", "    print(xs)\n    return sum(xs) / len(xs)"
            )
        },
    )
    assert_not_accepted(repo, tmp_path, dep_map)


MONEY = "class {name}:\n    def __init__(self, cents):\n        self.cents = cents\n"
TEST_MONEY_DATA = """\
import pathlib
import pickle

DATA = pathlib.Path(__file__).parent / "data" / "money.pkl"


def test_the_stored_class_still_makes_money():
    cls = pickle.loads(DATA.read_bytes())
    assert cls(5).cents == 5
"""
# Reaches money by a plain import and still passes (see TEST_DOUBLE).
TEST_MONEY = """\
import billing.money


def test_the_module_loads():
    assert billing.money.__name__ == "billing.money"
"""


@pytest.mark.parametrize("dep_map", modes(off=PICKLE_MISSED))
def test_a_pickle_in_the_test_data_that_names_a_renamed_class(
    repo: GitRepo, tmp_path: Path, dep_map: str
) -> None:
    """A pickle under ``tests/data`` imports ``billing.money.Money`` when loaded; the test
    that loads it imports nothing of the project. The patch renames the class, so
    ``pickle.loads`` raises in that test (``test_money.py``, importing the module, passes)."""
    build(
        repo,
        {
            "src/billing/money.py": MONEY.format(name="Money"),
            "tests/data/money.pkl": b"cbilling.money\nMoney\n.",
            "tests/test_money_data.py": TEST_MONEY_DATA,
            "tests/test_money.py": TEST_MONEY,
        },
        {"src/billing/money.py": MONEY.format(name="Amount")},
    )
    assert_not_accepted(repo, tmp_path, dep_map)


TEST_AA_FAST = """\
from unittest.mock import patch

from billing.calc import add


def test_add_under_a_low_limit():
    patch("billing.quota.LIMIT", 3).start()
    assert add(1, 2) == 3
"""

# Why the slice misses it today (issue 20).
MOCK_START_MISSED = (
    "sharedstate sees no store in patch(...).start() (not a mutator), the harness rule "
    "counts patch calls at import only, and no rule selects test_quota.py"
)


@pytest.mark.parametrize(
    "dep_map",
    modes(
        off=MOCK_START_MISSED,
        auto=MOCK_START_MISSED + "; the map selects only the changed test file",
    ),
)
def test_an_added_test_whose_mock_patch_is_started_and_never_stopped(
    repo: GitRepo, tmp_path: Path, dep_map: str
) -> None:
    """An added test calls ``patch("billing.quota.LIMIT", 3).start()`` inside its body and
    never stops it (the target is a string: the file imports nothing of ``quota``); the
    base's ``test_quota.py``, run later in the same process, sees the limit at 3."""
    build(
        repo,
        {"src/billing/quota.py": QUOTA, "tests/test_quota.py": TEST_QUOTA},
        {"tests/test_aa_fast.py": TEST_AA_FAST},
    )
    assert_not_accepted(repo, tmp_path, dep_map)


def test_a_never_stopped_patch_is_caught_by_the_default_canary(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same patch with the default canary (the tests' conftest turns it off): at least
    20 tests outside the slice run beside it, which in a suite this small is all of them,
    so ``test_quota.py`` runs after the added test as in the full suite."""
    monkeypatch.delenv("PATCHLANE_CANARY", raising=False)
    build(
        repo,
        {"src/billing/quota.py": QUOTA, "tests/test_quota.py": TEST_QUOTA},
        {"tests/test_aa_fast.py": TEST_AA_FAST},
    )
    assert_not_accepted(repo, tmp_path, "auto")


TEST_DOCS = """\
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_page_has_a_title():
    for page in sorted({pages}):
        assert page.read_text().startswith("# "), page.name
"""


@pytest.mark.parametrize(
    ("pages", "dep_map"),
    [
        *spellings('(ROOT / "docs").glob("*.md")', "names-the-folder"),
        *spellings('ROOT.rglob("*.md")', "globs-the-tree", off=IGNORED_GLOB_MISSED),
    ],
)
def test_a_test_reading_files_under_a_folder_the_review_map_ignores(
    repo: GitRepo, tmp_path: Path, pages: str, dep_map: str
) -> None:
    """The review map ignores ``docs/`` ("prose only"), yet a test globs it (by name, or
    every ``*.md`` of the tree) and checks every page's title; the patch only drops the
    title of ``docs/billing.md`` (and adds a comment to ``calc``)."""
    test = TEST_DOCS.format(pages=pages)
    # The comment in calc makes the slice not empty: no "no test reaches it" fallback.
    tidy = {"docs/billing.md": "Billing\n", "src/billing/calc.py": CALC + "\n# tidy\n"}
    build(repo, {"tests/test_docs.py": test}, tidy)
    assert_not_accepted(repo, tmp_path, dep_map)
