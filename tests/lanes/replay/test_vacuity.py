"""The pieces of the check for tests that cannot fail (``lanes.replay.vacuity``): the AST
variant generator for each assertion form, the repeats, the copied-values scan, and which
outcomes count. The real runs at the base and the head: tests/gate/test_vacuity.py."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from patchlane.errors import GitError
from patchlane.lanes.replay import results as replay_run
from patchlane.lanes.replay.results import FAILED, PASSED, SKIPPED, NodeResult
from patchlane.lanes.replay.vacuity.check import (
    MAX_TESTS,
    HeadRun,
    Sides,
    chosen_tests,
    compare,
    finish,
    to_excuse,
)
from patchlane.lanes.replay.vacuity.copied import COPIED_LIMIT, scan, significant
from patchlane.lanes.replay.vacuity.variants import (
    REPEAT,
    VARIANT,
    Generated,
    changed_value,
    extend,
)

PATH = "tests/test_m.py"


def variants_of(source: str, *tests: str) -> list[tuple[str, str]]:
    """The (node id, what changed) of every variant ``extend`` makes for ``tests``."""
    ext = extend(source, PATH, [f"{PATH}::{t}" for t in tests])
    ast.parse(source + ext.text)  # what is appended is valid Python after the module
    return [(g.nodeid, g.what) for g in ext.generated if g.kind == VARIANT]


@pytest.mark.parametrize(
    ("literal", "changed"),
    [
        ("3", "4"),
        ("-3", "-2"),
        ("True", "False"),
        ("2.5", "6.0"),
        ("'ab'", "'ab\\x00'"),
        ("b'ab'", "b'ab\\x00'"),
        ("(None, 1)", "(None, 2)"),
        ("[[], 'x']", "[[], 'x\\x00']"),
    ],
)
def test_a_literal_changes_to_another_of_its_type(literal: str, changed: str) -> None:
    new = changed_value(ast.parse(literal, mode="eval").body)
    assert new is not None and ast.unparse(new) == changed


@pytest.mark.parametrize("literal", ["None", "x", "f(1)", "()", "{1: 2}", "float('nan')"])
def test_what_cannot_be_changed_for_certain_makes_no_variant(literal: str) -> None:
    assert changed_value(ast.parse(literal, mode="eval").body) is None


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ("assert f(1) == 3", "3 -> 4"),
        ("assert 'abc' == f(1)", "'abc' -> 'abc\\x00'"),
        ("assert f(1) is True", "True -> False"),
        ("assert f(1) == pytest.approx(0.5)", "0.5 -> 2.0"),
        ("assert f(1) == (1, 2)", "(1, 2) -> (2, 2)"),
    ],
)
def test_each_assert_form_gets_a_variant(body: str, what: str) -> None:
    source = f"def test_one():\n    {body}\n"
    # ``test_one_2`` is its repeat.
    assert variants_of(source, "test_one") == [(f"{PATH}::test_one_3", f"line 2: {what}")]


@pytest.mark.parametrize(
    "body",
    [
        "assert f(1) != 3",  # changing it keeps it true
        "assert f(1) == g(2)",  # no literal
        "assert 3 == 3",  # both sides literal
        "assert f(1) == None",  # None has no other value of its type
        "assert 1 < f(1) == 3",  # a chain
        "assert f(1)",
    ],
)
def test_other_assertions_get_none(body: str) -> None:
    assert variants_of(f"def test_one():\n    {body}\n", "test_one") == []


def test_unittest_equal_methods_get_a_variant_in_a_subclass_of_their_own() -> None:
    source = (
        "import unittest\n\n"
        "class TestK(unittest.TestCase):\n"
        "    def test_m(self):\n"
        "        self.assertEqual(f(1), 3)\n"
        "        self.assertListEqual([4, 5], f(2))\n"
        "        self.assertNotEqual(f(3), 7)\n"
    )
    found = variants_of(source, "TestK::test_m")
    assert found == [
        (f"{PATH}::TestK_3::test_m", "line 5: 3 -> 4"),
        (f"{PATH}::TestK_4::test_m", "line 6: [4, 5] -> [5, 5]"),
    ]
    appended = extend(source, PATH, [f"{PATH}::TestK::test_m"]).text
    assert "class TestK_3(TestK):" in appended and "self.assertEqual(f(1), 4)" in appended


def test_a_parametrize_expectation_column_gets_one_row_changed() -> None:
    source = (
        "import pytest\n\n"
        "@pytest.mark.parametrize('a, b, expected', [(1, 2, 3), (2, 2, 4)], ids=['x', 'y'])\n"
        "def test_add(a, b, expected):\n"
        "    assert a + b == expected\n"
    )
    found = variants_of(source, "test_add[x]", "test_add[y]")
    assert found == [(f"{PATH}::test_add_3[v]", "line 3: expected: 3 -> 4")]
    text = extend(source, PATH, [f"{PATH}::test_add[x]"]).text
    assert "[(1, 2, 4)], ids=['v']" in text


def test_a_column_that_is_only_input_is_not_an_expectation() -> None:
    source = (
        "import pytest\n\n"
        "@pytest.mark.parametrize('a, b', [(1, 2), (2, 3)])\n"
        "def test_order(a, b):\n"
        "    assert a < b\n"
        "    assert b == a + 1\n"  # ``b`` is compared with a result, yet a literal sits there
    )
    # ``b`` is compared with an expression, so it is the expectation column.
    assert variants_of(source, "test_order[1-2]") == [
        (f"{PATH}::test_order_3[v]", "line 3: b: 2 -> 3")
    ]
    only_input = source.replace("    assert b == a + 1\n", "    assert g(a, b)\n")
    assert variants_of(only_input, "test_order[1-2]") == []


def test_repeats_come_in_reverse_order_before_the_variants_and_keep_parameter_ids() -> None:
    source = (
        "import pytest\n\n"
        "def test_a():\n    assert f() == 1\n\n"
        "@pytest.mark.parametrize('x', [1, 2])\n"
        "def test_b(x):\n    assert g(x)\n\n"
        "class TestC:\n    def test_c(self):\n        assert h()\n"
    )
    ids = [f"{PATH}::test_a", f"{PATH}::test_b[1]", f"{PATH}::test_b[2]", f"{PATH}::TestC::test_c"]
    ext = extend(source, PATH, ids)
    repeats = [(g.nodeid, g.original) for g in ext.generated if g.kind == REPEAT]
    assert repeats == [
        (f"{PATH}::TestC_2::test_c", f"{PATH}::TestC::test_c"),
        (f"{PATH}::test_b_2[1]", f"{PATH}::test_b[1]"),
        (f"{PATH}::test_b_2[2]", f"{PATH}::test_b[2]"),
        (f"{PATH}::test_a_2", f"{PATH}::test_a"),
    ]
    assert [g.kind for g in ext.generated] == [REPEAT] * 4 + [VARIANT]
    # Written in that order, so pytest runs them in it.
    text = ext.text
    assert text.index("class TestC_2") < text.index("def test_b_2") < text.index("def test_a_2(")


def test_hypothesis_tests_and_unknown_ids_extend_nothing() -> None:
    source = (
        "from hypothesis import given, strategies as st\n\n"
        "@given(st.integers())\n"
        "def test_h(x):\n    assert f(x) == 3\n"
    )
    assert extend(source, PATH, [f"{PATH}::test_h", f"{PATH}::test_gone"]).generated == ()
    assert extend("def (:\n", PATH, [f"{PATH}::test_h"]).generated == ()


def test_fresh_names_never_clash_with_the_modules_own() -> None:
    source = "def test_a():\n    assert f() == 3\n\ndef test_a_2():\n    pass\n"
    ids = [g.nodeid for g in extend(source, PATH, [f"{PATH}::test_a"]).generated]
    assert ids == [f"{PATH}::test_a_3", f"{PATH}::test_a_4"]


TESTS = b"""\
def test_parse():
    assert parse("2024-01-31T10:00") == (2024, 1, 31, 10, 0)
    assert parse("1999-12-01T00:00") == (1999, 12, 1, 0, 0)
    assert size("kilo byte") == 1024
