"""Audit rules 1-5, in play or not, and the lane's status, on real git repositories."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from patchlane.errors import ReportError
from patchlane.formats.fixture_report import FixtureReport
from patchlane.formats.property_report import PropertyReport
from patchlane.lanes.fixture import lane as fixture
from patchlane.lanes.freeze import load_base_registry, read_failure_log, records_in_play
from patchlane.project.config import parse_review_map
from patchlane.schemas import load_schema
from tests.gitrepo import GitRepo, move
from tests.lanes.freeze import project as P
from tests.sample import lock_text

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" failures="1">
<testcase classname="tests.test_billing" name="test_invoice_timestamp_order">
<failure message="assert 1790000000.1 &lt;= 1790000000.0"/></testcase>
</testsuite></testsuites>
"""


def in_play(repo: GitRepo, record: str, **kwargs: Any) -> dict[str, Any]:
    """Commit ``record`` on main, patch its test file, audit; return the record's JSON."""
    P.make(repo, P.registry(record))
    P.patch(repo, P.touch_test())
    return P.only(P.run(repo, **kwargs))


def validate(report: dict[str, Any]) -> None:
    jsonschema.validate(report, load_schema("freeze-report"))


# --- a passing record ------------------------------------------------------------------------


def test_the_seeds_record_in_play_passes_and_is_skippable(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record()))
    P.patch(repo, P.touch_test())
    report = P.run(repo)
    data = report.to_json()
    validate(data)
    assert (report.status, report.ok) == ("pass", True)
    assert report.reason == "1 freeze record(s) audited: 1 in play and passing, 0 not in play"
    assert data["skippable"] == [P.NODE]
    record = data["records"][0]
    assert (record["in_play"], record["ok"], record["failed_rules"]) == (True, True, [])
    assert record["expires"] == "2026-10-08" and record["owner"] == "qa-rotation"
    assert list(record["details"]) == ["1", "2", "3", "4", "5", "6"]
    assert record["details"]["5"] == f"{P.TEST_FILE} is changed by the patch"
    assert (data["registry"], data["registry_source"], data["today"]) == (
        P.REGISTRY,
        "base",
        "2026-09-24",
    )


# --- rule 1: expiry --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expires", "fails", "detail"),
    [
        (None, True, "no expires"),
        ("", True, "no expires"),
        ('"2026-09-23"', True, "expired on 2026-09-23 (review date 2026-09-24)"),
        ("2026-10-09", True, "later than 2026-10-08 (review date 2026-09-24 + max_age_days 14)"),
        ('"2026-10-08"', False, "expires 2026-10-08, within 14 days of 2026-09-24"),
        ("2026-09-24", False, "expires 2026-09-24, within 14 days"),
    ],
    ids=["missing", "null", "past", "too-far", "last-allowed-day", "today"],
)
def test_rule_1_expiry(repo: GitRepo, expires: str | None, fails: bool, detail: str) -> None:
    record = in_play(repo, P.record(expires=expires))
    assert record["failed_rules"] == ([1] if fails else [])
    assert detail in record["details"]["1"]


def test_rule_1_a_far_review_date_does_not_overflow(repo: GitRepo) -> None:
    record = in_play(repo, P.record(), today=date.max - timedelta(days=3))
    assert record["failed_rules"] == [1]
    assert "expired on 2026-10-08" in record["details"]["1"]


# --- rule 2: required properties listed ------------------------------------------------------


def test_rule_2_empty_required_properties(repo: GitRepo) -> None:
    record = in_play(repo, P.record(props=()))
    assert record["failed_rules"] == [2]
    assert "required_properties is empty" in record["details"]["2"]
    assert record["details"]["3"] == "no required property to check (see rule 2)"


# --- rule 3: required properties hold --------------------------------------------------------


@pytest.mark.parametrize("outcome", ["fail", "error", "timeout"])
def test_rule_3_a_required_property_that_failed(repo: GitRepo, outcome: str) -> None:
    record = in_play(repo, P.record(), props=P.property_report(outcome, status="fail"))
    assert record["failed_rules"] == [3]
    assert record["details"]["3"] == f"{P.PROP} failed in {P.MODULE} ({outcome})"


def failure(prop: str) -> dict[str, Any]:
    """One entry of a property report's ``failures``."""
    return {
        "module": P.MODULE,
        "property": prop,
        "source": "head",
        "seed": 1,
        "case_index": None,
        "arguments": None,
        "message": "boom",
    }


def test_rule_3_a_property_listed_in_failures(repo: GitRepo) -> None:
    props = P.property_report()
    props["failures"] = [failure(P.PROP)]
    assert in_play(repo, P.record(), props=props)["failed_rules"] == [3]


