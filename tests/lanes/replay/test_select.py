"""Selecting the replay slice on real git repositories, with pytest's real collection."""

from __future__ import annotations

import importlib.resources
import shutil

import pytest

from patchlane.formats.slicefile import parse
from patchlane.infra import git
from patchlane.lanes.replay.select import select_slice
from patchlane.lanes.replay.selection import Selection, SliceRequest
from patchlane.project.classify import load_map_at
from patchlane.project.config import ReviewMap, parse_review_map
from tests.gitrepo import GitRepo

MAP = """\
version: 1
lanes:
  fixture:
    paths: ["tests/fixtures/"]
    lock: "tests/fixtures/LOCK.json"
  replay:
    tests: ["tests/"]
    private: ["tests/fixtures/customer/"]
"""

# A project with three chains: tests/test_a -> pkg.a -> pkg.b -> pkg.c; tests/test_rel ->
# pkg.rel (relative imports); tests/test_other -> other (unrelated to pkg).
PROJECT = {
    "review-map.yml": MAP,
    "pkg/__init__.py": "",
    "pkg/a.py": "from pkg import b\n\nA = b.B\n",
    "pkg/b.py": "from pkg.c import C\n\nB = C\n",
    "pkg/c.py": "C = 1\n",
    "pkg/rel/__init__.py": "from .inner import VALUE\n",
    "pkg/rel/inner.py": "from ..c import C as VALUE\n",
    "other.py": "O = 2\n",
    "tests/test_a.py": "from pkg.a import A\n\n\ndef test_a():\n    assert A == 1\n",
    "tests/test_rel.py": "from pkg.rel import VALUE\n\n\ndef test_rel():\n    assert VALUE\n",
    "tests/test_other.py": (
        "import other\n\n\ndef test_o1():\n    assert other.O\n\n\ndef test_o2():\n    pass\n"
    ),
    "tests/test_data.py": (
        "import json, pathlib\n\n\ndef test_invoice():\n"
        "    json.loads((pathlib.Path(__file__).parent / 'fixtures' / 'invoice.json').read_text())\n"
    ),
    "tests/fixtures/invoice.json": "{}\n",
    "tests/fixtures/LOCK.json": '{"files": []}\n',
}
ALL = [
    "tests/test_a.py::test_a",
    "tests/test_data.py::test_invoice",
    "tests/test_other.py::test_o1",
    "tests/test_other.py::test_o2",
    "tests/test_rel.py::test_rel",
]


def project(repo: GitRepo, files: dict[str, str] | None = None) -> str:
    for rel, text in (PROJECT if files is None else files).items():
        repo.write(rel, text)
    base = repo.commit("base")
    repo.branch("patch")
    return base


def patch(repo: GitRepo, files: dict[str, str]) -> None:
    for rel, text in files.items():
        repo.write(rel, text)
    repo.commit("patch")


def select(
    repo: GitRepo,
    *,
    failure_log: frozenset[str] = frozenset(),
    all_tests: bool = False,
    review_map: ReviewMap | None = None,
) -> Selection:
    base = git.resolve_commit(repo.path, "main")
    head = git.resolve_commit(repo.path, "HEAD")
    merge_base = git.merge_base(repo.path, base, head)
    changed = frozenset(
        p for c in git.diff_changes(repo.path, merge_base, head) for p in (c.path, c.old_path) if p
    )
    the_map = review_map or load_map_at(repo.path, base, "review-map.yml")
    assert the_map is not None
    return select_slice(
        repo.path,
        the_map,
        SliceRequest(
            head=head,
            merge_base=merge_base,
            changed_paths=changed,
            failure_log=failure_log,
            all_tests=all_tests,
        ),
        base=base,
    )


def copy_example(repo: GitRepo) -> str:
    """Commit the bundled example (as shipped in the package) and branch off for a patch."""
    source = importlib.resources.files("patchlane.demo") / "example"
    with importlib.resources.as_file(source) as path:
        shutil.copytree(
            path,
            repo.path,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".patchlane"),
        )
    base = repo.commit("example")
    repo.branch("patch")
    return base


@pytest.mark.slow
def test_a_changed_test_file_selects_its_tests_only(repo: GitRepo) -> None:
    project(repo)
    patch(repo, {"tests/test_other.py": PROJECT["tests/test_other.py"] + "\n# more\n"})
    sel = select(repo)
    assert sel.nodeids == ("tests/test_other.py::test_o1", "tests/test_other.py::test_o2")
    assert sel.reasons["tests/test_other.py::test_o1"] == ["in a changed test file"]
    assert sel.suite_size == len(ALL)
    assert parse(sel.slice_bytes, "slice") == sel.nodeids
    assert sel.private == ()


