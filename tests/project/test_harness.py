"""What a test run loads besides the tests: conftest imports, plugins, shadowing modules,
committed bytecode and ``.gitattributes`` are control files, found at base and head."""

from __future__ import annotations

from typing import Any

import pytest

from patchlane.formats.facts import HARNESS
from patchlane.project.classify import EXTEND_THE_MAP, classify
from tests.gitrepo import GitRepo, add_symlink, make_project, start_patch


def run(repo: GitRepo) -> dict[str, Any]:
    return classify(repo.path, "main", "HEAD", None).to_json()


def details(result: dict[str, Any]) -> dict[tuple[str, str], str | None]:
    return {(d["path"], d["kind"]): d.get("why") for d in result["control_plane_details"]}


def patch(repo: GitRepo, base: dict[str, str], head: dict[str, str | None]) -> dict[str, Any]:
    """Commit ``base`` on main, then ``head`` (``None`` deletes) on the patch branch."""
    for rel, content in base.items():
        repo.write(rel, content)
    make_project(repo)
    start_patch(repo)
    for rel, new in head.items():
        if new is None:
            repo.remove(rel)
        else:
            repo.write(rel, new)
    repo.commit("patch")
    return run(repo)


HOOK = (
    "def pytest_runtest_makereport(item, call):\n"
    "    pass\n"
)  # fmt: skip


def test_a_helper_the_conftest_star_imports_is_harness(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"tests/conftest.py": "from tests.support.hooks import *\n",
         "tests/__init__.py": "", "tests/support/__init__.py": "",
         "tests/support/hooks.py": "X = 1\n"},
        {"tests/support/hooks.py": HOOK},
    )  # fmt: skip
    found = details(result)
    assert found[("tests/support/hooks.py", HARNESS)] == "imported by tests/conftest.py"
    assert result["harness_changed"] is True


def test_the_closure_is_transitive(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"tests/conftest.py": "import helpers.a\n",
         "helpers/__init__.py": "", "helpers/a.py": "from . import b\n",
         "helpers/b.py": "Y = 2\n"},
        {"helpers/b.py": "Y = 3\n"},
    )  # fmt: skip
    assert details(result)[("helpers/b.py", HARNESS)] == "imported by helpers/a.py"


def test_a_module_named_by_pytest_plugins_in_a_test_module_is_harness(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"tests/test_x.py": 'pytest_plugins = ["plugs.outcomes"]\n\ndef test_x():\n    pass\n',
         "plugs/__init__.py": "", "plugs/outcomes.py": "X = 1\n"},
        {"plugs/outcomes.py": HOOK},
    )  # fmt: skip
    assert details(result)[("plugs/outcomes.py", HARNESS)] == (
        "named by pytest_plugins in tests/test_x.py"
    )


def test_a_plugin_the_head_adds_is_harness_at_the_head(repo: GitRepo) -> None:
    result = patch(
        repo,
        {},
        {"tests/test_billing.py": 'pytest_plugins = "evil_plugin"\n\ndef test_ok():\n    pass\n',
         "tests/evil_plugin.py": HOOK},
    )  # fmt: skip
    found = details(result)
    assert found[("tests/evil_plugin.py", HARNESS)] == (
        "named by pytest_plugins in tests/test_billing.py"
    )


def test_a_helper_only_the_base_conftest_imported_is_harness(repo: GitRepo) -> None:
    # The head drops the import and edits the helper: the base still found it.
    result = patch(
        repo,
        {"tests/conftest.py": "import tests.util\n", "tests/__init__.py": "",
         "tests/util.py": "Z = 1\n"},
        {"tests/conftest.py": "", "tests/util.py": "Z = 2\n"},
    )  # fmt: skip
    assert ("tests/util.py", HARNESS) in details(result)


def test_code_under_test_a_conftest_imports_is_not_harness(repo: GitRepo) -> None:
    # The code under test runs in the test process whoever imports it first; a conftest
    # that builds fixtures from it does not make every change to it a harness change.
    result = patch(
        repo,
        {"tests/conftest.py": "from billing.core import net\n"},
        {"src/billing/core.py": "def net(charge, refund):\n    return charge - refund - 0\n"},
    )  # fmt: skip
    assert result["control_plane"] == []
    assert result["harness_changed"] is False