def test_rule_3_a_failed_module_fails_its_properties(repo: GitRepo) -> None:
    props = P.property_report()
    props["failures"] = [failure("(module)")]
    assert in_play(repo, P.record(), props=props)["failed_rules"] == [3]


def test_rule_3_an_unknown_property(repo: GitRepo) -> None:
    record = in_play(repo, P.record(props=(P.PROP, "prop_never_written")))
    assert record["failed_rules"] == [3]
    assert record["details"]["3"] == "prop_never_written is unknown to the property report"


def test_rule_3_a_not_applicable_property_report_knows_no_property(repo: GitRepo) -> None:
    props = {
        "lane": "property",
        "status": "not_applicable",
        "reason": "no property path",
        "failures": [],
        "oracle_findings": [],
    }
    record = in_play(repo, P.record(), props=props)
    assert record["failed_rules"] == [3]
    assert "(the property lane is not_applicable: no property path)" in record["details"]["3"]


def test_rule_3_qualified_names_match_their_module_only(repo: GitRepo) -> None:
    record = in_play(repo, P.record(props=(f"{P.MODULE}.{P.PROP}", f"other.{P.PROP}")))
    assert record["failed_rules"] == [3]
    assert record["details"]["3"] == f"other.{P.PROP} is unknown to the property report"


@pytest.mark.parametrize(
    "runs",
    [["junk"], [{"module": 3, "property": P.PROP, "source": "head", "style": "seed", "outcome": "pass"}]],
    ids=["not-an-object", "module-not-a-string"],
)  # fmt: skip
def test_rule_3_garbage_in_the_report_is_refused_before_the_audit(runs: list[Any]) -> None:
    # The audit reads a report its strict reader has checked: garbage never reaches a rule.
    props = dict(P.property_report(), properties=runs)
    with pytest.raises(ReportError, match=r"property-report\.json: 'properties\[0\]"):
        PropertyReport.from_json(json.loads(json.dumps(props)), "property-report.json")


# --- rule 4: the fixture lock ----------------------------------------------------------------


def test_rule_4_a_failed_lock(repo: GitRepo) -> None:
    record = in_play(repo, P.record(), fixture=P.fixture_report(ok=False))
    assert record["failed_rules"] == [4]
    assert record["details"]["4"] == f"{P.LOCK} failed in the fixture report"


def test_rule_4_an_unknown_lock(repo: GitRepo) -> None:
    record = in_play(repo, P.record(lock="tests/fixtures/other/LOCK.json"))
    assert record["failed_rules"] == [4]
    assert "is unknown to the fixture report" in record["details"]["4"]


@pytest.mark.parametrize(
    "report",
    [
        {"lane": "fixture", "status": "fail", "reason": "x", "roots": [], "lock_errors": [{"lock": P.LOCK, "problem": "bad"}]},
        {"lane": "fixture", "status": "fail", "reason": "x", "roots": [{"lock": P.LOCK, "paths": [], "ok": False}]},
    ],
    ids=["lock-error", "root-not-ok"],
)  # fmt: skip
def test_rule_4_a_lock_the_report_does_not_clear(repo: GitRepo, report: dict[str, Any]) -> None:
    assert in_play(repo, P.record(), fixture=report)["failed_rules"] == [4]


@pytest.mark.parametrize(
    "root",
    [{"lock": P.LOCK, "paths": []}, {"lock": P.LOCK, "paths": [], "ok": "yes"}],
    ids=["no-ok-field", "ok-not-a-boolean"],
)
def test_rule_4_a_root_without_a_boolean_ok_is_refused_before_the_audit(
    root: dict[str, Any],
) -> None:
    report = {"lane": "fixture", "status": "pass", "reason": "x", "roots": [root]}
    with pytest.raises(ReportError, match=r"fixture-report.json:.*'roots\[0\]\.ok' must be"):
        FixtureReport.from_json(report, "fixture-report.json")


def test_rule_4_no_lock_named_holds(repo: GitRepo) -> None:
    record = in_play(repo, P.record(lock=None), fixture=P.fixture_report(ok=False))
    assert record["failed_rules"] == []
    assert record["details"]["4"] == "names no fixture lock"


def test_rule_4_read_from_a_real_fixture_report(repo: GitRepo) -> None:
    """The fixture lane's own report, per-root ``ok`` included, decides rule 4."""
    files = {"tests/fixtures/billing/invoice_min.json": '{"charge_cents": 1200}\n'}
    P.make(repo, P.registry(P.record()))
    repo.write(P.LOCK, lock_text(files))
    repo.commit("real lock")
    P.patch(repo, {**P.touch_test(), "tests/fixtures/billing/invoice_min.json": "{}\n"})
    review_map = parse_review_map(P.MAP, "review-map.yml")
    assert review_map.fixture is not None
    red = fixture.check_commit(repo.path, repo.head(), review_map.fixture).to_json()
    assert red["roots"][0]["ok"] is False
    assert P.only(P.run(repo, fixture=red))["failed_rules"] == [4]
    green = fixture.check_commit(repo.path, "main", review_map.fixture).to_json()
    assert green["roots"][0]["ok"] is True
    assert P.only(P.run(repo, fixture=green))["failed_rules"] == []