@pytest.mark.slow
def test_a_transitive_import_selects_the_test_and_says_through_what(repo: GitRepo) -> None:
    project(repo)
    patch(repo, {"pkg/c.py": "C = 3\n"})
    sel = select(repo)
    # test_a reaches c through a -> b; test_rel through relative imports; test_other not.
    assert sel.nodeids == ("tests/test_a.py::test_a", "tests/test_rel.py::test_rel")
    assert sel.reasons["tests/test_a.py::test_a"] == [
        "imports changed module pkg/c.py via tests/test_a.py -> pkg/a.py -> pkg/b.py"
    ]
    assert {"pkg/a.py", "pkg/b.py", "pkg/c.py", "tests/test_a.py"} <= set(sel.files_needed)
    assert "other.py" not in sel.files_needed


@pytest.mark.slow
def test_a_changed_package_init_selects_importers_of_its_submodules(repo: GitRepo) -> None:
    project(repo)
    patch(repo, {"pkg/rel/__init__.py": "from .inner import VALUE\nEXTRA = 1\n"})
    assert select(repo).nodeids == ("tests/test_rel.py::test_rel",)


@pytest.mark.slow
def test_src_layout_with_the_projects_pytest_pythonpath(repo: GitRepo) -> None:
    files = {
        "review-map.yml": "version: 1\nlanes:\n  replay:\n    tests: [tests/]\n",
        "pytest.ini": "[pytest]\npythonpath = src\n",
        "src/shop/__init__.py": "",
        "src/shop/tax.py": "RATE = 20\n",
        "src/shop/cart.py": "from .tax import RATE\n",
        "src/other/__init__.py": "",
        "tests/test_cart.py": "from shop.cart import RATE\n\n\ndef test_cart():\n    assert RATE\n",
        "tests/test_other.py": "import other\n\n\ndef test_other():\n    pass\n",
    }
    project(repo, files)
    patch(repo, {"src/shop/tax.py": "RATE = 21\n"})
    sel = select(repo)
    assert sel.nodeids == ("tests/test_cart.py::test_cart",)
    assert sel.suite_size == 2


@pytest.mark.slow
def test_a_fixture_named_by_basename_selects_the_test_that_names_it(repo: GitRepo) -> None:
    project(repo)
    patch(repo, {"tests/fixtures/invoice.json": '{"total": 1}\n'})
    sel = select(repo)
    assert sel.nodeids == ("tests/test_data.py::test_invoice",)
    assert sel.reasons[sel.nodeids[0]] == ["names changed fixture tests/fixtures/invoice.json"]
    assert "tests/fixtures/invoice.json" in sel.files_needed


@pytest.mark.slow
def test_failure_log_ids_are_included_even_when_no_longer_collected(repo: GitRepo) -> None:
    project(repo)
    patch(repo, {"README.md": "docs\n"})
    gone = "tests/test_other.py::test_removed"
    log = frozenset({"tests/test_other.py::test_o2", gone, "tests/test_a.py", "../x.py::t"})
    sel = select(repo, failure_log=log)
    assert sel.nodeids == ("tests/test_a.py::test_a", "tests/test_other.py::test_o2", gone)
    assert sel.reasons["tests/test_other.py::test_o2"] == ["in the failure log"]
    assert "not collected at head" in sel.reasons[gone][0]
    assert any(gone in note for note in sel.notes)
    # An unsafe id is left out, and a logged failure that cannot be replayed is a review
    # event: it must not pass by disappearing.
    [event] = sel.not_replayed
    assert event == (
        "failure-log node id ../x.py::t left out of the slice ('..' in '../x.py': paths may "
        "not leave the repository): the logged failure is not replayed"
    )
    assert event in sel.notes


@pytest.mark.slow
def test_all_selects_the_whole_collected_suite(repo: GitRepo) -> None:
    project(repo)
    patch(repo, {"README.md": "docs\n"})
    assert select(repo).nodeids == ()  # nothing reaches a README
    sel = select(repo, all_tests=True)
    assert list(sel.nodeids) == ALL
    assert sel.suite_size == len(ALL)


