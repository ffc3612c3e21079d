"""Trusted oracles: the base's property modules run against the head's code, so a patch can
add properties but never delete or soften one; the list of properties comes from the
parent's own parse."""

from __future__ import annotations

import pytest

from patchlane.errors import MapError
from tests.gitrepo import GitRepo
from tests.lanes.property import project as P

BROKEN_SHOP = "def refund(charge, amount):\n    return charge - amount\n"
GUTTED = "from shop import refund\n\n\ndef prop_refund_bounded(seed, n=200):\n    refund(1, 0)\n"


@pytest.mark.slow
def test_a_gutted_property_is_still_red_from_the_base(repo: GitRepo) -> None:
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": BROKEN_SHOP, "checks/props.py": GUTTED})
    report = P.lane(repo)
    assert report.status == "fail"
    assert [(f.property, f.source) for f in report.failures] == [("prop_refund_bounded", "base")]
    assert P.outcomes(report) == {
        ("prop_refund_bounded", "base"): "fail",
        ("prop_refund_bounded", "head"): "pass",
    }
    # Without a base, the gutted property is all there is: that is what --base is for.
    assert P.lane(repo, base=None, head="HEAD").status == "pass"


def test_a_property_deleted_by_the_patch_still_runs_from_the_base(repo: GitRepo) -> None:
    P.make(repo)
    P.patch(
        repo,
        {
            "src/shop/__init__.py": BROKEN_SHOP,
            "checks/props.py": "def prop_other(seed, n=200):\n    pass\n",
        },
    )
    report = P.lane(repo)
    assert P.outcomes(report) == {
        ("prop_refund_bounded", "base"): "fail",
        ("prop_other", "head"): "pass",
    }
    assert report.failures[0].source == "base"


def test_a_module_deleted_by_the_patch_still_runs_from_the_base(repo: GitRepo) -> None:
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": BROKEN_SHOP, "checks/props.py": None})
    report = P.lane(repo)
    assert P.outcomes(report) == {("prop_refund_bounded", "base"): "fail"}


def test_a_property_added_by_the_patch_runs_as_head(repo: GitRepo) -> None:
    P.make(repo)
    added = P.SEED_PROP + "\n\ndef prop_new(seed, n=200):\n    assert False, (seed, 3, 'x')\n"
    P.patch(repo, {"checks/props.py": added})
    report = P.lane(repo)
    assert P.outcomes(report) == {
        ("prop_refund_bounded", "base"): "pass",
        ("prop_refund_bounded", "head"): "pass",
        ("prop_new", "head"): "fail",
    }
    failure = P.one_failure(report, "prop_new")
    assert (failure["case_index"], failure["arguments"]) == (3, ["x"])


def test_a_module_missing_at_base_and_head_is_the_maps_fault(repo: GitRepo) -> None:
    # DESIGN.md §2: a map naming no module fails base and head alike (exit 2, never red).
    # See test_environment_lane.py for the CLI's exit code and message.
    P.make(repo, modules=("checks.props", "checks.gone"))
    with pytest.raises(MapError) as raised:
        P.lane(repo)
    assert (raised.value.file, raised.value.line) == (str(repo.path / "review-map.yml"), 4)
    assert raised.value.message == (
        "lanes.property.modules: no such module 'checks.gone' at base or head"
    )


def test_a_module_without_properties_is_a_red_error(repo: GitRepo) -> None:
    P.make(repo, "def helper():\n    pass\n")
    report = P.lane(repo)
    assert report.status == "error"
    assert "defines no prop_* function" in report.reason


def test_a_syntax_error_at_head_is_red_and_the_base_still_runs(repo: GitRepo) -> None:
    P.make(repo)
    P.patch(repo, {"checks/props.py": "def prop_refund_bounded(seed, n=200:\n"})
    report = P.lane(repo)
    assert report.status == "error"
    assert P.outcomes(report) == {("prop_refund_bounded", "base"): "pass"}
    assert report.failures[0].source == "head"
    assert report.failures[0].message.startswith("checks/props.py:1:")


def test_a_property_deleted_at_import_time_is_a_failure(repo: GitRepo) -> None:
    # The parser sees prop_gone; the module deletes it while importing.
    props = P.SEED_PROP + "\n\ndef prop_gone(seed, n=200):\n    pass\n\n\ndel prop_gone\n"
    P.make(repo)
    P.patch(repo, {"checks/props.py": props})
    report = P.lane(repo)
    failure = P.one_failure(report, "prop_gone")
    assert failure["kind"] == "error"
    assert "not defined after import" in failure["message"]
    assert report.status == "fail"


def test_code_under_test_cannot_swap_the_base_module_for_its_own(repo: GitRepo) -> None:
    # The base's checks/ is a namespace package; the patch adds a regular package
    # src/checks/ holding a harmless prop_refund_bounded, which Python would prefer.
    P.make(repo)
    repo.remove("checks/__init__.py")
    repo.commit("checks as a namespace package")
    repo.git("branch", "-f", "main", "HEAD")
    P.patch(
        repo,
        {
            "src/shop/__init__.py": BROKEN_SHOP,
            "src/checks/__init__.py": "",
            "src/checks/props.py": "def prop_refund_bounded(seed, n=200):\n    pass\n",
        },
    )
    report = P.lane(repo)
    failure = P.one_failure(report, "prop_refund_bounded", "base")
    assert failure["kind"] == "module"
    assert "loaded src/checks/props.py, not the module version asked for" in failure["message"]


def test_properties_in_a_package_that_holds_code_under_test_are_refused(repo: GitRepo) -> None:
    # shop.props lives in the code under test's own package: its base version would
    # import the base's shop, testing nothing of the patch.
    P.make(
        repo,
        files={"src/shop/props.py": "def prop_x(seed, n=200):\n    pass\n"},
        modules=("shop.props",),
    )
    report = P.lane(repo)
    assert report.status == "error"
    assert "also holds code under test" in report.failures[0].message
    assert P.outcomes(report) == {("prop_x", "head"): "pass"}


@pytest.mark.slow
def test_the_work_tree_is_run_without_a_base(repo: GitRepo) -> None:
    P.make(repo)
    repo.write("src/shop/__init__.py", BROKEN_SHOP)  # not committed
    report = P.lane(repo, base=None, head=None)
    assert report.base is None and report.head is None
    assert report.status == "fail"
    assert "no base" not in report.reason  # a red reason names the failure
    assert P.lane(repo, base="main").status == "pass"  # HEAD's code is sound
    repo.write("src/shop/__init__.py", P.SHOP)
    green = P.lane(repo, base=None, head=None)
    assert green.reason.endswith("no base, oracles from the work tree)")
