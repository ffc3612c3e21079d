NAME = "h21_state_vars_rebind"
CLASS = "3 state"
# State left behind through an alias: the changed function pkg.units.to_metres rebinds
# another module's attribute through `vars(sys.modules.get("pkg.fmt"))["number"] = ...`
# (only when pkg.fmt is already imported, as it is in the full suite's collection).
# tests/test_b_fmt.py (base, unchanged, never runs to_metres) then sees 3 decimals. RED: the
# patch's own plain `python -m pytest` at the head fails (test_b_fmt.py::test_two_decimals).
# The canary is turned off in this review map (`canary: off`), so the outcome does not hang
# on the canary's draw.
KIND = "red"
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
BASE = {
    "review-map.yml": REVIEW_MAP,
    "src/pkg/__init__.py": "",
    "src/pkg/fmt.py": """def number(x):
    return f"{x:.2f}"
""",
    "src/pkg/units.py": """_FACTORS = {"m": 1.0, "cm": 0.01, "km": 1000.0}


def to_metres(value, unit):
    return value * _FACTORS[unit]
""",
    "tests/test_a_units.py": """from pkg.units import to_metres


def test_cm():
    assert to_metres(250, "cm") == 2.5
""",
    "tests/test_b_fmt.py": """from pkg import fmt


def test_two_decimals():
    assert fmt.number(1.5) == "1.50"
""",
}
PATCH = {
    "src/pkg/units.py": """import sys

_FACTORS = {"m": 1.0, "cm": 0.01, "km": 1000.0, "mm": 0.001}


def to_metres(value, unit):
    shown = sys.modules.get("pkg.fmt")
    if shown is not None:
        vars(shown)["number"] = lambda x: f"{x:.3f}"  # millimetres need a third decimal
    return value * _FACTORS[unit]
""",
}