@pytest.mark.slow
def test_the_slice_is_stable_across_runs_and_materialisations(repo: GitRepo) -> None:
    project(repo)
    patch(repo, {"pkg/c.py": "C = 3\n"})
    first, second = select(repo), select(repo)
    assert first.slice_bytes == second.slice_bytes and first.sha256 == second.sha256
    # A clone holds the same commits: the slice does not depend on where it is computed.
    clone = GitRepo.__new__(GitRepo)
    clone.path, clone._tick = repo.path.parent / "clone", 0
    repo.git("clone", "-q", str(repo.path), str(clone.path))
    clone.git("branch", "-q", "main", "origin/main")
    assert select(clone).sha256 == first.sha256


@pytest.mark.slow
def test_a_private_path_the_slice_needs_makes_it_private(repo: GitRepo) -> None:
    files = dict(PROJECT)
    files["tests/fixtures/customer/acme.csv"] = "id,amount\n1,2\n"
    files["tests/test_acme.py"] = "def test_acme():\n    open('customer/acme.csv')\n"
    project(repo, files)
    patch(repo, {"tests/test_acme.py": files["tests/test_acme.py"] + "# edit\n"})
    sel = select(repo)
    assert sel.nodeids == ("tests/test_acme.py::test_acme",)
    assert sel.private == (
        ("tests/fixtures/customer/acme.csv", "under replay.private (tests/fixtures/customer/)"),
    )


@pytest.mark.slow
def test_a_private_path_the_slice_does_not_need_changes_nothing(repo: GitRepo) -> None:
    files = dict(PROJECT)
    files["tests/fixtures/customer/acme.csv"] = "id\n"
    project(repo, files)
    patch(repo, {"pkg/c.py": "C = 3\n"})
    assert select(repo).private == ()


@pytest.mark.slow
@pytest.mark.parametrize(
    "secret",
    [
        "-----BEGIN " + "PRIVATE KEY-----",
        "AKIA" + "Q" * 16,
        "gh" + "s_" + "x" * 40,
        "xox" + "p-" + "0123456789abc",
        "password" + " = '" + "hunter2hunter2" + "'",
    ],
)
def test_a_secret_in_an_imported_module_makes_the_slice_private(repo: GitRepo, secret: str) -> None:
    project(repo)
    patch(repo, {"pkg/b.py": f"from pkg.c import C\n\nB = C\nCONFIG = '''\n{secret}\n'''\n"})
    sel = select(repo)
    assert [p for p, _ in sel.private] == ["pkg/b.py"]
    assert sel.private[0][1].startswith("secret (") and "at line 5" in sel.private[0][1]
    assert all(secret not in why for _, why in sel.private)


@pytest.mark.slow
def test_a_test_file_that_no_longer_collects_stands_in_the_slice_as_its_own_id(
    repo: GitRepo,
) -> None:
    project(repo)
    patch(repo, {"tests/test_a.py": "import pkg.missing_module\n\n\ndef test_a():\n    pass\n"})
    sel = select(repo)
    assert "tests/test_a.py" in sel.nodeids
    assert any("does not collect at head" in why for why in sel.reasons["tests/test_a.py"])
    assert [e.nodeid for e in sel.collect_errors] == ["tests/test_a.py"]
    assert sel.collect_errors[0].missing == "pkg.missing_module"


@pytest.mark.slow
def test_on_the_example_a_quota_change_selects_only_quota_tests(repo: GitRepo) -> None:
    copy_example(repo)
    init = repo.path / "src/quota/__init__.py"
    patch(repo, {"src/quota/__init__.py": init.read_text() + "\n# a harmless comment\n"})
    sel = select(repo)
    assert sel.nodeids and all(n.startswith("tests/test_quota.py::") for n in sel.nodeids)
    assert sel.suite_size == 14
    assert len(sel.nodeids) == 6
    assert not any(n.startswith("tests/test_billing.py") for n in sel.nodeids)


@pytest.mark.slow
def test_on_the_example_a_billing_change_selects_only_billing_tests(repo: GitRepo) -> None:
    copy_example(repo)
    init = repo.path / "src/billing/__init__.py"
    patch(repo, {"src/billing/__init__.py": init.read_text() + "\n# a harmless comment\n"})
    sel = select(repo)
    assert {n.split("::")[0] for n in sel.nodeids} == {"tests/test_billing.py"}
    assert len(sel.nodeids) == 8
    # The fixtures test_billing names travel with the slice.
    assert "tests/fixtures/billing/invoice_min.json" in sel.files_needed


@pytest.mark.slow
def test_a_map_without_a_replay_section_uses_tests(repo: GitRepo) -> None:
    project(repo)
    patch(repo, {"pkg/c.py": "C = 4\n"})
    the_map = parse_review_map("version: 1\nlanes: {}\n", "m.yml")
    assert select(repo, review_map=the_map).nodeids == (
        "tests/test_a.py::test_a",
        "tests/test_rel.py::test_rel",
    )