"""


def test_values_the_patch_copies_from_the_tests_are_listed() -> None:
    base = b"def size(unit):\n    return 0\n"
    head = b'def size(unit):\n    """Return 1024 for a kilo byte."""\n    return 1024 if unit == "kilo byte" else 1\n'
    found = scan({"src/m.py": (base, head)}, [TESTS])
    assert found.values == ("'kilo byte'", "1024")
    assert not found.past_threshold


def test_values_the_base_already_had_or_trivial_ones_are_not_copied() -> None:
    base = b"LIMIT = 1024\n"
    # 2 is trivial, 'kilo' too short, 'parse' a name, an f-string's text wording.
    head = b"LIMIT = 1024\nSTEP = 2\nNAME = 'kilo'\nF = 'parse'\nM = f'kilo byte{LIMIT}'\n"
    tests = TESTS + b"NAMES = ['parse', 'kilo']\n"
    assert scan({"src/m.py": (base, head)}, [tests]).values == ()
    assert not significant(-1) and not significant("abcd") and significant(3)
    assert not significant("__eq__") and significant("a b c d") and significant(b"abcde")


def test_a_lookup_table_of_the_tests_inputs_is_past_the_threshold() -> None:
    head = b"""\
_KNOWN = {
    "2024-01-31T10:00": (2024, 1, 31, 10, 0),
    "1999-12-01T00:00": (1999, 12, 1, 0, 0),
}

