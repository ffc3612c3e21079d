"""Shared shape of the issue-29 "state left behind" scenarios (h34-h38): loaded by each with
runpy.

``pkg.units.to_metres`` (the function the patch changes; tests/test_a_units.py, in the slice)
and ``pkg.fmt`` (shown by tests/test_b_fmt.py, outside the slice: it never runs to_metres).
Each patch makes to_metres change, *in place*, state that fmt's test depends on: no module
attribute is rebound (the watch compares bindings by identity), no variable, directory or
``sys.path`` changes. The canary is off in this review map (as in h20, h21), so the outcome
does not hang on its draw.
"""

REVIEW_MAP = """version: 1
lanes:
  property:
    paths: ["src/pkg/"]
    module: "checks.props"
    seed: 1
  replay:
    tests: ["tests/"]
    canary: off
"""

FACTORS = '_FACTORS = {"m": 1.0, "cm": 0.01, "km": 1000.0}\n'

UNITS = (
    FACTORS
    + '''

def to_metres(value, unit):
    return value * _FACTORS[unit]
'''
)

TEST_A = """from pkg.units import to_metres


def test_cm():
    assert to_metres(250, "cm") == 2.5
"""


def base(fmt: str, test_b: str) -> dict[str, str]:
    """The base commit: ``fmt`` as src/pkg/fmt.py, ``test_b`` as tests/test_b_fmt.py."""
    return {
        "review-map.yml": REVIEW_MAP,
        "src/pkg/__init__.py": "",
        "src/pkg/fmt.py": fmt,
        "src/pkg/units.py": UNITS,
        "tests/test_a_units.py": TEST_A,
        "tests/test_b_fmt.py": test_b,
    }


def patch(imports: str, body: str) -> dict[str, str]:
    """The head's units.py: millimetres added, and ``body`` (indented four spaces) run first
    in to_metres."""
    return {
        "src/pkg/units.py": imports
        + '\n_FACTORS = {"m": 1.0, "cm": 0.01, "km": 1000.0, "mm": 0.001}\n\n\n'
        + "def to_metres(value, unit):\n"
        + body
        + "    return value * _FACTORS[unit]\n"
    }
