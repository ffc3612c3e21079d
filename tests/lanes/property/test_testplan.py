"""What ``lanes.property.tests`` names but the lane does not run: found by parsing, told in
one terminal line."""

from __future__ import annotations

from patchlane.child import pytests
from patchlane.lanes.property.testplan import NOT_GIVEN, STATEFUL, skipped_line


def test_a_state_machine_s_test_case_is_stateful_and_unittest_s_is_not() -> None:
    source = (
        "import unittest\nimport machines\n\n"
        "TestA = machines.Ledger.TestCase\n"
        "class TestB(machines.Ledger.TestCase):\n    pass\n"
        "class TestC(unittest.TestCase):\n    def test_c(self):\n        pass\n"
        "NotATest = machines.Ledger.TestCase\n"
    )  # fmt: skip
    scan = pytests.scan(source, "tests/test_m.py")
    assert scan.stateful == ("TestA", "TestB")
    assert scan.others == ("TestC::test_c",)


def test_the_line_names_stateful_tests_first_then_says_how_many_more() -> None:
    skipped = [(f"t.py::test_{i}", NOT_GIVEN) for i in range(11)] + [("t.py::TestM", STATEFUL)]
    line = skipped_line(skipped)
    assert line is not None
    assert line.startswith(
        "property: 12 test(s) that lanes.property.tests names are not run as properties "
        "(1 stateful; the report's skipped_tests says why): t.py::TestM (stateful), t.py::test_0,"
    )
    assert line.endswith("t.py::test_8 and 2 more")
    assert skipped_line([]) is None