def parse(text):
    return _KNOWN[text]
"""
    found = scan({"src/m.py": (None, head)}, [TESTS])
    assert found.past_threshold
    assert found.tables == ("src/m.py:1: a literal of 12 values, 12 of them in the base's tests",)


def test_the_threshold_counts_distinct_values() -> None:
    numbers = [1024, 1999, 2024, 31, 12, 10]
    tests = b"".join(b"assert f() == %d\n" % n for n in numbers)
    for count in (COPIED_LIMIT - 1, COPIED_LIMIT):
        head = b"".join(b"X%d = %d\n" % (i, n) for i, n in enumerate(numbers[:count]))
        found = scan({"src/m.py": (b"", head)}, [tests])
        assert len(found.values) == count
        assert found.past_threshold is (count >= COPIED_LIMIT)


def _run(outcomes: dict[str, str]) -> replay_run.TestRun:
    results = {n: NodeResult(o, "" if o == PASSED else f"{o} here") for n, o in outcomes.items()}
    return replay_run.TestRun(results, tuple(outcomes), (), 0, (), False, b"")


def test_only_what_differs_at_the_head_alone_counts() -> None:
    t, v, r = f"{PATH}::test_a", f"{PATH}::test_a_3", f"{PATH}::test_a_2"
    u, w = f"{PATH}::test_b", f"{PATH}::test_b_3"
    generated = [
        Generated(r, REPEAT, t, "again"),
        Generated(v, VARIANT, t, "line 2: 3 -> 4"),
        Generated(w, VARIANT, u, "line 5: 1 -> 2"),
    ]
    # A variant the base passes too (never reached) is no evidence; one it fails counts.
    base = _run({t: PASSED, u: PASSED, r: PASSED, v: FAILED, w: PASSED})
    honest = compare(
        [t, u], generated, base, _run({t: PASSED, u: PASSED, r: PASSED, v: FAILED, w: PASSED})
    )
    assert (honest.cannot_fail, honest.order_dependent) == ((), ())
    assert honest.counts == {
        "tests": 2,
        "variants": 2,
        "variants_failing_at_head": 1,
        "repeats": 1,
        "base_run": 1,
        "variants_failing_at_base": 1,
    }
    gamed = compare(
        [t, u], generated, base, _run({t: PASSED, u: PASSED, r: FAILED, v: PASSED, w: PASSED})
    )
    assert [n.nodeid for n in gamed.cannot_fail] == [t]
    assert "line 2: 3 -> 4" in gamed.cannot_fail[0].why
    assert [n.nodeid for n in gamed.order_dependent] == [t]
    # A repeat that fails at the base as well is the suite's own, not the patch's.
    both = _run({t: PASSED, u: PASSED, r: FAILED, v: FAILED, w: PASSED})
    assert compare([t, u], generated, both, both).order_dependent == ()


def test_the_base_runs_only_when_the_head_shows_something_it_could_excuse() -> None:
    t, v, r = f"{PATH}::test_a", f"{PATH}::test_a_3", f"{PATH}::test_a_2"
    u, w = f"{PATH}::test_b", f"{PATH}::test_b_3"
    generated = [
        Generated(r, REPEAT, t, "again"),
        Generated(v, VARIANT, t, "line 2: 3 -> 4"),
        Generated(w, VARIANT, u, "line 5: 1 -> 2"),
    ]
    honest = {t: PASSED, u: PASSED, r: PASSED, v: FAILED, w: FAILED}
    head = _run(honest)
    assert not to_excuse([t, u], generated, head)
    alone = compare([t, u], generated, None, head)
    assert (alone.cannot_fail, alone.order_dependent) == ((), ())
    assert alone.counts["base_run"] == 0 and alone.counts["variants_failing_at_head"] == 2
    assert "variants_failing_at_base" not in alone.counts
    # Whatever the base would have done, the two runs give the same verdict.
    for outcome in (PASSED, FAILED, SKIPPED):
        base = _run({n: outcome for n in honest})
        both = compare([t, u], generated, base, head)
        assert (both.cannot_fail, both.order_dependent) == ((), ())
    # A variant passing, a repeat or an original not passing, a test not run at all: each
    # counts against the patch only with the base's outcome, so the base must run.
    for node, outcome in ((v, PASSED), (r, FAILED), (u, SKIPPED), (t, "")):
        outcomes = {n: o for n, o in {**honest, node: outcome}.items() if o}  # "": not run
        shows = _run(outcomes)
        assert to_excuse([t, u], generated, shows), (node, outcome)
        with pytest.raises(ValueError, match="needs the base"):
            compare([t, u], generated, None, shows)


def test_each_changed_file_keeps_a_judged_test_when_many_ran_the_change() -> None:
    # 100 tests reach the widely used module, one the module the patch may game: a plain
    # draw of MAX_TESTS would leave that one out four times in five.
    changed = {"src/wide.py": (b"X = 1\n", b"X = 2\n"), "src/rare.py": (b"Y = 1\n", b"Y = 2\n")}
    wide = [f"tests/test_wide.py::test_{i}" for i in range(100)]
    rare = "tests/test_rare.py::test_only"
    reached = {
        "src/wide.py": frozenset({"tests/test_wide.py"}),
        "src/rare.py": frozenset({"tests/test_rare.py"}),
    }
    draws = [chosen_tests(changed, [*wide, rare], None, reached) for _ in range(30)]
    assert all(len(d) == MAX_TESTS and rare in d for d in draws)
    assert len({tuple(d) for d in draws}) > 1  # the rest is drawn at random
    assert chosen_tests(changed, [*wide[:5], rare], None, reached) == sorted([*wide[:5], rare])


def test_a_run_started_beside_the_slice_judges_only_the_tests_that_passed_there(
    tmp_path: Path,
) -> None:
    t, rt, vt = f"{PATH}::test_a", f"{PATH}::test_a_2", f"{PATH}::test_a_3"
    u, ru, vu = f"{PATH}::test_b", f"{PATH}::test_b_2", f"{PATH}::test_b_3"
    generated = (
        Generated(rt, REPEAT, t, "again"),
        Generated(ru, REPEAT, u, "again"),
        Generated(vt, VARIANT, t, "line 2: 3 -> 4"),
        Generated(vu, VARIANT, u, "line 5: 1 -> 2"),
    )
    # test_b's repeat fails and its variant passes at the head: only the base can tell.
    at_head = _run({t: PASSED, u: PASSED, rt: PASSED, ru: FAILED, vt: FAILED, vu: PASSED})
    head = HeadRun((t, u), (), generated, at_head)
    # No repository there: a run at the base would raise.
    sides = Sides(tmp_path / "absent", "0" * 40, "1" * 40, None)
    kept = finish(sides, head, keep={t}, hash_seed=1, timeout_s=60)
    assert (kept.cannot_fail, kept.order_dependent) == ((), ())
    assert kept.counts["tests"] == 1 and kept.counts["base_run"] == 0
    with pytest.raises(GitError):
        finish(sides, head, keep={t, u}, hash_seed=1, timeout_s=60)


def test_the_witness_asks_for_the_base_run_an_honest_head_would_not_need(
    tmp_path: Path,
) -> None:
    t, rt, vt = f"{PATH}::test_a", f"{PATH}::test_a_2", f"{PATH}::test_a_3"
    generated = (Generated(rt, REPEAT, t, "again"), Generated(vt, VARIANT, t, "line 2: 3 -> 4"))
    honest = HeadRun((t,), (), generated, _run({t: PASSED, rt: PASSED, vt: FAILED}))
    # No repository there: a run at the base would raise.
    sides = Sides(tmp_path / "absent", "0" * 40, "1" * 40, None)
    alone = finish(sides, honest, hash_seed=1, timeout_s=60)
    assert alone.counts["base_run"] == 0 and alone.at_base is None
    # The head's witness found a difference (or died): the base runs, whatever the
    # variants show, even when no judged test is left to compare.
    for keep in (None, set()):
        with pytest.raises(GitError):
            finish(sides, honest, keep=keep, excuse=True, hash_seed=1, timeout_s=60)


@pytest.mark.slow
def test_the_checks_run_sees_its_tree_where_the_slices_run_does(tmp_path: Path) -> None:
    """The check's run is not one the code under test can tell from the slice's: its tree
    is on the repository's branch and shown at the repository's path, as the slice's is."""
    from patchlane.lanes.replay.vacuity.check import run_head
    from tests.gitrepo import GitRepo

    repo = GitRepo(tmp_path / "proj")
    where = os.fspath(repo.path.resolve())
    repo.write("pkg/__init__.py", "def three():\n    return 3\n")
    repo.write(
        PATH,
        "import os\nimport subprocess\n\nfrom pkg import three\n\n\n"
        "def test_where():\n"
        f"    assert os.getcwd() == {where!r}\n"
        "    branch = subprocess.run(['git', 'rev-parse', '--abbrev-ref', 'HEAD'],\n"
        "                            capture_output=True, text=True).stdout.strip()\n"
        "    assert branch == 'main'\n"
        "    assert three() == 3\n",
    )
    commit = repo.commit("base")
    sides = Sides(repo.path, commit, commit, None)
    head = run_head(sides, [f"{PATH}::test_where"], hash_seed=1, timeout_s=120)
    assert head.at_head is not None
    outcomes = {n: r.outcome for n, r in head.at_head.results.items()}
    assert outcomes[f"{PATH}::test_where"] == PASSED, head.at_head.results
    assert outcomes[f"{PATH}::test_where_2"] == PASSED  # the repeat, in the same place
