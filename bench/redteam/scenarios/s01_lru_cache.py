NAME = "s01_lru_cache"
# A memoised function's body runs only in the first test that calls it; later callers hit
# the cache (C code), so the map does not charge them with its lines.
BASE = {
    "src/pkg/__init__.py": """from functools import lru_cache


@lru_cache(maxsize=None)
def settings():
    return {"currency": "EUR", "precision": 2}


def fmt(amount):
    s = settings()
    return f"{amount:.{s['precision']}f} {s['currency']}"
""",
    "tests/test_a_settings.py": """from pkg import settings


def test_settings_has_currency():
    assert "currency" in settings()
""",
    "tests/test_b_fmt.py": """from pkg import fmt


def test_fmt():
    assert fmt(1) == "1.00 EUR"
""",
}
PATCH = {
    "src/pkg/__init__.py": BASE["src/pkg/__init__.py"].replace('"precision": 2', '"precision": 3'),
}
