"""The lane's side of the oracle audit: which properties are audited, in which child, and
how findings reach the report without ever turning the lane red."""

from __future__ import annotations

import jsonschema
import pytest

from patchlane.formats.property_report import ORACLE_KINDS, PropertyReport
from patchlane.schemas import load_schema
from tests.gitrepo import GitRepo
from tests.lanes.property import project as P

# Calls the code under test and checks nothing: every mutant survives.
HOLLOW = """\
from shop import refund


def prop_hollow(seed, n=200):
    for i in range(n):
        refund(seed + i, i)
"""


@pytest.mark.slow
def test_a_hollow_property_is_a_finding_not_a_red_lane(repo: GitRepo) -> None:
    P.make(repo, P.SEED_PROP + "\n\n" + HOLLOW.split("\n", 2)[2])
    report = P.lane(repo, mutants=20)
    assert report.status == "pass", report.to_json()
    assert report.oracle_audit == "ran"
    kinds = {(f.property, f.kind) for f in report.oracle_findings}
    assert ("prop_hollow", "survives_mutants") in kinds
    assert {f.kind for f in report.oracle_findings} <= set(ORACLE_KINDS)
    by_name = {m.property: m for m in report.mutation}
    assert by_name["prop_hollow"].mutants > 0 and by_name["prop_hollow"].killed == 0
    # The seed-shaped bounds property is sound: no finding, and it kills mutants.
    assert not [f for f in report.oracle_findings if f.property == "prop_refund_bounded"]
    assert by_name["prop_refund_bounded"].killed > 0
    jsonschema.validate(report.to_json(), load_schema("property-report"))


def test_only_head_properties_that_passed_are_audited(repo: GitRepo) -> None:
    P.make(repo)
    P.patch(
        repo, {"checks/props.py": HOLLOW + "\n\ndef prop_red(seed, n=200):\n    assert False\n"}
    )
    report = P.lane(repo, mutants=5)
    # The base's prop_refund_bounded passes but is not audited (the head's modules are the
    # ones a reviewer reads next); prop_red failed.
    assert [m.property for m in report.mutation] == ["prop_hollow"]
    assert report.status == "fail"


def test_mutants_zero_turns_mutation_off(repo: GitRepo) -> None:
    P.make(repo, HOLLOW)
    report = P.lane(repo, mutants=0)
    assert report.mutation == ()
    assert report.oracle_audit == "ran"  # the mirrored-formula check still runs


def test_a_rerun_does_not_audit(repo: GitRepo) -> None:
    P.make(repo, HOLLOW)
    report = P.lane(repo, mutants=5, only="prop_hollow")
    assert report.oracle_audit == "not run" and report.mutation == ()


@pytest.mark.slow
def test_the_audit_is_deterministic(repo: GitRepo) -> None:
    P.make(repo, P.SEED_PROP + "\n\n" + HOLLOW.split("\n", 2)[2])
    assert P.without_timings(P.lane(repo, mutants=10)) == P.without_timings(
        P.lane(repo, mutants=10)
    )


@pytest.mark.slow
def test_hypothesis_and_check_properties_are_audited_too(repo: GitRepo) -> None:
    props = """\
    from hypothesis import given, strategies as st
    from patchlane.props import check
    from shop import refund


    @given(charge=st.integers(0, 100), amount=st.integers(0, 120))
    def prop_given_bounded(charge, amount):
        assert 0 <= refund(charge, amount) <= charge


    @given(charge=st.integers(0, 100), amount=st.integers(0, 120))
    def prop_given_hollow(charge, amount):
        refund(charge, amount)


    @check(lambda rng: {"charge": rng.randint(0, 100), "amount": rng.randint(0, 120)})
    def prop_check_bounded(charge, amount):
        assert 0 <= refund(charge, amount) <= charge
    """
    P.make(repo, props)
    report = P.lane(repo, mutants=20)
    assert report.status == "pass", report.to_json()
    killed = {m.property: m.killed for m in report.mutation}
    assert killed["prop_given_bounded"] > 0 and killed["prop_check_bounded"] > 0
    assert killed["prop_given_hollow"] == 0
    assert {(f.property, f.kind) for f in report.oracle_findings} == {
        ("prop_given_hollow", "survives_mutants")
    }


