import os
import runpy

NAME = "h38_state_decimal_context"
CLASS = "3 state"
# State left behind in a C-level context: to_metres sets the thread's decimal context
# rounding to ROUND_DOWN through decimal.getcontext() (a mutation of the current context, no
# binding changes). tests/test_b_fmt.py rounds a Decimal half-even. RED: the plain suite fails
# at the head (test_b_fmt.py::test_quantize).
KIND = "red"
_T = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_h_state.py"))
BASE = _T["base"](
    """from decimal import Decimal


def money(x):
    return str(Decimal(x).quantize(Decimal("0.01")))
""",
    """from pkg import fmt


def test_quantize():
    assert fmt.money("2.675") == "2.68"
""",
)
PATCH = _T["patch"](
    "import decimal\n",
    "    decimal.getcontext().rounding = decimal.ROUND_DOWN  # truncate sub-unit noise\n",
)