def test_code_under_test_star_imported_by_a_conftest_is_harness(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"tests/conftest.py": "from billing.core import *\n"},
        {"src/billing/core.py": HOOK},
    )  # fmt: skip
    assert details(result)[("src/billing/core.py", HARNESS)] == "imported by tests/conftest.py"


def test_a_hook_name_imported_from_code_under_test_is_harness(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"tests/conftest.py": "from billing.core import pytest_runtest_makereport\n",
         "src/billing/core.py": HOOK},
        {"src/billing/core.py": HOOK + "# changed\n"},
    )  # fmt: skip
    assert ("src/billing/core.py", HARNESS) in details(result)


def test_a_conftest_with_a_computed_import_reaches_every_support_module(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"tests/conftest.py": "import importlib\nimportlib.import_module('x' + 'y')\n",
         "tools/anything.py": "A = 1\n"},
        {"tools/anything.py": "A = 2\n", "src/billing/core.py": "changed = 1\n"},
    )  # fmt: skip
    found = details(result)
    assert ("tools/anything.py", HARNESS) in found
    assert ("src/billing/core.py", HARNESS) not in found


def test_an_unparsable_conftest_is_harness_and_classify_does_not_crash(repo: GitRepo) -> None:
    result = patch(repo, {}, {"tests/conftest.py": "(" * 200_000 + ")" * 200_000 + "\n"})
    assert ("tests/conftest.py", HARNESS) in details(result)


def test_an_unrelated_helper_is_not_harness(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"tests/conftest.py": "import os\n", "tools/release.py": "V = 1\n"},
        {"tools/release.py": "V = 2\n"},
    )  # fmt: skip
    assert result["control_plane"] == []


# --- shadowing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        ("tests/billing/__init__.py", "new 'billing' on tests/ shadows the project's src/billing"),
        ("tests/hypothesis/__init__.py", "new 'hypothesis' on tests/ shadows the installed"),
        ("tests/json.py", "new 'json' on tests/ shadows the standard-library module"),
        ("random.py", "new 'random' on the tree root shadows the standard-library module"),
        ("tests/pytest.py", "new 'pytest' on tests/ shadows the installed pytest"),
    ],
)
def test_a_new_module_that_shadows_is_harness(repo: GitRepo, rel: str, why: str) -> None:
    result = patch(repo, {}, {rel: "def anything():\n    return 1\n"})
    found = details(result)
    assert (rel, HARNESS) in found, found
    assert str(found[(rel, HARNESS)]).startswith(why)
    assert result["harness_changed"] is True


def test_new_modules_that_shadow_nothing_are_not_harness(repo: GitRepo) -> None:
    result = patch(
        repo,
        {},
        {"tests/helpers_for_billing.py": "", "src/billing/extra.py": "",
         "tests/test_more.py": "def test_more():\n    pass\n"},
    )  # fmt: skip
    assert result["control_plane"] == []


def test_a_shadow_the_base_already_had_is_not_new(repo: GitRepo) -> None:
    result = patch(repo, {"tests/billing/__init__.py": ""}, {"tests/billing/extra.py": ""})
    assert ("tests/billing/extra.py", HARNESS) not in details(result)


# --- bytecode and attributes -------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    ["src/billing/__pycache__/core.cpython-311.pyc", "src/billing/core.pyc", "tools/x.pyo"],
)
def test_committed_bytecode_is_control(repo: GitRepo, rel: str) -> None:
    result = patch(repo, {}, {rel: "\x00bytecode"})
    assert (rel, "committed bytecode") in details(result)
    assert result["harness_changed"] is True


@pytest.mark.parametrize("rel", [".gitattributes", "tests/fixtures/billing/.gitattributes"])
def test_gitattributes_anywhere_is_control(repo: GitRepo, rel: str) -> None:
    result = patch(repo, {}, {rel: "* text eol=crlf\n"})
    assert (rel, "checkout attributes") in details(result)
    assert result["harness_changed"] is True


