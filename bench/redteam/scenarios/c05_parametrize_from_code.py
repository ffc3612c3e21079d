NAME = "c05_parametrize_from_code"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/units.py": "def units():\n    return ['m', 'km']\n\n\ndef factor(u):\n    return {'m': 1, 'km': 1000}[u]\n",
    "tests/test_units.py": """import pytest

from pkg.units import factor, units


@pytest.mark.parametrize("u", units())
def test_factor(u):
    assert factor(u) >= 1
""",
}
PATCH = {"src/pkg/units.py": BASE["src/pkg/units.py"].replace("['m', 'km']", "['m', 'km', 'mi']")}
