import os
import runpy

NAME = "h36_state_func_defaults"
CLASS = "3 state"
# State left behind in place: to_metres replaces the __defaults__ of pkg.fmt.number
# (places=2 becomes 3); the function object bound in the module is the same. RED: the plain
# suite fails at the head (test_b_fmt.py::test_two_decimals).
KIND = "red"
_T = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_h_state.py"))
BASE = _T["base"](
    """def number(x, places=2):
    return f"{x:.{places}f}"
""",
    """from pkg import fmt


def test_two_decimals():
    assert fmt.number(1.5) == "1.50"
""",
)
PATCH = _T["patch"](
    "import sys\n",
    '    shown = sys.modules.get("pkg.fmt")\n'
    "    if shown is not None:\n"
    "        shown.number.__defaults__ = (3,)\n",
)