def test_a_conftest_that_edits_sys_path_reaches_every_support_module(repo: GitRepo) -> None:
    # ``import evil`` resolves under a directory the static roots do not know.
    result = patch(
        repo,
        {"tests/conftest.py": "import sys\nsys.path.insert(0, 'tools')\nimport evil\n",
         "tools/evil.py": "E = 1\n"},
        {"tools/evil.py": HOOK},
    )  # fmt: skip
    assert ("tools/evil.py", HARNESS) in details(result)


# --- what the pytest configuration loads -------------------------------------------------


@pytest.mark.parametrize(
    ("config", "content"),
    [
        ("pytest.ini", "[pytest]\naddopts = -p plugs.outcomes -q\n"),
        ("pytest.ini", "[pytest]\naddopts = -pplugs.outcomes\n"),
        ("tox.ini", "[pytest]\naddopts = -p plugs.outcomes\n"),
        ("setup.cfg", "[tool:pytest]\naddopts = -p plugs.outcomes\n"),
        ("pyproject.toml", '[tool.pytest.ini_options]\naddopts = ["-p", "plugs.outcomes"]\n'),
        ("pyproject.toml", '[project.entry-points.pytest11]\nout = "plugs.outcomes"\n'),
        ("setup.cfg", "[options.entry_points]\npytest11 =\n    out = plugs.outcomes:Plugin\n"),
    ],
)
def test_a_module_the_configuration_loads_as_a_plugin_is_harness(
    repo: GitRepo, config: str, content: str
) -> None:
    result = patch(
        repo,
        {config: content, "plugs/__init__.py": "", "plugs/outcomes.py": "X = 1\n",
         "plugs/helpers.py": "H = 1\n"},
        {"plugs/outcomes.py": "from plugs.helpers import *\n" + HOOK},
    )  # fmt: skip
    found = details(result)
    assert found[("plugs/outcomes.py", HARNESS)] == "loaded as a plugin by the pytest configuration"


def test_the_plugin_s_star_import_reaches_into_the_code_under_test(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"pytest.ini": "[pytest]\naddopts = -p billing.testing\npythonpath = src\n",
         "src/billing/testing.py": "from billing._helpers import *\n",
         "src/billing/_helpers.py": "H = 1\n"},
        {"src/billing/_helpers.py": HOOK},
    )  # fmt: skip
    assert details(result)[("src/billing/_helpers.py", HARNESS)] == (
        "imported by src/billing/testing.py"
    )


def test_pythonpath_entries_are_import_roots(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"pytest.ini": "[pytest]\npythonpath = src lib\n",
         "tests/conftest.py": "from testkit import *\n", "lib/testkit.py": "K = 1\n"},
        {"lib/testkit.py": HOOK},
    )  # fmt: skip
    assert details(result)[("lib/testkit.py", HARNESS)] == "imported by tests/conftest.py"


def test_adding_a_pytest11_entry_point_is_a_harness_change(repo: GitRepo) -> None:
    result = patch(repo, {}, {"pyproject.toml": '[project.entry-points.pytest11]\nx = "y"\n'})
    assert ("pyproject.toml", HARNESS) in details(result)


def test_an_unreadable_configuration_loads_nothing_and_does_not_crash(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"pytest.ini": "[pytest\naddopts = -p ('", "pyproject.toml": "[" * 100_000},
        {"tools/x.py": "X = 2\n"},
    )  # fmt: skip
    assert ("tools/x.py", HARNESS) not in details(result)


