"""Existing Hypothesis tests named in the map (``lanes.property.tests``) run as properties:
in real children, from the base's version and the head's, with their shrunk examples; and
a failing assert shows its operands' values."""

from __future__ import annotations

import json
import textwrap

import jsonschema
import pytest

from patchlane.errors import MapError
from patchlane.schemas import load_schema
from tests.gitrepo import GitRepo
from tests.lanes.property import project as P

NODE = "tests/test_shop_props.py::test_refund_bounded"

TESTS = """\
from hypothesis import given, strategies as st
from shop import refund


@given(charge=st.integers(0, 1000), amount=st.integers(0, 1000))
def test_refund_bounded(charge, amount):
    net = refund(charge, amount)
    assert 0 <= net <= charge


def test_plain():
    assert refund(5, 1) == 4


class TestRefund:
    @given(st.integers(0, 1000))
    def test_full_refund(self, charge):
        assert refund(charge, charge) == 0
"""

BROKEN_SHOP = """\
def refund(charge, amount):
    return charge - amount


def ratio(a, b):
    return a / b
"""


def map_with_tests(tests: list[str], modules: str = "") -> str:
    return textwrap.dedent(
        f"""\
        lanes:
          property:
            paths: ["src/shop/"]
            {modules}tests: {json.dumps(tests)}
            seed: {P.SEED}
            cases: {P.CASES}
            timeout_s: 30
        """
    )


def make(repo: GitRepo, tests: list[str], files: dict[str, str] | None = None) -> str:
    repo.write("review-map.yml", map_with_tests(tests))
    repo.write("src/shop/__init__.py", P.dedent(P.SHOP))
    repo.write("tests/test_shop_props.py", P.dedent(TESTS))
    for rel, text in (files or {}).items():
        repo.write(rel, P.dedent(text))
    commit = repo.commit("base")
    repo.branch("patch")
    return commit


@pytest.mark.slow
def test_a_given_test_named_in_the_map_catches_a_regression_with_its_shrunk_example(
    repo: GitRepo,
) -> None:
    make(repo, [NODE])
    assert P.lane(repo).status == "pass"
    P.patch(repo, {"src/shop/__init__.py": BROKEN_SHOP})
    report = P.lane(repo)
    assert report.status == "fail", report.to_json()
    failure = P.one_failure(report, NODE)
    assert failure["module"] == "tests/test_shop_props.py"
    assert failure["seed"] == P.SEED and failure["kind"] == "assertion"
    # Hypothesis shrinks to the smallest refund larger than the charge.
    assert failure["arguments"] == {"charge": 0, "amount": 1}
    assert "tests/test_shop_props.py:8" in failure["message"]
    assert P.outcomes(report) == {(NODE, "base"): "fail", (NODE, "head"): "fail"}
    assert {p.style for p in report.properties} == {"hypothesis"}
    jsonschema.validate(report.to_json(), load_schema("property-report"))


@pytest.mark.slow
def test_the_base_version_runs_when_the_head_edits_the_test_to_pass(repo: GitRepo) -> None:
    make(repo, [NODE])
    weakened = TESTS.replace("assert 0 <= net <= charge", "assert net <= charge")
    P.patch(repo, {"src/shop/__init__.py": BROKEN_SHOP, "tests/test_shop_props.py": weakened})
    report = P.lane(repo)
    assert report.status == "fail"
    assert P.outcomes(report) == {(NODE, "base"): "fail", (NODE, "head"): "pass"}
    assert P.one_failure(report, NODE, "base")["arguments"] == {"charge": 0, "amount": 1}


@pytest.mark.slow
def test_a_directory_runs_its_given_tests_and_lists_the_others_as_skipped(repo: GitRepo) -> None:
    make(repo, ["tests/"])
    P.patch(repo, {"src/shop/__init__.py": BROKEN_SHOP})
    report = P.lane(repo)
    method = "tests/test_shop_props.py::TestRefund::test_full_refund"
    assert P.outcomes(report) == {
        (NODE, "base"): "fail",
        (NODE, "head"): "fail",
        (method, "base"): "pass",
        (method, "head"): "pass",
    }
    plain = "tests/test_shop_props.py::test_plain"
    assert report.skipped_tests == (
        (plain, "not a @given test: only Hypothesis tests run as properties"),
    )
    assert report.to_json()["skipped_tests"] == [
        {"test": plain, "reason": report.skipped_tests[0][1]}
    ]
    jsonschema.validate(report.to_json(), load_schema("property-report"))