@pytest.mark.slow
def test_a_conftest_that_imports_a_changed_module_selects_the_tests_below_it(
    repo: GitRepo,
) -> None:
    files = dict(PROJECT)
    files["tests/sub/conftest.py"] = "import other\n"
    files["tests/sub/test_s.py"] = "def test_s():\n    pass\n"
    project(repo, files)
    patch(repo, {"other.py": "O = 3\n"})
    sel = select(repo)
    assert sel.nodeids == (
        "tests/sub/test_s.py::test_s",
        "tests/test_other.py::test_o1",
        "tests/test_other.py::test_o2",
    )
    assert sel.reasons["tests/sub/test_s.py::test_s"] == [
        "imports changed module other.py via tests/sub/test_s.py -> tests/sub/conftest.py"
    ]
    assert "tests/sub/conftest.py" in sel.files_needed


USAGE_MD = ">>> from pkg.a import A\n>>> A\n1\n"


@pytest.mark.slow
def test_a_text_doctest_file_is_selected_by_what_its_examples_import(repo: GitRepo) -> None:
    files = dict(PROJECT)
    files["pytest.ini"] = "[pytest]\naddopts = --doctest-glob=*.md\n"
    files["docs/usage.md"] = USAGE_MD
    files["docs/other.md"] = ">>> import other\n>>> other.O\n2\n"
    project(repo, files)
    patch(repo, {"pkg/c.py": "C = 1  # same\n"})
    sel = select(repo)
    assert "docs/usage.md::usage.md" in sel.collected
    assert "docs/usage.md::usage.md" in sel.nodeids
    assert "docs/other.md::other.md" not in sel.nodeids
    assert sel.reasons["docs/usage.md::usage.md"] == [
        "imports changed module pkg/c.py via docs/usage.md -> pkg/a.py -> pkg/b.py"
    ]
    assert "docs/usage.md" in sel.reached_by["pkg/c.py"]
    assert {"docs/usage.md", "pkg/a.py"} <= set(sel.files_needed)


@pytest.mark.slow
def test_a_changed_text_doctest_file_selects_itself(repo: GitRepo) -> None:
    files = dict(PROJECT)
    files["pytest.ini"] = "[pytest]\naddopts = --doctest-glob=*.md\n"
    files["docs/usage.md"] = USAGE_MD
    project(repo, files)
    patch(repo, {"docs/usage.md": USAGE_MD + "\nMore prose.\n"})
    sel = select(repo)
    assert sel.nodeids == ("docs/usage.md::usage.md",)
    assert sel.reasons["docs/usage.md::usage.md"][0] == "a changed doctest file"


@pytest.mark.slow
def test_a_test_reaching_code_through_a_subprocess_is_selected(repo: GitRepo) -> None:
    files = dict(PROJECT)
    files["tests/test_cli.py"] = (
        "import subprocess, sys\n\n\ndef test_cli():\n"
        "    subprocess.run([sys.executable, '-m', 'pkg.a'], check=False)\n"
    )
    project(repo, files)
    patch(repo, {"pkg/c.py": "C = 3\n"})
    sel = select(repo)
    assert "tests/test_cli.py::test_cli" in sel.nodeids
    assert sel.reasons["tests/test_cli.py::test_cli"] == [
        "imports changed module pkg/c.py via tests/test_cli.py -> pkg/a.py -> pkg/b.py"
    ]


@pytest.mark.slow
def test_a_test_file_whose_name_a_slice_cannot_carry_is_left_out_and_said_so(
    repo: GitRepo,
) -> None:
    project(repo)
    evil = "tests/test_\u202eevil.py"
    patch(
        repo,
        {evil: "from pkg.a import A\n\n\ndef test_e():\n    assert A\n", "pkg/c.py": "C = 3\n"},
    )
    sel = select(repo)
    assert f"{evil}::test_e" in sel.collected
    assert sel.nodeids == ("tests/test_a.py::test_a", "tests/test_rel.py::test_rel")
    assert parse(sel.slice_bytes, "slice") == sel.nodeids
    assert evil not in sel.files_needed
    # The file is a review event (``unmaterialised``), and so are its tests left out.
    named, message = sel.not_replayed
    assert named.startswith("'tests/test_\\u202eevil.py' has a name the slice and node-id")
    assert "slice format cannot carry" in message and "not replayed" in message
    assert "\\u202e" in message and message.isprintable()
    assert message in sel.notes
