"""Symlinks in the trees the property lane runs: a link inside the repository is kept (code
and properties import through it), the base's oracle keeps the base's bytes even when it is
a link out of its package, and a base oracle that cannot be materialised is exit 2."""

from __future__ import annotations

import os

import pytest

from patchlane.main import main
from tests.gitrepo import GitRepo, add_symlink
from tests.lanes.property import project as P

BROKEN = "def refund(charge, amount):\n    return charge - amount\n"


@pytest.mark.slow
def test_code_under_test_is_imported_through_an_in_tree_symlinked_file(repo: GitRepo) -> None:
    # The shop package's code lives in vendored/; src/shop/__init__.py links to it.
    P.make(repo)
    repo.write("vendored/shop_impl.py", P.SHOP)
    add_symlink(repo, "src/shop/__init__.py", "../../vendored/shop_impl.py")
    repo.commit("shop from vendored/")
    repo.git("branch", "-f", "main", "HEAD")
    assert P.lane(repo).status == "pass"
    # The patch edits the file the link points at: the properties see it.
    P.patch(repo, {"vendored/shop_impl.py": BROKEN})
    report = P.lane(repo)
    assert report.status == "fail"
    assert P.outcomes(report) == {
        ("prop_refund_bounded", "base"): "fail",
        ("prop_refund_bounded", "head"): "fail",
    }


def test_a_property_module_that_links_inside_its_package_runs_at_base_and_head(
    repo: GitRepo,
) -> None:
    P.make(repo)
    repo.write("checks/refund_props.py", P.SEED_PROP)
    add_symlink(repo, "checks/props.py", "refund_props.py")
    repo.commit("props through a link")
    repo.git("branch", "-f", "main", "HEAD")
    P.patch(repo, {"src/shop/__init__.py": BROKEN})
    assert P.outcomes(P.lane(repo)) == {
        ("prop_refund_bounded", "base"): "fail",
        ("prop_refund_bounded", "head"): "fail",
    }


@pytest.mark.slow
def test_a_base_oracle_linked_from_outside_its_package_keeps_the_bases_bytes(
    repo: GitRepo,
) -> None:
    # checks/props.py -> ../oracles/props.py. The base tree holds only the property
    # packages, so the base's oracles/props.py comes along as a copy: a patch that guts
    # oracles/props.py (outside the package) still meets the base's oracle.
    P.make(repo)
    repo.write("oracles/props.py", P.SEED_PROP)
    add_symlink(repo, "checks/props.py", "../oracles/props.py")
    repo.commit("props from oracles/")
    repo.git("branch", "-f", "main", "HEAD")
    gutted = "def prop_refund_bounded(seed, n=200):\n    pass\n"
    P.patch(repo, {"src/shop/__init__.py": BROKEN, "oracles/props.py": gutted})
    report = P.lane(repo)
    assert report.status == "fail"
    assert P.outcomes(report) == {
        ("prop_refund_bounded", "base"): "fail",
        ("prop_refund_bounded", "head"): "pass",
    }


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("../../outside_props.py", "symlink target leaves the repository"),
        ("/usr/lib/props.py", "symlink to an absolute path leaves the repository"),
        ("gone.py", "symlink to checks/gone.py, which is not in the materialised tree"),
    ],
)
def test_a_base_oracle_that_cannot_be_materialised_exits_2(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], target: str, why: str
) -> None:
    # Its base version would silently not run, leaving only the head's, which the patch
    # controls: refused as bad input (the base's, not the patch's), never a green run.
    P.make(repo)
    add_symlink(repo, "checks/props.py", target)
    repo.commit("props out of the tree")
    repo.git("branch", "-f", "main", "HEAD")
    P.patch(repo, {"checks/props.py": "def prop_refund_bounded(seed, n=200):\n    pass\n"})
    base = repo.git("rev-parse", "main").strip()[:12]
    assert main(["--repo", os.fspath(repo.path), "property", "--base", "main"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"patchlane: error: checks/props.py (base {base}): property module checks.props: the "
        f"base's version cannot be run ({why}); make it a regular file or a symlink that "
        "stays inside the repository"
    ]