@pytest.mark.slow
def test_a_method_of_a_test_class_reports_its_arguments_without_self(repo: GitRepo) -> None:
    method = "tests/test_shop_props.py::TestRefund::test_full_refund"
    make(repo, [method])
    P.patch(repo, {"src/shop/__init__.py": "def refund(charge, amount):\n    return 1\n"})
    failure = P.one_failure(P.lane(repo), method)
    assert failure["arguments"] == {"charge": 0}
    assert "assert 1 == 0 where 1 = refund(charge, charge)" in failure["message"]


@pytest.mark.slow
def test_a_given_test_that_takes_a_fixture_is_an_error(repo: GitRepo) -> None:
    node = "tests/test_fixture.py::test_uses_tmp_path"
    fixture_test = """\
        from hypothesis import given, strategies as st


        @given(st.integers())
        def test_uses_tmp_path(tmp_path, x):
            assert x == x
        """
    make(repo, [node], {"tests/test_fixture.py": fixture_test})
    report = P.lane(repo)
    assert report.status == "fail"
    failure = P.one_failure(report, node)
    assert failure["kind"] == "error"
    assert failure["message"] == "uses pytest fixtures (tmp_path): not supported as a property"
    assert P.outcomes(report)[(node, "head")] == "error"


def test_a_named_test_without_given_is_listed_as_skipped(repo: GitRepo) -> None:
    plain = "tests/test_shop_props.py::test_plain"
    make(repo, [plain, NODE])
    report = P.lane(repo)
    assert report.status == "pass"
    assert {p.property for p in report.properties} == {NODE}
    assert [t for t, _ in report.skipped_tests] == [plain]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("tests/nope.py::test_x", "no such test file or directory 'tests/nope.py' at base or head"),
        ("tests/test_shop_props.py::test_gone", "no test 'test_gone' in tests/test_shop_props.py"),
        ("nowhere/", "no such test file or directory 'nowhere/' at base or head"),
    ],
)
def test_a_test_at_neither_base_nor_head_is_a_map_error(
    repo: GitRepo, entry: str, message: str
) -> None:
    make(repo, [entry])
    with pytest.raises(MapError) as caught:
        P.lane(repo)
    assert message in str(caught.value)
    assert "review-map.yml:4: lanes.property.tests: " in str(caught.value)


@pytest.mark.slow
def test_a_test_the_patch_adds_runs_from_the_head(repo: GitRepo) -> None:
    node = "tests/test_new.py::test_new"
    make(repo, [NODE, node])  # the base's map names a test only the head has
    new = """\
        from hypothesis import given, strategies as st
        from shop import refund


        @given(st.integers(0, 10))
        def test_new(x):
            assert refund(x, 0) == x
        """
    with pytest.raises(MapError):
        P.lane(repo)
    P.patch(repo, {"tests/test_new.py": new})
    report = P.lane(repo)
    assert P.outcomes(report)[(node, "head")] == "pass"
    assert (node, "base") not in P.outcomes(report)


@pytest.mark.slow
def test_a_failing_assert_in_a_property_shows_its_operands(repo: GitRepo) -> None:
    props = """\
        from shop import refund


        def total(items):
            return sum(refund(c, a) for c, a in items)


        def prop_total(seed, n=200):
            items = [(2, 1), (3, 1)]
            assert total(items) == 4
        """
    P.make(repo, props)
    P.patch(repo, {"src/shop/__init__.py": BROKEN_SHOP.replace("charge - amount", "charge")})
    failure = P.one_failure(P.lane(repo), "prop_total")
    assert failure["message"].startswith("AssertionError: assert 5 == 4 where 5 = total(items)")
    assert "checks/props.py:10: assert total(items) == 4" in failure["message"]


@pytest.mark.slow
def test_an_assert_with_a_message_keeps_it_and_adds_the_operands(repo: GitRepo) -> None:
    P.make(repo)  # the seed style: ``assert 0 <= net <= charge, (seed, i, charge, amount)``
    P.patch(repo, {"src/shop/__init__.py": BROKEN_SHOP})
    failure = P.one_failure(P.lane(repo), "prop_refund_bounded")
    charge, amount = failure["arguments"]
    assert failure["case_index"] is not None  # the tuple is still the assert's argument
    assert f"; assert 0 <= {charge - amount}" in failure["message"]


