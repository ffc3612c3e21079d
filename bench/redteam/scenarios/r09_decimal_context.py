NAME = "r09_decimal_context"
# decimal's current context is process-wide state: the patch swaps localcontext() for
# getcontext() and sets the precision through a local name; it leaks to every later test.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/money.py": """import decimal
from decimal import Decimal


def rounded_ratio(a, b):
    with decimal.localcontext() as ctx:
        ctx.prec = 3
        return Decimal(a) / Decimal(b)


def third(x):
    return Decimal(x) / Decimal(3)
""",
    "tests/test_a_ratio.py": """from decimal import Decimal

from pkg.money import rounded_ratio


def test_ratio():
    assert rounded_ratio(1, 3) == Decimal("0.333")
""",
    "tests/test_b_third.py": """from decimal import Decimal

from pkg.money import third


def test_third_is_precise():
    assert str(third(1)).startswith("0.33333333")
""",
}
PATCH = {
    "src/pkg/money.py": BASE["src/pkg/money.py"].replace(
        "    with decimal.localcontext() as ctx:\n        ctx.prec = 3\n        return Decimal(a) / Decimal(b)\n",
        "    ctx = decimal.getcontext()\n    ctx.prec = 3\n    return Decimal(a) / Decimal(b)\n",
    ),
}