def test_a_new_symlink_that_shadows_a_project_package_is_harness(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("tests/_shim/__init__.py", "def net(charge, refund):\n    return 0\n")
    add_symlink(repo, "tests/billing", "_shim")
    repo.commit("patch")
    found = details(run(repo))
    assert str(found[("tests/billing", HARNESS)]).startswith(
        "new 'billing' on tests/ shadows the project's src/billing"
    )


@pytest.mark.parametrize(
    ("files", "python_files"),
    [
        ({}, ("test_*.py", "*_test.py")),
        ({"pytest.ini": "[pytest]\npython_files = check_*.py\ttry_*.py\n"},
         ("check_*.py", "try_*.py")),
        # A pytest.ini wins even without options: pytest reads no file after it.
        ({"pytest.ini": "", "tox.ini": "[pytest]\npython_files = check_*.py\n"},
         ("test_*.py", "*_test.py")),
        ({"pyproject.toml": '[tool.pytest.ini_options]\npython_files = ["check_*.py"]\n'
                            'testpaths = ["tests", "more"]\n'},
         ("check_*.py",)),
        # A pyproject.toml without pytest's table is passed over.
        ({"pyproject.toml": "[project]\nname = 'x'\n",
          "setup.cfg": "[tool:pytest]\npython_files = spec_*.py\ntestpaths = spec\n"},
         ("spec_*.py",)),
        # An empty [pytest] section in tox.ini is still the file pytest uses.
        ({"tox.ini": "[pytest]\n", "setup.cfg": "[tool:pytest]\npython_files = spec_*.py\n"},
         ("test_*.py", "*_test.py")),
        ({"pytest.toml": '[pytest]\npython_files = ["t_*.py"]\n',
          "pytest.ini": "[pytest]\npython_files = other_*.py\n"},
         ("t_*.py",)),
    ],
)  # fmt: skip
def test_what_a_test_module_is_comes_from_the_configuration_pytest_uses(
    repo: GitRepo,
    files: dict[str, str],
    python_files: tuple[str, ...],
) -> None:
    from patchlane.project.harness import module_patterns_at

    for rel, content in {"README": "x\n", **files}.items():
        repo.write(rel, content)
    repo.commit("config")
    assert module_patterns_at(repo.path, "HEAD").python_files == python_files


def test_a_patch_test_file_that_stores_into_pytest_is_harness(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"pytest.ini": "[pytest]\npython_files = check_*.py\n"},
        {"tests/check_wrap.py": "import pytest\n\npytest.Function.runtest = None\n",
         "tests/check_fine.py": "def test_x(monkeypatch):\n    monkeypatch.setattr('os.sep', 'x')\n"},
    )  # fmt: skip
    found = details(result)
    assert "line 3: stores into pytest.Function.runtest" in str(
        found[("tests/check_wrap.py", HARNESS)]
    )
    assert ("tests/check_fine.py", HARNESS) not in found


# --- harness only with evidence; an unmapped path always gets rule 5 (issue 21) ----------

SRC_ON_PATH = (
    "import os\nimport sys\n\n"
    "sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n"
)  # fmt: skip


def _reasons(repo: GitRepo) -> list[tuple[int, str]]:
    from patchlane.gate.verdict import decide

    facts = classify(repo.path, "main", "HEAD", None).summary().facts
    verdict = decide(None, None, None, None, facts)
    assert verdict.verdict in ("undecided", "reject")
    return [(r.rule, r.message) for r in verdict.reasons if r.lane == "classify"]


def test_a_conftest_that_only_puts_src_on_sys_path_imports_no_new_module(repo: GitRepo) -> None:
    # The bundled-style example: the conftest imports only os and sys, so a new
    # src/other/tool.py is no harness, and no lane covers it: rule 5, "extend the map".
    result = patch(repo, {"tests/conftest.py": SRC_ON_PATH}, {"src/other/tool.py": "T = 1\n"})
    assert ("src/other/tool.py", HARNESS) not in details(result)
    assert result["unmapped"] == ["src/other/tool.py"]
    assert result["map_complete"] is False
    reasons = _reasons(repo)
    covers = "1 changed path(s) no lane, lanes.replay.paths or ignore entry covers"
    assert reasons == [(5, f"map incomplete: {covers}: {EXTEND_THE_MAP}")]


def test_after_a_sys_path_edit_an_import_resolves_under_any_directory(repo: GitRepo) -> None:
    # The same conftest importing ``other.tool``: found from the directory sys.path gained.
    base = {"tests/conftest.py": SRC_ON_PATH + "import other.tool\n", "src/other/tool.py": "T=1\n"}
    result = patch(repo, base, {"src/other/tool.py": HOOK})
    assert details(result)[("src/other/tool.py", HARNESS)] == "imported by tests/conftest.py"
    # Harness by its route and covered by no lane: both reasons, never only one.
    assert result["unmapped"] == ["src/other/tool.py"]
    rules = [rule for rule, _ in _reasons(repo)]
    assert rules == [5, 6]


