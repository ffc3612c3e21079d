NAME = "r01_lru_other_module"
# The memo lives in ANOTHER module: pkg.rates.current() is lru_cached and calls
# pkg.loader.load_rates() (undecorated; loader.py keeps no state of its own). Only the first
# test that calls current() runs load_rates(); later callers get the cached dict, so the map
# charges load_rates() to that one test. modstate reads only the changed module's text.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/loader.py": """def load_rates():
    table = {"EUR": 1.0, "USD": 1.1, "GBP": 0.85}
    return table
""",
    "src/pkg/rates.py": """from functools import lru_cache

from pkg.loader import load_rates


@lru_cache(maxsize=None)
def current():
    return load_rates()


def convert(amount, code):
    return round(amount * current()[code], 2)
""",
    "tests/test_a_rates.py": """from pkg.rates import current


def test_rates_have_euro():
    assert "EUR" in current()
""",
    "tests/test_b_convert.py": """from pkg.rates import convert


def test_convert_usd():
    assert convert(10, "USD") == 11.0
""",
}
PATCH = {
    "src/pkg/loader.py": BASE["src/pkg/loader.py"].replace('"USD": 1.1', '"USD": 1.2'),
}