@pytest.mark.slow
def test_the_audit_stops_at_its_budget_and_counts_the_mutants_it_tried(repo: GitRepo) -> None:
    # Many properties and a budget far smaller than auditing them all takes.
    props = (
        "import time\n"
        + P.SEED_PROP
        + "".join(
            f"\n\ndef prop_slow_{i}(seed, n=200):\n    time.sleep(0.05)\n    refund(seed, 1)\n"
            for i in range(6)
        )
    )
    P.make(repo, props)
    repo.write(
        "review-map.yml",
        (repo.path / "review-map.yml")
        .read_text()
        .replace("timeout_s:", "audit_budget_s: 0.3\n    timeout_s:"),
    )
    repo.commit("a small audit budget")
    report = P.lane(repo, mutants=50)
    assert report.status == "pass", report.to_json()
    assert report.oracle_audit == "ran"
    tried = {m.property: m.mutants for m in report.mutation}
    skipped = [
        m for m in report.mutation if m.error == "not audited: the audit's time budget ran out"
    ]
    assert skipped, report.to_json()["mutation"]
    assert sum(tried.values()) < 50 * 7


@pytest.mark.slow
def test_the_audit_runs_only_when_the_patch_changes_what_the_properties_import(
    repo: GitRepo,
) -> None:
    from patchlane.lanes.property.lane import PropertyRequest, run_property_lane
    from patchlane.project.classify import load_map_file

    P.make(repo, files={"src/other.py": "X = 1\n"})
    P.patch(repo, {"src/other.py": "X = 2\n"})

    def audit(changed: frozenset[str]) -> str:
        report = run_property_lane(
            repo.path,
            load_map_file(repo.path / "review-map.yml"),
            PropertyRequest(seed=P.SEED, cases=P.CASES, mutants=5, changed=changed),
            base="main",
            head="HEAD",
        )
        assert report.status == "pass", report.to_json()
        return report.oracle_audit

    # checks/props.py imports shop, not other: an audit would only repeat the base's.
    assert audit(frozenset({"src/other.py"})) == "unchanged"
    assert audit(frozenset({"src/shop/__init__.py"})) == "ran"
    assert audit(frozenset({"checks/props.py"})) == "ran"


def test_the_audit_adds_its_findings_and_changes_no_result(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The audit runs after the properties, to its end, and only adds to the report: what
    # the verdict reads is the same without it.
    import importlib.util

    from patchlane.lanes.property import lane as lane_module

    P.make(repo, P.SEED_PROP + "\n\n" + HOLLOW.split("\n", 2)[2])
    final = P.lane(repo, mutants=5)
    assert final.status == "pass" and final.oracle_audit == "ran"
    assert {m.property for m in final.mutation} == {"prop_refund_bounded", "prop_hollow"}
    real = importlib.util.find_spec
    monkeypatch.setattr(
        lane_module.importlib.util,
        "find_spec",
        lambda name, *a: None if name == lane_module.ORACLE_MODULE else real(name, *a),
    )
    without = P.lane(repo, mutants=5)
    assert without.status == "pass"
    assert without.oracle_audit == "not available" and without.mutation == ()
    assert final.properties == without.properties
    assert final.failures == without.failures


@pytest.mark.slow
def test_a_red_lane_the_caller_does_not_want_audited_is_not(repo: GitRepo) -> None:
    # The gate's verdict is red once the lane is: the audit only informs, so it does not
    # run, and the report says so rather than holding the verdict.
    from patchlane.lanes.property.lane import PropertyRequest, run_property_lane
    from patchlane.project.classify import load_map_file

    P.make(repo, P.SEED_PROP + "\n\ndef prop_red(seed, n=1):\n    assert False\n")

    def run(audit_red: bool) -> PropertyReport:
        return run_property_lane(
            repo.path,
            load_map_file(repo.path / "review-map.yml"),
            PropertyRequest(seed=P.SEED, cases=P.CASES, mutants=5, audit_red=audit_red),
            base="main",
            head="HEAD",
        )

    final = run(audit_red=False)
    assert final.status == "fail"
    assert final.oracle_audit == "stopped"
    assert final.mutation == () and final.oracle_findings == ()
    assert not [c for c in final.children if c.mode == "audit"]
    audited = run(audit_red=True)
    assert audited.oracle_audit == "ran" and audited.mutation != ()
    assert final.properties == audited.properties
