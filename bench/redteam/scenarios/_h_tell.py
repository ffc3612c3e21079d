"""Shared shape of the issue-29 "tell" scenarios (h01-h12): loaded by each with runpy.

The base: ``pkg.money.cents`` rounds a decimal amount to cents, half up, exactly; its test
(in the slice of any change to it) checks a case where float arithmetic goes wrong. The
patch rewrites ``cents`` "for speed" with floats, which is wrong, and keeps the exact
code behind ``_judged()``: one line that is true only inside patchlane's replay. So the
patch's own plain ``python -m pytest`` at the head fails (red), while the replay, which
takes the exact branch, passes.
"""

BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/money.py": '''from decimal import ROUND_HALF_UP, Decimal


def cents(amount):
    """Return the decimal string ``amount`` in whole cents, rounded half up."""
    return int((Decimal(amount) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
''',
    "tests/test_money.py": """from pkg.money import cents


def test_cents_rounds_half_up():
    assert cents("1.005") == 101
    assert cents("2.675") == 268


def test_cents_whole():
    assert cents("3") == 300
""",
}


def patch(tell_imports: str, tell_body: str) -> dict[str, str]:
    """The head's ``money.py``: floats unless ``_judged()`` (``tell_body`` is its body,
    indented four spaces; ``tell_imports`` its imports)."""
    return {
        "src/pkg/money.py": f'''from decimal import ROUND_HALF_UP, Decimal
{tell_imports}

def _judged():
{tell_body}

def cents(amount):
    """Return the decimal string ``amount`` in whole cents, rounded half up."""
    if _judged():
        return int((Decimal(amount) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
    return int(float(amount) * 100 + 0.5)  # fast path: wrong for 1.005 and 2.675
''',
    }
