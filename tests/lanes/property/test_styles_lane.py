"""The three property styles, run by the real lane in real children, with their
counterexamples; re-running one case; byte-identical reports."""

from __future__ import annotations

import jsonschema
import pytest

from patchlane.props import case_arguments, case_rng, check
from patchlane.schemas import load_schema
from tests.gitrepo import GitRepo
from tests.lanes.property import project as P

BROKEN_SHOP = """\
def refund(charge, amount):
    return charge - amount


def ratio(a, b):
    return a / b
"""

CHECK_PROPS = """\
from patchlane.props import check
from shop import refund


@check(lambda rng: {"charge": rng.randint(0, 100), "amount": rng.randint(0, 120)})
def prop_refund_bounded(charge, amount):
    net = refund(charge, amount)
    assert 0 <= net <= charge


@check(lambda rng: {"x": rng.randint(0, 100)})
def prop_small(x):
    assert x <= 90, "too big"
"""

HYPOTHESIS_PROPS = """\
from hypothesis import given, strategies as st
from shop import refund


@given(charge=st.integers(0, 1000), amount=st.integers(0, 1000))
def prop_refund_bounded(charge, amount):
    assert 0 <= refund(charge, amount) <= charge


@given(st.integers(0, 1000))
def prop_under_500(x):
    assert x < 500
"""


def _first_big(seed: int) -> int:
    # The check generator of prop_small, drawn here with the public API.
    return next(i for i in range(P.CASES) if case_rng(seed, "prop_small", i).randint(0, 100) > 90)


def test_seed_style_passes_on_sound_code(repo: GitRepo) -> None:
    P.make(repo)
    report = P.lane(repo)
    assert report.status == "pass", report.to_json()
    assert P.outcomes(report) == {
        ("prop_refund_bounded", "base"): "pass",
        ("prop_refund_bounded", "head"): "pass",
    }
    assert {p.style for p in report.properties} == {"seed"}


def test_seed_style_failure_takes_case_and_arguments_from_the_assert_tuple(repo: GitRepo) -> None:
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": BROKEN_SHOP})
    report = P.lane(repo)
    assert report.status == "fail"
    failure = P.one_failure(report, "prop_refund_bounded")
    # The seed's own loop, replayed here: the first case whose amount exceeds the charge.
    import random

    rng = random.Random(P.SEED)  # noqa: S311 - the seed's own generator
    draws = [(rng.randint(0, 100), rng.randint(0, 120)) for _ in range(P.CASES)]
    first = next(i for i, (c, a) in enumerate(draws) if a > c)
    assert failure["case_index"] == first
    assert failure["arguments"] == list(draws[first])
    assert failure["seed"] == P.SEED
    assert failure["kind"] == "assertion"
    assert "checks/props.py:11" in failure["message"]


def test_seed_style_without_the_tuple_has_no_case_index(repo: GitRepo) -> None:
    P.make(repo, "def prop_plain(seed, n=200):\n    assert seed < 0, 'seed is not negative'\n")
    failure = P.one_failure(P.lane(repo), "prop_plain")
    assert failure["case_index"] is None and failure["arguments"] is None
    assert failure["message"].startswith("AssertionError: seed is not negative")


def test_a_non_assertion_exception_is_an_error_failure(repo: GitRepo) -> None:
    P.make(repo, "from shop import ratio\n\ndef prop_ratio(seed, n=200):\n    ratio(seed, 0)\n")
    report = P.lane(repo)
    assert report.status == "fail"
    failure = P.one_failure(report, "prop_ratio")
    assert failure["kind"] == "error"
    assert failure["message"].startswith("ZeroDivisionError: division by zero")
    assert "src/shop/__init__.py:8" in failure["message"]  # the innermost line, repo-relative
    assert P.outcomes(report)[("prop_ratio", "head")] == "error"