def test_rules_3_and_4_without_reports(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record()))
    P.patch(repo, P.touch_test())
    report = P.run(repo, props={}, fixture={})
    assert P.only(report)["failed_rules"] == [3, 4]


# --- rule 5: in play -------------------------------------------------------------------------


def test_rule_5_a_changed_test_file_brings_the_record_into_play(repo: GitRepo) -> None:
    assert in_play(repo, P.record())["in_play"] is True


def test_rule_5_a_renamed_test_file_counts_on_both_sides(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record()))
    repo.branch("patch")
    move(repo, P.TEST_FILE, "tests/test_invoices.py")
    repo.commit("rename")
    assert P.only(P.run(repo))["in_play"] is True


@pytest.mark.parametrize("form", ["junit", "text"])
def test_rule_5_a_failure_log_brings_the_record_into_play(
    repo: GitRepo, tmp_path: Path, form: str
) -> None:
    log = tmp_path / "failures"
    log.write_text(JUNIT if form == "junit" else f"FAILED {P.NODE} - assert 1 <= 0\n")
    P.make(repo, P.registry(P.record()))
    P.patch(repo, {"src/billing/__init__.py": "def net(c, r):\n    return c - r\n"})
    report = P.run(repo, failure_log=read_failure_log(log))
    record = P.only(report)
    assert (record["in_play"], record["ok"]) == (True, True)
    assert record["details"]["5"] == "the node id is in the failure log"
    assert report.skippable == (P.NODE,)


@pytest.mark.parametrize(
    "logged",
    [
        f"{P.NODE}[1]",  # a parametrised sibling
        P.NODE[:-5],  # a prefix
        f"{P.NODE}::inner",
        f"tests/test_other.py::{P.NODE.split('::')[1]}",
    ],
)
def test_rule_5_failure_log_ids_match_exactly(repo: GitRepo, logged: str) -> None:
    P.make(repo, P.registry(P.record()))
    P.patch(repo, {"src/billing/__init__.py": "X = 1\n"})
    assert P.only(P.run(repo, failure_log=frozenset({logged})))["in_play"] is False


def test_a_parametrised_record_is_in_play_only_when_named_exactly(repo: GitRepo) -> None:
    node = f"{P.TEST_FILE}::test_refund[100-200]"
    P.make(repo, P.registry(P.record(nodeid=node)))
    P.patch(repo, {"src/billing/__init__.py": "X = 1\n"})
    assert (
        P.only(P.run(repo, failure_log=frozenset({f"{P.TEST_FILE}::test_refund"})))["in_play"]
        is False
    )
    assert P.only(P.run(repo, failure_log=frozenset({node})))["in_play"] is True


def test_a_stale_expired_record_not_in_play_keeps_the_lane_green(repo: GitRepo) -> None:
    stale = P.record(expires='"2025-01-01"', props=(), lock="tests/fixtures/gone/LOCK.json")
    P.make(repo, P.registry(stale))
    P.patch(repo, {"src/billing/__init__.py": "def net(c, r):\n    return c - r\n"})
    report = P.run(repo)
    record = P.only(report)
    assert (record["in_play"], record["ok"]) == (False, False)
    assert record["failed_rules"] == [1, 2, 4, 5]
    assert record["details"]["5"].startswith("not in play: tests/test_billing.py is not changed")
    assert (report.status, report.ok, report.skippable) == ("pass", True, ())
    assert report.reason == "1 freeze record(s) audited: 0 in play and passing, 1 not in play"


def test_an_expired_record_in_play_turns_the_lane_red(repo: GitRepo) -> None:
    P.make(
        repo,
        P.registry(
            P.record(expires='"2026-09-01"'), P.record("ok-one", nodeid=f"{P.TEST_FILE}::test_b")
        ),
    )
    P.patch(repo, P.touch_test())
    report = P.run(repo)
    assert (report.status, report.ok) == ("fail", False)
    assert report.reason == "1 in-play freeze record(s) fail the audit: billing-clock-skew (rule 1)"
    assert report.skippable == (f"{P.TEST_FILE}::test_b",)  # the passing one still may skip
    validate(report.to_json())