@pytest.mark.slow
def test_property_modules_and_named_tests_run_together_modules_first(repo: GitRepo) -> None:
    P.make(repo, files={"tests/test_shop_props.py": TESTS})
    lane_map = map_with_tests([NODE], modules=f'modules: ["{P.MODULE}"]\n' + " " * 12)
    repo.write("review-map.yml", lane_map)
    repo.commit("map with tests")
    report = P.lane(repo, base="HEAD")
    assert report.status == "pass", report.to_json()
    assert [(p.property, p.source) for p in report.properties] == [
        ("prop_refund_bounded", "base"),
        ("prop_refund_bounded", "head"),
        (NODE, "base"),
        (NODE, "head"),
    ]


@pytest.mark.parametrize(
    ("tests", "message"),
    [
        ('["tests/t.py::test_a[1]"]', "expected FILE.py::test or FILE.py::Class::test"),
        ('["tests/t.txt::test_a"]', "a node id names a .py file"),
        ('["../t.py"]', "'..' in '../t.py'"),
        ('["tests/", "tests/"]', "'tests/' is listed twice"),
        ('"tests/"', "expected a list of pytest node ids or paths"),
    ],
)
def test_bad_tests_entries_are_map_errors_on_their_line(tests: str, message: str) -> None:
    from patchlane.project.config import parse_review_map

    text = 'lanes:\n  property:\n    paths: ["src/"]\n    tests: ' + tests + "\n"
    with pytest.raises(MapError) as caught:
        parse_review_map(text, "review-map.yml")
    assert "review-map.yml:4: lanes.property.tests" in str(caught.value)
    assert message in str(caught.value)


def test_a_lane_with_only_tests_validates_against_the_schema() -> None:
    from patchlane.inputs.yamlio import load_yaml
    from patchlane.project.config import parse_review_map

    text = map_with_tests([NODE, "tests/hypothesis/"])
    lane = parse_review_map(text, "review-map.yml").property
    assert lane is not None and lane.modules == () and lane.tests == (NODE, "tests/hypothesis/")
    jsonschema.validate(load_yaml(text, "m", MapError), load_schema("review-map"))
    with pytest.raises(jsonschema.ValidationError):
        bad = text.replace("tests:", 'module: "a"\n    modules: ["b"]\n    tests:')
        jsonschema.validate(load_yaml(bad, "m", MapError), load_schema("review-map"))


LEDGER = """\
from hypothesis import given, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule
from shop import refund


class Ledger(RuleBasedStateMachine):
    @rule(amount=st.integers(0, 10))
    def refund_some(self, amount):
        assert refund(amount, amount) == 0


TestLedger = Ledger.TestCase


class TestLedgerAgain(Ledger.TestCase):
    pass


@given(st.integers(0, 10))
def test_zero(x):
    assert refund(x, x) == 0
"""


def test_stateful_tests_are_listed_as_skipped_and_named_on_the_terminal(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # A state machine's TestCase is collected by pytest, never run by the lane: it is
    # listed in the report, on stderr and in the note, never dropped without a word.
    from patchlane.gate.reports import LaneReports
    from patchlane.gate.review import build_note
    from patchlane.infra.ui import Output
    from patchlane.lanes.property.testplan import STATEFUL

    make(repo, ["tests/test_ledger.py"], {"tests/test_ledger.py": LEDGER})
    report = P.lane(repo, out=Output(verbose=True))
    machines = ["tests/test_ledger.py::TestLedger", "tests/test_ledger.py::TestLedgerAgain"]
    assert report.status == "pass", report.reason
    assert report.skipped_tests == tuple((m, STATEFUL) for m in machines)
    jsonschema.validate(report.to_json(), load_schema("property-report"))
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "not run as properties" in x)
    assert line == (
        "patchlane: property: 2 test(s) that lanes.property.tests names are not run as "
        "properties (2 stateful; the report's skipped_tests says why): "
        f"{machines[0]} (stateful), {machines[1]} (stateful)"
    )
    note = build_note(None, LaneReports(report, None, None, None), None)
    assert any(machines[0] in n.plain and machines[1] in n.plain for n in note.notes)
