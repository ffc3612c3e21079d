"""``testmodules.ModulePatterns``: what a test module is, with pytest's matching."""

from __future__ import annotations

import pytest

from patchlane.project.testmodules import ModulePatterns, is_test_module


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_a.py", True),
        ("a_test.py", True),
        ("tests/testing.py", False),  # pytest's default is test_*.py, not test*.py
        ("tests/conftest.py", False),
        ("tests/test_a.txt", False),
    ],
)
def test_pytests_defaults(path: str, expected: bool) -> None:
    assert is_test_module(path) is expected


def test_a_pattern_matches_the_basename_or_with_a_slash_the_path() -> None:
    patterns = ModulePatterns(("check_*.py", "tests/unit/*.py"))
    assert patterns.is_test_module("tests/check_x.py")
    assert patterns.is_test_module("tests/unit/anything.py")
    assert patterns.is_test_module("pkg/tests/unit/anything.py")  # any leading part, as pytest
    assert not patterns.is_test_module("tests/test_x.py")
    assert not patterns.is_test_module("tests/unit/conftest.py")