def test_records_in_play_for_the_gate(repo: GitRepo) -> None:
    quota = P.record("quota", nodeid="tests/test_quota.py::test_limit")
    P.make(repo, P.registry(P.record(), quota))
    registry = load_base_registry(repo.path, parse_review_map(P.MAP, "m"), "main", "HEAD")
    assert records_in_play(registry, frozenset({P.TEST_FILE}), frozenset()) == (
        "billing-clock-skew",
    )
    assert records_in_play(
        registry, frozenset(), frozenset({"tests/test_quota.py::test_limit"})
    ) == ("quota",)
    assert records_in_play(registry, frozenset(), frozenset()) == ()


# --- the base decides ------------------------------------------------------------------------


def test_a_record_added_by_the_patch_is_inert_and_listed(repo: GitRepo) -> None:
    P.make(repo, P.registry())
    P.patch(repo, {**P.touch_test(), P.REGISTRY: P.registry(P.record())})
    report = P.run(repo)
    data = report.to_json()
    validate(data)
    assert data["records"] == [] and data["skippable"] == []
    assert data["added_by_patch"] == ["billing-clock-skew"]
    assert report.status == "pass"
    assert "inert, the base decides" in report.reason


def test_a_record_changed_by_the_patch_is_judged_on_the_base_version(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record(expires='"2026-09-20"')))
    P.patch(repo, {**P.touch_test(), P.REGISTRY: P.registry(P.record(expires='"2026-10-08"'))})
    report = P.run(repo)
    assert report.to_json()["changed_by_patch"] == ["billing-clock-skew"]
    record = P.only(report)
    assert (record["expires"], record["failed_rules"]) == ("2026-09-20", [1])
    assert report.status == "fail" and report.skippable == ()


def test_no_registry_at_base_but_the_patch_adds_one(repo: GitRepo) -> None:
    P.make(repo, None)
    P.patch(repo, {**P.touch_test(), P.REGISTRY: P.registry(P.record())})
    report = P.run(repo)
    data = report.to_json()
    validate(data)
    assert (data["status"], data["registry_source"]) == ("pass", "none")
    assert data["added_by_patch"] == ["billing-clock-skew"] and data["records"] == []
    assert "no freeze registry at base; the patch adds billing-clock-skew" in data["reason"]
    assert data["notes"] == [f"no freeze registry at base: {P.REGISTRY} does not exist there"]


def test_no_registry_anywhere_is_not_applicable(repo: GitRepo) -> None:
    P.make(repo, None)
    P.patch(repo, P.touch_test())
    report = P.run(repo)
    assert (report.status, report.ok) == ("not_applicable", True)
    assert report.reason == f"no freeze registry at base ({P.REGISTRY}): nothing is frozen"
    validate(report.to_json())


def test_no_freeze_lane_is_not_applicable(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record()))
    P.patch(repo, P.touch_test())
    no_lane = parse_review_map("lanes:\n  replay:\n    tests: ['tests/']\n", "m")
    report = P.run(repo, review_map=no_lane)
    data = report.to_json()
    validate(data)
    assert (data["status"], data["reason"], data["registry"]) == (
        "not_applicable",
        "the map has no freeze lane",
        None,
    )


def test_a_malformed_registry_in_the_patch_turns_the_lane_red(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record()))
    P.patch(repo, {P.REGISTRY: P.registry(P.record(expires="soon"))})
    report = P.run(repo)
    assert report.status == "fail"
    assert report.reason.startswith("the patch's freeze registry cannot be read: ")
    assert report.to_json()["head_registry_problem"].startswith(f"{P.REGISTRY}:6: ")
    validate(report.to_json())


def test_an_empty_registry_passes(repo: GitRepo) -> None:
    P.make(repo, P.registry())
    P.patch(repo, P.touch_test())
    report = P.run(repo)
    assert (report.status, report.records) == ("pass", ())


# --- determinism -----------------------------------------------------------------------------


def test_two_runs_give_identical_reports_but_for_timings(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record(), P.record("b", nodeid="tests/test_quota.py::test_limit")))
    P.patch(repo, P.touch_test())
    one, two = P.run(repo).to_json(), P.run(repo).to_json()
    assert list(one) == [
        "lane", "status", "reason", "today", "registry", "registry_source", "max_age_days",
        "max_extensions", "base", "head", "merge_base", "records", "added_by_patch",
        "changed_by_patch", "removed_by_patch", "head_registry_problem", "skippable",
        "history_versions", "notes", "timings",
    ]  # fmt: skip
    assert list(one["records"][0]) == [
        "id", "nodeid", "owner", "expires", "in_play", "ok", "failed_rules", "details",
    ]  # fmt: skip
    assert set(one["timings"]) == {"seconds"}
    del one["timings"], two["timings"]
    assert json.dumps(one) == json.dumps(two)
    assert [r["id"] for r in one["records"]] == ["billing-clock-skew", "b"]  # registry order