@pytest.mark.slow
def test_check_style_case_is_reproducible_on_its_own(repo: GitRepo) -> None:
    P.make(repo, CHECK_PROPS)
    report = P.lane(repo)
    assert {p.style for p in report.properties} == {"check"}
    failure = P.one_failure(report, "prop_small")
    index = _first_big(P.SEED)
    assert failure["case_index"] == index

    @check(lambda rng: {"x": rng.randint(0, 100)})
    def prop_small(x: int) -> None: ...

    assert failure["arguments"] == case_arguments(prop_small, P.SEED, index)
    assert failure["message"].startswith("AssertionError: too big")
    # Exactly that case again: red. Case 0 alone (it holds when it is not the first big
    # one): green, without running any other case.
    again = P.lane(repo, only="prop_small", case=index)
    assert P.one_failure(again, "prop_small")["case_index"] == index
    assert P.one_failure(again, "prop_small")["arguments"] == failure["arguments"]
    if index != 0:
        assert P.lane(repo, only="prop_small", case=0).status == "pass"


@pytest.mark.slow
def test_seed_style_case_rerun_runs_up_to_that_case(repo: GitRepo) -> None:
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": BROKEN_SHOP})
    failure = P.one_failure(P.lane(repo), "prop_refund_bounded")
    index = failure["case_index"]
    again = P.lane(repo, only="prop_refund_bounded", case=index)
    assert P.one_failure(again, "prop_refund_bounded")["case_index"] == index
    assert P.lane(repo, only="prop_refund_bounded", case=index - 1).status == "pass"


@pytest.mark.slow
def test_hypothesis_style_reports_the_shrunk_example(repo: GitRepo) -> None:
    P.make(repo, HYPOTHESIS_PROPS)
    report = P.lane(repo)
    assert {p.style for p in report.properties} == {"hypothesis"}
    assert P.outcomes(report)[("prop_refund_bounded", "head")] == "pass"
    failure = P.one_failure(report, "prop_under_500")
    assert failure["arguments"] == {"x": 500}
    assert failure["case_index"] is None
    assert failure["kind"] == "assertion"
    # Hypothesis properties re-run with the same seed; --case is accepted and ignored.
    again = P.lane(repo, only="prop_under_500", case=3)
    assert P.one_failure(again, "prop_under_500")["arguments"] == {"x": 500}


@pytest.mark.slow
def test_hypothesis_pinned_settings_beat_a_ci_profile_and_the_authors_settings(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under that profile (or the author's own settings) a property gets no generated example
    # at all; under patchlane's it gets exactly --cases examples, and shrinks to x == 10.
    props = """\
    import os
    from hypothesis import Phase, given, settings, strategies as st

    settings.register_profile("ci", max_examples=1, phases=[Phase.explicit], database=None)
    settings.load_profile("ci")
    seen = {"profile": 0, "own": 0}


    @given(st.integers())
    def prop_1_counts_under_the_profile(x):
        seen["profile"] += 1


    @settings(max_examples=1, phases=[Phase.explicit])
    @given(st.integers())
    def prop_2_counts_under_own_settings(x):
        seen["own"] += 1


    def prop_3_every_case_ran(seed, n=200):
        assert seen == {"profile": n, "own": n}, (seed, 0, seen)


    @given(st.integers(0, 10**6))
    def prop_4_shrinks(x):
        assert x < 10


    def prop_5_no_ci_in_env(seed, n=200):
        assert "CI" not in os.environ and "HYPOTHESIS_PROFILE" not in os.environ
    """
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "ci")
    P.make(repo, props)
    report = P.lane(repo)
    assert report.failures and all(f.property == "prop_4_shrinks" for f in report.failures), (
        report.to_json()
    )
    assert P.one_failure(report, "prop_4_shrinks")["arguments"] == {"x": 10}


@pytest.mark.slow
def test_same_seed_and_cases_give_byte_identical_reports(repo: GitRepo) -> None:
    P.make(
        repo,
        CHECK_PROPS
        + HYPOTHESIS_PROPS.replace("prop_", "prop_h_")
        + P.SEED_PROP.replace("prop_", "prop_s_"),
    )
    P.patch(repo, {"src/shop/__init__.py": BROKEN_SHOP})
    first, second = P.lane(repo), P.lane(repo)
    assert first.status == "fail" and len(first.failures) >= 6
    assert P.without_timings(first) == P.without_timings(second)
    assert P.without_timings(P.lane(repo, seed=8)) != P.without_timings(first)
    for report in (first, P.lane(repo, only="prop_small")):
        jsonschema.validate(report.to_json(), load_schema("property-report"))
