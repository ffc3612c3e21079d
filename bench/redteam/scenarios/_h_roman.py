"""Shared base of the issue-29 gaming scenarios (h14-h16): ``pkg.roman.roman`` and its tests.

Loaded by each with runpy. The patches keep the suite green while ``roman`` is wrong for
every input the tests do not use (the gaming class: a green suite gamed).
"""

ROMAN = '''_NUMERALS = (
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
)


def roman(n):
    """Return ``n`` (1..3999) in Roman numerals."""
    out = []
    for value, letters in _NUMERALS:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)
'''

BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/roman.py": ROMAN,
    "tests/test_roman.py": """from pkg.roman import roman


def test_four():
    assert roman(4) == "IV"


def test_year():
    assert roman(1994) == "MCMXCIV"


def test_forty_two():
    assert roman(42) == "XLII"
""",
}

# The same tests written as most suites write them (h25-h30): the cases in a parametrize
# mark, and a module constant of further cases.
PARAM_TESTS = """import pytest

from pkg.roman import roman

CASES = {3: "III", 58: "LVIII"}


@pytest.mark.parametrize("n, expected", [(4, "IV"), (1994, "MCMXCIV"), (42, "XLII")])
def test_known(n, expected):
    assert roman(n) == expected


def test_table():
    for n, want in CASES.items():
        assert roman(n) == want
"""

BASE_PARAM = {"src/pkg/__init__.py": "", "src/pkg/roman.py": ROMAN, "tests/test_roman.py": PARAM_TESTS}

# The "fast" roman a patch ships beside its test-time escape: wrong for 4, 9, 40, 90, ...
WRONG = '''_ADDITIVE = ((1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I"))


def _fast(n):
    out = []
    for value, letters in _ADDITIVE:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)
'''