def test_an_import_after_another_harness_file_edits_sys_path_is_followed(repo: GitRepo) -> None:
    # sys.path is the process's: a helper the conftest imports edits it, and the helper's
    # own later import resolves under the new directory.
    base = {
        "tests/conftest.py": "import tests.support\n",
        "tests/__init__.py": "",
        "tests/support.py": "import sys\nsys.path.append('vendor')\nimport hooks\n",
        "vendor/hooks.py": "H = 1\n",
    }
    result = patch(repo, base, {"vendor/hooks.py": HOOK})
    assert details(result)[("vendor/hooks.py", HARNESS)] == "imported by tests/support.py"


@pytest.mark.parametrize(
    "edit",
    [
        "import sys as _sys\n_sys.path.insert(0, 'tests/support')\n",
        "from sys import path as _search\n_search.insert(0, 'tests/support')\n",
        # No edit the graph can see at all: the import names no file under the roots.
        "import importlib\nimportlib.import_module('sys').path.insert(0, 'tests/support')\n",
    ],
    ids=["sys-aliased", "path-imported", "unseen-edit"],
)
def test_a_helper_found_through_a_search_path_the_graph_cannot_follow_is_harness(
    repo: GitRepo, edit: str
) -> None:
    # Hostile (issue 21 probe): the base's conftest puts tests/support on sys.path under a
    # spelling that names no ``sys.path``, then star-imports a helper; the patch changes the
    # helper (an autouse fixture that fails outside patchlane's replay).
    base = {
        "tests/conftest.py": edit + "from helper import *\n",
        "tests/support/helper.py": "import pytest\n",
    }
    result = patch(repo, base, {"tests/support/helper.py": HOOK})
    assert ("tests/support/helper.py", HARNESS) in details(result)


def test_a_computed_import_says_it_is_computed(repo: GitRepo) -> None:
    result = patch(
        repo,
        {"tests/conftest.py": "import importlib\nimportlib.import_module('x' + 'y')\n"},
        {"src/other/tool.py": "T = 1\n"},
    )  # fmt: skip
    why = details(result)[("src/other/tool.py", HARNESS)]
    assert why == "may be imported by tests/conftest.py (an import's name is computed)"
    assert result["unmapped"] == ["src/other/tool.py"]


def test_a_new_module_that_shadows_and_no_lane_covers_gets_both_reasons(repo: GitRepo) -> None:
    result = patch(repo, {"tests/conftest.py": SRC_ON_PATH}, {"src/json.py": "X = 1\n"})
    assert "shadows the standard-library module" in str(details(result)[("src/json.py", HARNESS)])
    assert result["unmapped"] == ["src/json.py"]
    assert [rule for rule, _ in _reasons(repo)] == [5, 6]


def test_a_harness_file_by_its_name_is_not_unmapped(repo: GitRepo) -> None:
    # A conftest is a control file by what it is; rule 6 speaks for it, rule 5 does not.
    result = patch(repo, {}, {"conftest.py": HOOK})
    assert ("conftest.py", HARNESS) in details(result)
    assert result["unmapped"] == []


def test_a_conftest_that_runs_a_file_by_its_path_reaches_every_support_module(
    repo: GitRepo,
) -> None:
    # No module name for the graph to follow: the answer widens, and says why.
    loader = (
        "import runpy, sys\nsys.path.insert(0, 'src')\n"
        "runpy.run_path('docs/' + 'hooks.py')\n"
    )  # fmt: skip
    result = patch(repo, {"tests/conftest.py": loader}, {"docs/hooks.py": HOOK})
    why = details(result)[("docs/hooks.py", HARNESS)]
    assert why == "may be imported by tests/conftest.py (it runs code by file path)"
    assert result["harness_changed"] is True  # ignored by the map, still harness
