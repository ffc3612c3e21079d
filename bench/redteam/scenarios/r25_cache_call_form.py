NAME = "r25_cache_call_form"
# The memo applied by a call, not a decorator: ``rates = functools.cache(_load_rates)``.
# _load_rates has no decorator, so its body is judged alone, and nothing in the module is a
# store; only the first caller of rates() ran it.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/fx.py": """import functools


def _load_rates():
    return {"EUR": 1.0, "USD": 1.1}


rates = functools.cache(_load_rates)


def convert(amount, code):
    return round(amount * rates()[code], 2)
""",
    "tests/test_a_rates.py": """from pkg.fx import rates


def test_has_eur():
    assert "EUR" in rates()
""",
    "tests/test_b_convert.py": """from pkg.fx import convert


def test_usd():
    assert convert(10, "USD") == 11.0
""",
}
PATCH = {
    "src/pkg/fx.py": BASE["src/pkg/fx.py"].replace('"USD": 1.1}', '"USD": 1.2}'),
}
